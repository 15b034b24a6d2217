"""``eos-chaos hunt`` (issue 44): the search space, its draws, shrinking, feedback and the
campaign summary, without a cluster (harness.detect.search_space, hunt, hunt_signals)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, find, given, settings
from typer.testing import CliRunner

from harness.cli.main import app
from harness.cluster.releases import Release
from harness.detect import hunt as H
from harness.detect import search_space as S
from harness.detect.hunt_signals import score, signals
from harness.workers.configs import check_config
from harness.workloads import WORKLOADS

POOL_NAMES = ("smoke", "busy", "eos-pipeline")


@pytest.fixture(scope="module")
def pool():
    return H.load_pool("3.5.2", names=POOL_NAMES)


def _non_default(s: S.Setting):
    """A drawn value of ``s`` other than its default (the grid's last: farthest from it)."""
    g = [v for v in s.grid() if v != s.default]
    return g[-1]


def _full_draw(workload: str, client: str) -> S.Draw:
    """A draw that sets every applicable setting to a non-default value."""
    d = S.Draw(client,
               producer={s.key: _non_default(s) for s in S.PRODUCER[client]},
               broker={s.key: _non_default(s) for s in S.BROKER},
               workload={s.key: _non_default(s) for s in S.applicable_shapes(workload, client)},
               compression="zstd", restart_producers=True)
    d.repaired = S.repair(client, d.producer)
    return d


def _workers(scn):
    cls = WORKLOADS[scn.workload.name]
    cls = cls.__mro__[1] if cls.__name__ == "WithClient" or cls.__mro__[1].__name__ == cls.__name__ else cls
    w = cls(scn.workload, "127.0.0.1:9", 7)
    return w, w.readers() + w.writers()


def _server_properties(tmp_path: Path, scn) -> dict[str, str]:
    """server.properties as harness/cluster/kafka.py writes it for a node of ``scn``."""
    from harness.cluster.kafka import KafkaNode

    node = KafkaNode(1, SimpleNamespace(address="10.0.0.1"), SimpleNamespace(release=Release(scn.cluster.kafka_version)),
                     tmp_path, tmp_path / "log", overrides=dict(scn.cluster.broker))
    node.write_config("1@10.0.0.1:9093")
    return dict(line.split("=", 1) for line in node.config_path.read_text().splitlines() if "=" in line)


# ---------------------------------------------------------------- the space

def test_every_range_names_its_source_and_its_grid_stays_inside_it():
    for s in [*S.PRODUCER["librdkafka"], *S.PRODUCER["java"], S.COMPRESSION, *S.BROKER,
              *(w.setting for w in S.WORKLOAD), S.RESTARTS]:
        assert s.source, s.key
        grid = s.grid()
        assert grid, s.key
        assert all(s.contains(v) for v in grid), (s.key, grid)
        if not s.choices:
            assert s.draw_lo <= min(grid) and max(grid) <= s.draw_hi, s.key
            assert s.cap is None or s.cap_why or s.floor, s.key  # a narrowed range says why
        if s.default is not None and (s.choices or s.draw_lo <= s.default <= s.draw_hi):
            assert grid[0] == s.default, (s.key, grid[:3])  # the shrinker's end: the documented default


def test_documented_figures_are_the_documented_ones():
    lib = {s.key: s for s in S.PRODUCER["librdkafka"]}
    java = {s.key: s for s in S.PRODUCER["java"]}
    assert (lib["transaction.timeout.ms"].lo, lib["transaction.timeout.ms"].default) == (1000, 60000)
    assert (lib["message.timeout.ms"].default, lib["socket.timeout.ms"].lo, lib["socket.timeout.ms"].hi) == (300000, 10, 300000)
    assert (lib["request.timeout.ms"].hi, lib["batch.size"].default) == (900000, 1000000)
    assert (java["delivery.timeout.ms"].default, java["request.timeout.ms"].default, java["batch.size"].default) == (120000, 30000, 16384)
    assert max(lib["max.in.flight.requests.per.connection"].grid()) == 5 == max(java["max.in.flight.requests.per.connection"].grid())
    assert "CONFIGURATION.md" in lib["linger.ms"].source and "producerconfigs" in java["linger.ms"].source
    broker = {s.key: s for s in S.BROKER}
    assert broker["transactional.id.expiration.ms"].default == 604800000
    assert broker["producer.id.expiration.ms"].default == 86400000
    assert "brokerconfigs" in broker["log.segment.bytes"].source


def test_no_zoo_trigger_is_in_the_space():
    keys = {s.key for s in S.every_setting("txn-queue", "java")} | {s.key for s in S.every_setting("txn-queue", "librdkafka")}
    assert "epoch_burn" not in keys and "isolation_level" not in keys
    assert "epoch_burn" in " ".join(S.NOT_DRAWN)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(S.draws("txn-queue", "3.5.2", ("librdkafka", "java")))
def test_draws_stay_within_the_cited_ranges(d):
    table = {s.key: s for s in S.PRODUCER[d.client]}
    for k, v in d.producer.items():
        if k in d.repaired:  # raised so the client accepts the combination: still within the documented range
            assert table[k].lo <= v <= min(table[k].hi, S.TXN_MAX_TIMEOUT_MS), (k, v)
        else:
            assert table[k].contains(v), (k, v)
            assert v <= S.RUN_TIMEOUT_CAP_MS or not k.endswith("timeout.ms")
    broker = {s.key: s for s in S.BROKER}
    for k, v in d.broker.items():
        assert broker[k].contains(v), (k, v)
    shapes = {s.key: s for s in S.applicable_shapes("txn-queue", d.client)}
    assert set(d.workload) <= set(shapes)
    for k, v in d.workload.items():
        assert shapes[k].contains(v)
    assert d.compression is None or S.COMPRESSION.contains(d.compression)
    # the combination is one the client accepts
    eff = {**S.WORKER_DEFAULTS[d.client], **d.producer}
    if d.client == "librdkafka":
        assert eff["transaction.timeout.ms"] >= max(eff["message.timeout.ms"], eff["socket.timeout.ms"] + 100)
        assert eff["message.timeout.ms"] > eff["linger.ms"]
    else:
        assert eff["delivery.timeout.ms"] >= eff["linger.ms"] + eff["request.timeout.ms"]
        assert "think_time_ms" not in d.workload  # java has no txn-producers worker


def test_repair_raises_only_the_transaction_or_delivery_timeout():
    p = {"message.timeout.ms": 600000}
    assert S.repair("librdkafka", p) == {"transaction.timeout.ms": 600000} and p["transaction.timeout.ms"] == 600000
    p = {"socket.timeout.ms": 300000, "transaction.timeout.ms": 1000}
    assert S.repair("librdkafka", p) == {"transaction.timeout.ms": 300100}
    p = {"request.timeout.ms": 300000, "linger.ms": 5000}
    assert S.repair("java", p) == {"delivery.timeout.ms": 305000}
    assert S.repair("java", {"request.timeout.ms": 100}) == {}
    p = {"linger.ms": 5000, "message.timeout.ms": 1000}
    assert S.repair("librdkafka", p) == {"message.timeout.ms": 5100} and "transaction.timeout.ms" not in p


# ---------------------------------------------------------------- draws reach the run

@pytest.mark.parametrize("name,client", [("smoke", "librdkafka"), ("smoke", "java"), ("busy", "librdkafka"),
                                         ("eos-pipeline", "librdkafka"), ("eos-pipeline", "java")])
def test_every_drawn_setting_reaches_the_workers_or_the_brokers(pool, tmp_path, name, client):
    entry = next(e for e in pool if e.name == name)
    wl_name = entry.base.workload.name
    d = _full_draw(wl_name, client)
    if name == "busy":  # busy runs txn-producers threads: keep them (producers_per_worker 16)
        d.workload.pop("producers", None)
    scn = S.apply(entry.base, d)
    assert "hunt draw:" in scn.description  # the run's scenario.yaml holds the draw
    w, workers = _workers(scn)
    producers = [x for x in workers if x.role in ("txn-producer", "txn-producers", "processor")]
    assert producers
    for x in producers:
        check_config(x.role, x.cfg)  # what harness.run.pool validates before a worker starts
        for k, v in d.producer.items():
            assert x.cfg["producer"][k] == v, (x.name, k)
        assert x.cfg["producer"]["compression.type"] == "zstd"
    # the client: every worker of a client-choice workload carries it (harness.workloads.client_choice)
    assert scn.workload.client == client
    assert scn.workload.client_cfg().get("client", "librdkafka") == client
    # workload shape
    shape = d.workload
    txn = [x for x in workers if x.role in ("txn-producer", "txn-producers")]
    if "max_sends_per_txn" in shape:
        assert all(x.cfg["max_sends"] == shape["max_sends_per_txn"] for x in txn)
    if "abort_probability" in shape:
        assert all(x.cfg["abort_probability"] == shape["abort_probability"] for x in txn)
    if "inflight_abort" in shape:
        assert all(x.cfg["inflight_abort"] == shape["inflight_abort"] for x in txn)
    if "flush_timeout_s" in shape:
        assert all(x.cfg["flush_timeout_s"] == shape["flush_timeout_s"] for x in txn)
    if "think_time_ms" in shape:
        assert all(x.role == "txn-producers" and x.cfg["think_ms"] == shape["think_time_ms"] for x in txn)
    if "producers" in shape:
        ids = [t for x in txn for t in (x.cfg.get("transactional_ids") or [x.cfg["transactional_id"]])]
        assert len(ids) == shape["producers"]
    procs = [x for x in workers if x.role == "processor"]
    if "processors" in shape:
        assert len(procs) == shape["processors"]
    if "max_batch" in shape:
        assert all(x.cfg["max_batch"] == shape["max_batch"] for x in procs)
    if "processor_abort_probability" in shape:
        assert all(x.cfg["abort_probability"] == shape["processor_abort_probability"] for x in procs)
    assert set(shape) <= {"producers", "max_sends_per_txn", "abort_probability", "think_time_ms", "inflight_abort",
                          "flush_timeout_s", "processors", "max_batch", "processor_abort_probability"}
    # restarts: a kill-client fault on the producers is among the faults drawn from
    assert any(f.fault == "kill-client" for f in scn.nemesis.faults)
    # broker settings: in every node's server.properties
    props = _server_properties(tmp_path, scn)
    for k, v in d.broker.items():
        assert props[k] == str(v), k
    assert scn.cluster.topic_min_isr() == min(int(d.broker["min.insync.replicas"]), 3)


def test_a_drawn_schedule_becomes_the_runs_explicit_schedule(pool):
    ex = {"scenario": "smoke", "draw": S.Draw("librdkafka", producer={"linger.ms": 50}),
          "schedule": {"duration": 20, "faults": [{"at": 5, "duration": 3, "fault": {"fault": "kill"}, "value": {"node": 2}}]}}
    scn = H.to_run_scenario(pool, ex)
    assert scn.duration == 20 and len(scn.nemesis.schedule) == 1 and scn.nemesis.schedule[0].value == {"node": 2}
    assert scn.workload.producer["linger.ms"] == 50 and scn.cluster.kafka_version == "3.5.2"


def test_transaction_version_is_drawn_only_where_the_release_and_the_model_allow_it():
    from harness.run.scenario import ClusterSpec

    assert S.transaction_version_choice("3.9.1") is None  # one level before 4.0.0
    has = "features" in ClusterSpec.model_fields
    assert (S.transaction_version_choice("4.3.1") is not None) == has


# ---------------------------------------------------------------- shrinking

def test_shrinking_moves_every_setting_toward_unset_and_then_the_default():
    strat = S.draws("txn-queue", "3.5.2", ("librdkafka", "java"))
    # a "failure" that needs a linger above 100 ms and a compressed batch: everything else shrinks away
    d = find(strat, lambda d: d.producer.get("linger.ms", 0) > 100 and d.compression not in (None, "none"),
             settings=settings(database=None, max_examples=2000, suppress_health_check=list(HealthCheck)))
    # (the client may stay java: its settings are another table, the shrinker cannot always cross over)
    assert set(d.producer) == {"linger.ms"} and not d.broker and not d.workload and not d.restart_producers
    grid = {s.key: s for s in S.PRODUCER[d.client]}["linger.ms"].grid()
    above = [v for v in grid if v > 100]
    assert d.producer["linger.ms"] == above[0]                      # the grid value nearest the default
    assert d.compression == "gzip"                                  # the first codec after the default

    d = find(strat, lambda d: d.broker.get("min.insync.replicas") is not None,
             settings=settings(database=None, max_examples=2000, suppress_health_check=list(HealthCheck)))
    assert d.broker == {"min.insync.replicas": 1} and d.size() == 1  # min.insync.replicas' documented default


# ---------------------------------------------------------------- feedback

def _fake_run_dir(root: Path, n: int, *, valid=True, failing=(), known=(), stalled_ms=0.0, codes=()):
    d = root / f"run{n}"
    d.mkdir(parents=True)
    anomalies = {"stalled-lso": [{"stalled_ms": stalled_ms}]} if stalled_ms else {}
    (d / "verdict.json").write_text(json.dumps({
        "valid": valid, "failing": list(failing), "anomalies": anomalies,
        "known_bugs": [{"id": k, "match": "looks-like"} for k in known],
        "liveness_bounds": {"stalled_lso_bound_s": 30.0, "unavailable_bound_s": 10.0},
        "stats": {"ops_by_f": {"txn": {"ok": 6, "fail": 2, "info": 0}}}}))
    (d / "open-transactions.json").write_text(json.dumps({"waited_s": 5.0, "bound_s": 10.0, "open_at_end": [{}]}))
    (d / "history.jsonl").write_text("".join(
        json.dumps({"type": "fail", "f": "txn", "error": [c, "x"], "meta": {"producer_epoch": 3, "transactional_id": "t"}}) + "\n" for c in codes))
    return d


def test_signals_read_a_finished_run(tmp_path):
    d = _fake_run_dir(tmp_path, 1, stalled_ms=24000, codes=["_TIMED_OUT", "_MSG_TIMED_OUT", "_TIMED_OUT"])
    s = signals(d)
    assert s["stalled_lso"] == 0.8 and s["near_bound"] == 1.0
    assert s["open_txn"] == 1.5 and s["aborts_per_txn"] == 0.25
    assert s["codes"] == ["_MSG_TIMED_OUT", "_TIMED_OUT"] and s["error_codes"] == 2.0
    assert s["max_epoch"] == round(3 / 32767, 4)
    assert score(s, novelty=2) > score(s) > score(signals(_fake_run_dir(tmp_path, 2)))


# ---------------------------------------------------------------- the campaign

class FakeRuns:
    """A runner that fails every run whose draw reuses the producer after an aborted flush
    (inflight_abort: reuse) and takes 100 machine-seconds a run."""

    def __init__(self, root: Path):
        self.root, self.n, self.t = root, 0, 0.0

    def clock(self):
        return self.t

    def __call__(self, scn, results_root, *, source, stop, progress):
        progress.phase = "cluster"  # got the cluster lock: machine time counts from here
        self.n += 1
        self.t += 100.0
        bad = getattr(scn.workload, "inflight_abort", "replace") == "reuse"
        d = _fake_run_dir(self.root, self.n, valid=not bad, failing=("lost-write",) if bad else (),
                          known=("F1",) if bad else (), codes=["_TIMED_OUT"])
        return SimpleNamespace(run_dir=d, verdict=json.loads((d / "verdict.json").read_text()))


def test_a_campaign_finds_shrinks_names_and_resumes(pool, tmp_path):
    fake = FakeRuns(tmp_path / "runs")
    out = tmp_path / "campaign"
    h = H.Hunter("3.5.2", budget_s=2400, out_dir=out, results_root=tmp_path, pool=pool, runner=fake,
                 clock=fake.clock, seed=3, max_shrink_runs=3, round_examples=12)
    s = h.hunt()
    assert s["runs"] == fake.n and s["machine_minutes"] == round(fake.n * 100 / 60, 2)
    assert s["machine_minutes"] >= 40  # the budget is spent
    lines = (out / "runs.jsonl").read_text().splitlines()
    assert len(lines) == fake.n and all(json.loads(x)["draw"]["client"] for x in lines)
    assert [f["name"] for f in s["findings"]] == ["F1 (looks-like)"]  # seed 3 draws inflight_abort: reuse
    f = s["findings"][0]
    assert f["anomalies"] == ["lost-write"] and f["runs"] >= 2
    first = next(json.loads(x) for x in lines if json.loads(x)["valid"] is False)
    assert all(json.loads(x)["valid"] is True for x in lines[:first["n"] - 1])
    assert f["machine_minutes_to_first"] == round(first["n"] * 100 / 60, 2)
    assert any(json.loads(x)["phase"] == "shrink" for x in lines)
    m = f["minimal"]  # the smallest failing draw any round's shrinking reached
    assert m["draw"]["workload"].get("inflight_abort") == "reuse"
    d0 = first["draw"]
    size0 = (len(d0["producer"]) + len(d0["broker"]) + len(d0["workload"]) + (d0["compression"] is not None)
             + len(d0["features"]) + int(d0["restart_producers"]))
    assert m["draw_size"] <= size0
    assert Path(m["path"]).exists() and "inflight_abort: reuse" in Path(m["path"]).read_text()
    assert json.loads((out / "summary.json").read_text())["runs"] == fake.n
    assert "Blind hunt" in (out / "summary.html").read_text()
    # resume with a larger budget: the runs already made are answered from runs.jsonl
    before = fake.n
    h2 = H.Hunter("3.5.2", budget_s=2400, out_dir=out, results_root=tmp_path, pool=pool, runner=fake,
                  clock=fake.clock, seed=3, max_shrink_runs=3, round_examples=12)
    assert h2.left_s() <= 0
    assert h2.hunt()["runs"] == before == fake.n  # nothing left in the budget: no new run


def test_a_resumed_campaign_replays_its_rounds_from_the_file(pool, tmp_path):
    fake = FakeRuns(tmp_path / "runs")
    out = tmp_path / "c"
    H.Hunter("3.5.2", budget_s=500, out_dir=out, results_root=tmp_path, pool=pool, runner=fake, clock=fake.clock,
             seed=5, round_examples=12).hunt()
    assert fake.n == 5
    H.Hunter("3.5.2", budget_s=800, out_dir=out, results_root=tmp_path, pool=pool, runner=fake, clock=fake.clock,
             seed=5, round_examples=12).hunt()
    recs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert fake.n == len(recs) == 8 and len({r["key"] for r in recs}) == 8  # 3 new runs, none repeated


def test_summary_figures_from_a_campaign_folder(tmp_path):
    out = tmp_path / "camp"
    out.mkdir()
    (out / "campaign.json").write_text(json.dumps({"kafka_version": "3.5.2", "client": None, "seed": 1, "budget_s": 600,
                                                   "pool": ["smoke"]}))
    rows = [
        {"n": 1, "valid": True, "failing": [], "machine_s": 90.0},
        {"n": 2, "valid": False, "failing": ["stalled-lso"], "finding": "KAFKA-14402 (looks-like)", "machine_s": 120.0},
        {"n": 3, "valid": "error", "failing": [], "machine_s": 30.0},
        {"n": 4, "valid": False, "failing": ["G1a"], "finding": "new: G1a", "machine_s": 60.0},
        {"n": 5, "valid": False, "failing": ["stalled-lso"], "finding": "KAFKA-14402 (looks-like)", "machine_s": 60.0},
    ]
    (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + "not json\n")
    s = H.summarize(out)
    assert (s["runs"], s["machine_minutes"], s["valid"], s["invalid"], s["other"]) == (5, 6.0, 1, 3, 1)
    assert [(f["name"], f["first_run"], f["machine_minutes_to_first"], f["runs"]) for f in s["findings"]] == [
        ("KAFKA-14402 (looks-like)", 2, 3.5, 2), ("new: G1a", 4, 5.0, 1)]
    assert s["kafka_version"] == "3.5.2" and s["hunt"]["pool"] == ["smoke"] and len(s["hunt"]["runs"]) == 5
    assert s["hunt"]["space"]["producer"]["librdkafka"][0]["source"]
    H.write_outputs(out, s)
    assert "KAFKA-14402" in (out / "summary.html").read_text()


def test_finding_names():
    assert H.finding_name({"known_bugs": [{"id": "KAFKA-14402", "match": "looks-like"}], "failing": ["G1a"]}) == \
        "KAFKA-14402 (looks-like)"
    assert H.finding_name({"known_bugs": [], "failing": ["lost-write", "G1a"]}) == "new: G1a, lost-write"
    # a resemblance is not a name: the 4.2.2 Java torn transaction of 2026-11-29 was filed as
    # "F1 (resembles), KAFKA-14402 (resembles), KAFKA-17754 (resembles)"
    torn = {"known_bugs": [{"id": "KAFKA-17754", "match": "resembles"}, {"id": "F1", "match": "resembles"}],
            "failing": ["torn-transaction", "lost-write"]}
    assert H.finding_name(torn) == "new: lost-write, torn-transaction (resembles F1, KAFKA-17754)"
    both = {"known_bugs": [{"id": "KAFKA-14402", "match": "looks-like"}, {"id": "F1", "match": "resembles"}],
            "failing": ["G1a"]}
    assert H.finding_name(both) == "KAFKA-14402 (looks-like)"


# ---------------------------------------------------------------- the command

@pytest.mark.parametrize("args,says", [
    ([], "--kafka-version is required"),
    (["--kafka-version", "3.5.2"], "--budget-s is required"),
    (["--kafka-version", "3.4.0", "--budget-s", "60"], "older than 3.5.0"),
    (["--kafka-version", "3.5.2", "--budget-s", "-5"], "--budget-s -5"),
    (["--kafka-version", "3.5.2", "--budget-s", "60", "--client", "kafkajs"], "pick librdkafka or java"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    r = CliRunner().invoke(app, ["hunt", *args, "--dry-run"])
    assert r.exit_code == 2, r.output
    text = r.output.strip()
    assert says in text and len(text.splitlines()) == 1, text


def test_dry_run_prints_the_plan_without_a_cluster(monkeypatch):
    monkeypatch.setattr(H, "POOL", POOL_NAMES)
    monkeypatch.setattr(H.load_pool, "__defaults__", (None, POOL_NAMES))
    r = CliRunner().invoke(app, ["hunt", "--kafka-version", "3.5.2", "--budget-s", "600", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["estimated_runs"] == 4 and len(doc["draws"]) == 4
    assert {e["name"] for e in doc["pool"]} == set(POOL_NAMES)
    assert doc["draws"][0]["scenario"] == "smoke" and doc["draws"][0]["draw"]["producer"] == {}  # the simplest first


def test_a_drawn_transaction_version_reaches_the_storage_format(tmp_path):
    from harness.cluster.kafka import KafkaNode

    entry = H.load_pool("4.4.0", names=("smoke",))[0]
    assert S.transaction_version_choice("4.4.0") == (2, 1)  # the release's default first
    scn = S.apply(entry.base, S.Draw("java", features={"transaction.version": 1}))
    assert scn.cluster.features == {"transaction.version": 1}
    node = KafkaNode(1, SimpleNamespace(address="10.0.0.1"),
                     SimpleNamespace(release=Release("4.4.0"), classpath="kafka.jar"), tmp_path, tmp_path / "log",
                     features=dict(scn.cluster.features))
    cmd = node.format_cmd("cluster-id")
    assert cmd[cmd.index("--feature") + 1] == "transaction.version=1"


def test_a_run_stopped_while_queued_for_the_cluster_lock_costs_no_machine_time(pool, tmp_path):
    def queued(scn, results_root, *, source, stop, progress):
        raise RuntimeError("LockWaitStopped: stopped while waiting for the cluster lock")

    ticks = iter(range(0, 10_000, 60))  # 60 s queued between the run's start and its end
    h = H.Hunter("3.5.2", budget_s=300, out_dir=tmp_path / "c", results_root=tmp_path, pool=pool, runner=queued,
                 clock=lambda: float(next(ticks)))
    rec = h.run_example({"scenario": "smoke", "draw": S.Draw("librdkafka"),
                         "schedule": {"duration": 20, "faults": []}}, "search")
    assert rec["valid"] == "error" and rec["machine_s"] == 0.0 and "LockWaitStopped" in rec["error"]


def test_no_hunt_run_is_shorter_than_its_load_floor(pool):
    # the first campaign's 10 s loads on 3.5.2 ended before the first init (UNKNOWN): every
    # example the strategy draws, and the simplest one it shrinks to, has >= MIN_LOAD_S of load
    strat = H.examples(pool, "3.5.2")
    loads = []

    @given(strat)
    @settings(database=None, max_examples=60, suppress_health_check=list(HealthCheck), deadline=None)
    def draw(ex):
        loads.append(ex["schedule"]["duration"])

    draw()
    assert loads and min(loads) >= H.MIN_LOAD_S > 10
    simplest = find(strat, lambda ex: True, settings=settings(database=None, suppress_health_check=list(HealthCheck)))
    assert simplest["schedule"]["duration"] == H.MIN_LOAD_S
