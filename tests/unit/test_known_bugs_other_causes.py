"""The verdict names only bugs it has shown (issue 43 section 1; checkers/known_bugs/bugs.py,
docs/known-bugs.md "A name needs its own mark").

For every signature, the same anomaly from another cause, inside the bug's affected range: a
tiny history through ``checkers.verdict.check`` (or ``check_run`` where scenario.yaml's
workload matters) whose verdict must not say "looks like" that bug. Each of these said it
before this change (see the commit message for the runs against the old code). Then the
probes of the issue's "Done when", and every catalogued signature over the project's own
recorded valid runs: nothing "looks like" there, and a valid run's ``known_bugs`` is empty.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import yaml

from checkers.synthetic.build import MS, HistoryBuilder
from checkers.known_bugs.facts import run_facts
from checkers.known_bugs.bugs import CATALOGUE, match
from checkers.run import Verdict
from checkers.verdict import check, check_run

ROOT = Path(__file__).resolve().parents[2]
S = 1000 * MS
TV2 = {"client": {"name": "java", "version": "4.3.1"}, "transaction_version": {"broker": 2, "client": [2]}}
JAVA_TV1 = {"client": {"name": "java", "version": "3.9.1"}, "transaction_version": {"broker": None, "client": [1]}}


def named(v: Verdict) -> dict[str, str]:
    return {m["id"]: m["match"] for m in v.known_bugs}


def _why(v: Verdict, bug: str) -> str:
    return next(m["why"] for m in v.known_bugs if m["id"] == bug)


def run_dir(tmp_path: Path, events: list[dict], meta: dict, workload: dict, fail_on: list | None = None) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    (d / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (d / "meta.json").write_text(json.dumps({**meta, **({"fail_on": fail_on} if fail_on else {})}))
    (d / "scenario.yaml").write_text(yaml.safe_dump({"name": "t", "workload": workload, "expected": []}))
    return d


# -- KAFKA-19367 / KAFKA-20090: failed inits during a coordinator outage -----------------------------------
def init_streak_during_partition(epoch: int | None = None, error=None) -> list[dict]:
    """transactional.id t initialises (epoch ``epoch`` when given, as the Java epoch-burn worker
    records it), commits, then the coordinator is cut off by a partition that lasts to the end
    of the load: two InitProducerId calls time out, 20 s apart, none succeeds."""
    error = error or ["TimeoutException", "Timeout expired after 20000ms while awaiting InitProducerId"]
    b = HistoryBuilder()
    b.invoke(0, "init", None, {"transactional_id": "t"}, time=0)
    b.complete(0, "ok", None, {"transactional_id": "t", **({"producer_id": 3, "producer_epoch": epoch}
                                                         if epoch is not None else {})}, time=50 * MS)
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.nemesis("partition", {"grudge": "coordinator cut off"})
    for n, t in enumerate((2 * S, 22 * S)):
        b.invoke(1 + n, "init", None, {"transactional_id": "t"}, time=t)
        b.complete(1 + n, "fail", None, {"transactional_id": "t"}, error, time=t + 20 * S - MS)
    b.assign(9, ["x/0"])
    b.poll(9, {"x/0": [(0, 1)]}, final=True)
    return b.events


def test_a_valid_run_with_an_init_streak_during_a_partition_names_nothing_at_all():
    """The issue's probe: 4.1.2 / 4.2.2 with transaction version 2, a valid run. Before: the
    liveness report epoch-exhausted and KAFKA-20090 "looks like", KAFKA-19367 "resembles"."""
    for kafka in ("4.0.0", "4.1.2", "4.2.2"):
        v = check(init_streak_during_partition(), meta={"kafka_version": kafka, "workload": "txn-queue", **TV2})
        assert v.valid is True, v.failing
        assert "epoch-exhausted" not in v.counts, v.anomalies.get("epoch-exhausted")
        assert v.known_bugs == [] and v.known_bugs_seen == [], (kafka, v.known_bugs, v.known_bugs_seen)


def test_the_outage_streak_with_fail_on_and_a_recorded_low_epoch_is_not_epoch_exhaustion():
    """The same outage where the scenario fails on epoch-exhausted, with the last ok init's epoch
    recorded far from the end (1200), on 4.0.0 (KAFKA-19367's release) and 4.2.2 (KAFKA-20090's):
    no case, the run valid, nothing named. An UNKNOWN_SERVER_ERROR streak at that epoch neither."""
    for kafka in ("4.0.0", "4.2.2"):
        for err in (None, ["KafkaException", "Unexpected error in InitProducerIdResponse; The server experienced "
                           "an unexpected error when processing the request."]):
            v = check(init_streak_during_partition(epoch=1200, error=err),
                      meta={"kafka_version": kafka, "fail_on": ["epoch-exhausted"], **TV2})
            assert v.valid is True and "epoch-exhausted" not in v.counts, v.counts
            assert v.known_bugs == [], v.known_bugs


def test_the_same_streak_at_the_epochs_end_is_still_caught_and_named():
    """Positive side: the last ok init at 32765 (one transaction after it: 32766), or an error
    that names the overflow, on 4.0.0 with fail_on: KAFKA-19367 looks like it."""
    meta = {"kafka_version": "4.0.0", "fail_on": ["epoch-exhausted"], **TV2}
    v = check(init_streak_during_partition(epoch=32765), meta=meta)
    assert v.valid is False and "epoch-exhausted" in v.failing
    case = v.anomalies["epoch-exhausted"][0]
    assert case["epoch_reached"] == 32766 and "within 64 of 32766" in case["epoch_evidence"]
    assert named(v)["KAFKA-19367"] == "looks-like"
    overflow = ["IllegalStateException", "Cannot fence producer with epoch equal to Short.MaxValue since this "
                "would overflow"]
    v = check(init_streak_during_partition(error=overflow), meta=meta)
    assert "overflow" in v.anomalies["epoch-exhausted"][0]["epoch_evidence"] and named(v)["KAFKA-19367"] == "looks-like"


# -- KAFKA-17754: F1's torn or lost write on a librdkafka run ----------------------------------------------------
def torn() -> list[dict]:
    """A committed transaction's write to y/0 never visible in the final reads (torn, unseen)."""
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0), ("y/0", 2, 0)], tid="t")
    b.assign(1, ["x/0", "y/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    return b.events


def lost() -> list[dict]:
    """A committed write at offset 0 never read although offset 1 was (lost-write, unseen)."""
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.txn(0, [("x/0", 2, 1)], tid="t")
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(1, 2)]}, final=True)
    return b.events


def test_a_librdkafka_torn_transaction_on_4_3_1_without_g1a_or_workload_is_not_kafka_17754():
    """The issue's probe: an eos-pipeline run (librdkafka, transaction version 1) on 4.3.1 with
    a torn transaction, no G1a, no scenario.yaml. F1's purge without an epoch bump explains it
    as well: KAFKA-17754 only resembles."""
    v = check(torn(), meta={"kafka_version": "4.3.1", "workload": "eos-pipeline"})
    assert "torn-transaction" in v.failing and "G1a" not in v.counts
    assert named(v).get("KAFKA-17754") == "resembles", v.known_bugs
    assert "F1 explains it as well" in _why(v, "KAFKA-17754")
    assert "looks-like" not in named(v).values()


def test_an_app_run_with_a_lost_write_on_3_9_1_only_resembles_kafka_17754():
    """An app run (client not known) on 3.9.1 with a lost write: librdkafka's F1 is as likely."""
    v = check(lost(), meta={"kafka_version": "3.9.1", "workload": "app"})
    assert "lost-write" in v.failing
    assert named(v).get("KAFKA-17754") == "resembles" and "client is not known" in _why(v, "KAFKA-17754")


def test_a_java_lost_write_on_3_9_1_keeps_the_name_and_says_what_else_explains_it():
    """Where the name stays (the Java client on transaction version 1 may well meet
    KAFKA-17754), the verdict says the other explanations."""
    v = check(lost(), meta={"kafka_version": "3.9.1", "workload": "txn-queue", **JAVA_TV1})
    assert named(v).get("KAFKA-17754") == "looks-like", v.known_bugs
    why = _why(v, "KAFKA-17754")
    assert "also explained by" in why and "unclean leader election" in why and "F1" not in why


def test_a_librdkafka_lost_write_with_inflight_abort_reuse_is_f1_and_17754_yields(tmp_path):
    d = run_dir(tmp_path, lost(), {"kafka_version": "4.3.1", "workload": "txn-queue"},
                {"name": "txn-queue", "inflight_abort": "reuse", "producer": {}})
    v = check_run(d)
    assert named(v).get("F1") == "looks-like" and named(v).get("KAFKA-17754") == "resembles"


# -- KAFKA-14402: a G1a from a read_uncommitted reader ----------------------------------------------------------
def aborted_read(isolation: str | None) -> list[dict]:
    """An aborted transaction's write returned by a poll of a consumer whose assign says
    ``isolation`` (G1a: allowed for a read_uncommitted reader only by the scenario's word)."""
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.txn(0, [("x/0", 2, 1)], "fail", tid="t")
    b.assign(1, ["x/0"], isolation=isolation)
    b.poll(1, {"x/0": [(0, 1), (1, 2)]}, final=True)
    return b.events


OLD_LIBRDKAFKA = {"kafka_version": "3.5.2", "client": {"name": "librdkafka", "version": "2.16.0"},
                  "transaction_version": {"broker": None, "client": [1]}}


def test_a_g1a_from_a_read_uncommitted_reader_on_3_5_2_is_not_kafka_14402():
    """meta.json names no isolation level (another tool's history, an older run), the reader's
    assign says read_uncommitted: the aborted read is what such a consumer does, not a hanging
    transaction nor KAFKA-17754."""
    v = check(aborted_read("read_uncommitted"), meta=OLD_LIBRDKAFKA)
    assert v.failing == ["G1a"]
    assert "KAFKA-14402" not in named(v) and "KAFKA-17754" not in named(v), v.known_bugs
    assert v.anomalies["G1a"][0]["reader_isolation_level"] == "read_uncommitted"
    # the same history from a read_committed reader is the bug's mark
    v = check(aborted_read("read_committed"), meta=OLD_LIBRDKAFKA)
    assert named(v).get("KAFKA-14402") == "looks-like", v.known_bugs
    # a reader whose isolation nobody recorded: resembles, and says why
    v = check(aborted_read(None), meta=OLD_LIBRDKAFKA)
    assert named(v).get("KAFKA-14402") == "resembles" and "not known to have read committed" in _why(v, "KAFKA-14402")


def test_a_g1a_with_skipped_markers_on_3_5_2_is_not_kafka_14402():
    skipped = {"skipped-txn-markers": {"count": 1, "partitions": ["x-0"], "transactional_ids": ["t"]}}
    v = check(aborted_read("read_committed"), meta={**OLD_LIBRDKAFKA, "broker_events": skipped})
    assert "KAFKA-14402" not in named(v) and "looks-like" not in named(v).values(), v.known_bugs


# -- KAFKA-15653: a server error from a killed broker ------------------------------------------------------------
def server_error_under_a_kill() -> list[dict]:
    """A transactional produce answered UNKNOWN_SERVER_ERROR while its partition's leader was
    killed (the nemesis kill 1 s before the txn completed)."""
    b = HistoryBuilder(step_ns=1 * S)
    b.txn(0, [("x/0", 1, 0)], tid="t")
    i = b.invoke(0, "txn", [["send", "x/0", 2]], {"transactional_id": "t"})
    b.nemesis("kill", {"node": 2})
    b.nemesis("kill", {"node": 2, "result": "killed"})
    b.complete(0, "fail", [["send", "x/0", [None, 2]]], {"transactional_id": "t"},
               ["UNKNOWN_SERVER_ERROR", "Broker: Unknown broker error"])
    assert i
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    return b.events


COMPRESSED = {"name": "txn-queue", "producer": {"compression.type": "lz4"}}


def test_a_server_error_from_a_killed_broker_on_3_6_0_is_not_kafka_15653(tmp_path):
    d = run_dir(tmp_path, server_error_under_a_kill(), {"kafka_version": "3.6.0", "workload": "txn-queue"},
                COMPRESSED, fail_on=["server-error"])
    v = check_run(d)
    assert v.failing == ["server-error"]
    assert named(v).get("KAFKA-15653") == "resembles", v.known_bugs
    assert "broker fault" in _why(v, "KAFKA-15653") and v.anomalies["server-error"][0]["node_faults"]


def test_a_server_error_that_does_not_fail_the_run_is_only_seen(tmp_path):
    """No fail_on: the report is there but the run is valid: nothing named, the signature under
    "seen" (and never "looks like")."""
    d = run_dir(tmp_path, server_error_under_a_kill(), {"kafka_version": "3.6.0", "workload": "txn-queue"},
                COMPRESSED)
    v = check_run(d)
    assert v.valid is True and v.known_bugs == []
    assert [(m["id"], m["match"]) for m in v.known_bugs_seen] == [("KAFKA-15653", "seen")]
    assert "looks like" not in v.known_bugs_seen[0]["why"]


def test_the_report_lists_a_valid_runs_signature_under_seen_in_a_valid_run(tmp_path):
    from harness.report.render import check_and_render

    d = run_dir(tmp_path, server_error_under_a_kill(), {"kafka_version": "3.6.0", "workload": "txn-queue"},
                COMPRESSED)
    html = check_and_render(d)[1].read_text()
    assert 'id="known-bugs"' not in html
    box = html.split('id="known-bugs-seen"')[1].split("</div>")[0]
    assert "<strong>Seen in a valid run</strong>" in box and "<b>KAFKA-15653</b>" in box
    assert "looks like" not in box and "resembles" not in box


def test_a_server_error_with_no_fault_near_and_compression_looks_like_kafka_15653(tmp_path):
    b = HistoryBuilder(step_ns=1 * S)
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.txn(0, [("x/0", 2, None)], "fail", tid="t", error=["UNKNOWN_SERVER_ERROR", "Broker: Unknown broker error"])
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    d = run_dir(tmp_path, b.events, {"kafka_version": "3.6.0", "workload": "txn-queue"}, COMPRESSED,
                fail_on=["server-error"])
    assert named(check_run(d)).get("KAFKA-15653") == "looks-like"


# -- F9: a torn transaction from another cause on a release in its range ----------------------------------------
def test_a_torn_transaction_without_stale_markers_on_4_2_2_is_not_f9():
    """A torn transaction on 4.2.2 with the Java client whose brokers logged no
    txn-markers-from-truncated-tail: not F9 (whatever else tore it), whether the brokers logged
    nothing, skipped markers (KAFKA-20734's) or an unclean leader election (a write lost with
    the leader)."""
    meta = {"kafka_version": "4.2.2", "workload": "txn-queue", **TV2}
    unclean = {"unclean-leader-election": {"count": 1, "partitions": ["y-0"], "transactional_ids": [], "node": "n1"}}
    skipped = {"skipped-txn-markers": {"count": 1, "partitions": ["y-0"], "transactional_ids": ["t"], "node": "n3"}}
    for events in ({}, unclean, skipped):
        v = check(torn(), meta={**meta, "broker_events": events})
        assert v.failing == ["torn-transaction", "unseen"]
        assert "F9" not in named(v), (events, v.known_bugs)
    assert named(v) == {"KAFKA-20734": "looks-like"}


# -- every signature over the project's own recorded valid runs -----------------------------------------------
def _recorded_valid() -> list[tuple[str, Verdict, dict, dict | None]]:
    """(name, verdict, meta, workload) of each recorded valid run: tests/data's histories
    re-checked with their meta.json (and scenario allowances where the run has them), the
    recorded verdict.json files under tests/data and docs (detection-runs, findings evidence,
    soak-runs) and the group-protocols suite's rows."""
    out = []
    for d in sorted((ROOT / "tests" / "data").iterdir()):
        meta_p = d / "meta.json"
        meta = json.loads(meta_p.read_text()) if meta_p.is_file() else {}
        if (d / "history.jsonl").is_file():
            v = check(d / "history.jsonl", meta=meta, allowed=["G0", "G0-process", "G0-realtime", "G1c-realtime"])
            out.append((f"tests/data/{d.name} (re-checked)", v, meta, None))
        if (d / "verdict.json").is_file():
            out.append((f"tests/data/{d.name}/verdict.json", Verdict.coerce(json.loads((d / "verdict.json").read_text())),
                        meta, None))
    soak = ROOT / "docs" / "soak-runs" / "2026-11-25-soak-s1"
    gz = ROOT / "tests" / "data" / "real-soak-s1-excerpt" / "history.jsonl.gz"
    excerpt = [json.loads(x) for x in gzip.decompress(gz.read_bytes()).decode().splitlines() if x.strip()]
    soak_meta = json.loads((soak / "meta.json").read_text())
    out.append(("tests/data/real-soak-s1-excerpt (re-checked)",
                check(excerpt, meta={"pipeline": soak_meta.get("pipeline")},
                      allowed=["G0", "G0-process", "G0-realtime", "G1c-realtime"]), soak_meta, None))
    for p in sorted(ROOT.glob("docs/**/*.json")):
        data = json.loads(p.read_text())
        if isinstance(data, dict) and "valid" in data and "anomaly_counts" in data:
            meta_p = p.with_name(p.name.replace("verdict", "meta"))
            meta = json.loads(meta_p.read_text()) if meta_p != p and meta_p.is_file() else {}
            out.append((str(p.relative_to(ROOT)), Verdict.coerce(data), meta or data, None))
    for line in (ROOT / "docs" / "suite-runs" / "group-protocols" / "runs.jsonl").read_text().splitlines():
        row = json.loads(line)
        out.append((f"group-protocols {row['id']}", Verdict.coerce(row), row, None))
    return [x for x in out if x[1].valid is True]


def test_no_signature_looks_like_anything_in_the_projects_recorded_valid_runs():
    runs = _recorded_valid()
    assert len(runs) >= 30, [r[0] for r in runs]  # the suite's 36 rows are mostly valid, and the tests/data runs
    for name, v, meta, workload in runs:
        assert v.known_bugs == [] or name.endswith("verdict.json") or "group-protocols" in name, name
        ms = match(v, meta, workload)
        assert all(m.match == "seen" for m in ms), (name, [(m.id, m.match) for m in ms])
        assert not any("looks like" in m.why for m in ms), name
        facts = run_facts(meta, workload)
        for bug in CATALOGUE:  # each signature on its own: none rests on a name failing a valid run
            fit = bug.signature(v, facts)
            assert fit is None or not set(fit.rests_on) & v.failing_names, (name, bug.id)
    # the one recorded valid run that a signature fits: KAFKA-20765's stall, seen, not named
    seen = {name: [m.id for m in match(v, meta)] for name, v, meta, _ in runs if match(v, meta)}
    assert seen and all(ids == ["KAFKA-20765"] for ids in seen.values()), seen
