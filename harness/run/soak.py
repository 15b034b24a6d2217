"""Window checks while the load runs (a scenario's ``windows:``; issue 25 section 3).

``WindowChecks`` follows history.jsonl on a thread of the controller with
``checkers.engines.windows.WindowTracker`` (it reads only the bytes appended since its last look, at
most READ_CHUNK at a time, and keeps one entry per process and open window: nothing per
event), and checks each closed window's slice in a child process
(``python -m checkers.engines.windows``, at nice 10, one at a time, given the run folder for its
meta.json: the pipeline mapping), so the controller never holds the history and its RSS stays
flat. Each window becomes one line of ``windows.jsonl``:

    {"k", "start_s", "end_s", "slice_bytes": [start, end], "events", "lines", "ops",
     "valid", "anomaly_counts", "failing", "examples", "unknown_reasons", "check_s",
     "cpu_s", "controller_rss_mib"}   (or "error" when the child failed; the run goes on)

With ``stop_on_invalid`` the first invalid window sets the run's ``stop`` event (the load
ends early; heal, drain and the full check still run) and ``stopped`` says which window and
anomalies. The final verdict is the full check at the end, as without windows; for a run with
windows it runs in a spawned child with the report (``harness.run.runner.finish_in_child``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from checkers.timing import rss_now
from checkers.engines.windows import Window, WindowTracker
from harness.run.history_writer import HistoryWriter

READ_CHUNK = 8 << 20  # bytes read from the history per look: bounds the controller's memory
CHILD_TIMEOUT_S = 1800  # a window check that takes longer is killed and written as an error
NICE = 10
WINDOWS_FILE = "windows.jsonl"


def rss_mib() -> float:
    """This process's resident set size in MiB (0 where unknown)."""
    return round(rss_now() / 2**20, 1)


class WindowChecks:
    """The window loop of one run: ``start()`` when the load starts, ``close()`` when it ends.

    ``every_s`` (s) and ``stop_on_invalid`` come from the scenario's ``windows:``; ``allowed``
    is its ``expected``; ``stop`` the run's stop event. ``checked``/``invalid`` count windows,
    ``stopped`` is None or {"window": k, "anomalies": [names]}.
    """

    def __init__(self, history: HistoryWriter, run_dir: Path, every_s: float, *, stop_on_invalid: bool,
                 allowed: list[str], stop: threading.Event, poll_s: float | None = None):
        self.history, self.run_dir = history, Path(run_dir)
        self.tracker = WindowTracker(every_s)
        self.stop_on_invalid, self.allowed, self.stop = stop_on_invalid, list(allowed), stop
        self.poll_s = poll_s if poll_s is not None else min(5.0, every_s / 4)
        self.checked = self.invalid = 0
        self.stopped: dict | None = None
        self._done = threading.Event()
        self._child: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._loop, name="window-checks", daemon=True)

    def start(self) -> "WindowChecks":
        self._thread.start()
        return self

    def close(self, timeout: float = 60) -> None:
        """End the loop (the load is over: the full check follows). A window check under way
        gets ``timeout`` s to finish, then is killed."""
        self._done.set()
        self._thread.join(timeout)
        child = self._child
        if self._thread.is_alive() and child is not None:
            child.kill()
            self._thread.join(10)

    def _loop(self) -> None:
        pending: list[Window] = []
        with open(self.history.path, "rb") as fh:
            while not self._done.wait(self.poll_s):
                try:
                    pending += self._follow(fh)
                    while pending and not self._done.is_set():
                        self._check(pending.pop(0))
                        if self.stopped:
                            return
                except Exception as exc:  # noqa: BLE001 - window checks never end the run
                    self._write({"error": f"window loop: {type(exc).__name__}: {exc}"})

    def _follow(self, fh) -> list[Window]:
        """Feed the tracker the whole lines appended since the last look; return the windows
        that closed. While catching up on a backlog a window closes at the line whose time
        closes it (the run's clock then was about that time), so its slice ends there; once
        the file's end is reached, the run's clock closes what waits on silent processes."""
        fh.seek(self.tracker.pos)
        data = fh.read(READ_CHUNK)
        closed: list[Window] = []
        end = data.rfind(b"\n")
        pos = self.tracker.pos
        for line in data[:end + 1].split(b"\n")[:-1] if end >= 0 else []:
            pos += len(line) + 1
            self.tracker.feed(line, pos)
            closed += self.tracker.closed()  # by the times read so far: cheap when nothing closes
        if len(data) < READ_CHUNK:  # at the end of what was written
            closed += self.tracker.closed(self.history.now())
        return closed

    def _check(self, w: Window) -> None:
        row: dict = {"k": w.k, "start_s": w.start_ns / 1e9, "end_s": w.end_ns / 1e9,
                     "slice_bytes": [w.slice_start, w.slice_end], "events": w.events}
        t0 = time.monotonic()
        # --meta: the run folder's meta.json, written when the load started (the pipeline mapping
        # eos-duplicate needs, checkers.engines.windows)
        cmd = [sys.executable, "-m", "checkers.engines.windows", str(self.history.path),
               "--start", str(w.slice_start), "--end", str(w.slice_end), "--meta", str(self.run_dir),
               "--allowed", *self.allowed]
        try:
            self._child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           preexec_fn=lambda: os.nice(NICE), env=_child_env())
            out, err = self._child.communicate(timeout=CHILD_TIMEOUT_S)
            if self._child.returncode != 0:
                tail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
                raise RuntimeError(f"exit {self._child.returncode}: {tail[0][:300]}")
            row.update(json.loads(out.decode().strip().splitlines()[-1]))
        except subprocess.TimeoutExpired:
            self._child.kill()
            self._child.communicate()
            row["error"] = f"window check took more than {CHILD_TIMEOUT_S} s; killed"
        except Exception as exc:  # noqa: BLE001 - a crashed check is written, the run goes on
            row["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            self._child = None
        row["check_s"] = round(time.monotonic() - t0, 2)
        row["controller_rss_mib"] = rss_mib()
        self._write(row)
        if "error" in row:
            return
        self.checked += 1
        if row.get("valid") is False:
            self.invalid += 1
            if self.stop_on_invalid and not self.stop.is_set():
                self.stopped = {"window": w.k, "start_s": row["start_s"], "end_s": row["end_s"],
                                "anomalies": row.get("failing", [])}
                self.stop.set()

    def _write(self, row: dict) -> None:
        with open(self.run_dir / WINDOWS_FILE, "a") as fh:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")


def _child_env() -> dict:
    """The controller's environment, with this tree on PYTHONPATH (the child imports
    ``checkers`` from the same place as the controller)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def stop_line(stopped: dict | None) -> str | None:
    """The sentence meta.json and the report carry for a load stopped by a window."""
    if not stopped:
        return None
    return (f"stopped at window {stopped['window']} ({stopped['start_s']:g}-{stopped['end_s']:g} s; "
            f"anomalies {', '.join(stopped['anomalies']) or '?'})")
