"""Cycles Kafka cannot produce (checkers/finders/event_order.py): scenarios that expect the
realtime/process variants of G0/G1c (Kafka's transactions are not isolated) must still fail
on a cycle whose events contradict each other. Each history below was valid with those
names allowed before event_order.py; the near misses stay valid."""

import pytest

from checkers import check, load_history
from checkers.synthetic.build import HistoryBuilder
from checkers.finders.event_order import event_graph, impossible_cycle_cases

SMOKE_ALLOWED = ["G0", "G0-process", "G0-realtime", "G1c-realtime"]


def _names(b: HistoryBuilder) -> list[str]:
    return [c["anomaly"] for c in impossible_cycle_cases(load_history(b.events))]


def test_send_acknowledged_before_another_began_that_lands_after_it_fails():
    """A's send was acknowledged (offset 1) before B was invoked; B's lands at offset 0."""
    b = HistoryBuilder()
    b.send(0, [("x/0", 1, 1)])
    b.send(1, [("x/0", 2, 0)])
    b.assign(2, ["x/0"], isolation="read_committed")
    b.poll(2, {"x/0": [(0, 2), (1, 1)]})
    v = check(b.events, allowed=SMOKE_ALLOWED)
    assert v.valid is False and v.failing == ["G0-realtime"], v.anomaly_counts
    assert v.impossible == ["G0-realtime"]
    ex = v.anomalies["G0-realtime"][0]
    assert ex["impossible"] is True
    assert [s["events"] for s in ex["steps"]] == ["I(A) < C(B)", "K(A) < I(B)"]
    assert "cannot produce" in ex["explanation"]


def test_poll_of_a_value_whose_writer_had_not_been_invoked_fails():
    """The consumer's poll completed before the producer of its value was invoked."""
    b = HistoryBuilder()
    b.assign(2, ["y/0"], isolation="read_uncommitted")
    b.poll(2, {"y/0": [(0, 7)]})
    b.txn(3, [("y/0", 7, 0)], tid="t")
    v = check(b.events, allowed=SMOKE_ALLOWED)
    assert v.failing == ["G1c-realtime"] and v.impossible == ["G1c-realtime"]


def _read_before_commit(isolation: str) -> HistoryBuilder:
    """txn A is invoked, a consumer polls A's value and completes, then A asks to commit."""
    b = HistoryBuilder()
    b.assign(2, ["x/0"], isolation=isolation)
    b.invoke(0, "txn", [["send", "x/0", 5]], {"transactional_id": "t"})
    b.poll(2, {"x/0": [(0, 5)]})
    b.complete(0, "ok", [["send", "x/0", [0, 5]]],
               {"transactional_id": "t", "commit_ns": b.time + 1_000_000})
    return b


def test_read_committed_poll_of_a_transaction_before_it_asked_to_commit_fails():
    v = check(_read_before_commit("read_committed").events, allowed=SMOKE_ALLOWED)
    assert v.failing == ["G1c-realtime"], v.anomaly_counts
    steps = v.anomalies["G1c-realtime"][0]["steps"]
    assert [s["events"] for s in steps] == ["C(A) < C(B)", "K(A) < C(B)"]
    assert "asked to commit" in steps[1]["explanation"]


def test_read_uncommitted_poll_before_the_commit_is_possible():
    v = check(_read_before_commit("read_uncommitted").events, allowed=SMOKE_ALLOWED)
    assert v.valid is True, v.anomaly_counts


def test_unknown_isolation_is_judged_as_read_uncommitted():
    b = HistoryBuilder()
    b.assign(2, ["x/0"])  # no isolation_level: the weaker edge
    b.invoke(0, "txn", [["send", "x/0", 5]], {"transactional_id": "t"})
    b.poll(2, {"x/0": [(0, 5)]})
    b.complete(0, "ok", [["send", "x/0", [0, 5]]], {"transactional_id": "t", "commit_ns": b.time + 1})
    assert _names(b) == []


def test_long_transaction_g1c_realtime_is_possible_and_stays_allowed():
    """docs/checkers.md "Realtime cycles in Kafka": L writes A early and B late; T1 (on A
    after L) commits, a consumer polls T1's value, then T1's producer runs T2, which writes B
    before L's late record. G1c-realtime by Elle's definitions, possible in Kafka."""
    b = HistoryBuilder()
    b.assign(2, ["a/0"], isolation="read_committed")
    b.invoke(0, "txn", [["send", "a/0", 1], ["send", "b/0", 2]], {"transactional_id": "L"})
    b.txn(1, [("a/0", 3, 1)], tid="P")  # T1
    b.poll(2, {"a/0": [(1, 3)]})
    b.txn(1, [("b/0", 4, 0)], tid="P")  # T2
    b.complete(0, "ok", [["send", "a/0", [0, 1]], ["send", "b/0", [1, 2]]],
               {"transactional_id": "L", "commit_ns": b.time})
    b.assign(3, ["a/0", "b/0"], isolation="read_committed")
    b.poll(3, {"a/0": [(0, 1), (1, 3)], "b/0": [(0, 4), (1, 2)]}, final=True)
    h = load_history(b.events)
    from checkers.finders.cycles import cycle_cases
    assert "G1c-realtime" in {c["anomaly"] for c in cycle_cases(h)}
    assert impossible_cycle_cases(h) == []
    assert check(b.events, allowed=SMOKE_ALLOWED).valid is True


def test_write_cycle_of_overlapping_transactions_is_possible():
    """Plain G0: two open transactions interleave on two keys. Never impossible."""
    b = HistoryBuilder()
    b.invoke(0, "txn", [["send", "x/0", 1], ["send", "y/0", 1]], {"transactional_id": "a"})
    b.invoke(1, "txn", [["send", "x/0", 2], ["send", "y/0", 2]], {"transactional_id": "b"})
    b.complete(0, "ok", [["send", "x/0", [0, 1]], ["send", "y/0", [1, 1]]], {"transactional_id": "a"})
    b.complete(1, "ok", [["send", "x/0", [1, 2]], ["send", "y/0", [0, 2]]], {"transactional_id": "b"})
    b.assign(2, ["x/0"], isolation="read_committed")
    b.poll(2, {"x/0": [(0, 1), (1, 2)]})
    assert _names(b) == []
    assert check(b.events, allowed=["G0"]).valid is True


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_mutual_reads_of_two_transactions_under_read_committed(isolation):
    """Each transaction polled the other's value inside itself (consume-transform-produce):
    under read_committed each must have committed before the other read: impossible."""
    b = HistoryBuilder()
    b.assign(0, ["w/0"], isolation=isolation)
    b.assign(1, ["z/0"], isolation=isolation)
    b.invoke(0, "txn", [["poll"], ["send", "z/0", 5]], {"transactional_id": "a"})
    b.invoke(1, "txn", [["poll"], ["send", "w/0", 6]], {"transactional_id": "b"})
    b.complete(0, "ok", [["poll", {"w/0": [[0, 6]]}], ["send", "z/0", [0, 5]]], {"transactional_id": "a"})
    b.complete(1, "ok", [["poll", {"z/0": [[0, 5]]}], ["send", "w/0", [0, 6]]], {"transactional_id": "b"})
    assert _names(b) == (["G1c"] if isolation == "read_committed" else [])


def test_event_graph_node_layout():
    b = HistoryBuilder()
    b.send(0, [("x/0", 1, 0)])
    b.send(0, [("x/0", 2, 1)])
    g = event_graph(load_history(b.events))
    n = g["n"]
    assert n == 2 and g["m"] == 2
    pairs = set(zip(g["src"].tolist(), g["dst"].tolist()))
    assert {(0, n), (n, 2 * n), (0, n + 1)} <= pairs  # I->C, C->K, ww I(0)->C(1)
    assert (2 * n, 1) in pairs  # process: K(0) -> I(1)
