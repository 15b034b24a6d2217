"""One cluster session: the machine's lock, leftovers, start, readiness and teardown, in one place.

Every caller that brings a cluster up (the runner, the pytest fixture ``eos_cluster``, the
findings' reproducers, the benches) goes through ``ClusterSession``::

    service = ClusterService(make_backend(spec, workdir / "nodes", workdir / "logs"), workdir / "logs")
    with ClusterSession(service) as session:    # lock, leftovers removed, nodes started and ready
        ...                                      # session.service, session.problems
    session.left                                 # what teardown could not undo ([] when clean)

Steps, in order:

1. the machine's cluster lock (harness.cluster.lock), unless the backend is ``external``: a
   cluster that is not on this machine makes no namespaces or containers and removes nobody's
   leftovers, so its runs do not queue. ``lock=False`` when the caller holds the lock already
   (a bench that starts several clusters under one hold). Raises LockWaitStopped (``stop``
   set while waiting: nothing was started) or TimeoutError.
2. leftovers of a crashed earlier run removed, each recorded in ``problems`` as
   "leftover of an earlier run removed: ...".
3. ``ClusterService.start``: nodes, admin agent, every broker registered with an active
   controller (readiness through the admin API, ``start_timeout`` s), toxiproxy when asked.
4. teardown in every case, also when step 2 or 3 raised or the body did:
   ``ClusterService.teardown`` (stop, then clean); what it could not undo is ``left`` and is
   appended to ``problems``; then the lock is released.

``on_phase(name)`` is told "cleanup" (step 2), "cluster" (step 3) and "teardown" (step 4): the
runner's progress line. The runner, whose own teardown (workers, history) must come between the
body and the cluster's, and whose meta.json is written after it, uses the steps one by one:
``acquire()`` before its try, ``open()`` inside it, ``close()`` in its finally. ``close`` is
idempotent and a no-op on a session that never got the lock.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from typing import Callable

from harness.cluster.lock import cluster_lock
from harness.cluster.service import ClusterService

#: the prefix of a removed leftover in a run's problems (meta.json ``teardown_problems``)
LEFTOVER = "leftover of an earlier run removed: "


class ClusterSession:
    """A cluster from lock to teardown; see the module docstring.

    ``service``: the ClusterService to bring up (built by the caller: backend, proxies, topics
    to delete). ``lock``: take the machine's cluster lock (default: unless the backend is
    ``external``). ``stop``: a threading.Event that ends the wait for the lock. ``problems``:
    the list to record leftovers and teardown problems in (the caller's own, so that they land
    in its order); a new list when None.

    After ``close``: ``left`` what teardown could not undo, ``teardown_s`` how long it took.
    While open: ``started`` is the time.monotonic() at which the service's start began.
    """

    def __init__(self, service: ClusterService, *, lock: bool | None = None, stop=None,
                 start_timeout: float = 180.0, lock_timeout: float = 3600.0,
                 problems: list[str] | None = None, on_phase: Callable[[str], None] | None = None):
        self.service = service
        self.take_lock = (service.backend.name != "external") if lock is None else lock
        self.stop = stop
        self.start_timeout = start_timeout
        self.lock_timeout = lock_timeout
        self.problems: list[str] = problems if problems is not None else []
        self.on_phase = on_phase
        self.left: list[str] = []
        self.started: float | None = None
        self.teardown_s: float | None = None
        self._lock = None  # the entered lock context while held
        self._open = False  # acquired and not yet closed

    # -- the steps ----------------------------------------------------------------------
    def acquire(self) -> None:
        """Step 1: wait for the machine's cluster lock (nothing when not taking it). Raises
        LockWaitStopped / TimeoutError, having started nothing."""
        if self._open:
            return
        lock = cluster_lock(timeout=self.lock_timeout, stop=self.stop) if self.take_lock else nullcontext()
        lock.__enter__()
        self._lock, self._open = lock, True

    def open(self) -> "ClusterSession":
        """Steps 1-3: the lock (when not held yet), leftovers removed, the service started and
        ready. When a step after the lock raises, the session tears down (step 4) and re-raises."""
        self.acquire()
        try:
            self._phase("cleanup")
            self.problems += [LEFTOVER + p for p in self.service.clean_leftovers()]
            self._phase("cluster")
            self.started = time.monotonic()
            self.service.start(timeout=self.start_timeout)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> list[str]:
        """Step 4: tear the service down, record what it could not undo (``left``, appended to
        ``problems``), release the lock; returns ``left``. Never raises for the teardown itself
        (a step that raises is recorded as "teardown of cluster failed: ..."); a second call,
        or one on a session that never got the lock, does nothing."""
        if not self._open:
            return []
        self._open = False
        t0 = time.monotonic()
        try:
            self._phase("teardown")
            try:
                self.left = list(self.service.teardown() or [])
            except Exception as exc:  # keep going: release the lock; report what was left
                self.left = [f"teardown of cluster failed: {type(exc).__name__}: {exc}"]
            self.teardown_s = round(time.monotonic() - t0, 2)
            self.problems += self.left
        finally:
            lock, self._lock = self._lock, None
            lock.__exit__(None, None, None)
        return self.left

    # -- context manager ----------------------------------------------------------------
    def __enter__(self) -> "ClusterSession":
        return self.open()

    def __exit__(self, *exc_info) -> bool:
        self.close()
        return False

    def _phase(self, name: str) -> None:
        if self.on_phase is not None:
            self.on_phase(name)
