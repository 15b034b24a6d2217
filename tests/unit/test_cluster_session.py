"""harness.cluster.session.ClusterSession with a stand-in service: the lock (not on external),
leftovers in problems with their wording, teardown in every case, what teardown left."""
import fcntl
import os
import threading

import pytest

from harness.cluster.lock import LockWaitStopped, cluster_lock
from harness.cluster.session import ClusterSession


class Service:
    """Records the calls; ``fail`` names the step that raises; ``left`` what teardown leaves."""

    def __init__(self, backend="netns", leftovers=(), fail=None, left=()):
        self.backend = type("B", (), {"name": backend})()
        self.leftovers, self.fail, self.left = list(leftovers), fail, list(left)
        self.calls = []
        self.lock_held = {}

    def _step(self, name):
        self.calls.append(name)
        self.lock_held[name] = _lock_held()
        if self.fail == name:
            raise RuntimeError(f"{name} failed")

    def clean_leftovers(self):
        self._step("clean_leftovers")
        return self.leftovers

    def start(self, timeout):
        self._step("start")

    def teardown(self):
        self._step("teardown")
        return self.left


def _lock_held() -> bool:
    """Whether someone holds the lock file (a non-blocking flock from another descriptor fails)."""
    fd = os.open(os.environ["EOS_CHAOS_LOCK"], os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


@pytest.fixture(autouse=True)
def private_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("EOS_CHAOS_LOCK", str(tmp_path / "lock"))


def test_lock_leftovers_start_body_teardown_in_order():
    svc, phases = Service(leftovers=["namespace eosc-n1"], left=["n2 still running"]), []
    with ClusterSession(svc, on_phase=phases.append) as s:
        assert _lock_held() and s.started is not None
        s.problems.append("the body's")
    assert svc.calls == ["clean_leftovers", "start", "teardown"]
    assert all(svc.lock_held.values()) and not _lock_held()
    assert phases == ["cleanup", "cluster", "teardown"]
    assert s.problems == ["leftover of an earlier run removed: namespace eosc-n1", "the body's", "n2 still running"]
    assert s.left == ["n2 still running"] and s.teardown_s is not None


def test_problems_go_into_the_callers_list():
    mine = ["before"]
    with ClusterSession(Service(leftovers=["x"]), problems=mine):
        pass
    assert mine == ["before", "leftover of an earlier run removed: x"]


@pytest.mark.parametrize("fail", ["clean_leftovers", "start"])
def test_teardown_runs_when_bring_up_fails(fail):
    svc = Service(fail=fail, left=["left"])
    with pytest.raises(RuntimeError, match=f"{fail} failed"):
        with ClusterSession(svc):
            raise AssertionError("the body never runs")
    assert svc.calls[-1] == "teardown" and not _lock_held()


def test_teardown_runs_when_the_body_raises_and_a_failing_teardown_is_recorded():
    svc = Service(fail="teardown")
    s = ClusterSession(svc)
    with pytest.raises(KeyError):
        with s:
            raise KeyError("body")
    assert s.left == ["teardown of cluster failed: RuntimeError: teardown failed"] and not _lock_held()


def test_external_takes_no_lock_and_lock_false_neither():
    for svc, kw in ((Service(backend="external"), {}), (Service(), {"lock": False})):
        with cluster_lock():  # held by "another run": a session that took it would wait
            with ClusterSession(svc, lock_timeout=2, **kw):
                pass
        assert svc.calls == ["clean_leftovers", "start", "teardown"]


def test_stopped_while_queued_starts_nothing_and_close_is_a_no_op():
    svc, stop = Service(), threading.Event()
    stop.set()
    s = ClusterSession(svc, stop=stop)
    with cluster_lock():
        with pytest.raises(LockWaitStopped):
            s.acquire()
    assert s.close() == [] and svc.calls == []


def test_stepwise_use_as_the_runner_does_and_close_twice():
    svc = Service(left=["a"])
    s = ClusterSession(svc)
    s.acquire()
    try:
        s.open()
    finally:
        assert s.close() == ["a"]
    assert s.close() == [] and svc.calls.count("teardown") == 1 and s.problems == ["a"]
