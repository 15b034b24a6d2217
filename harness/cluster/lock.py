"""One cluster at a time per machine.

Every run uses the same namespace names and cleans up leftovers before it starts, so two
runs at once would tear each other down. ``cluster_lock`` serialises them with an flock on
``$EOS_CHAOS_LOCK`` (default /tmp/kafka-eos-chaos.lock); the kernel drops the lock when its
holder dies, so a crashed run never blocks the next.

Waiters queue in arrival order: each leaves a ticket (``<lock>.queue/<ns>-<pid>``) and takes
the lock only when no older ticket of a live process is left, so a loop that starts run after
run (suite, zoo, explore) lets the runs that queued meanwhile go first instead of winning every
race for the released lock. A dead process's ticket is removed by the next waiter.
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
    ticket = _take_ticket(path)
    try:
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                if _older_tickets(ticket):
                    raise BlockingIOError
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _drop(ticket)
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
        _drop(ticket)
        os.close(fd)  # closing drops the lock


def _take_ticket(path: str) -> str | None:
    """A ticket file named by time (ns) and pid; None when the queue folder is not writable
    (the lock then works without the queue's fairness)."""
    q = path + ".queue"
    try:
        os.makedirs(q, mode=0o777, exist_ok=True)
        t = os.path.join(q, f"{time.time_ns():020d}-{os.getpid()}")
        with open(t, "w"):
            pass
        return t
    except OSError:
        return None


def _older_tickets(ticket: str | None) -> bool:
    """True when a live process queued before ``ticket``; removes dead processes' tickets."""
    if ticket is None:
        return False
    q, mine = os.path.split(ticket)
    try:
        names = sorted(os.listdir(q))
    except OSError:
        return False
    for name in names:
        if name >= mine:
            return False
        try:
            pid = int(name.rsplit("-", 1)[1])
            os.kill(pid, 0)
        except (ValueError, IndexError, ProcessLookupError):
            _drop(os.path.join(q, name))  # its process is gone
            continue
        except PermissionError:
            pass  # alive, another user's
        return True
    return False


def _drop(ticket: str | None) -> None:
    if ticket:
        try:
            os.unlink(ticket)
        except FileNotFoundError:
            pass
