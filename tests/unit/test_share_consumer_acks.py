"""The share consumer's ``ack`` ops (harness/workers/share_consumer.py): each partition's
acknowledgements are announced (invoke written) before their ``commit_sync()`` is sent, so a
member killed inside the commit leaves an open invoke, which the share checker reads as a
reject the broker may have taken. CI of 2026-11-29 (tests/integration/test_share_workload.py,
seed 2): a member drew ``reject`` for t0/1@374, was killed inside ``commit_sync()``, the broker
archived the record, and the history had no ack at all: share-lost, a false alarm.

The client here is a stand-in: what is tested is the order of our own writes around its calls."""
from __future__ import annotations

import io
import sys
from pathlib import Path

from checkers import load_history
from checkers.finders.share_group import share_cases
from harness.run.scenario import load_scenario
from harness.workers.share_consumer import ShareConsumerWorker
from harness.workloads import WORKLOADS
from tests.unit.test_checkers_share import SHARE, H

ROOT = Path(__file__).resolve().parents[2]


class Killed(BaseException):
    """SIGKILL while a call is in flight: nothing after it runs."""


class Msg:
    def __init__(self, offset):
        self._offset = offset

    def offset(self):
        return self._offset


class KilledInCommit:
    """A ShareConsumer whose commit_sync() is where the member dies; it keeps what the
    worker had written when each call came."""

    def __init__(self, written: list):
        self.written, self.calls = written, []

    def acknowledge(self, m, kind):
        self.calls.append(("acknowledge", m.offset(), len(self.written)))

    def commit_sync(self, timeout):
        self.calls.append(("commit_sync", None, len(self.written)))
        raise Killed


def worker(monkeypatch) -> tuple[ShareConsumerWorker, list]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # the stop watcher reads it
    scn = load_scenario(ROOT / "scenarios" / "share.yaml")
    cfg = WORKLOADS["share"](scn.workload, "198.18.0.11:9092", 3).readers()[0].cfg
    w = ShareConsumerWorker(cfg)
    written: list = []
    w._write = written.append  # the history lines, in order
    return w, written


def test_ack_invoke_is_written_before_the_commit_is_sent(monkeypatch):
    w, written = worker(monkeypatch)
    c = KilledInCommit(written)
    plan = [(Msg(374), "t0/1", 100000282, "reject"), (Msg(7), "t0/2", 200000003, "accept")]
    try:
        w.acknowledge(c, plan, {"accept": "A", "release": "R", "reject": "J"})
    except Killed:
        pass
    # killed in the first partition's commit: its ack invoke is out, nothing else is
    assert [(e["type"], e["f"], e["value"]) for e in written] == [
        ("invoke", "ack", [["reject", "t0/1", 374, 100000282]])]
    assert c.calls == [("acknowledge", 374, 1), ("commit_sync", None, 1)]


def test_each_partition_is_committed_on_its_own(monkeypatch):
    w, written = worker(monkeypatch)

    class Fine(KilledInCommit):
        def commit_sync(self, timeout):
            self.calls.append(("commit_sync", None, len(self.written)))
            return {}  # no result named: info

    c = Fine(written)
    plan = [(Msg(1), "t0/1", 11, "accept"), (Msg(2), "t0/2", 22, "release"), (Msg(3), "t0/1", 33, "accept")]
    w.acknowledge(c, plan, {"accept": "A", "release": "R", "reject": "J"})
    assert [(e["type"], [a[2] for a in e["value"]]) for e in written] == [
        ("invoke", [1, 3]), ("info", [1, 3]), ("invoke", [2]), ("info", [2])]
    assert [x[0] for x in c.calls] == ["acknowledge", "acknowledge", "commit_sync", "acknowledge", "commit_sync"]


def test_a_reject_killed_in_flight_is_not_share_lost():
    """The history each way: without the ack (before the change) the record is share-lost;
    with the open invoke (after) the broker may have archived it: no case."""
    def run(with_open_ack: bool) -> list[dict]:
        h = (H().config(1).txn(10, 100, 0).acquire(1, [(0, 100, 1)], 1.0))
        if with_open_ack:
            h.ev.append({"process": 1, "type": "invoke", "f": "ack", "value": [["reject", "t0/0", 0, 100]],
                         "time": int(1.1e9)})
        h.nemesis("kill-client", 1.2, {"client": "share-consumer-0"}).drain([(0, 100)])
        return [c for c in share_cases(load_history(h.events()), SHARE) if c["anomaly"] == "share-lost"]

    assert len(run(with_open_ack=False)) == 1
    assert run(with_open_ack=True) == []
