"""F5's deterministic test (harness/findings/f5_runtime.py, docs/findings/F5.md "Upstream report")
on the jars of Kafka 4.3.1: the controls pass and the stale completion is accepted, with exactly
the five failed checks F5.md reports. When a Kafka release fixes the runtime, the second test
fails on it: update F5.md (and DOCUMENTED_FAILURES) and turn the test around. No broker, no root
of its own (marked integration like the other findings' tests); skips when javac or the jars are
missing."""
from __future__ import annotations

import shutil

import pytest

from harness.findings.f5_runtime import RuntimeTestError, jars_dir, run_runtime_test, sources_jar

pytestmark = pytest.mark.integration

VERSION = "4.3.1"
CONTROLS = ["control-ok.loading", "control-ok.active", "control-failed.failed", "stale-ok.setup", "stale-failed.setup"]
#: what F5.md says the test shows on 4.3.1 (and 4.4.0): these checks fail, the others pass
DOCUMENTED_FAILURES = {
    "stale-ok.e3-not-activated-by-e1": "state ACTIVE",
    "stale-ok.read-not-served-before-e3-load": "read served from a shard holding 0 records",
    "stale-failed.e3-not-failed-by-e1": "state FAILED",
    "stale-failed.read-not-coordinator-error": "read error NotCoordinatorException",
    "stale-failed.active-after-e3-load": "state FAILED, read error NotCoordinatorException",
}


def _require(version: str) -> None:
    if shutil.which("javac") is None:
        pytest.skip("needs javac (a JDK 17+)")
    try:
        jars_dir(version)
    except RuntimeTestError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def result():
    _require(VERSION)
    return run_runtime_test(VERSION)


def test_controls_pass(result):
    for name in CONTROLS:
        assert result.checks[name][0], (name, result.checks[name][1])
    assert result.result["controls"] == "ok"


def test_stale_completion_outcome_is_the_one_f5_documents(result):
    assert len(result.checks) == 11, result.output
    assert {n: seen for n, (ok, seen) in result.checks.items() if not ok} == DOCUMENTED_FAILURES, result.output
    assert result.result == {"controls": "ok", "stale-completion": "accepted", "failed-checks": "5"}
    # the runtime's own lines: the e1 load is reported finished after the unload at e2 ...
    out = result.output
    unload = out.index("Finished unloading metadata for __consumer_offsets-25 with epoch OptionalInt[11].")
    assert out.index("Finished loading of metadata from __consumer_offsets-25 with epoch 10", unload) > unload
    # ... and the e3 context's own completion is dropped
    assert "Ignored load completion from __consumer_offsets-25 because context is in ACTIVE state." in out
    assert "Ignored load completion from __consumer_offsets-25 because context is in FAILED state." in out


def test_the_one_line_fix_makes_every_check_pass():
    _require(VERSION)
    try:
        sources_jar(VERSION)
    except RuntimeTestError as exc:
        pytest.skip(str(exc))
    fixed = run_runtime_test(VERSION, patched=True)
    assert fixed.failed == [], fixed.output
    assert fixed.result["stale-completion"] == "rejected"
