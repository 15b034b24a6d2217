"""harness.cluster.artifacts.build_lock: processes that build one cached artifact at once take
turns (an app's three Streams instances compiled into one staging folder at once and two of them
failed: FileNotFoundError on the rename, app-streams-protocol-static seed 1, 2026-11-27)."""
import multiprocessing as mp
import time
from pathlib import Path

from harness.cluster.artifacts import build_lock


def _hold(home: str, log: str) -> None:
    with build_lock(Path(home)):
        with open(log, "a") as fh:
            fh.write(f"in {time.monotonic()}\n")
        time.sleep(0.3)
        with open(log, "a") as fh:
            fh.write(f"out {time.monotonic()}\n")


def test_build_lock_lets_one_process_in_at_a_time(tmp_path):
    log = tmp_path / "log"
    procs = [mp.get_context("fork").Process(target=_hold, args=(str(tmp_path / "home"), str(log))) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(10)
    lines = [ln.split()[0] for ln in log.read_text().splitlines()]
    # never two 'in' without an 'out' between them
    assert lines == ["in", "out"] * 3
