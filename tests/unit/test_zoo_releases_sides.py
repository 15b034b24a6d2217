"""Issue 43 section 2, "controls that differ only in the fix", without a cluster: every release
entry's two sides compared field by field (only the fix it names may differ), KAFKA-17754 as a
librdkafka mutant F1 alone cannot satisfy plus a Java transaction.version 1 vs 2 entry whose
sides differ in cluster.features.transaction.version alone, KAFKA-14402 labelled by
what it replays, and the epoch bugs' fixed side judged by the producer epoch it reached
(harness.detect.zoo_releases)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from harness.cli.main import app
from harness.detect import zoo
from harness.detect import zoo_releases as zr
from harness.run.runner import RunResult
from tests.unit.test_zoo import BASE, StandIn
from tests.unit.test_zoo_releases import RELEASE, release_zoo

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "scenarios" / "zoo"
DATA = ROOT / "tests" / "data"
#: the anomalies finding F1 makes on its own (checkers.known_bugs.signatures.sig_f1)
F1_ANOMALIES = {"lost-write", "torn-transaction", "unseen"}


def shipped_release_files() -> list[Path]:
    return [f for f in sorted(ZOO.glob("*.yaml")) if "upstream" in (yaml.safe_load(f.read_text()) or {})]


# -- 1. the two sides differ in the fix alone ------------------------------------------------------

def test_every_shipped_release_entrys_sides_differ_only_in_the_fix_it_names():
    """Field by field over the merged scenarios of both sides (every field the scenario model
    has, defaults included): only the name and the fix's own field may differ; the fix's field
    must. Each upstream block names its fix."""
    files = shipped_release_files()
    assert len(files) >= 5
    problems = []
    for f in files:
        raw = yaml.safe_load(f.read_text())["upstream"]
        if "fix" not in raw:
            problems.append(f"{f.name}: the upstream block does not name its fix (fix: ...)")
        a, x = zoo.load_entries(f)
        assert (a.side, x.side) == ("affected", "fixed")
        up = a.upstream
        bad, fix_differs = zr.side_differences(zr.side_view(a.scenario, up.affected),
                                               zr.side_view(x.scenario, up.fixed), up.fix)
        problems += [f"{a.release}: {b} (its fix is {up.fix})" for b in bad]
        if not fix_differs:
            problems.append(f"{a.release}: the sides do not differ in the fix ({up.fix})")
    assert not problems, "\n".join(problems)


def test_the_shipped_fixes_are_the_release_or_transaction_version():
    fixes = {zoo.load_entry(f).release: zoo.load_entry(f).upstream.fix for f in shipped_release_files()}
    assert fixes == {"kafka-14402": "kafka_version", "kafka-15653": "kafka_version", "kafka-17754": "transaction.version",
                     "kafka-19367": "kafka_version", "kafka-20090": "kafka_version"}


def _entry(tmp_path: Path, upstream_sides: str, extra: str = "") -> Path:
    text = RELEASE.replace("  affected: {kafka_version: 3.5.2}\n  fixed: {kafka_version: 3.6.0}\n", upstream_sides) + extra
    return release_zoo(tmp_path, text) / "kafka-1.yaml"


@pytest.mark.parametrize("sides, field", [
    # KAFKA-17754 as it was: the client and its timeout key both differ
    ("  fix: client\n  affected: {kafka_version: 4.4.0, client: librdkafka, workload: {producer: {socket.timeout.ms: 1500}}}\n"
     "  fixed: {kafka_version: 4.4.0, client: java, workload: {producer: {request.timeout.ms: 1500}}}\n",
     "workload.producer.request.timeout.ms"),
    # a release fix whose control also changes the client
    ("  fix: kafka_version\n  affected: {kafka_version: 3.5.2, client: librdkafka}\n  fixed: {kafka_version: 3.6.0, client: java}\n",
     "workload.client"),
    # a client fix whose control also changes the release
    ("  fix: client\n  affected: {kafka_version: 4.3.1, client: librdkafka}\n  fixed: {kafka_version: 4.4.0, client: java}\n",
     "cluster.kafka_version"),
    # anything else: a broker setting, the schedule
    ("  fix: kafka_version\n  affected: {kafka_version: 3.5.2}\n"
     "  fixed: {kafka_version: 3.6.0, cluster: {broker: {transaction.partition.verification.enable: 'true'}}}\n",
     "cluster.broker.transaction.partition.verification.enable"),
    ("  fix: kafka_version\n  affected: {kafka_version: 3.5.2}\n  fixed: {kafka_version: 3.6.0, nemesis: {interval_s: [1, 2]}}\n",
     "nemesis.interval_s"),
])
def test_a_side_that_differs_in_anything_but_the_fix_is_refused_naming_entry_and_field(tmp_path, sides, field):
    with pytest.raises(zoo.ZooError, match=r"release entry kafka-1's sides differ in " + field.replace(".", r"\.")):
        zoo.load_entries(_entry(tmp_path, sides))


def test_the_fix_is_derived_when_one_thing_differs_and_must_be_named_otherwise(tmp_path):
    a, _ = zoo.load_entries(release_zoo(tmp_path / "d") / "kafka-1.yaml")
    assert a.upstream.fix == "kafka_version"
    two = "  affected: {kafka_version: 4.3.1, client: librdkafka}\n  fixed: {kafka_version: 4.4.0, client: java}\n"
    with pytest.raises(zoo.ZooError, match="name the one that is the fix"):
        zoo.load_entries(_entry(tmp_path / "two", two))
    absent = "  fix: transaction.version\n  affected: {kafka_version: 3.5.2}\n  fixed: {kafka_version: 3.6.0}\n"
    with pytest.raises(zoo.ZooError, match="fix: transaction.version is given by neither side"):
        zoo.load_entries(_entry(tmp_path / "absent", absent))
    with pytest.raises(zoo.ZooError, match="fix"):
        zoo.load_entries(_entry(tmp_path / "typo", "  fix: release\n  affected: {kafka_version: 3.5.2}\n"
                                                    "  fixed: {kafka_version: 3.6.0}\n"))


def test_differences_walks_mappings_and_compares_the_rest_whole():
    got = zr.differences({"a": {"b": 1, "c": [1, 2]}, "d": 1}, {"a": {"b": 1, "c": [1, 3], "e": 0}, "d": 1})
    assert got == [(("a", "c"), [1, 2], [1, 3]), (("a", "e"), None, 0)]
    bad, fix = zr.side_differences({"name": "x.affected", "cluster": {"features": {"transaction.version": 1}}},
                                   {"name": "x.fixed", "cluster": {"features": {"transaction.version": 2}}},
                                   "transaction.version")
    assert (bad, fix) == ([], True)


# -- 2. feature levels: the Java transaction.version 1 vs 2 control ----------------------------------

FEATURE_SIDES = ("  fix: transaction.version\n  affected: {kafka_version: 4.4.0, features: {transaction.version: 1}}\n"
                 "  fixed: {kafka_version: 4.4.0, features: {transaction.version: 2}}\n")


def test_a_feature_level_fix_runs_with_the_levels_under_cluster_features(tmp_path):
    """Scenarios have cluster.features: each side's levels are its scenario's, the two merged
    scenarios differ in cluster.features.<fix> alone, and the entry runs (both sides) when named."""
    assert zr.cluster_features_supported()
    d = _entry(tmp_path / "r", FEATURE_SIDES).parent
    a, x = zoo.load_entries(d / "kafka-1.yaml")
    assert (a.scenario.cluster.features, x.scenario.cluster.features) == ({"transaction.version": 1},
                                                                          {"transaction.version": 2})
    bad, fix_differs = zr.side_differences(zr.side_view(a.scenario, a.upstream.affected),
                                           zr.side_view(x.scenario, x.upstream.fixed), "transaction.version")
    assert (bad, fix_differs) == ([], True)
    assert zr.describe_side(a.scenario, x.scenario, a.upstream.describe_fix("affected")) == \
        "Kafka 4.4.0, transaction.version 1"
    assert zr.unsupported(a.upstream) is None
    assert sorted(e.name for e in zoo.load_zoo(d, only=["kafka-1"])) == ["kafka-1.affected", "kafka-1.fixed"]
    assert zr.side_overrides({"kafka_version": "4.4.0", "features": {"transaction.version": 1}}) == {
        "cluster": {"kafka_version": "4.4.0", "features": {"transaction.version": 1}}}
    # a level the release cannot format is refused when the side's scenario is validated
    old = FEATURE_SIDES.replace("kafka_version: 4.4.0", "kafka_version: 3.7.0")
    with pytest.raises(zoo.ZooError, match="cannot be set on Kafka 3.7.0"):
        zoo.load_entries(_entry(tmp_path / "old", old + "  reproduced: false\n"))


def test_without_cluster_features_a_feature_level_fix_loads_as_a_measurement_but_never_runs(tmp_path, monkeypatch):
    """The guard for a harness whose scenario model has no cluster.features (as before issue 43
    section 2 built it): such an entry must be reproduced: false, it loads (and is compared, the
    levels under cluster.features), and naming it is refused with why."""
    monkeypatch.setattr(zr, "cluster_features_supported", lambda: False)
    with pytest.raises(zoo.ZooError, match="no cluster.features field yet.*reproduced: false"):
        zoo.load_entries(_entry(tmp_path / "r", FEATURE_SIDES))
    sides = FEATURE_SIDES + "  reproduced: false\n  tried: not measured yet\n"
    d = _entry(tmp_path / "m", sides).parent
    a, x = zoo.load_entries(d / "kafka-1.yaml")
    assert zr.side_view(a.scenario, a.upstream.affected)["cluster"]["features"] == {"transaction.version": 1}
    assert [e.name for e in zoo.load_zoo(d)] == ["ctl"]                        # not run by default
    with pytest.raises(zoo.ZooError, match="kafka-1 cannot run on this harness yet: .*transaction.version=1"):
        zoo.load_zoo(d, only=["kafka-1"])
    assert zr.side_overrides({"features": {"transaction.version": 1}}, features=False) == {}


@pytest.mark.parametrize("bad", ["{transaction.version: one}", "{}", "[transaction.version]", "{transaction.version: true}"])
def test_feature_levels_must_be_names_with_whole_levels(tmp_path, bad):
    sides = FEATURE_SIDES.replace("features: {transaction.version: 1}", f"features: {bad}")
    with pytest.raises(zoo.ZooError, match="features must map feature names to levels"):
        zoo.load_entries(_entry(tmp_path, sides + "  reproduced: false\n"))


def test_kafka_17754_librdkafka_is_a_mutant_that_f1_alone_cannot_satisfy(tmp_path):
    from checkers.known_bugs.signatures import sig_f1
    from checkers.run import Verdict

    e, = zoo.load_entries(ZOO / "kafka-17754-librdkafka.yaml")
    assert e.upstream is None and e.kind == "mutant"                            # no "fixed" side it does not have
    assert (e.scenario.workload.client, e.scenario.cluster.kafka_version) == ("librdkafka", "4.4.0")
    assert e.scenario.workload.inflight_abort == "reuse"                        # the route through F1
    assert set(e.must_find) and not set(e.must_find) & F1_ANOMALIES, e.must_find
    # every must_find name is one F1's signature does not rest on ...
    v = Verdict.coerce({"valid": False, "failing": list(e.must_find), "anomaly_counts": {}, "anomalies": {}})
    assert sig_f1(v, None) is None
    # ... and a run with only F1's anomalies is not counted as caught
    rec = {"status": "invalid", "failing": sorted(F1_ANOMALIES), "run_dir": None}
    assert zoo.run_facts(tmp_path, rec, e, {})["detected"] is False
    rec = {"status": "invalid", "failing": ["G1a", *sorted(F1_ANOMALIES)], "run_dir": None, "fingerprint": "g"}
    assert zoo.run_facts(tmp_path, rec, e, {})["detected"] is True


def test_kafka_17754_release_entry_is_java_on_4_4_0_and_its_sides_differ_only_in_transaction_version(tmp_path):
    """Issue 43 section 2: the same client, release, settings and schedule on both sides; the
    merged scenarios differ, field by field, in cluster.features.transaction.version alone."""
    a, x = zoo.load_entries(ZOO / "kafka-17754.yaml")
    up = a.upstream
    assert (up.id, up.fix) == ("KAFKA-17754", "transaction.version")
    assert (up.affected, up.fixed) == ({"features": {"transaction.version": 1}}, {"features": {"transaction.version": 2}})
    for e in (a, x):
        assert (e.scenario.workload.client, e.scenario.cluster.kafka_version) == ("java", "4.4.0")
    assert (a.scenario.cluster.features, x.scenario.cluster.features) == ({"transaction.version": 1},
                                                                          {"transaction.version": 2})
    va, vx = a.scenario.model_dump(mode="json"), x.scenario.model_dump(mode="json")
    assert zr.differences(va, vx) == [(("cluster", "features", "transaction.version"), 1, 2),
                                      (("name",), "kafka-17754.affected", "kafka-17754.fixed")]
    assert not set(a.must_find) & {"unseen"}
    # a measurement: not in the nightly's selection; the zoo runs both sides when it is named
    _, chosen, _ = zoo.load_selection(ROOT / "scenarios" / "releases.yaml")
    assert "kafka-17754" not in chosen
    if not up.reproduced:
        assert not [e for e in zoo.load_zoo(ZOO) if e.release == "kafka-17754"]
    res = CliRunner().invoke(app, ["zoo", "--dry-run", "--runs", "1", "--only", "kafka-17754",
                                   "--out", str(tmp_path / "zoo")])
    out = " ".join(res.output.split())
    assert res.exit_code == 0 and "kafka-17754.affected/s1" in out and "kafka-17754.fixed/s1" in out, res.output


# -- 4. KAFKA-14402 labelled by what it replays --------------------------------------------------------

def test_kafka_14402_is_labelled_by_what_it_replays_not_by_the_umbrella_tickets_fix_version():
    a, x = zoo.load_entries(ZOO / "kafka-14402.yaml")
    title = a.upstream.title
    assert "hanging transaction" in title and "KIP-890 part 1" in title and "3.6.0" in title and "4.1.0" not in title
    assert (a.scenario.cluster.kafka_version, x.scenario.cluster.kafka_version) == ("3.5.2", "3.6.0")
    assert "umbrella" in (ZOO / "kafka-14402.yaml").read_text()


# -- 3. the epoch bugs' fixed side: did it reach the boundary ----------------------------------------

def _history(path: Path, events: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(dict(e, index=i)) + "\n" for i, e in enumerate(events)))
    return path


def test_epochs_reached_per_transactional_id_from_a_handmade_history(tmp_path):
    h = _history(tmp_path / "history.jsonl", [
        {"type": "invoke", "f": "epoch-burn", "value": {"to": 32740}, "meta": {"transactional_id": "t0"}},
        {"type": "ok", "f": "epoch-burn", "value": {"epoch": 32740}, "meta": {"transactional_id": "t0"}},
        {"type": "ok", "f": "init", "meta": {"transactional_id": "t0", "producer_epoch": 32741}},
        {"type": "fail", "f": "txn", "meta": {"transactional_id": "t0", "producer_epoch": 32766, "abort": "reinit"}},
        {"type": "ok", "f": "init", "meta": {"transactional_id": "t0", "producer_epoch": 0}},   # a new producer id
        {"type": "ok", "f": "init", "meta": {"transactional_id": "t1", "producer_epoch": 7}},
        {"type": "fail", "f": "init", "meta": {"transactional_id": "t1", "producer_epoch": 40000}},  # not reached
        {"type": "info", "f": "epoch-burn", "value": {"epoch": 32000}, "meta": {"transactional_id": "t1"}},
        {"type": "ok", "f": "init", "meta": {"transactional_id": "t2"}},                        # librdkafka: none
    ])
    assert zr.epochs_reached(h) == {"t0": 32766, "t1": 7}
    assert zr.epochs_reached(tmp_path / "missing.jsonl") == {}


def test_epochs_reached_in_the_kept_kafka_4_0_1_epoch_burn_run():
    """tests/data/real-epoch-burn-4.0.1-s1: kafka-19367's fixed side, seed 1 (2026-11-26): both
    transactional.ids held a transaction open at 32766, then got new producer ids."""
    assert zr.epochs_reached(DATA / "real-epoch-burn-4.0.1-s1" / "history.jsonl") == {
        "eosc-txn-0": 32766, "eosc-txn-1": 32766}


def test_epoch_judgement_of_handmade_run_facts():
    runs = [{"seed": 1, "invalid": False, "epochs": {"t0": 32766, "t1": 32766}},    # clean
            {"seed": 2, "invalid": False, "epochs": {"t0": 120, "t1": 32700}},      # did not exercise
            {"seed": 3, "invalid": False, "epochs": None},                           # history not read
            {"seed": 4, "invalid": True, "epochs": {"t0": 5}}]                       # a false alarm anyway
    got = zr.epoch_judgement(runs, 32766)
    assert (got["judged"], got["clean"], got["did_not_exercise"], got["did_not_exercise_seeds"]) == (2, 1, 2, [2, 3])
    assert got["max_epoch_reached"] == 32766
    assert got["max_epoch_by_seed"][1] == {"seed": 2, "max_epoch": 32700}
    assert zr.epoch_judgement([], 32766)["judged"] == 0


EPOCH_RELEASE = RELEASE.replace("  fixed: {kafka_version: 3.6.0}\n", "  fixed: {kafka_version: 3.6.0}\n  must_reach_epoch: 32766\n")


class EpochStandIn(StandIn):
    """StandIn whose history records an ok init at the producer epoch ``epoch(name, seed)``."""

    def __init__(self, outcome, epoch):
        super().__init__(outcome)
        self.epoch = epoch

    def __call__(self, scn, results_root, **kw):
        res = super().__call__(scn, results_root, **kw)
        _history(res.run_dir / "history.jsonl", [
            {"time": 0, "process": 0, "type": "invoke", "f": "init", "meta": {"transactional_id": "t0"}},
            {"time": 1, "process": 0, "type": "ok", "f": "init",
             "meta": {"transactional_id": "t0", "producer_epoch": self.epoch(scn.name, scn.seed)}}])
        return RunResult(res.run_dir, res.verdict, None, [])


def test_a_fixed_side_run_that_never_reached_the_boundary_did_not_exercise_it(tmp_path):
    """zoo.json's release row and the zoo page: seed 2 of the fixed side stopped at epoch 300, so
    it is neither clean nor a false alarm; the false-alarm figures are over the runs judged."""
    entries = zoo.load_zoo(release_zoo(tmp_path, EPOCH_RELEASE), only=["kafka-1"])
    valid = {"valid": True, "failing": [], "anomaly_counts": {}, "anomalies": {}}
    g1a = {"valid": False, "failing": ["G1a"], "anomaly_counts": {"G1a": 1}, "allowed": [], "anomalies": {}}
    runner = EpochStandIn(lambda name, seed: g1a if name.endswith("affected") else valid,
                          lambda name, seed: 300 if seed == 2 else 32766)
    results = tmp_path / "results"
    summary, paths = zoo.run_zoo(entries, results, results / "suites" / "zoo", runs=3, runner=runner)
    row, = summary["releases"]
    f = row["fixed"]
    assert (f["runs"], f["invalid"]) == (3, 0)
    ep = f["epoch"]
    assert (ep["must_reach_epoch"], ep["judged"], ep["clean"], ep["did_not_exercise"]) == (32766, 2, 2, 1)
    assert ep["did_not_exercise_seeds"] == [2] and ep["max_epoch_reached"] == 32766
    assert f["ci95"] == zoo.wilson(0, 2) and f["rate"] == 0.0                  # not 0/3
    assert row["affected"].get("epoch") is None                              # the mutant side is judged as usual
    line = zr.release_line(row)
    assert "0/2 invalid, 2 clean at producer epoch >= 32766, 1 did not exercise" in line, line
    html = " ".join(paths["zoo_html"].read_text().split())
    assert "did not exercise" in html and "seed(s) 2" in html and "2 clean at producer epoch" in html
    doc = json.loads(paths["zoo"].read_text())
    assert doc["releases"][0]["fixed"]["epoch"]["did_not_exercise"] == 1


def test_a_fixed_side_without_a_boundary_keeps_its_plain_false_alarm_count(tmp_path):
    entries = zoo.load_zoo(release_zoo(tmp_path), only=["kafka-1"])
    valid = {"valid": True, "failing": [], "anomaly_counts": {}, "anomalies": {}}
    summary, _ = zoo.run_zoo(entries, tmp_path / "r", tmp_path / "r" / "z", runs=2,
                             runner=StandIn(lambda n, s: valid))
    f = summary["releases"][0]["fixed"]
    assert "epoch" not in f and (f["invalid"], f["runs"], f["ci95"]) == (0, 2, zoo.wilson(0, 2))


def test_the_epoch_entries_declare_their_boundary():
    for name in ("kafka-19367", "kafka-20090"):
        up = zoo.load_entry(ZOO / f"{name}.yaml").upstream
        assert up.must_reach_epoch == 32766, name
        assert up.fix == "kafka_version"
