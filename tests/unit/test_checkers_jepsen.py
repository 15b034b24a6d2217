"""Jepsen-parity finders on tiny handmade histories: empty, minimal positive, near miss."""

import pytest

from checkers import (
    check,
    duplicate_cases,
    g1a_cases,
    inconsistent_offsets_cases,
    load_history,
    lost_write_cases,
    nonmonotonic_poll_cases,
    poll_skip_cases,
    unseen_cases,
)
from checkers.synthetic.build import HistoryBuilder

FINDERS = [duplicate_cases, inconsistent_offsets_cases, lost_write_cases, unseen_cases,
           g1a_cases, poll_skip_cases, nonmonotonic_poll_cases]


def H(b: HistoryBuilder):
    return load_history(b.events)


@pytest.mark.parametrize("finder", FINDERS, ids=lambda f: f.__name__)
def test_empty_history_has_no_cases(finder):
    assert finder(load_history([])) == []


@pytest.mark.parametrize("finder", FINDERS, ids=lambda f: f.__name__)
def test_finder_has_its_definition_as_docstring(finder):
    assert finder.__doc__ and len(finder.__doc__) > 80


def _aborted_gap_history() -> HistoryBuilder:
    """Committed 1@0, aborted 2@1 (+ abort marker @2), committed 3@3; read as 0 -> 3."""
    b = HistoryBuilder()
    b.init(0, "eosc-txn-0")
    b.txn(0, [("t/0", 1, 0)], tid="eosc-txn-0")
    b.txn(0, [("t/0", 2, 1)], "fail", tid="eosc-txn-0")
    b.txn(0, [("t/0", 3, 3)], tid="eosc-txn-0")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    b.poll(1, {"t/0": [(3, 3)]})
    b.assign(2, ["t/0"])
    b.poll(2, {"t/0": [(0, 1), (3, 3)]}, final=True)
    return b


def test_correct_history_with_aborted_gap_is_valid():
    v = check(_aborted_gap_history().events)
    assert v.valid is True, v.anomalies
    assert v.anomalies == {}
    assert v.stats["log_lengths"] == {"t/0": 2}


# -- duplicate -----------------------------------------------------------------------
def test_duplicate_value_at_two_offsets():
    b = HistoryBuilder()
    b.send(0, [("t/0", 10, 0)])
    b.send(0, [("t/0", 11, 1)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 10), (1, 11), (2, 10)]})
    cs = duplicate_cases(H(b))
    assert len(cs) == 1
    c = cs[0]
    assert (c["anomaly"], c["key"], c["value"], c["offsets"]) == ("duplicate", "t/0", 10, [0, 2])
    assert c["writer"]["invoke_index"] == 0
    assert "10" in c["explanation"] and "[0, 2]" in c["explanation"]


def test_same_value_seen_twice_at_one_offset_is_not_a_duplicate():
    b = HistoryBuilder()
    b.send(0, [("t/0", 10, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 10)]})
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 10)]})
    assert duplicate_cases(H(b)) == []


# -- inconsistent-offsets ------------------------------------------------------------
def test_inconsistent_offsets_two_values_at_one_offset():
    b = HistoryBuilder()
    b.send(0, [("t/0", 10, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 12)]})
    cs = inconsistent_offsets_cases(H(b))
    assert [(c["key"], c["offset"], c["values"]) for c in cs] == [("t/0", 0, [10, 12])]
    assert set(cs[0]["observed_by"]) == {"10", "12"}
    assert cs[0]["observed_by"]["10"][0]["source"] == "send"


def test_same_offset_on_different_keys_is_consistent():
    b = HistoryBuilder()
    b.send(0, [("t/0", 10, 0), ("t/1", 12, 0)])
    b.assign(1, ["t/0", "t/1"])
    b.poll(1, {"t/0": [(0, 10)], "t/1": [(0, 12)]})
    assert inconsistent_offsets_cases(H(b)) == []


# -- lost-write ----------------------------------------------------------------------
def test_lost_write_below_a_read_position():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0)], tid="x")
    b.txn(0, [("t/0", 2, 2)], tid="x")  # committed at position 1, never read
    b.txn(0, [("t/0", 3, 4)], tid="x")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (4, 3)]})
    cs = lost_write_cases(H(b))
    assert len(cs) == 1
    c = cs[0]
    assert (c["key"], c["value"], c["offset"], c["pos"]) == ("t/0", 2, 2, 1)
    assert c["max_read"]["pos"] == 2 and c["max_read"]["value"] == 3
    assert c["writer"]["invoke_index"] == 2


def test_info_write_that_was_read_counts_as_committed():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, None), ("t/0", 2, None)], "info", tid="x")  # outcome unknown
    b.txn(0, [("t/0", 3, 3)], tid="x")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (3, 3)]})  # value 2 of the same txn never read
    b.assign(2, ["t/0"])
    b.poll(2, {"t/0": [(0, 1), (3, 3)]}, final=True)
    h = H(b)
    # 1 was read, so the info txn committed, so 2 must be visible: unseen (its offset is
    # unknown, so lost-write cannot place it)
    us = unseen_cases(h)
    assert [(c["key"], c["value"]) for c in us] == [("t/0", 2)]
    assert lost_write_cases(h) == []


def test_info_write_never_read_is_neither_lost_nor_unseen():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0)], tid="x")
    b.txn(0, [("t/0", 2, 1)], "info", tid="x")
    b.txn(0, [("t/0", 3, 3)], tid="x")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (3, 3)]}, final=True)
    h = H(b)
    assert lost_write_cases(h) == []
    assert unseen_cases(h) == []
    assert poll_skip_cases(h) == []


def test_info_send_records_stand_alone():
    # a non-transactional send op with an unknown outcome: value 1 was read, value 2 (no
    # delivery report) never was; unlike a transaction, reading 1 does not commit 2
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, None), ("t/0", 2, None)], "info")
    b.send(0, [("t/0", 3, 5)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (5, 3)]}, final=True)
    h = H(b)
    assert unseen_cases(h) == [] and lost_write_cases(h) == []
    # the same records in a transaction: 2 must have committed, so it is unseen
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, None), ("t/0", 2, None)], "info", tid="x")
    b.txn(0, [("t/0", 3, 5)], tid="x")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (5, 3)]}, final=True)
    assert [c["value"] for c in unseen_cases(H(b))] == [2]


def test_acknowledged_record_of_an_info_send_must_have_committed():
    # value 2's delivery report gave offset 1 (acked) though the op ended info (another
    # record timed out): an acknowledged record is durable, so missing it is a lost write
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 0)])
    b.send(0, [("t/0", 2, 1), ("t/1", 9, None)], "info")
    b.send(0, [("t/0", 3, 2)])
    b.assign(1, ["t/0", "t/1"])
    b.poll(1, {"t/0": [(0, 1), (2, 3)]}, final=True)
    cs = lost_write_cases(H(b))
    assert [(c["value"], c["offset"]) for c in cs] == [(2, 1)]


# -- unseen --------------------------------------------------------------------------
def test_unseen_committed_write_after_final_drain():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0), ("t/1", 2, 0)], tid="x")
    b.assign(1, ["t/0", "t/1"])
    b.poll(1, {"t/0": [(0, 1)]}, final=True)
    cs = unseen_cases(H(b))
    assert [(c["key"], c["value"], c["offset"]) for c in cs] == [("t/1", 2, 0)]
    assert cs[0]["writer"]["transactional_id"] == "x"


def test_unseen_without_a_final_drain_judges_only_keys_some_poll_read():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0)], tid="x")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": []})
    h = H(b)
    assert unseen_cases(h) == []
    v = check(h)
    assert any("no final drain" in n for n in v.stats["notes"])


def test_unseen_only_on_keys_the_final_drain_covered():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0), ("u/0", 2, 0)], tid="x")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]}, final=True)
    assert unseen_cases(H(b)) == []


def test_unseen_final_drain_by_subscribed_topic():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0), ("t/1", 2, 0)], tid="x")
    b.invoke(1, "subscribe", ["t"])
    b.complete(1, "ok", ["t"])
    b.poll(1, {"t/0": [(0, 1)]}, final=True)
    assert [c["value"] for c in unseen_cases(H(b))] == [2]


# -- G1a -----------------------------------------------------------------------------
def test_g1a_aborted_value_returned_by_poll():
    b = HistoryBuilder()
    b.init(0, "eosc-txn-2")
    b.txn(0, [("t/0", 17, 0)], "fail", tid="eosc-txn-2")
    b.assign(5, ["t/0"])
    b.poll(5, {"t/0": [(0, 17)]})
    cs = g1a_cases(H(b))
    assert len(cs) == 1
    c = cs[0]
    assert (c["key"], c["value"], c["offset"]) == ("t/0", 17, 0)
    assert c["writer"]["transactional_id"] == "eosc-txn-2" and c["writer"]["type"] == "fail"
    assert c["reader"]["process"] == 5
    assert "aborted" in c["explanation"] and "eosc-txn-2" in c["explanation"]


def test_info_value_read_is_not_g1a():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 17, None)], "info", tid="x")
    b.assign(5, ["t/0"])
    b.poll(5, {"t/0": [(0, 17)]})
    assert g1a_cases(H(b)) == []


# -- poll-skip -----------------------------------------------------------------------
def test_aborted_offset_gap_is_not_a_skip():
    h = H(_aborted_gap_history())
    assert poll_skip_cases(h) == []
    assert nonmonotonic_poll_cases(h) == []


def test_poll_skip_between_polls():
    b = HistoryBuilder()
    for v, o in [(1, 0), (2, 2), (3, 4)]:  # committed, with markers between
        b.txn(0, [("t/0", v, o)], tid="x")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    b.poll(1, {"t/0": [(4, 3)]})
    cs = poll_skip_cases(H(b))
    assert len(cs) == 1
    c = cs[0]
    assert c["anomaly"] == "poll-skip"
    assert (c["from"]["pos"], c["to"]["pos"], c["skipped_count"]) == (0, 2, 1)
    assert c["skipped"] == [{"offset": 2, "pos": 1, "value": 2}]
    assert c["process"] == 1


def test_int_poll_skip_within_one_poll():
    b = HistoryBuilder()
    for v, o in [(1, 0), (2, 1), (3, 2)]:
        b.send(0, [("t/0", v, o)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (2, 3)]})
    cs = poll_skip_cases(H(b))
    assert [c["anomaly"] for c in cs] == ["int-poll-skip"]
    assert cs[0]["skipped"][0]["value"] == 2


def test_jump_after_reassign_is_not_a_skip():
    b = HistoryBuilder()
    for v, o in [(1, 0), (2, 1), (3, 2)]:
        b.send(0, [("t/0", v, o)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    b.assign(1, ["t/0"], start={"t/0": 2})
    b.poll(1, {"t/0": [(2, 3)]})
    assert poll_skip_cases(H(b)) == []


def test_skip_seen_by_another_consumer_only():
    """The skipped value's write is unknown (info) but another consumer read it."""
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 0)])
    b.send(0, [("t/0", 2, None)], "info")
    b.send(0, [("t/0", 3, 2)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (1, 2), (2, 3)]})
    b.assign(2, ["t/0"])
    b.poll(2, {"t/0": [(0, 1)]})
    b.poll(2, {"t/0": [(2, 3)]})
    cs = poll_skip_cases(H(b))
    assert [(c["anomaly"], c["process"]) for c in cs] == [("poll-skip", 2)]


# -- nonmonotonic-poll ---------------------------------------------------------------
def test_nonmonotonic_poll_between_polls():
    b = HistoryBuilder()
    for v, o in [(1, 0), (2, 1)]:
        b.send(0, [("t/0", v, o)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (1, 2)]})
    b.poll(1, {"t/0": [(1, 2)]})
    cs = nonmonotonic_poll_cases(H(b))
    assert [c["anomaly"] for c in cs] == ["nonmonotonic-poll"]
    assert (cs[0]["from"]["pos"], cs[0]["to"]["pos"]) == (1, 1)
    assert "repeated" in cs[0]["explanation"]


def test_int_nonmonotonic_poll_within_one_poll():
    b = HistoryBuilder()
    for v, o in [(1, 0), (2, 1)]:
        b.send(0, [("t/0", v, o)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(1, 2), (0, 1)]})
    cs = nonmonotonic_poll_cases(H(b))
    assert [c["anomaly"] for c in cs] == ["int-nonmonotonic-poll"]
    assert "went back" in cs[0]["explanation"]


def test_poll_after_assign_or_seek_is_not_nonmonotonic():
    b = HistoryBuilder()
    for v, o in [(1, 0), (2, 1)]:
        b.send(0, [("t/0", v, o)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1), (1, 2)]})
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    b.invoke(1, "seek", {"t/0": 0})
    b.complete(1, "ok", {"t/0": 0})
    b.poll(1, {"t/0": [(0, 1)]})
    assert nonmonotonic_poll_cases(H(b)) == []


def test_rewind_after_aborted_processor_txn_is_not_nonmonotonic():
    b = HistoryBuilder()
    for v, o in [(1, 0), (2, 1)]:
        b.send(0, [("in/0", v, o)])
    b.assign(1, ["in/0"])
    b.txn(1, [("out/0", 101, 0)], "fail", tid="p", polls={"in/0": [(0, 1), (1, 2)]})
    b.txn(1, [("out/0", 102, 2)], "ok", tid="p", polls={"in/0": [(0, 1), (1, 2)]})
    h = H(b)
    assert nonmonotonic_poll_cases(h) == []
    # but two ok txns re-reading the same input is a real rewind
    b.txn(1, [("out/0", 103, 4)], "ok", tid="p", polls={"in/0": [(1, 2)]})
    assert [c["anomaly"] for c in nonmonotonic_poll_cases(H(b))] == ["nonmonotonic-poll"]
