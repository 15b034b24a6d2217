"""The Flink example's deployment watchdog (harness.examples.flink_app, docstring "Watchdog"):
its pure decision, its bound, and the loop on a stand-in job process (no PyFlink, no cluster)."""
import sys
import time

from harness.examples import flink_app
from harness.examples.flink_app import default_watchdog_s, stalled_after, watchdog_verdict


def verdict(**kw):
    args = dict(exit_code=None, tm_failure=None, stalled_s=0.0, checkpointed=True, bound_s=30.0, startup_s=60.0)
    return watchdog_verdict(**{**args, **kw})


def test_a_running_job_with_recent_checkpoints_is_left_alone():
    assert verdict() is None
    assert verdict(stalled_s=29.9) is None
    assert verdict(stalled_s=80, checkpointed=False) is None      # the first checkpoint gets the startup time too
    assert verdict(stalled_s=1e6, bound_s=0) is None                # no progress bound


def test_each_reason_is_named():
    assert "no checkpoint completed for 30 s" in verdict(stalled_s=30)
    assert "since the job's start (bound 90 s)" in verdict(stalled_s=90, checkpointed=False)
    tm = verdict(tm_failure="TaskManager #0 failed.")
    assert "lost its TaskManager ('TaskManager #0 failed.')" in tm
    assert "exited with code 1" in verdict(exit_code=1, tm_failure="TaskManager #0 failed.", stalled_s=99)
    assert "killed by signal 9" in verdict(exit_code=-9)


def test_bound_is_ten_checkpoint_intervals_at_least_30_s():
    assert default_watchdog_s(["--input", "in"]) == 30.0                             # the job's 1 s default
    assert default_watchdog_s(["--checkpoint-interval-ms", "100"]) == 30.0           # the zoo's short-timeout entry
    assert default_watchdog_s(["--checkpoint-interval-ms=5000"]) == 50.0


def test_paused_time_does_not_count():
    assert stalled_after(10.0, 1.2, progressed=False) == 11.2
    assert stalled_after(10.0, 9.0, progressed=False) == 11.0   # 9 s late: paused with the job (SIGSTOP)
    assert stalled_after(10.0, 1.0, progressed=True) == 0.0


def _run(tmp_path, script, bound_s=0.6):
    ckpt, log = tmp_path / "checkpoints", tmp_path / "watch.log"
    ckpt.mkdir()
    t0 = time.monotonic()
    code = flink_app.run_watched([sys.executable, "-c", script], {"WATCH": str(log), "CKPT": str(ckpt)},
                                 checkpoints=ckpt, watch_log=log, bound_s=bound_s, startup_s=0.4, poll_s=0.1)
    return code, time.monotonic() - t0


def test_loop_ends_a_job_that_stops_checkpointing_and_passes_on_an_exit(tmp_path, capsys):
    # checkpoints for a while (a new chk-N every 0.1 s), then none: ended after the bound, not before
    job = ("import os, time, pathlib\n"
           "for n in range(12):\n"
           "    d = pathlib.Path(os.environ['CKPT'], 'job', f'chk-{n}'); d.mkdir(parents=True)\n"
           "    (d / '_metadata').write_text('x'); time.sleep(0.1)\n"
           "time.sleep(60)\n")
    code, took = _run(tmp_path, job)
    out = capsys.readouterr().out
    assert code == flink_app.WATCHDOG_EXIT and 1.5 < took < 10, (code, took, out)
    assert "flink_app: watchdog: no checkpoint completed for" in out and "chk-11" in out
    (tmp_path / "b").mkdir()
    code, _ = _run(tmp_path / "b", "raise SystemExit(5)")
    assert code == 5 and "exited with code 5" in capsys.readouterr().out


def test_loop_ends_a_job_whose_taskmanager_failed_at_once(tmp_path, capsys):
    job = ("import os, time\n"
           "open(os.environ['WATCH'], 'w').write('TaskManager #0 failed.\\n')\n"
           "time.sleep(60)\n")
    code, took = _run(tmp_path, job, bound_s=30)
    assert code == flink_app.WATCHDOG_EXIT and took < 10
    assert "lost its TaskManager ('TaskManager #0 failed.')" in capsys.readouterr().out
