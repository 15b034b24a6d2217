"""Suites: loading, matrix expansion, resume on a handmade results folder, time left, the loop
with a stand-in runner (no cluster: the loop's bookkeeping only), and the CLI's --dry-run."""
from __future__ import annotations

import itertools
import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.detect import suite as st
from harness.detect import suite_run as sr
from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, NEWEST_KAFKA_VERSION, SECOND_KAFKA_VERSION
from harness.cli.main import app
from harness.run.runner import RunResult
from checkers.run import Verdict

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """name: {name}
duration: 60
workload: {{name: txn-queue, producers: 2, consumers: 1}}
cluster: {{nodes: 3}}
expected: [G0]
"""


def scenarios_dir(tmp_path: Path, names=("alpha", "beta")) -> Path:
    d = tmp_path / "scenarios"
    d.mkdir(exist_ok=True)
    for n in names:
        (d / f"{n}.yaml").write_text(SCENARIO.format(name=n))
    return d


def write_suite(d: Path, text: str, name: str = "s.yaml") -> Path:
    p = d / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- loading

def test_shipped_suites_load_and_expand():
    ci = st.load_suite(ROOT / "scenarios" / "ci.yaml")
    cells = st.expand(ci, ROOT / "scenarios")
    assert [c.id for c in cells] == ["smoke/s3/kafka-4.3.1"]
    assert cells[0].duration <= 45, "the CI suite must stay short"
    nightly = st.load_suite(ROOT / "scenarios" / "nightly.yaml")
    cells = st.expand(nightly, ROOT / "scenarios")
    assert {c.kafka_version for c in cells} == {DEFAULT_KAFKA_VERSION, SECOND_KAFKA_VERSION, NEWEST_KAFKA_VERSION}
    # every shipped scenario but the one that reproduces finding F1 (invalid by design) and
    # share-dlq, invalid with librdkafka 2.16.0 (transaction markers in the share group's DLQ)
    shipped = {f.stem for f in (ROOT / "scenarios").glob("*.yaml") if not st.is_suite_file(f)}
    assert {c.name for c in cells} == shipped - {"coordinator-inflight-abort", "share-dlq"}
    assert st.is_suite_file(ROOT / "scenarios" / "nightly.yaml")
    assert not st.is_suite_file(ROOT / "scenarios" / "smoke.yaml")


def test_bad_suites_say_what_to_fix(tmp_path):
    with pytest.raises(st.SuiteError, match="does not exist"):
        st.load_suite(tmp_path / "nope.yaml")
    with pytest.raises(st.SuiteError, match="not a suite file"):
        st.load_suite(write_suite(tmp_path, "name: x\n"))
    with pytest.raises(st.SuiteError) as e:
        st.load_suite(write_suite(tmp_path, "suite: x\nscenarios: [a.yaml]\nseed: [1]\nseeds: 0\n"))
    assert "seed" in str(e.value) and "seeds" in str(e.value) and "at least one seed" in str(e.value)
    with pytest.raises(st.SuiteError, match="not valid YAML"):
        st.load_suite(write_suite(tmp_path, "suite: [unclosed"))


# ---------------------------------------------------------------- the matrix

def test_expand_is_seed_major_with_versions_innermost(tmp_path):
    d = scenarios_dir(tmp_path)
    suite = st.load_suite(write_suite(d, "suite: n\nscenarios: ['*.yaml']\nseeds: 2\n"
                                         "kafka_versions: [4.3.1, 3.9.1]\nduration: 30\n"))
    cells = st.expand(suite, d)
    assert [c.id for c in cells] == [
        "alpha/s1/kafka-4.3.1", "alpha/s1/kafka-3.9.1", "beta/s1/kafka-4.3.1", "beta/s1/kafka-3.9.1",
        "alpha/s2/kafka-4.3.1", "alpha/s2/kafka-3.9.1", "beta/s2/kafka-4.3.1", "beta/s2/kafka-3.9.1"]
    c = cells[1]
    assert (c.scenario.seed, c.scenario.duration, c.scenario.cluster.kafka_version) == (1, 30.0, "3.9.1")
    assert c.scenario.expected == ["G0"], "the rest of the scenario is kept"
    assert c.source.endswith("alpha.yaml")


def test_glob_skips_suites_and_later_entry_wins(tmp_path):
    d = scenarios_dir(tmp_path)
    suite = st.load_suite(write_suite(d, "suite: n\nscenarios: ['*.yaml', {path: beta.yaml, seeds: [7], "
                                         "kafka_versions: [3.9.1], duration: 5}]\nseeds: [1]\n"
                                         "kafka_versions: [4.3.1]\n"))
    cells = st.expand(suite, d)
    assert [(c.id, c.duration) for c in cells] == [("alpha/s1/kafka-4.3.1", 60.0), ("beta/s7/kafka-3.9.1", 5.0)]


def test_command_line_overrides_replace_suite_and_entries(tmp_path):
    d = scenarios_dir(tmp_path)
    suite = st.load_suite(write_suite(d, "suite: n\nscenarios: [{path: alpha.yaml, seeds: [7], duration: 5}]\n"))
    cells = st.expand(suite, d, seeds=[3, 3, 4], kafka_versions=["3.9.1"], duration=12)
    assert [(c.id, c.duration) for c in cells] == [("alpha/s3/kafka-3.9.1", 12.0), ("alpha/s4/kafka-3.9.1", 12.0)]


def test_expand_errors(tmp_path):
    d = scenarios_dir(tmp_path)
    with pytest.raises(st.SuiteError, match="does not exist"):
        st.expand(st.load_suite(write_suite(d, "suite: n\nscenarios: [gamma.yaml]\n")), d)
    with pytest.raises(st.SuiteError, match="matches no scenario"):
        st.expand(st.load_suite(write_suite(d, "suite: n\nscenarios: ['x*.yaml']\n")), d)
    (d / "copy.yaml").write_text(SCENARIO.format(name="alpha"))
    with pytest.raises(st.SuiteError, match="both name scenario 'alpha'"):
        st.expand(st.load_suite(write_suite(d, "suite: n\nscenarios: ['*.yaml']\n")), d)
    (d / "copy.yaml").write_text("name: broken\nworkload: {producer: 3}\n")
    with pytest.raises(st.SuiteError, match="workload.txn-queue.producer"):
        st.expand(st.load_suite(write_suite(d, "suite: n\nscenarios: [copy.yaml]\n")), d)
    with pytest.raises(st.SuiteError, match="suites do not nest"):
        st.expand(st.load_suite(write_suite(d, "suite: n\nscenarios: [s.yaml]\n")), d)


def test_fingerprint_follows_what_is_run_not_the_description(tmp_path):
    d = scenarios_dir(tmp_path, ["alpha"])
    suite = st.load_suite(write_suite(d, "suite: n\nscenarios: [alpha.yaml]\nkafka_versions: [4.3.1]\n"))
    base = st.expand(suite, d)[0]
    assert st.expand(suite, d)[0].fingerprint == base.fingerprint
    assert st.expand(suite, d, duration=61)[0].fingerprint != base.fingerprint
    assert st.expand(suite, d, kafka_versions=["3.9.1"])[0].fingerprint != base.fingerprint
    redescribed = base.scenario.model_copy(update={"description": "other words"})
    assert st.fingerprint(redescribed) == base.fingerprint


def test_a_field_added_to_the_scenario_model_later_keeps_finished_runs_current(tmp_path):
    """A suite or zoo resumed after the model grew a field (nemesis.start_after_ok did) must not
    run every finished cell again: the field at its default leaves the fingerprint as it was;
    set to another value, it changes it."""
    from harness.run.scenario import Scenario

    d = scenarios_dir(tmp_path, ["alpha"])
    base = st.expand(st.load_suite(write_suite(d, "suite: n\nscenarios: [alpha.yaml]\n")), d)[0]

    class Later(Scenario):
        added_later: int = 0

    data = base.scenario.model_dump()
    assert st.fingerprint(Later.model_validate(data)) == base.fingerprint
    assert st.fingerprint(Later.model_validate(dict(data, added_later=1))) != base.fingerprint


# ---------------------------------------------------------------- resume on a handmade results folder

def _cells(tmp_path, seeds=3):
    d = scenarios_dir(tmp_path, ["alpha"])
    suite = st.load_suite(write_suite(d, f"suite: n\nscenarios: [alpha.yaml]\nseeds: {seeds}\n"
                                         "kafka_versions: [4.3.1]\nduration: 10\n"))
    return st.expand(suite, d)


def _fake_run(results: Path, cell: st.Cell, verdict: dict | None) -> Path:
    run_dir = results / cell.name / f"run-s{cell.seed}"
    run_dir.mkdir(parents=True)
    if verdict is not None:
        (run_dir / "verdict.json").write_text(json.dumps(verdict))
    return run_dir


def test_pending_skips_only_finished_unchanged_runs_whose_verdict_is_on_disk(tmp_path):
    cells = _cells(tmp_path, seeds=6)
    results, suite_dir = tmp_path / "results", tmp_path / "results" / "suites" / "n"
    suite_dir.mkdir(parents=True)
    recs = st.RECORDS
    ok = {"valid": True}

    def rec(cell, status, verdict=ok, **kw):
        run_dir = _fake_run(results, cell, verdict)
        r = st.make_record(cell, suite_dir, status=status, started=0, wall_s=50,
                           verdict=None if verdict is None else Verdict.coerce(verdict),
                           run_dir=run_dir)
        r.update(kw)
        st.append_record(suite_dir / recs, r)

    rec(cells[0], st.VALID)                               # finished: skipped
    rec(cells[1], st.ERROR, verdict=None)                 # errored: runs again
    rec(cells[2], st.INVALID, verdict={"valid": False})   # finished (invalid): skipped
    rec(cells[3], st.VALID, fingerprint="000000000000")   # another scenario/duration: runs again
    rec(cells[4], st.INTERRUPTED)                         # cut short: runs again
    rec(cells[5], st.UNKNOWN, verdict={"valid": "unknown"})
    (results / "alpha" / "run-s6" / "verdict.json").unlink()  # its run folder was cleaned: runs again
    with open(suite_dir / recs, "a") as f:
        f.write('{"id": "alpha/s1/kafka-4.3.1", "status": "err')  # a write cut short by a crash
    records = st.read_records(suite_dir / recs)
    assert records["alpha/s1/kafka-4.3.1"]["status"] == st.VALID
    assert [c.seed for c in st.pending(cells, records, suite_dir)] == [2, 4, 5, 6]


def test_last_record_of_a_cell_wins(tmp_path):
    cell = _cells(tmp_path, seeds=1)[0]
    p = tmp_path / "runs.jsonl"
    st.append_record(p, {"id": cell.id, "status": st.INTERRUPTED})
    st.append_record(p, {"id": cell.id, "status": st.VALID})
    assert st.read_records(p)[cell.id]["status"] == st.VALID
    assert st.read_records(tmp_path / "missing.jsonl") == {}


# ---------------------------------------------------------------- time left, exit code

def test_time_left_uses_measured_overhead_and_the_current_run(tmp_path):
    cells = _cells(tmp_path, seeds=3)  # 10 s of load each
    assert st.overhead_s([]) == st.DEFAULT_OVERHEAD_S
    measured = [{"status": st.VALID, "wall_s": 40, "duration_s": 10},
                {"status": st.INVALID, "wall_s": 50, "duration_s": 10},
                {"status": st.ERROR, "wall_s": 2, "duration_s": 10}]  # errors say nothing of a run's length
    assert st.overhead_s(measured) == 35
    assert st.estimate_left(cells, 35) == 135
    assert st.estimate_left(cells, 35, current_elapsed=20) == 115
    assert st.estimate_left(cells[:1], 35, current_elapsed=100) == 0, "an overrun never goes negative"
    assert st.estimate_left([], 35) == 0


@pytest.mark.parametrize("statuses, code", [
    ([], 0), ([st.VALID, st.VALID], 0), ([st.VALID, st.INVALID, st.UNKNOWN], 1),
    ([st.VALID, st.UNKNOWN], 2), ([st.ERROR], 2), ([st.VALID, st.INTERRUPTED], 2), ([st.NOT_RUN], 2)])
def test_exit_code(statuses, code):
    assert st.exit_code(statuses) == code


def test_describe_verdict_puts_failing_first_with_examples_and_report():
    verdict = {"valid": False, "anomaly_counts": {"G0": 2, "G1a": 3}, "allowed": ["G0"], "failing": ["G1a"],
               "anomalies": {"G0": [{"explanation": "write cycle"}], "G1a": [{"explanation": "read aborted 5"},
                                                                            {"explanation": "second"}]},
               "unknown_reasons": ["drain incomplete"]}
    text = st.describe_verdict("smoke (seed 1)", verdict, report="r/report.html", problems=["n2 left"])
    lines = text.splitlines()
    assert lines[0] == "smoke (seed 1): INVALID"
    assert lines[1] == "  G1a: 3 case(s)" and lines[2] == "    e.g. read aborted 5"
    assert lines[3] == "  G0: 2 case(s) (allowed)"
    assert "second" not in text
    assert "  unknown: drain incomplete" in lines and "  note: n2 left" in lines
    assert lines[-1] == "report: r/report.html"


# ---------------------------------------------------------------- the loop (stand-in runner)

RUN_IDS = itertools.count(1)


class StandInRunner:
    """Writes a run folder with verdict.json like harness.run.runner does, without a cluster."""

    def __init__(self, verdicts: dict[int, dict], fail_on_seed: int | None = None,
                 stop_on_seed: int | None = None, stop: threading.Event | None = None):
        self.verdicts, self.fail_on_seed, self.stop_on_seed, self.stop = verdicts, fail_on_seed, stop_on_seed, stop
        self.calls: list[tuple] = []

    def __call__(self, scn, results_root, *, source=None, progress=None, stop=None):
        self.calls.append((scn.name, scn.seed, scn.cluster.kafka_version, scn.duration, source))
        if scn.seed == self.fail_on_seed:  # as harness.run.runner does: the run folder exists, then it fails
            (Path(results_root) / scn.name / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-s{scn.seed}").mkdir(parents=True)
            raise RuntimeError("3 brokers registered: timed out after 180 s")
        if scn.seed == self.stop_on_seed:
            self.stop.set()  # as Ctrl-C during the load phase would
        run_dir = Path(results_root) / scn.name / f"run-{next(RUN_IDS)}"
        run_dir.mkdir(parents=True)
        verdict = self.verdicts.get(scn.seed, {"valid": True, "anomalies": {}, "anomaly_counts": {}})
        (run_dir / "verdict.json").write_text(json.dumps(verdict))
        (run_dir / "report.html").write_text("<html>report</html>")
        return RunResult(run_dir, verdict, run_dir / "report.html", [])


def test_run_suite_records_writes_outputs_and_resumes_without_repeating(tmp_path):
    cells = _cells(tmp_path, seeds=3)
    results = tmp_path / "results"
    suite_dir = st.default_suite_dir(results, "n")
    invalid = {"valid": False, "anomalies": {"lost-write": [{"explanation": "value 7 acknowledged, never read"}]},
               "anomaly_counts": {"lost-write": 1}, "failing": ["lost-write"], "allowed": []}
    runner = StandInRunner({2: invalid}, fail_on_seed=3)
    res = sr.run_suite(cells, results, suite_dir, name="n", runner=runner)
    assert [c[1] for c in runner.calls] == [1, 2, 3]
    assert runner.calls[0] == ("alpha", 1, "4.3.1", 10.0, cells[0].source)
    assert res.exit_code == 1 and res.ran == [c.id for c in cells] and res.skipped == []
    statuses = [r["status"] for r in res.summary["runs"]]
    assert statuses == [st.VALID, st.INVALID, st.ERROR]
    err = res.summary["runs"][2]
    assert "timed out after 180 s" in err["error"]
    assert err["run_dir"].startswith("../../alpha/") and err["run_dir"].endswith("-s3"), "where its logs are"
    row = res.summary["runs"][1]
    assert row["first_examples"] == {"lost-write": "value 7 acknowledged, never read"}
    assert (suite_dir / row["report"]).read_text() == "<html>report</html>", "paths are relative to the suite folder"
    for name in ("summary.json", "junit.xml", "index.html", "runs.jsonl"):
        assert (suite_dir / name).is_file(), name

    again = StandInRunner({})
    res2 = sr.run_suite(cells, results, suite_dir, name="n", runner=again)
    assert [c[1] for c in again.calls] == [3], "only the errored run runs again"
    assert res2.skipped == [cells[0].id, cells[1].id]
    assert res2.exit_code == 1, "the invalid run of the first call still counts"

    nothing = StandInRunner({})
    res3 = sr.run_suite(cells, results, suite_dir, name="n", runner=nothing)
    assert nothing.calls == [] and res3.ran == []
    assert len((suite_dir / "runs.jsonl").read_text().splitlines()) == 4

    fresh = StandInRunner({})
    res4 = sr.run_suite(cells, results, suite_dir, name="n", runner=fresh, fresh=True)
    assert len(fresh.calls) == 3 and res4.exit_code == 0
    assert len(list(suite_dir.glob("runs-*.jsonl"))) == 1, "the old records are kept aside"


def test_interrupted_suite_stops_records_the_cut_run_and_resumes_it(tmp_path):
    cells = _cells(tmp_path, seeds=3)
    results = tmp_path / "results"
    suite_dir = st.default_suite_dir(results, "n")
    stop = threading.Event()
    runner = StandInRunner({}, stop_on_seed=2, stop=stop)
    res = sr.run_suite(cells, results, suite_dir, name="n", runner=runner, stop=stop)
    assert [c[1] for c in runner.calls] == [1, 2], "no run starts after the interruption"
    assert [r["status"] for r in res.summary["runs"]] == [st.VALID, st.INTERRUPTED, st.NOT_RUN]
    assert res.exit_code == 2 and res.summary["complete"] is False
    resumed = StandInRunner({})
    res2 = sr.run_suite(cells, results, suite_dir, name="n", runner=resumed)
    assert [c[1] for c in resumed.calls] == [2, 3]
    assert res2.exit_code == 0 and res2.summary["complete"] is True


def test_run_time_excludes_waiting_for_the_cluster_lock(tmp_path):
    cell = _cells(tmp_path, seeds=1)[0]

    def queued_runner(scn, results_root, *, source=None, progress=None, stop=None):
        progress.phase = "waiting"  # as harness.run.runner does before taking the machine's lock
        time.sleep(3.0)  # well above the run's own time, also on a loaded machine
        progress.phase = "cleanup"
        time.sleep(0.1)
        return StandInRunner({})(scn, results_root, source=source, progress=progress, stop=stop)

    res = sr.run_suite([cell], tmp_path / "r", tmp_path / "r" / "suites" / "n", name="n", runner=queued_runner)
    row = res.summary["runs"][0]
    assert row["waited_s"] >= 3.0 and 0.1 <= row["wall_s"] < 3.0, row


def test_listener_sees_every_run_and_a_shrinking_estimate(tmp_path):
    cells = _cells(tmp_path, seeds=2)
    seen = []

    class Listener(st.SuiteListener):
        def begin(self, cells, todo, overhead, suite_dir):
            seen.append(("begin", len(todo), st.estimate_left(todo, overhead)))

        def run_finished(self, cell, record, overhead):
            seen.append(("done", cell.id, record["status"]))

        def end(self, summary, paths):
            seen.append(("end", summary["exit_code"], sorted(paths)))

    sr.run_suite(cells, tmp_path / "r", tmp_path / "r" / "suites" / "n", name="n", runner=StandInRunner({}),
                 listener=Listener())
    assert seen == [("begin", 2, 2 * (10 + st.DEFAULT_OVERHEAD_S)), ("done", cells[0].id, st.VALID),
                    ("done", cells[1].id, st.VALID), ("end", 0, ["index", "junit", "summary"])]


# ---------------------------------------------------------------- the CLI, without running anything

def test_cli_dry_run_lists_the_matrix_and_what_is_left(tmp_path):
    d = scenarios_dir(tmp_path)
    suite_file = write_suite(d, "suite: n\nscenarios: ['*.yaml']\nseeds: [1]\nkafka_versions: [4.3.1]\nduration: 20\n")
    cells = st.expand(st.load_suite(suite_file), d)
    results = tmp_path / "results"
    sr.run_suite(cells[:1], results, st.default_suite_dir(results, "n"), name="n", runner=StandInRunner({}))
    r = CliRunner().invoke(app, ["suite", str(suite_file), "--results", str(results), "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "done  alpha/s1/kafka-4.3.1  20 s" in r.output
    assert "run   beta/s1/kafka-4.3.1  20 s" in r.output
    assert "2 runs, 1 to run" in r.output
    r = CliRunner().invoke(app, ["suite", str(suite_file), "--results", str(results), "--dry-run",
                                 "--seed", "5", "--kafka-version", "3.9.1"])
    assert "run   alpha/s5/kafka-3.9.1" in r.output and "2 runs, 2 to run" in r.output


def test_cli_rejects_a_scenario_given_as_suite(tmp_path):
    d = scenarios_dir(tmp_path, ["alpha"])
    r = CliRunner().invoke(app, ["suite", str(d / "alpha.yaml"), "--dry-run"])
    assert r.exit_code == 2
    assert "not a suite file" in r.output and "eos-chaos run" in r.output
