"""harness/findings/f5_runtime.py without Java: the output parser on F5RuntimeTest's lines, the
fix applied to the lookup in CoordinatorContext.load() only, and one-line errors."""
from __future__ import annotations

import pytest

from harness.findings import f5_runtime
from harness.findings.f5_runtime import PATCH, RuntimeTestError, RuntimeTestResult, parse_output, patch_source

OUTPUT = """== stale-ok: load(e1=10); unload(e2=11); load(e3=12)
| INFO  [runtime] Finished loading of metadata from __consumer_offsets-25 with epoch 10 in 1ms
PASS stale-ok.setup: e3 context is a new context: true, state LOADING, loads pending 2
FAIL stale-ok.e3-not-activated-by-e1: state ACTIVE
RESULT controls=ok stale-completion=accepted failed-checks=1
"""

# the shape of CoordinatorRuntime.java at 4.3.1 (lines 583-585 and a later lookup, 1821)
SOURCE = """            loader.load(tp, coordinator).whenComplete((summary, exception) -> {
                scheduleInternalOperation("CompleteLoad(tp=" + tp + ", epoch=" + epoch + ")", tp, () -> {
                    CoordinatorContext context = coordinators.get(tp);
                    if (context != null)  {
    void other() {
                    CoordinatorContext context = coordinators.get(tp);
"""


def test_parse_output_reads_checks_and_result():
    res = parse_output(OUTPUT, RuntimeTestResult("4.3.1", False))
    assert res.checks["stale-ok.setup"] == (True, "e3 context is a new context: true, state LOADING, loads pending 2")
    assert res.failed == ["stale-ok.e3-not-activated-by-e1"]
    assert res.result == {"controls": "ok", "stale-completion": "accepted", "failed-checks": "1"}


def test_patch_changes_only_the_load_completion_lookup():
    out = patch_source(SOURCE)
    assert out.count(PATCH[1]) == 1
    lines = out.splitlines()
    assert PATCH[1] in lines[2] and lines[5].strip() == PATCH[0]


def test_patch_refuses_another_shape():
    with pytest.raises(RuntimeTestError, match="does not apply"):
        patch_source(SOURCE.replace("loader.load(", "loader.start("))


def test_missing_jars_and_bad_version_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path))
    with pytest.raises(RuntimeTestError, match=r"eos-chaos setup --kafka-version 4\.3\.1") as e:
        f5_runtime.jars_dir("4.3.1")
    assert "\n" not in str(e.value)
    with pytest.raises(RuntimeTestError, match="not a version"):
        f5_runtime.jars_dir("../4.3.1")


def test_missing_javac_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(f5_runtime.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeTestError, match="javac not found"):
        f5_runtime.run_runtime_test("4.3.1")


def test_cli_runtime_prints_the_outcome_and_needs_no_root(monkeypatch):
    from typer.testing import CliRunner

    from harness.cli.main import app

    seen = {}

    def fake(version, *, patched):
        seen.update(version=version, patched=patched)
        return parse_output(OUTPUT, RuntimeTestResult(version, patched))

    monkeypatch.setattr(f5_runtime, "run_runtime_test", fake)
    res = CliRunner().invoke(app, ["repro", "f5", "--runtime", "--kafka-version", "4.4.0"])
    assert res.exit_code == 0, res.output
    assert seen == {"version": "4.4.0", "patched": False}
    assert "FAIL stale-ok.e3-not-activated-by-e1: state ACTIVE" in res.output
    assert "Kafka 4.4.0: 1 of 2 checks failed" in res.output


def test_cli_runtime_error_is_one_line_exit_2(monkeypatch):
    from typer.testing import CliRunner

    from harness.cli.main import app

    def broken(version, *, patched):
        raise RuntimeTestError("javac not found: install a JDK")

    monkeypatch.setattr(f5_runtime, "run_runtime_test", broken)
    res = CliRunner().invoke(app, ["repro", "f5", "--runtime", "--patched"])
    assert res.exit_code == 2
    assert "javac not found" in res.output and "Traceback" not in res.output
