"""harness.workers.txn_producers: many transactional producers in one worker process, and the
txn-queue options that use it (pure parts: no cluster)."""
import json

import pytest
from pydantic import ValidationError

from harness.workers import txn_producers
from harness.workers.txn_producers import StopFlag, TxnProducersWorker
from harness.workloads.txn_queue import VALUE_STRIDE, TxnQueue, TxnQueueSpec


@pytest.fixture(autouse=True)
def no_stdin(monkeypatch):
    # the worker reads stop/retire lines from stdin; pytest's stdin must not be read
    monkeypatch.setattr(TxnProducersWorker, "_watch_stdin", lambda self: None)


def worker(n=3, **cfg):
    base = {"start_ns": 0, "bootstrap": "x:1", "keys": [f"t0/{p}" for p in range(4)], "seed": 5,
            "value_base": 3 * VALUE_STRIDE, "transactional_ids": [f"eosc-txn-{i}" for i in range(n)],
            "max_sends": 4}
    return TxnProducersWorker(dict(base, **cfg))


def test_default_spec_keeps_one_process_per_producer():
    ws = TxnQueue(TxnQueueSpec(), "b:1", 1).writers()
    assert [w.role for w in ws] == ["txn-producer"] * 4
    assert [w.cfg["transactional_id"] for w in ws] == [f"eosc-txn-{i}" for i in range(4)]


def test_busy_spec_splits_producers_over_worker_processes():
    ws = TxnQueue(TxnQueueSpec(producers=33, producers_per_worker=16, min_sends_per_txn=2,
                               think_time_ms=5), "b:1", 2).writers()
    assert [w.name for w in ws] == ["producer-0", "producer-1", "producer-2"]
    assert {w.role for w in ws} == {"txn-producers"}
    ids = [t for w in ws for t in w.cfg["transactional_ids"]]
    assert ids == [f"eosc-txn-{i}" for i in range(33)]
    assert len({w.cfg["value_base"] for w in ws}) == 3 and ws[0].cfg["min_sends"] == 2 and ws[0].cfg["think_ms"] == 5


@pytest.mark.parametrize("fields, says", [
    ({"min_sends_per_txn": 5, "max_sends_per_txn": 4, "producers_per_worker": 2}, "more than max_sends_per_txn"),
    ({"min_sends_per_txn": 2}, "needs producers_per_worker > 1"),
])
def test_bad_busy_options_say_what_to_fix(fields, says):
    with pytest.raises(ValidationError, match=says):
        TxnQueueSpec(**fields)


def test_members_get_own_ids_seeds_and_disjoint_value_slices():
    w = worker(4)
    assert [m.tid for m in w.members] == [f"eosc-txn-{i}" for i in range(4)]
    spans = [(m.next_value, m.value_limit) for m in w.members]
    assert spans[0][0] == 3 * VALUE_STRIDE and spans[-1][1] == 4 * VALUE_STRIDE
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # adjacent, never overlapping
    assert len({m.rng.random() for m in w.members}) == 4  # each member its own seed


def test_each_member_instance_is_its_own_logical_process(capsys):
    w = worker(3)
    assert [m.proc for m in w.members] == [0, 1, 2]
    w.members[1].new_instance()  # a replaced producer instance: a new process, never reused
    assert w.members[1].proc == 3
    for m in w.members:
        m.emit("invoke", "txn", [["send", "t0/0", 1]], meta={"transactional_id": m.tid})
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(e["proc"], e["meta"]["transactional_id"]) for e in lines] == \
        [(0, "eosc-txn-0"), (3, "eosc-txn-1"), (2, "eosc-txn-2")]


@pytest.mark.parametrize("lo, hi", [(1, 4), (3, 3), (4, 4)])
def test_transaction_size_is_drawn_between_min_and_max_on_distinct_keys(lo, hi):
    w = worker(1, min_sends=lo, max_sends=hi)
    m = w.members[0]
    start = m.next_value
    sizes, total = set(), 0
    for _ in range(200):
        sends = m.choose_sends()
        sizes.add(len(sends))
        total += len(sends)
        assert len({k for k, _ in sends}) == len(sends)
    assert sizes == set(range(lo, hi + 1))
    assert m.next_value - start == total  # every value used once, none skipped
    seen = [v for _ in range(3) for _, v in m.choose_sends()]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


def test_a_fenced_retired_member_stops_alone_and_stop_reaches_all():
    w = worker(2)
    a, b = w.members
    w.retired.set()
    a.replace()  # its instance was fenced after retirement: this member exits, not the worker
    assert a.stopping.is_set() and not b.stopping.is_set() and not w.stopping.is_set()
    w.stopping.set()  # a ``stop`` line
    assert b.stopping.is_set()


def test_stop_flag_waits_on_the_shared_event():
    import threading

    shared = threading.Event()
    f = StopFlag(shared)
    assert not f.wait(0.01)
    f.set()
    assert f.is_set() and not shared.is_set() and f.wait(0)


def test_a_member_whose_value_slice_is_used_up_stops_without_producing(capsys):
    w = worker(1)
    m = w.members[0]
    m.next_value = m.value_limit - 1
    m.run()  # returns at once: no producer is ever created
    assert m.producer is None and capsys.readouterr().out == ""


def test_role_is_registered():
    from harness.workers.__main__ import ROLES

    assert ROLES["txn-producers"] is txn_producers.TxnProducersWorker
