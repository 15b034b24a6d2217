"""The end of a run (harness.run.runner.finish / finish_in_child): check, verdict.json, the
brokers' data settled, report.html; for a soak in a spawned child so the controller's memory
stays flat (issue 25, section 3)."""
from __future__ import annotations

import os

import yaml

from checkers.run import RunDir
from checkers.synthetic.simulate import simulate
from harness.run import runner


def _run_dir(tmp_path, n_ops=300):
    d = tmp_path / "run"
    (d / "nodes" / "n1" / "data").mkdir(parents=True)
    (d / "nodes" / "n1" / "data" / "segment").write_bytes(b"x")
    simulate(n_ops, 0, d / "history.jsonl")
    (d / "scenario.yaml").write_text(yaml.safe_dump({"name": "t", "expected": []}))
    return d


def test_finish_in_child_writes_the_same_verdict_as_in_process(tmp_path):
    d = _run_dir(tmp_path)
    v1, report1, _ = runner.finish(d, {}, keep_data=True)
    first = RunDir(d).read_verdict()
    v2, report2, problems = runner.finish_in_child(d, {}, keep_data=False)
    assert v2.status == v1.status == "valid"
    assert v2.anomaly_counts == first.anomaly_counts and v2.stats.get("ops") == first.stats.get("ops")
    assert report2 is not None and report2.is_file() and report2 == report1
    # the child settled the brokers' data: valid and not asked to keep it, so deleted
    assert not (d / "nodes" / "n1" / "data").exists() and problems == []


def test_finish_in_child_runs_in_another_process(tmp_path, monkeypatch):
    seen = []
    real = runner.finish

    def spy(run_dir, meta, keep_data, progress=None):
        seen.append(os.getpid())
        return real(run_dir, meta, keep_data, progress)

    monkeypatch.setattr(runner, "finish", spy)
    runner.finish_in_child(_run_dir(tmp_path, 50), {}, keep_data=True)
    assert seen == []  # the spy is not in the spawned interpreter: finish ran there, not here


def test_a_failing_child_gives_an_unknown_verdict_that_says_why(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    v, report, problems = runner.finish_in_child(d, {}, keep_data=False)
    assert v.status == "unknown" and report is None
    assert "final check's child process failed: FileNotFoundError" in problems[0]
    assert RunDir(d).read_verdict().unknown_reasons == v.unknown_reasons
