"""Priority-2 finders: precommitted-read, nonmonotonic-send, G0/G1c, torn-transaction,
zombie-write, pipeline, sink, liveness. Empty, minimal positive, near miss for each."""

import pytest
import polars as pl

from checkers import (
    check,
    cycle_cases,
    load_history,
    nonmonotonic_send_cases,
    pipeline_cases,
    precommitted_read_cases,
    sink_cases,
    stalled_lso_cases,
    torn_transaction_cases,
    unavailable_cases,
    zombie_write_cases,
)
from checkers.synthetic.build import MS, HistoryBuilder


def H(b):
    return load_history(b.events)


EMPTY = load_history([])


@pytest.mark.parametrize("call", [
    precommitted_read_cases, nonmonotonic_send_cases, cycle_cases, torn_transaction_cases,
    zombie_write_cases, lambda h: pipeline_cases(h, {"keys": {"in/0": "out/0"}}),
    lambda h: sink_cases(h, {"records": []}), lambda h: stalled_lso_cases(h, 1.0),
    lambda h: unavailable_cases(h, 1.0),
])
def test_empty_history_has_no_cases(call):
    assert call(EMPTY) == []


# -- precommitted-read ---------------------------------------------------------------
def test_precommitted_read():
    b = HistoryBuilder()
    b.assign(1, ["out/0"])
    b.txn(1, [("out/0", 5, 0)], tid="p", polls={"out/0": [(0, 5)]})
    cs = precommitted_read_cases(H(b))
    assert [(c["key"], c["value"], c["op"]["invoke_index"]) for c in cs] == [("out/0", 5, 2)]


def test_reading_another_ops_write_is_not_precommitted():
    b = HistoryBuilder()
    b.txn(0, [("out/0", 5, 0)], tid="a")
    b.assign(1, ["out/0"])
    b.txn(1, [("out/0", 6, 2)], tid="p", polls={"out/0": [(0, 5)]})
    assert precommitted_read_cases(H(b)) == []


# -- nonmonotonic-send ---------------------------------------------------------------
def test_nonmonotonic_send_across_ops():
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 5)])
    b.send(0, [("t/0", 2, 3)])
    cs = nonmonotonic_send_cases(H(b))
    assert [(c["anomaly"], c["from"]["offset"], c["to"]["offset"]) for c in cs] == [
        ("nonmonotonic-send", 5, 3)]


def test_int_nonmonotonic_send_within_op():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 5), ("t/0", 2, 4)], tid="x")
    assert [c["anomaly"] for c in nonmonotonic_send_cases(H(b))] == ["int-nonmonotonic-send"]


def test_sends_of_different_processes_or_keys_may_interleave():
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 5), ("t/1", 2, 9)])
    b.send(1, [("t/0", 3, 2)])
    b.send(0, [("t/1", 4, 10), ("t/0", 6, 7)])
    assert nonmonotonic_send_cases(H(b)) == []


# -- G0 / G1c ------------------------------------------------------------------------
def _g0() -> HistoryBuilder:
    """T1 and T2 write x and y in opposite orders."""
    b = HistoryBuilder()
    b.invoke(0, "txn", [["send", "x/0", 1], ["send", "y/0", 1]])
    b.invoke(1, "txn", [["send", "x/0", 2], ["send", "y/0", 2]])
    b.complete(0, "ok", [["send", "x/0", [0, 1]], ["send", "y/0", [1, 1]]])
    b.complete(1, "ok", [["send", "x/0", [1, 2]], ["send", "y/0", [0, 2]]])
    return b


def test_g0_write_cycle():
    cs = cycle_cases(H(_g0()))
    assert [c["anomaly"] for c in cs] == ["G0"]
    c = cs[0]
    assert sorted(o["invoke_index"] for o in c["ops"]) == [0, 1]
    assert {s["kind"] for s in c["steps"]} == {"ww"}
    assert {s["key"] for s in c["steps"]} == {"x/0", "y/0"}
    v = check(H(_g0()))
    assert v.valid is False and "G0" in v.anomalies


def test_g1c_circular_information_flow():
    b = HistoryBuilder()
    b.assign(0, ["y/0"])
    b.assign(1, ["x/0"])
    b.invoke(0, "txn", [["poll"], ["send", "x/0", 1]])
    b.invoke(1, "txn", [["poll"], ["send", "y/0", 2]])
    # each polls the other's write: information flows in a circle
    b.complete(0, "ok", [["poll", {"y/0": [[0, 2]]}], ["send", "x/0", [0, 1]]])
    b.complete(1, "ok", [["poll", {"x/0": [[0, 1]]}], ["send", "y/0", [0, 2]]])
    cs = cycle_cases(H(b))
    assert [c["anomaly"] for c in cs] == ["G1c"]
    assert {s["kind"] for s in cs[0]["steps"]} == {"wr"}


def test_g0_realtime():
    b = HistoryBuilder()
    b.send(0, [("x/0", 1, 1)])  # completes first ...
    b.send(1, [("x/0", 2, 0)])  # ... yet this later send landed before it
    cs = cycle_cases(H(b))
    assert [c["anomaly"] for c in cs] == ["G0-realtime"]
    assert {s["kind"] for s in cs[0]["steps"]} == {"ww", "realtime"}


def test_g1c_realtime_read_from_the_future():
    b = HistoryBuilder()
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 7)]})  # completes before the write is even invoked
    b.send(0, [("x/0", 7, 0)])
    cs = cycle_cases(H(b))
    assert [c["anomaly"] for c in cs] == ["G1c-realtime"]


def test_g0_process():
    b = HistoryBuilder()
    b.invoke(0, "send", [["send", "x/0", 1]])
    b.invoke(1, "send", [["send", "x/0", 3]])
    b.complete(0, "ok", [["send", "x/0", [2, 1]]])
    b.invoke(0, "send", [["send", "x/0", 2]])
    b.complete(1, "ok", [["send", "x/0", [1, 3]]])
    b.complete(0, "ok", [["send", "x/0", [0, 2]]])
    names = [c["anomaly"] for c in cycle_cases(H(b))]
    assert "G0-process" in names or "G0-realtime" in names


def test_concurrent_txns_in_one_order_everywhere_have_no_cycle():
    b = HistoryBuilder()
    b.invoke(0, "txn", [["send", "x/0", 1], ["send", "y/0", 1]])
    b.invoke(1, "txn", [["send", "x/0", 2], ["send", "y/0", 2]])
    b.complete(1, "ok", [["send", "x/0", [1, 2]], ["send", "y/0", [1, 2]]])
    b.complete(0, "ok", [["send", "x/0", [0, 1]], ["send", "y/0", [0, 1]]])
    b.assign(2, ["x/0", "y/0"])
    b.poll(2, {"x/0": [(0, 1), (1, 2)], "y/0": [(0, 1), (1, 2)]})
    assert cycle_cases(H(b)) == []
    # a duplicate of 1 after 2 is a duplicate, not a write cycle
    b.poll(2, {"x/0": [(2, 1)]})
    assert cycle_cases(H(b)) == []


# -- torn-transaction ----------------------------------------------------------------
def test_torn_transaction_in_final_reads():
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0), ("y/0", 2, 0)], tid="t")
    b.assign(1, ["x/0", "y/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    cs = torn_transaction_cases(H(b))
    assert len(cs) == 1
    assert cs[0]["visible"] == [{"key": "x/0", "value": 1}]
    assert cs[0]["missing"] == [{"key": "y/0", "value": 2, "offset": 0}]


def test_fully_invisible_aborted_txn_is_not_torn():
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0), ("y/0", 2, 0)], "fail", tid="t")
    b.txn(0, [("x/0", 3, 2)], tid="t")
    b.assign(1, ["x/0", "y/0"])
    b.poll(1, {"x/0": [(2, 3)]}, final=True)
    assert torn_transaction_cases(H(b)) == []


# -- zombie-write --------------------------------------------------------------------
def _zombie(old_outcome: str, commit_ns: str | None = None) -> HistoryBuilder:
    """Process 0's txn is paused; process 1 (same transactional.id) inits and commits; then
    process 0's txn completes. ``commit_ns``: when process 0 asked to commit, "before" or
    "after" the replacement's init completed (meta.commit_ns), or unknown."""
    b = HistoryBuilder()
    b.init(0, "eosc-txn-1")
    b.txn(0, [("x/0", 1, 0)], tid="eosc-txn-1")
    b.invoke(0, "txn", [["send", "x/0", 2]], {"transactional_id": "eosc-txn-1"})  # paused
    asked = b.time + 1  # before the fence
    # a commit asked for before the fence: the old record was written first, below the new
    old_off, new_off = (2, 4) if commit_ns == "before" else (4, 2)
    b.init(1, "eosc-txn-1")  # replacement fences process 0
    b.txn(1, [("x/0", 3, new_off)], tid="eosc-txn-1")
    if commit_ns == "after":
        asked = b.time + 1
    err = ["_FENCED", "producer fenced"] if old_outcome != "ok" else None
    meta = {"transactional_id": "eosc-txn-1"}
    if commit_ns is not None:
        meta["commit_ns"] = asked
    b.complete(0, old_outcome, [["send", "x/0", [old_off, 2]]], meta=meta, error=err,
               time=b.time + 2 * MS)
    b.assign(2, ["x/0"])
    read = [(0, 1), (new_off, 3)] + ([(old_off, 2)] if old_outcome == "ok" else [])
    b.poll(2, {"x/0": sorted(read)}, final=True)
    return b


def test_zombie_commit_after_fence():
    cs = zombie_write_cases(H(_zombie("ok")))
    assert len(cs) == 1
    c = cs[0]
    assert c["evidence"] == "commit-after-fence"
    assert c["transactional_id"] == "eosc-txn-1"
    assert c["op"]["process"] == 0 and c["fence"]["process"] == 1
    assert "its commit completed ok after it (the history does not say" in c["explanation"]


def test_zombie_commit_asked_after_fence_is_flagged_from_file_and_list(tmp_path):
    b = _zombie("ok", commit_ns="after")
    for h in (H(b), load_history(b.write(tmp_path / "history.jsonl"))):
        assert h.ops.filter(pl.col("commit_time").is_not_null()).height == 1
        cs = zombie_write_cases(h)
        assert [c["evidence"] for c in cs] == ["commit-after-fence"]
        assert "asked to commit after it" in cs[0]["explanation"]


def test_zombie_paused_inside_commit_asked_before_fence_is_not_a_zombie_write(tmp_path):
    # the EndTxn reached the coordinator before the newer init, which waited for it
    # (CONCURRENT_TRANSACTIONS): the commit is legitimate although its ok came later
    b = _zombie("ok", commit_ns="before")
    for h in (H(b), load_history(b.write(tmp_path / "history.jsonl"))):
        assert zombie_write_cases(h) == []


def test_instances_are_ordered_by_init_completion_not_process_start():
    # process 0 is paused inside init; process 1 (its replacement) registers first; then
    # process 0's init completes: process 0 holds the newer epoch and fences process 1
    b = HistoryBuilder()
    b.invoke(0, "init", None, {"transactional_id": "z"})
    b.init(1, "z")
    b.complete(0, "ok", None, {"transactional_id": "z"})
    b.txn(1, [("x/0", 1, 0)], tid="z")  # the fenced replacement commits: a zombie write
    b.txn(0, [("x/0", 2, 2)], tid="z")
    b.assign(2, ["x/0"])
    b.poll(2, {"x/0": [(0, 1), (2, 2)]}, final=True)
    cs = zombie_write_cases(H(b))
    assert [(c["evidence"], c["op"]["process"], c["fence"]["process"]) for c in cs] == [
        ("write-after-fence", 1, 0)]


def test_instance_paused_with_its_init_answered_does_not_make_its_replacement_a_zombie():
    # process 0 sent InitProducerId and was paused before reading the answer; process 1
    # registered and commits; process 0, resumed, records its init ok at once and writes
    # nothing. Whether 0 or 1 holds the newer epoch is unknown: no zombie-write (it was
    # "commit-after-fence" when instances were ordered by the recorded init ok alone)
    b = HistoryBuilder()
    b.invoke(0, "init", None, {"transactional_id": "z"})
    b.init(1, "z")
    b.txn(1, [("x/0", 1, 0)], tid="z")
    b.invoke(1, "txn", [["send", "x/0", 2]], {"transactional_id": "z"})
    b.complete(0, "ok", None, {"transactional_id": "z"})
    b.complete(1, "ok", [["send", "x/0", [2, 2]]], {"transactional_id": "z"})
    b.assign(2, ["x/0"])
    b.poll(2, {"x/0": [(0, 1), (2, 2)]}, final=True)
    assert zombie_write_cases(H(b)) == []
    assert check(H(b)).valid is True


def test_fenced_zombie_is_not_a_zombie_write():
    h = H(_zombie("fail"))
    assert zombie_write_cases(h) == []
    assert check(h).valid is True


def test_zombie_write_visible_after_newer_instance():
    b = HistoryBuilder()
    b.init(0, "z")
    b.invoke(0, "txn", [["send", "x/0", 1]], {"transactional_id": "z"})
    b.init(1, "z")
    b.txn(1, [("x/0", 2, 0)], tid="z")
    b.complete(0, "info", [["send", "x/0", [2, 1]]])  # outcome unknown, yet it shows up
    b.assign(2, ["x/0"])
    b.poll(2, {"x/0": [(0, 2), (2, 1)]})
    cs = zombie_write_cases(H(b))
    assert [c["evidence"] for c in cs] == ["visible-after-newer"]


# -- pipeline ------------------------------------------------------------------------
def _pipeline(outputs: list[tuple[int, int]], committed=None, polled=(1, 2, 3, 4)) -> tuple:
    """Input values 1..4 at offsets 0..3, of which the processor's committed txn polled
    ``polled``; outputs: (value, offset) committed on out/0."""
    b = HistoryBuilder()
    b.send(0, [("in/0", v, v - 1) for v in (1, 2, 3, 4)])
    b.assign(1, ["in/0"])
    b.txn(1, [("out/0", v, o) for v, o in outputs], tid="proc",
          polls={"in/0": [(v - 1, v) for v in polled]})
    meta = {"keys": {"in/0": "out/0"}, "group_id": "g"}
    if committed is not None:
        meta["committed_offsets"] = {"in/0": committed}
    return H(b), meta


def test_pipeline_exactly_once_is_clean():
    h, meta = _pipeline([(1, 0), (2, 1), (3, 2), (4, 3)], committed=4)
    assert pipeline_cases(h, meta) == []
    assert pipeline_cases(h, None) == []


def test_eos_duplicate_and_loss():
    h, meta = _pipeline([(1, 0), (1, 1), (3, 2), (4, 3)])
    names = sorted((c["anomaly"], c["input"]["value"]) for c in pipeline_cases(h, meta))
    assert names == [("eos-duplicate", 1), ("eos-loss", 2)]
    v = check(h, meta={"pipeline": meta})
    assert {"eos-duplicate", "eos-loss", "duplicate"} <= set(v.anomalies)


def test_offsets_ahead_and_behind():
    # the group's offset moved past 3, which no committed txn polled: ahead
    h, meta = _pipeline([(1, 0), (2, 1)], committed=3, polled=(1, 2))
    assert [(c["anomaly"], c["input"]["value"]) for c in pipeline_cases(h, meta)] == [
        ("offsets-ahead", 3)]
    # polled by the committed txn yet without output: lost as well (issue 9, the tail)
    h, meta = _pipeline([(1, 0), (2, 1)], committed=3)
    assert sorted((c["anomaly"], c["input"]["value"]) for c in pipeline_cases(h, meta)) == [
        ("eos-loss", 3), ("eos-loss", 4), ("offsets-ahead", 3)]
    h, meta = _pipeline([(1, 0), (2, 1), (3, 2), (4, 3)], committed=2)  # 3, 4 again: behind
    assert [(c["anomaly"], c["input"]["value"]) for c in pipeline_cases(h, meta)] == [
        ("offsets-behind", 3), ("offsets-behind", 4)]


def test_encoded_outputs_group_by_the_input_they_carry():
    """With value_divisor, output value // divisor is the input: 1001 and 1002 are two
    committed attempts of input 1 (eos-duplicate), though their values differ."""
    h, meta = _pipeline([(1001, 0), (2001, 1), (3001, 2), (4001, 3)], committed=4)
    assert pipeline_cases(h, dict(meta, value_divisor=1000)) == []
    # undecoded, no output matches its input: wrong (and nothing looks processed)
    assert {c["anomaly"] for c in pipeline_cases(h, meta)} == {"offsets-ahead", "eos-loss", "pipeline-stalled"}
    h, meta = _pipeline([(1001, 0), (1002, 1), (3001, 2), (4001, 3)])
    names = sorted((c["anomaly"], c["input"]["value"]) for c in pipeline_cases(h, dict(meta, value_divisor=1000)))
    assert names == [("eos-duplicate", 1), ("eos-loss", 2)]


def test_a_pipeline_that_processed_nothing_is_unknown_not_valid():
    """The processors crashed at their first output (a bug the CI rehearsal of stop 27 found):
    committed input, no output, no committed offsets. This was judged valid: nothing the
    pipeline finders look for can exist without output."""
    b = HistoryBuilder()
    b.send(0, [("in/0", v, v - 1) for v in (1, 2, 3, 4)])
    b.assign(1, ["in/0"])
    b.poll(1, {"in/0": [(0, 1), (1, 2), (2, 3), (3, 4)]})  # a reader saw the input
    h = H(b)
    meta = {"keys": {"in/0": "out/0"}, "group_id": "g"}
    cs = pipeline_cases(h, meta)
    assert [(c["anomaly"], c.get("unknown"), c["inputs"]) for c in cs] == [("pipeline-stalled", True, 4)]
    v = check(h, meta={"pipeline": meta})
    assert v.valid == "unknown", v.anomaly_counts
    assert any("made no progress at all" in r for r in v.unknown_reasons), v.unknown_reasons


def test_one_input_key_never_processed_is_a_liveness_report():
    b = HistoryBuilder()
    b.send(0, [("in/0", 1, 0), ("in/1", 2, 0), ("in/1", 3, 1)])
    b.assign(1, ["in/0"])
    b.txn(1, [("out/0", 1, 0)], tid="proc", polls={"in/0": [(0, 1)]})
    b.assign(2, ["out/0", "in/1"])
    b.poll(2, {"out/0": [(0, 1)], "in/1": [(0, 2), (1, 3)]})
    h = H(b)
    meta = {"keys": {"in/0": "out/0", "in/1": "out/1"}, "group_id": "g"}
    cs = pipeline_cases(h, meta)
    assert [(c["anomaly"], c["key"], c["inputs"], c.get("liveness")) for c in cs] == [
        ("pipeline-stalled", "in/1", 2, True)]
    v = check(h, meta={"pipeline": meta})
    assert "pipeline-stalled" in v.liveness_reports and "pipeline-stalled" not in v.failing
    assert check(h, meta={"pipeline": meta, "fail_on": ["pipeline-stalled"]}).valid is False


# -- sink ----------------------------------------------------------------------------
def test_sink_duplicate_and_loss():
    b = HistoryBuilder()
    b.txn(0, [("in/0", 1, 0), ("in/0", 2, 1)], tid="t")
    b.txn(0, [("in/0", 3, 3)], "fail", tid="t")
    h = H(b)
    assert sink_cases(h, {"records": [["in/0", 1], ["in/0", 2]]}) == []
    cs = sink_cases(h, {"records": {"in/0": [1, 1]}})
    assert sorted((c["anomaly"], c["value"]) for c in cs) == [("sink-duplicate", 1), ("sink-loss", 2)]
    assert sink_cases(h, {"records": [["in/0", 1]], "end_offsets": {"in/0": 1}}) == []


# -- liveness ------------------------------------------------------------------------
def test_stalled_lso_consumer_never_advances():
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.assign(1, ["x/0"])
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.invoke(2, "txn", [["send", "x/0", 2]], {"transactional_id": "h"})  # hangs open
    b.txn(0, [("x/0", 3, 2)], tid="t")
    b.poll(1, {"x/0": [(0, 1)]})
    b.nemesis("pause", ["n1"])
    for _ in range(10):
        b.nemesis("noop")
    b.assign(3, ["x/0"])
    b.poll(3, {"x/0": [(0, 1), (2, 3)]}, final=True)
    h = H(b)
    cs = stalled_lso_cases(h, bound_s=5.0)
    assert [(c["process"], c["key"], c["stuck_at"]["pos"]) for c in cs] == [(1, "x/0", 0)]
    assert cs[0]["stalled_ms"] > 5000
    assert stalled_lso_cases(h, bound_s=60.0) == []
    v = check(h, meta={"stalled_lso_bound_s": 5.0})
    assert "stalled-lso" in v.anomalies and v.valid is not False
    assert check(h, meta={"stalled_lso_bound_s": 5.0, "fail_on": ["stalled-lso"]}).valid is False


def test_unavailable_window():
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.send(0, [("x/0", 1, 0)])
    b.send(0, [("x/0", 2, None)], "info")
    for _ in range(5):
        b.nemesis("partition")
    b.send(1, [("x/0", 3, 2)])
    h = H(b)
    cs = unavailable_cases(h, bound_s=4.0)
    assert [c["f"] for c in cs] == ["send"]
    assert cs[0]["seconds"] == pytest.approx(9.0)  # ok at 2 s, next ok at 11 s
    assert len(cs[0]["nemesis"]) == 5
    assert unavailable_cases(h, bound_s=9.5) == []


def test_unavailable_windows_end_when_the_load_ends():
    """Issue 36: an app run's input producers stop when the load ends; the catch-up wait and
    the final drain after it were reported as an outage. The window ends at the first heal."""
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.send(0, [("x/0", 1, 0)])                       # ok at 2 s
    b.nemesis("partition")                           # 3 s: a fault inside the load
    for _ in range(3):
        b.nemesis("noop")
    b.nemesis("heal")                                # 7 s: the load's end
    for _ in range(12):
        b.nemesis("noop")                            # drain, catch-up: no sends
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    h = H(b)
    assert unavailable_cases(h, bound_s=6.0) == []   # was 2 s to the history's end, 21 s
    assert [round(c["seconds"]) for c in unavailable_cases(h, bound_s=4.0)] == [5]   # 2 s to 7 s: inside the load


def test_stalled_lso_ends_when_a_rebalance_takes_the_key_away():
    # a processor reads x/0 once, then a rebalance moves x/0 to another member (an assign op
    # without it); its silence on x/0 afterwards is not a stall. Without the rebalance it is.
    def run(rebalance: bool):
        b = HistoryBuilder(step_ns=1_000_000_000)
        b.txn(0, [("x/0", 1, 0)], tid="t")
        b.assign(1, ["x/0", "x/1"])
        b.poll(1, {"x/0": [(0, 1)]})
        if rebalance:
            b.assign(1, ["x/1"], start={"via": "rebalance"})
        b.txn(0, [("x/0", 2, 2)], tid="t")
        for _ in range(10):
            b.nemesis("noop")
        b.assign(3, ["x/0"])
        b.poll(3, {"x/0": [(0, 1), (2, 2)]}, final=True)
        return stalled_lso_cases(H(b), bound_s=5.0)
    assert run(rebalance=True) == []
    cs = run(rebalance=False)
    assert [(c["process"], c["key"]) for c in cs] == [(1, "x/0")]
    assert "never read it" in cs[0]["explanation"]


def test_stalled_lso_ends_when_another_group_member_is_assigned_the_key():
    # processor 1 (group g) owns x/0 and is paused; its replacement, process 2, is assigned
    # x/0 and reads on; the resumed zombie polls x/0 once more before it is fenced. Neither
    # its silence after the handover nor its late read owes anything.
    b = HistoryBuilder(step_ns=1_000_000_000)
    g = {"via": "rebalance", "group_id": "g"}
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.assign(1, ["x/0"], start=g)
    b.poll(1, {"x/0": [(0, 1)]})
    b.assign(2, ["x/0"], start=g)
    b.txn(0, [("x/0", 2, 2)], tid="t")
    b.poll(2, {"x/0": [(0, 1), (2, 2)]})
    b.poll(1, {"x/0": [(0, 1)]})  # the zombie, late
    for _ in range(10):
        b.nemesis("noop")
    assert stalled_lso_cases(H(b), bound_s=5.0) == []
    # the same without the handover: process 1 stalls
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.assign(1, ["x/0"], start=g)
    b.poll(1, {"x/0": [(0, 1)]})
    b.txn(0, [("x/0", 2, 2)], tid="t")
    for _ in range(10):
        b.nemesis("noop")
    b.poll(3, {"x/0": [(0, 1), (2, 2)]})
    assert [c["process"] for c in stalled_lso_cases(H(b), bound_s=5.0)] == [1]


def test_unavailable_leaves_out_the_preload():
    """Issue 36: an app run's input.preload commits its records before any instance starts
    (between two ``preload`` events); a pure batch run has no live input after it. Before,
    the time from the preload's last op to the load's end was reported as an outage."""
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.nemesis("preload")                             # 1 s
    b.txn(0, [("x/0", 1, 0)], tid="preload-0")       # ok at 3 s
    b.txn(0, [("x/0", 2, 1)], tid="preload-0")       # ok at 5 s
    b.nemesis("preload")                             # 6 s: the load starts
    for _ in range(20):
        b.nemesis("noop")                            # the batch app copies; no live input
    b.nemesis("heal")                                # 27 s: the load's end
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1), (1, 2)]}, final=True)
    assert unavailable_cases(H(b), bound_s=10.0) == []   # was 5 s to 27 s, 22 s
    # live input after the preload is still judged, from the preload's end
    b2 = HistoryBuilder(step_ns=1_000_000_000)
    b2.nemesis("preload")
    b2.txn(0, [("x/0", 1, 0)], tid="preload-0")
    b2.nemesis("preload")                            # 4 s
    b2.txn(2, [("x/0", 2, 1)], tid="in-0")           # ok at 6 s
    for _ in range(12):
        b2.nemesis("noop")
    b2.nemesis("heal")                               # 19 s
    b2.assign(1, ["x/0"])
    b2.poll(1, {"x/0": [(0, 1), (1, 2)]}, final=True)
    cs = unavailable_cases(H(b2), bound_s=10.0)
    assert [round(c["seconds"]) for c in cs] == [13] and cs[0]["start_ns"] == 6_000_000_000
