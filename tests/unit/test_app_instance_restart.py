"""An app instance that exits at once after a restart (issue 36): the supervisor
(harness.workers.app_instance) as the pool runs it, a real worker process with a real child.

Seen under group.protocol=consumer: the copy service, restarted by kill-client, exited at once
with UNRELEASED_INSTANCE_ID and stayed down 15 s, because its new worker took the exit for the
run's first start failing. After a restart such an exit is a crash like any other: restarted,
with a backoff; only the run's very first start failing at once ends the run."""
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.util import CONFIG_ENV
from harness.workers.app_instance import BACKOFF_MAX_S, restart_delay
from harness.workloads.app import App, AppSpec

ROOT = Path(__file__).resolve().parents[2]
EXIT_AT_ONCE = [sys.executable, "-c", "raise SystemExit(3)"]


def _supervise(tmp_path, watch_s: float, until=None, **cfg_over) -> tuple[list[dict], str]:
    """Run the worker for ``watch_s`` seconds, or until ``until(events so far)`` holds; its events
    and its stderr (its log)."""
    cfg = {"instance": 0, "work_dir": str(tmp_path / "w"), "client_properties": str(tmp_path / "w" / "c.properties"),
           "bootstrap": "198.18.0.11:9092", "restart": "on-failure", "startup_s": 1.0, "stop_grace_s": 2,
           "argv": EXIT_AT_ONCE, "log": str(tmp_path / "app-0.log"), "cwd": str(tmp_path), **cfg_over}
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{CONFIG_ENV: json.dumps(cfg)})
    p = subprocess.Popen([sys.executable, "-m", "harness.workers", "app"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ROOT), text=True)
    lines: list[str] = []
    errs: list[str] = []
    readers = [threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True),  # events as they come
               threading.Thread(target=lambda: errs.extend(p.stderr), daemon=True)]
    for r in readers:
        r.start()
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline and p.poll() is None:
        if until is not None and until([json.loads(x) for x in list(lines) if x.strip()]):
            break
        time.sleep(0.1)
    if p.poll() is None:
        p.stdin.write("stop\n")
        p.stdin.flush()
    p.stdin.close()
    p.wait(timeout=30)
    for r in readers:
        r.join(30)
    return [json.loads(line) for line in lines if line.strip()], "".join(errs)


def _start_times(events) -> list[float]:
    return [e["time"] / 1e9 for e in events if e.get("f") == "app-start" and e.get("type") == "ok"]


def test_an_exit_within_startup_after_a_restart_is_restarted_with_a_backoff(tmp_path):
    # 1 + 2 s of backoff plus three Python starts: 6 s gave 2 starts on a loaded machine; the
    # watch ends at the third start (at most 40 s). startup_s 10: a Python that exits at once can
    # take over a second to do so on a loaded machine (niced beside cluster tests), and an exit
    # after startup_s would reset the backoff this test reads
    events, log = _supervise(tmp_path, 40.0, until=lambda ev: len(_start_times(ev)) >= 3, restarted=True,
                             startup_s=10.0)
    assert not [e for e in events if "app_failed" in e.get("ctl", {})], events
    starts = _start_times(events)
    # exits at once every time: started again after 1, 2, then 4 s (backoff), not once and never again
    assert len(starts) >= 3, starts
    assert re.findall(r"starting it again in (\d+) s", log)[:2] == ["1", "2"], log
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    # the wait doubles: an app that can never start does not spin (a loaded machine only adds to a gap)
    assert gaps[0] >= 1.0 and gaps[1] >= 2.0, gaps
    exits = [e["ctl"]["app_exit"] for e in events if "app_exit" in e.get("ctl", {})]
    assert exits and exits[0] == {"code": 3, "by": "self"}, exits


def test_the_first_start_exiting_at_once_still_ends_the_run(tmp_path):
    # the control: the run's first start of the instance, same command: the short error, one start.
    # startup_s 10 and a watch until the verdict: with startup_s 1 and a 4 s watch, a loaded CI
    # machine (this suite niced beside the cluster tests) took over 1 s to start and exit the
    # child, so the exit counted as a crash after start-up and no app_failed came (stop 50's CI)
    events, _ = _supervise(tmp_path, 40.0, until=lambda ev: any("app_failed" in e.get("ctl", {}) for e in ev),
                           startup_s=10.0)
    failed = [e["ctl"]["app_failed"] for e in events if "app_failed" in e.get("ctl", {})]
    assert len(failed) == 1 and failed[0]["reason"].startswith("the application exited with code 3"), events
    assert len(_start_times(events)) == 1


def test_backoff_doubles_up_to_its_cap():
    assert [restart_delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, BACKOFF_MAX_S, BACKOFF_MAX_S]


def test_a_restarted_instance_worker_is_marked_restarted():
    # the pool starts a killed instance, or a zombie's replacement, from the workload's respawn
    w = App(AppSpec.model_validate({"app": {"command": ["{python}", "app.py", "{bootstrap}"]}}), "b:9092", 1)
    first = next(s for s in w.writers() if s.role == "app")
    assert not first.cfg.get("restarted")
    again = w.respawn(first)
    assert again.cfg["restarted"] is True and again.cfg["argv"] == first.cfg["argv"] and again.name == first.name
