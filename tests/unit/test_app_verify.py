"""output.verify (issue 36): the user's own verifier of an aggregation. The harness's side
(harness.workloads.app_verify: the files, running the command, reading what it prints) on real
processes; the verdict's side (checkers.finders.app_end_to_end: app-verify cases, a failed verifier is
unknown) on tiny histories; the shipped word-count verifier on hand-written files."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from checkers import check, load_history
from checkers.synthetic.build import HistoryBuilder
from harness.run.scenario import ScenarioError, load_scenario
from harness.workloads import app_verify
from harness.workloads.app import App, AppSpec

ROOT = Path(__file__).resolve().parents[2]
VERIFY = str(ROOT / "harness" / "examples" / "word_count_verify.py")


# -- the harness's side ------------------------------------------------------------------------
def run(tmp_path, code: str, timeout_s: float = 20.0) -> dict:
    return app_verify.run_verifier([sys.executable, "-c", code], str(tmp_path), timeout_s, tmp_path / "verify.log")


def test_findings_and_stats_are_read(tmp_path):
    code = ("import json; print(json.dumps({'kind': 'count-too-high', 'explanation': 'x: 2, want 1', 'word': 'x'}));"
            "print(json.dumps({'stats': {'words': 1}}))")
    r = run(tmp_path, code)
    assert r["error"] is None and r["count"] == 1 and r["stats"] == {"words": 1}
    assert r["findings"] == [{"kind": "count-too-high", "explanation": "x: 2, want 1", "word": "x"}]


def test_a_crash_a_hang_and_bad_output_are_errors_with_the_reason(tmp_path):
    crash = run(tmp_path, "import sys; print('boom: no such file', file=sys.stderr); sys.exit(3)")
    assert crash["error"].startswith("output.verify exited with code 3") and "boom: no such file" in crash["error"]
    hang = run(tmp_path, "import time; time.sleep(30)", timeout_s=1.0)
    assert "did not finish within 1 s" in hang["error"]
    bad = run(tmp_path, "print('all good')")
    assert "not JSON" in bad["error"] and "all good" in bad["error"]
    shape = run(tmp_path, "print('{\"word\": \"x\"}')")
    assert "neither a finding" in shape["error"]
    missing = app_verify.run_verifier(["/no/such/verifier"], str(tmp_path), 5, tmp_path / "v.log")
    assert "could not start" in missing["error"]


def test_output_file_is_sorted_and_each_record_once(tmp_path):
    p = tmp_path / "output.jsonl"
    recs = [{"topic": "out", "partition": 1, "offset": 3, "key": "b", "value": "2"},
            {"topic": "out", "partition": 0, "offset": 0, "key": "a", "value": "1"},
            {"topic": "out", "partition": 1, "offset": 3, "key": "b", "value": "2"}]
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert app_verify.sort_output(p) == 2
    assert [json.loads(x)["offset"] for x in p.read_text().splitlines()] == [0, 3]


def test_input_files_from_a_history(tmp_path):
    b = HistoryBuilder()
    b.txn(0, [("in/0", 1000, 0), ("in/1", 1001, 0)], tid="p")
    b.txn(0, [("in/0", 1002, 1)], type_="fail", tid="p")  # aborted
    b.assign(1, ["in/0", "in/1"])
    b.poll(1, {"in/0": [(0, 1000)], "in/1": [(0, 1001)]}, final=True)
    b.write(tmp_path / "history.jsonl")
    (tmp_path / "app" / "verify").mkdir(parents=True)
    assert app_verify.write_inputs(tmp_path, ["in/0", "in/1"]) == (2, 1)
    f = app_verify.files(tmp_path)
    assert [json.loads(x) for x in f["input"].read_text().splitlines()] == [
        {"topic": "in", "partition": 0, "offset": 0, "key": None, "value": "1000"},
        {"topic": "in", "partition": 1, "offset": 0, "key": None, "value": "1001"}]
    assert [json.loads(x)["value"] for x in f["aborted"].read_text().splitlines()] == ["1002"]


# -- the scenario --------------------------------------------------------------------------------
def test_verify_replaces_the_match():
    spec = AppSpec.model_validate({"app": {"command": ["x"]},
                                   "output": {"verify": {"command": ["v", "{input_file}", "{output_file}"]}}})
    assert spec.output.match == "none"
    meta = App(spec, "b:9092", seed=1).meta()["app"]
    assert meta["match"] == "none" and "did not run" in meta["verify"]["error"]  # until the run's end
    with pytest.raises(ValueError, match="replaces the record-by-record match"):
        AppSpec.model_validate({"app": {"command": ["x"]},
                                "output": {"match": "value", "verify": {"command": ["v"]}}})
    with pytest.raises(ValueError, match="match: none names no input"):
        AppSpec.model_validate({"app": {"command": ["x"]}, "output": {"match": "none"}})
    with pytest.raises(ValueError, match="unknown placeholder {inputfile}"):
        AppSpec.model_validate({"app": {"command": ["x"]}, "output": {"verify": {"command": ["v", "{inputfile}"]}}})


def test_shipped_word_count_scenario_and_zoo_entries_load():
    from harness.detect.zoo import load_entry

    w = load_scenario(ROOT / "scenarios" / "app-streams-word-count.yaml").workload
    assert w.output.verify is not None and w.output.match == "none" and "--main" in w.app.command
    mutant = load_entry(ROOT / "scenarios" / "zoo" / "app-word-count-at-least-once.yaml")
    assert mutant.must_find == ("app-verify",) and "at_least_once" in mutant.scenario.workload.app.command
    assert load_entry(ROOT / "scenarios" / "zoo" / "control-app-streams-word-count.yaml").kind == "control"


# -- the verdict's side --------------------------------------------------------------------------
APP = {"input_keys": ["in/0"], "output_keys": ["out/0"], "semantics": "exactly-once", "order": "none",
       "lag_bound_s": None, "drain_complete": True, "match": "none"}


def _history():
    """Inputs committed and read; the output's records name no input (a word count)."""
    b = HistoryBuilder()
    b.txn(0, [("in/0", 1, 0), ("in/0", 2, 1)], tid="p")
    b.assign(1, ["in/0", "out/0"])
    b.poll(1, {"in/0": [(0, 1), (1, 2)]}, final=True)
    b.invoke(1, "app-poll", [["poll"]], {"final": True})
    b.complete(1, "ok", [["poll", {"out/0": [[0, None], [1, None]]}]], {"final": True})
    return load_history(b.events)


def test_the_verifiers_findings_fail_the_run():
    """Failed before issue 36: the output's records were judged one by one (eos-phantom for
    each, eos-loss for each input) and the verifier's finding was not looked at."""
    found = {"findings": [{"kind": "count-too-high", "explanation": "'1': final count 2, 1 committed",
                           "word": "1"}], "count": 1, "error": None}
    v = check(_history(), meta={"app": dict(APP, verify=found)})
    assert v.valid is False and v.failing == ["app-verify"] and set(v.anomaly_counts) == {"app-verify"}
    assert v.anomalies["app-verify"][0]["kind"] == "count-too-high"


def test_a_clean_verifier_is_valid_and_a_failed_one_unknown():
    v = check(_history(), meta={"app": dict(APP, verify={"findings": [], "count": 0, "error": None})})
    assert v.valid is True, (v.failing, v.unknown_reasons)
    failed = {"findings": [], "count": 0, "error": "output.verify exited with code 1; its stderr ends: Traceback"}
    v = check(_history(), meta={"app": dict(APP, verify=failed)})
    assert v.valid == "unknown" and any("exited with code 1" in r for r in v.unknown_reasons)


# -- the shipped word-count verifier ---------------------------------------------------------------
def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _wc(tmp_path, outputs: list[tuple[int, int, str, str]], capsys) -> list[dict]:
    from harness.examples import word_count_verify

    inp = _jsonl(tmp_path / "in.jsonl", [{"topic": "in", "partition": 0, "offset": i, "key": None, "value": v}
                                         for i, v in enumerate(["a b", "b", "c"])])
    ab = _jsonl(tmp_path / "ab.jsonl", [{"topic": "in", "partition": 0, "offset": 3, "key": None, "value": "z"}])
    out = _jsonl(tmp_path / "out.jsonl", [{"topic": "out", "partition": p, "offset": o, "key": k, "value": v}
                                          for p, o, k, v in outputs])
    assert word_count_verify.main(["--input", inp, "--output", out, "--aborted", ab]) == 0
    return [json.loads(x) for x in capsys.readouterr().out.splitlines()]


def test_word_count_verifier(tmp_path, capsys):
    ok = _wc(tmp_path, [(0, 0, "a", "1"), (1, 0, "b", "1"), (1, 1, "b", "2"), (2, 0, "c", "1")], capsys)
    assert [x for x in ok if "kind" in x] == [] and ok[-1]["stats"]["words"] == 3
    bad = _wc(tmp_path, [(0, 0, "a", "2"), (1, 0, "b", "2"), (1, 1, "b", "1"), (2, 0, "z", "1"), (2, 1, "q", "1")],
              capsys)
    kinds = sorted((x["kind"], x["word"]) for x in bad if "kind" in x)
    assert kinds == [("count-too-high", "a"), ("count-too-high", "z"), ("count-too-low", "b"), ("count-too-low", "c"),
                     ("count-went-down", "b"), ("unknown-word", "q")]


def test_app_runs_the_verifier_on_its_files_from_a_relative_run_folder(tmp_path, monkeypatch):
    """The first real run gave the verifier paths relative to the harness's folder while it ran
    in the scenario's: 'No such file or directory'. The paths are absolute."""
    run = tmp_path / "results" / "r1"
    (run / "logs").mkdir(parents=True)
    (tmp_path / "scenario").mkdir()  # where the verifier runs: not the harness's folder
    b = HistoryBuilder()
    b.txn(0, [("in/0", 1000, 0)], tid="p")
    b.assign(1, ["in/0"])
    b.poll(1, {"in/0": [(0, 1000)]}, final=True)
    b.write(run / "history.jsonl")
    code = ("import json, sys; rows = [json.loads(x) for x in open(sys.argv[1])]; open(sys.argv[2]);"
            "print(json.dumps({{'stats': {{'inputs': len(rows)}}}}))")  # {{ }}: a literal brace
    spec = AppSpec.model_validate({"app": {"command": ["x"], "cwd": str(tmp_path / "scenario")}, "input": {"partitions": 1},
                                   "output": {"verify": {"command": [sys.executable, "-c", code, "{input_file}",
                                                                     "{output_file}"]}}})
    app = App(spec, "b:9092", seed=1)
    monkeypatch.chdir(tmp_path)
    app.prepare(Path("results/r1"))
    app.drain()  # makes app/verify/ and names the output file the drain appends to
    res = app.verify(Path("results/r1"))
    assert res["error"] is None and res["stats"] == {"inputs": 1} and res["inputs"] == 1 and res["outputs"] == 0
    assert res["files"]["input"] == "app/verify/input.jsonl"
