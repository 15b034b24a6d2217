"""One cluster at a time per machine.

Every run uses the same namespace names and cleans up leftovers before it starts, so two
runs at once would tear each other down. ``cluster_lock`` serialises them with an flock on
``$EOS_CHAOS_LOCK`` (default /tmp/kafka-eos-chaos.lock); the kernel drops the lock when its
holder dies, so a crashed run never blocks the next.
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator


class LockWaitStopped(Exception):
    """The run was asked to stop (Ctrl-C, SIGTERM) while it waited for the cluster lock."""


@contextmanager
def cluster_lock(timeout: float = 3600.0, on_wait: Callable[[], None] | None = None,
                 stop: threading.Event | None = None) -> Iterator[None]:
    """Hold the machine's cluster lock. Raises TimeoutError after ``timeout`` seconds of
    waiting, and LockWaitStopped as soon as ``stop`` is set while waiting (a run cancelled
    in the queue ends at once: it has started nothing)."""
    path = os.environ.get("EOS_CHAOS_LOCK", "/tmp/kafka-eos-chaos.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if stop is not None and stop.is_set():
                    raise LockWaitStopped(f"stopped while waiting for {path} (another eos-chaos run "
                                          "holds it): nothing was started") from None
                if not waited and on_wait:
                    on_wait()
                waited = True
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another eos-chaos run held {path} for {timeout:.0f} s")
                time.sleep(1)
        yield
    finally:
        os.close(fd)  # closing drops the lock
