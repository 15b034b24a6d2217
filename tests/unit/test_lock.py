"""harness.cluster.lock: a run cancelled while it waits for the cluster lock ends at once."""

import threading
import time

import pytest

from harness.cluster.lock import LockWaitStopped, cluster_lock


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


def test_waiters_take_the_lock_in_arrival_order(tmp_path, monkeypatch):
    """A holder that releases and asks again at once queues behind those already waiting."""
    monkeypatch.setenv("EOS_CHAOS_LOCK", str(tmp_path / "lock"))
    order: list[str] = []
    started = threading.Event()

    def waiter():
        started.set()
        with cluster_lock(timeout=30):
            order.append("waiter")

    with cluster_lock():
        t = threading.Thread(target=waiter)
        t.start()
        started.wait()
        # the waiter's ticket is in the queue (polled: a fixed pause raced a loaded machine)
        queue, deadline = tmp_path / "lock.queue", time.monotonic() + 30
        while not (queue.is_dir() and any(queue.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert queue.is_dir() and any(queue.iterdir()), "the waiter never queued"
    with cluster_lock(timeout=30):  # released and asked again at once
        order.append("loop")
    t.join()
    assert order == ["waiter", "loop"]


def test_a_dead_processs_ticket_does_not_block(tmp_path, monkeypatch):
    lock = tmp_path / "lock"
    monkeypatch.setenv("EOS_CHAOS_LOCK", str(lock))
    q = tmp_path / "lock.queue"
    q.mkdir()
    (q / f"{1:020d}-999999999").touch()  # no such pid
    with cluster_lock(timeout=5):
        pass
    assert list(q.iterdir()) == []
