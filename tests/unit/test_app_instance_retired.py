"""The app instance supervisor (harness.workers.app_instance) as the pool runs it: a real worker
process with a real child. A zombie fault retires the instance it replaces; once that instance
exits by itself (fenced by its replacement), it must stay down, not be restarted: two live
instances with the same transactional.id and group.instance.id fence each other in turn."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.util import CONFIG_ENV

ROOT = Path(__file__).resolve().parents[2]


def _supervise(tmp_path, commands: list[str], watch_s: float = 6.0, until=None) -> list[dict]:
    """Run the worker for ``watch_s`` seconds, or until ``until(events so far)`` holds."""
    cfg = {"instance": 0, "work_dir": str(tmp_path / "w"), "client_properties": str(tmp_path / "w" / "c.properties"),
           "bootstrap": "198.18.0.11:9092", "restart": "on-failure", "startup_s": 0.2, "stop_grace_s": 2,
           "argv": [sys.executable, "-c", "import time; time.sleep(2.0); raise SystemExit(3)"],
           "log": str(tmp_path / "app-0.log"), "cwd": str(tmp_path)}
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{CONFIG_ENV: json.dumps(cfg)})
    p = subprocess.Popen([sys.executable, "-m", "harness.workers", "app"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=str(ROOT), text=True)
    for c in commands:  # read by the worker's stdin thread at its start, long before the child's exit
        p.stdin.write(c + "\n")
    p.stdin.flush()
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)  # events as they come
    reader.start()
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline:
        if until is not None and until([json.loads(x) for x in list(lines) if x.strip()]):
            break
        time.sleep(0.1)
    p.stdin.write("stop\n")
    p.stdin.flush()
    p.stdin.close()
    p.wait(timeout=30)
    reader.join(30)
    return [json.loads(line) for line in lines if line.strip()]


def _starts(events):
    return [e for e in events if e.get("f") == "app-start" and e.get("type") == "ok"]


def _exited_then(wait_s: float):
    """An ``until`` that holds ``wait_s`` seconds (wall clock) after the first app-exit: long
    enough for a wrong restart (1 s backoff) to show, however late a loaded machine exits."""
    seen: list[float] = []

    def until(events) -> bool:
        if not seen and any(e.get("f") == "app-exit" and e.get("type") == "ok" for e in events):
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= wait_s
    return until


def test_a_retired_instance_that_exits_is_not_restarted(tmp_path):
    # watch until 4 s after the child's exit (at most 40 s): a fixed 6 s watch let a loaded
    # machine's slow child start be stopped before it exited (exit -15, not 3)
    events = _supervise(tmp_path, ["retire"], watch_s=40.0, until=_exited_then(4.0))
    assert {"ctl": {"retired": True}} in events
    exits = [e["value"]["code"] for e in events if e.get("f") == "app-exit" and e.get("type") == "ok"]
    assert exits == [3], exits
    assert len(_starts(events)) == 1, _starts(events)


def test_an_instance_not_retired_is_restarted_on_failure(tmp_path):
    # the control: the same child, not retired, is started again after each exit with code 3
    # 12 s: a 2 s child, a 1 s backoff and two Python starts; 6 s gave one start on a loaded machine;
    # the watch ends at the second start
    assert len(_starts(_supervise(tmp_path, [], watch_s=12.0, until=lambda ev: len(_starts(ev)) >= 2))) >= 2
