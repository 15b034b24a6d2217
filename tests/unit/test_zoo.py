"""The bug zoo without a cluster: loading and merging zoo files, the shipped catalogue, the
Wilson interval, time to detect from a verdict and a history, and the loop's figures with a
stand-in runner (the suite's bookkeeping, resume included)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.detect import zoo
from harness.cli.main import app
from harness.run.runner import RunResult
from harness.detect.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "scenarios" / "zoo"

BASE = """name: base
duration: 60
workload: {name: txn-queue, producers: 2, consumers: 1, abort_probability: 0.1}
nemesis: {faults: [kill, pause], interval_s: [10, 15]}
expected: [G0]
"""


def zoo_dir(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "base.yaml").write_text(BASE)
    d = tmp_path / "zoo"
    d.mkdir()
    (d / "ru.yaml").write_text("base: ../base.yaml\nname: ru\nmust_find: [G1a]\nduration: 20\n"
                               "workload: {isolation_level: read_uncommitted}\n")
    (d / "ctl.yaml").write_text("base: ../base.yaml\nname: ctl\ncontrol: true\n")
    return d


# ---------------------------------------------------------------- loading

def test_a_zoo_file_merges_onto_its_base_and_says_what_it_is(tmp_path):
    entries = zoo.load_zoo(zoo_dir(tmp_path))
    assert [(e.name, e.kind, e.must_find) for e in entries] == [("ru", "mutant", ("G1a",)), ("ctl", "control", ())]
    ru = entries[0].scenario
    # mappings merge (producers kept), scalars replaced, lists from the base kept unless given
    assert ru.workload.isolation_level == "read_uncommitted" and ru.workload.producers == 2
    assert ru.duration == 20 and ru.expected == ["G0"] and [f.fault for f in ru.nemesis.faults] == ["kill", "pause"]
    assert zoo.deep_merge({"a": {"b": 1, "c": [1]}}, {"a": {"c": [2]}, "d": 3}) == {"a": {"b": 1, "c": [2]}, "d": 3}
    assert [e.name for e in zoo.load_zoo(zoo_dir(tmp_path / "x"), only=["ctl"])] == ["ctl"]


@pytest.mark.parametrize("text, message", [
    ("base: ../base.yaml\nname: a\n", "either must_find"),
    ("base: ../base.yaml\nname: a\nmust_find: [G1a]\ncontrol: true\n", "either must_find"),
    ("base: ../base.yaml\nname: a\nmust_find: G1a\n", "list of anomaly names"),
    ("base: ../base.yaml\nname: a\nmust_find: [G0]\n", "both in must_find and in expected"),
    ("base: ../nope.yaml\nname: a\ncontrol: true\n", "does not exist"),
    ("base: ../base.yaml\nname: a\ncontrol: true\nworkload: {isolation: x}\n", "workload"),
    ("[unclosed", "not valid YAML"),
])
def test_bad_zoo_files_say_what_to_fix(tmp_path, text, message):
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "zoo").mkdir()
    p = tmp_path / "zoo" / "z.yaml"
    p.write_text(text)
    with pytest.raises(zoo.ZooError, match=message):
        zoo.load_entry(p)


def test_only_names_an_entry_that_exists(tmp_path):
    with pytest.raises(zoo.ZooError, match="no zoo entry named"):
        zoo.load_zoo(zoo_dir(tmp_path), only=["nope"])


def test_the_shipped_zoo_has_every_mutant_the_issue_names_and_controls():
    entries = zoo.load_zoo(ZOO)
    mutants = {e.name: e for e in entries if e.kind == zoo.MUTANT}
    assert {"idempotence-off", "read-uncommitted", "offsets-outside-txn", "fresh-txn-id", "inflight-abort-reuse",
            "auto-commit", "spark-read-uncommitted", "spark-kafka-sink-alo", "acks1-unclean"} <= set(mutants)
    assert mutants["read-uncommitted"].scenario.workload.isolation_level == "read_uncommitted"
    assert mutants["idempotence-off"].scenario.workload.idempotence is False
    assert mutants["offsets-outside-txn"].scenario.workload.offsets == "commit-before"
    assert mutants["auto-commit"].scenario.workload.offsets == "consumer"
    assert mutants["inflight-abort-reuse"].scenario.workload.inflight_abort == "reuse"
    assert mutants["acks1-unclean"].scenario.cluster.broker["unclean.leader.election.enable"] == "true"
    assert "sink-duplicate" not in mutants["spark-kafka-sink-alo"].scenario.expected
    controls = [e for e in entries if e.kind == zoo.CONTROL]
    assert len(controls) >= 4
    for e in entries:  # what catches a mutant is never allowed by it
        assert not set(e.must_find) & set(e.scenario.expected), e.name


def test_the_nightly_job_runs_the_whole_zoo():
    """The nightly tier (scenarios/tiers/nightly.yaml, what docs/nightly.md's workflow shards)
    takes every zoo file (no `only`: a new zoo file is in the nightly zoo without a list to
    update), once per entry."""
    from harness.detect import suite as st

    spec = st.load_suite(ROOT / "scenarios" / "tiers" / "nightly.yaml")
    assert [(z.path, z.runs, z.only) for z in spec.zoos] == [("../zoo", 1, None)]
    text = (ROOT / "docs" / "nightly.md").read_text()
    assert "scenarios/tiers/nightly.yaml" in text and "--only" not in text


# ---------------------------------------------------------------- figures

def test_wilson_interval():
    assert zoo.wilson(0, 0) is None
    lo, hi = zoo.wilson(10, 10)
    assert hi == 1.0 and 0.72 < lo < 0.73            # the interval of 10/10 still admits 72 %
    lo, hi = zoo.wilson(0, 20)
    assert lo == 0.0 and 0.16 < hi < 0.17            # 0 false positives in 20 runs: <= 16 % at 95 %
    lo, hi = zoo.wilson(5, 10)
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-9


def history_file(tmp_path: Path, events: list[dict]) -> Path:
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(dict(e, index=i)) + "\n" for i, e in enumerate(events)))
    return p


def test_time_to_detect_is_when_the_earliest_example_was_complete_from_the_load_start(tmp_path):
    s = 1_000_000_000
    h = history_file(tmp_path, [
        {"time": 1 * s, "process": 0, "type": "invoke", "f": "txn"},            # 0
        {"time": 2 * s, "process": "nemesis", "type": "info", "f": "kill"},     # 1: the first fault
        {"time": 3 * s, "process": 0, "type": "fail", "f": "txn"},              # 2
        {"time": 4 * s, "process": 1, "type": "invoke", "f": "poll"},           # 3
        {"time": 9 * s, "process": 1, "type": "ok", "f": "poll"},               # 4
        {"time": 12 * s, "process": 2, "type": "ok", "f": "poll"},              # 5
        {"time": 14 * s, "process": 3, "type": "ok", "f": "poll"},              # 6
    ])
    g1a = [  # listed by key and value, not time: the first example is complete at 14 s, the second at 9 s
        {"anomaly": "G1a", "writer": {"op": 1, "invoke_index": 0, "complete_index": 2},
         "reader": {"op": 3, "invoke_index": 6, "complete_index": 6}},
        {"anomaly": "G1a", "writer": {"op": 1, "invoke_index": 0, "complete_index": 2},
         "reader": {"op": 2, "invoke_index": 3, "complete_index": 4}}]
    verdict = {"valid": False, "failing": ["G1a", "lost-write"], "anomalies": {
        "G1a": g1a,
        "lost-write": [{"anomaly": "lost-write", "ops": [{"op": 5, "invoke_index": 5, "complete_index": None}]}]}}
    # no schedule: history time 0 is the load's start; the aborted write alone (3 s) is no anomaly yet
    assert zoo.time_to_detect(verdict, h) == 9.0
    # the first fault, scheduled 1.5 s into the load, came at history time 2 s: the load began at 0.5 s
    assert zoo.time_to_detect(verdict, h, schedule=[{"at": 1.5, "f": "kill"}]) == 8.5
    assert zoo.time_to_detect(verdict, h, anomalies=["lost-write"]) == 12.0   # no completion: its invoke
    assert zoo.time_to_detect({"failing": ["G1a"], "anomalies": {"G1a": [{"anomaly": "G1a"}]}}, h) is None
    assert zoo.time_to_detect(verdict, tmp_path / "missing.jsonl") is None


class StandIn:
    """A runner that writes verdict.json and history.jsonl as harness.run.runner would, without a cluster."""

    def __init__(self, outcome):
        self.outcome, self.calls = outcome, []

    def __call__(self, scn, results_root, *, source=None, progress=None, stop=None):
        self.calls.append((scn.name, scn.seed, scn.duration))
        run_dir = Path(results_root) / scn.name / f"run-s{scn.seed}"
        run_dir.mkdir(parents=True)
        verdict = self.outcome(scn.name, scn.seed)
        (run_dir / "verdict.json").write_text(json.dumps(verdict))
        history_file(run_dir, [{"time": 0, "process": 0, "type": "invoke", "f": "txn"},
                               {"time": scn.seed * 1_000_000_000, "process": 0, "type": "ok", "f": "txn"}])
        return RunResult(run_dir, verdict, None, [])


def _g1a(seed):
    return {"valid": False, "failing": ["G1a"], "anomaly_counts": {"G1a": 2}, "allowed": [],
            "anomalies": {"G1a": [{"anomaly": "G1a", "reader": {"invoke_index": 0, "complete_index": 1}}]}}


def test_run_zoo_counts_detections_and_false_positives_and_resumes(tmp_path):
    entries = zoo.load_zoo(zoo_dir(tmp_path))
    valid = {"valid": True, "failing": [], "anomaly_counts": {}, "anomalies": {}}
    other = {"valid": False, "failing": ["duplicate"], "anomaly_counts": {"duplicate": 1}, "anomalies": {}}

    def outcome(name, seed):
        if name == "ru":
            return valid if seed == 3 else (other if seed == 4 else _g1a(seed))
        return other if seed == 2 else valid

    runner = StandIn(outcome)
    results = tmp_path / "results"
    d = results / "suites" / "zoo"
    summary, paths = zoo.run_zoo(entries, results, d, runs=4, duration=15, runner=runner)
    # seed-major: both entries at seed 1, then at seed 2, ...; the zoo's duration replaces theirs
    assert runner.calls[:2] == [("ru", 1, 15.0), ("ctl", 1, 15.0)] and len(runner.calls) == 8
    m, = summary["mutants"]
    assert (m["runs"], m["detected"], m["rate"], m["missed_seeds"]) == (4, 2, 0.5, [3, 4])
    assert m["ci95"] == zoo.wilson(2, 4)
    assert m["anomalies"] == {"G1a": 2, "duplicate": 1}      # an invalid run without G1a is not detected
    assert m["times_to_detect_s"] == [1.0, 2.0] and m["median_time_to_detect_s"] == 1.5
    c, = summary["controls"]
    assert (c["runs"], c["invalid"], c["invalid_seeds"]) == (4, 1, [2])
    assert zoo.exit_code(summary) == 1
    doc = json.loads(paths["zoo"].read_text())
    assert doc["mutants"][0]["detected"] == 2 and doc["runs_per_entry"] == 4
    html = paths["zoo_html"].read_text()
    assert "ru" in html and "50 %" in html and "index.html" in html
    assert (d / "index.html").is_file() and (d / "scenarios" / "ru.yaml").is_file()
    # the merged scenario is a runnable scenario file (the replay commands name it)
    from harness.run.scenario import load_scenario
    assert load_scenario(d / "scenarios" / "ru.yaml").workload.isolation_level == "read_uncommitted"
    pub = zoo.public_json(summary)
    assert list(pub["mutants"][0])[:7] == ["name", "runs", "detected", "rate", "ci95", "median_time_to_detect_s", "anomalies"]
    assert list(pub["controls"][0])[:3] == ["name", "runs", "invalid"]
    # resume: nothing runs again; more runs only add the new seeds
    again = StandIn(outcome)
    zoo.run_zoo(entries, results, d, runs=5, duration=15, runner=again)
    assert again.calls == [("ru", 5, 15.0), ("ctl", 5, 15.0)]


def test_exit_code_zero_only_when_every_mutant_run_is_caught_and_no_control_fails():
    ok = {"mutants": [{"runs": 3, "detected": 3}], "controls": [{"invalid": 0}], "complete": True}
    assert zoo.exit_code(ok) == 0
    assert zoo.exit_code(dict(ok, complete=False)) == 2
    assert zoo.exit_code(dict(ok, mutants=[{"runs": 3, "detected": 2}])) == 1
    assert zoo.exit_code(dict(ok, controls=[{"invalid": 1}])) == 1


def test_cli_dry_run_lists_the_runs_and_writes_nothing(tmp_path):
    res = CliRunner().invoke(app, ["zoo", "--dry-run", "--runs", "2", "--zoo", str(zoo_dir(tmp_path)),
                                   "--results", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("run   ru/s1/kafka-") and "must find G1a" in lines[0]
    assert "ctl/s2" in lines[3] and "must be valid" in lines[3]
    assert "4 runs, 4 to run" in res.output.replace("\n", " ")
    assert not (tmp_path / "r").exists()
    bad = CliRunner().invoke(app, ["zoo", "--dry-run", "--zoo", str(zoo_dir(tmp_path / "b")), "--only", "nope"])
    assert bad.exit_code == 2 and "no zoo entry named" in bad.output


def test_processors_run_their_own_loop():
    """The eos-pipeline mutants and controls need processors that consume and process: a
    processor that fell back to the txn-producer's loop crashed at once (KeyError 'keys')."""
    from harness.workers.processor import ProcessorWorker
    from harness.workers.txn_producer import TxnProducerWorker

    assert ProcessorWorker.run is not TxnProducerWorker.run


def test_time_to_detect_starts_the_load_clock_after_a_start_after_ok_wait(tmp_path):
    """nemesis.start_after_ok: the pair of start-after-ok events is the wait, not a fault; the
    load's clock starts when it ends (first fault at 28 s, scheduled at 20 s: the load began at
    8 s), so a Spark mutant's time to detect does not count the driver's start."""
    s = 1_000_000_000
    h = history_file(tmp_path, [
        {"time": 0, "process": "nemesis", "type": "info", "f": "start-after-ok", "value": {"clients": ["spark-*"]}},
        {"time": 8 * s, "process": "nemesis", "type": "info", "f": "start-after-ok", "value": {"result": "ok"}},
        {"time": 10 * s, "process": 0, "type": "invoke", "f": "poll"},          # 2
        {"time": 28 * s, "process": "nemesis", "type": "info", "f": "kill"},    # 3: the first fault
        {"time": 30 * s, "process": 0, "type": "ok", "f": "poll"},              # 4
    ])
    verdict = {"valid": False, "failing": ["G1a"], "anomalies": {
        "G1a": [{"anomaly": "G1a", "reader": {"op": 0, "invoke_index": 2, "complete_index": 4}}]}}
    assert zoo.time_to_detect(verdict, h, schedule=[{"at": 20.0, "f": "kill"}]) == 22.0
