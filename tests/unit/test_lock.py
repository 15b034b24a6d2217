"""harness.lock: a run cancelled while it waits for the cluster lock ends at once."""

import threading
import time

import pytest

from harness.lock import LockWaitStopped, cluster_lock


def test_waiting_run_stops_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("EOS_CHAOS_LOCK", str(tmp_path / "lock"))
    stop = threading.Event()
    with cluster_lock():  # another run holds it
        threading.Timer(0.3, stop.set).start()
        t0 = time.monotonic()
        with pytest.raises(LockWaitStopped, match="nothing was started"):
            with cluster_lock(timeout=30, stop=stop):
                pass
        assert time.monotonic() - t0 < 5


def test_free_lock_is_taken_even_with_a_stop_event(tmp_path, monkeypatch):
    monkeypatch.setenv("EOS_CHAOS_LOCK", str(tmp_path / "lock"))
    with cluster_lock(stop=threading.Event()):
        pass
