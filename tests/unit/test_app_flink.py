"""Issue 35: the Flink example's pure parts (the launcher's choice of checkpoint, the versions a
run records) and the app checker's loss-or-stall rule with the application's committed offsets
(a tiny history that failed before the change: the missing input was an unknown stall)."""
import os
from pathlib import Path

from checkers import app_cases, check, load_history

from harness.examples import flink_app
from harness.run.scenario import load_scenario
from harness.run.versions import collect_versions
from tests.unit.test_checkers_app import APP, base

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _chk(root, job, n, size=10, mtime=None):
    d = root / job / f"chk-{n}"
    d.mkdir(parents=True)
    if size is not None:
        (d / "_metadata").write_bytes(b"x" * size)
        if mtime is not None:
            os.utime(d / "_metadata", ns=(mtime, mtime))
    return d


def test_newest_checkpoint_is_the_newest_completed_one(tmp_path):
    assert flink_app.newest_checkpoint(tmp_path) is None
    _chk(tmp_path, "job-a", 7, mtime=1_000_000_000)
    newest = _chk(tmp_path, "job-b", 9, mtime=3_000_000_000)   # a later process, its own job id
    _chk(tmp_path, "job-b", 10, size=None)                      # cut short: no _metadata
    _chk(tmp_path, "job-b", 11, size=0)                         # cut short: empty _metadata
    _chk(tmp_path, "job-a", 8, mtime=2_000_000_000)
    assert flink_app.newest_checkpoint(tmp_path) == newest


def test_launcher_without_pyflink_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path / "cache"))
    try:
        flink_app.main(["--work-dir", str(tmp_path / "w"), "--", "--input", "in"])
    except SystemExit as e:
        assert e.code == 2
    assert "eos-chaos setup --flink" in capsys.readouterr().err


def test_flink_run_records_its_versions():
    v = collect_versions(load_scenario(SCENARIOS / "app-flink.yaml"))
    assert (v["flink"], v["flink-connector-kafka"], v["flink-kafka-clients"]) == ("2.2.1", "5.0.0-2.2", "4.2.0")
    assert "flink" not in collect_versions(load_scenario(SCENARIOS / "app-streams.yaml"))


def test_missing_input_below_the_apps_committed_offset_is_a_loss_not_a_stall():
    h = load_history(base({"out/0": [(0, 1)]}).events)   # input 2 (in/0@1) never in the output
    consumed = dict(APP, caught_up=False, catch_up={"committed_offsets": {"in/0": 2}})
    cs = app_cases(h, consumed)
    assert [(c["anomaly"], c.get("value"), c.get("unknown", False)) for c in cs] == [("eos-loss", 2, False)]
    assert "committed offset 2 past it" in cs[0]["explanation"]
    assert check(h, meta={"app": consumed}).valid is False
    # near miss: the group's offset stops at the missing input (not consumed): still loss-or-stall
    not_yet = dict(APP, caught_up=False, catch_up={"committed_offsets": {"in/0": 1}})
    assert [(c["anomaly"], c.get("unknown", False)) for c in app_cases(h, not_yet)] == [
        ("app-stalled", False), ("eos-loss", True)]
    assert check(h, meta={"app": not_yet}).valid == "unknown"


def test_init_flink_writes_the_job_and_a_one_instance_scenario(tmp_path):
    from typer.testing import CliRunner

    from harness.cli.main import app as cli

    r = CliRunner().invoke(cli, ["init", str(tmp_path), "--flink"])
    assert r.exit_code == 0, r.output
    scn = load_scenario(tmp_path / "eos-chaos.yaml")
    a = scn.workload.app
    assert a.instances == 1 and a.command[:5] == ["{python}", "-m", "harness.examples.flink_app", "--job", "flink_job.py"]
    assert {f.fault for f in scn.nemesis.faults} == {"kill-client", "pause-client", "kill", "pause"}
    assert (tmp_path / "flink_job.py").read_text() == (flink_app.JOB).read_text()
    assert "flink" in collect_versions(scn)
    both = CliRunner().invoke(cli, ["init", str(tmp_path / "x"), "--flink", "--command", "java -jar a.jar"])
    assert both.exit_code == 2 and "not both" in both.output


def test_job_file_imports_nothing_of_the_harness():
    text = flink_app.JOB.read_text()
    assert "harness" not in text.split('"""')[2]  # the code after the docstring: PyFlink only
