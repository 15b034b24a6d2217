"""epoch-exhausted (checkers/finders/epoch_exhausted.py): a transactional.id that cannot initialise
again; KAFKA-19367's shape on a tiny history, and real histories where it must stay silent."""
from pathlib import Path

from checkers.synthetic.build import MS, HistoryBuilder
from checkers.finders.epoch_exhausted import epoch_exhausted_cases
from checkers.history import load_history
from checkers.verdict import check, check_run

DATA = Path(__file__).parents[1] / "data"
S = 1000 * MS


def _init(b: HistoryBuilder, process: int, tid: str, type_: str, t: int, error=None, meta=None) -> int:
    i = b.invoke(process, "init", None, {"transactional_id": tid}, time=t)
    b.complete(process, type_, None, {"transactional_id": tid, **(meta or {})}, error, time=t + 50 * MS)
    return i


def _exhausted(rotated: bool) -> HistoryBuilder:
    """Process 1 inits at epoch 32765, commits one transaction (epoch 32766), opens another and
    re-initialises (process 2). 4.0.0: every init of process 2, 3, ... fails for 20 s. A correct
    broker (rotated): the re-init gets a new producer id at epoch 0."""
    b = HistoryBuilder()
    tid = "eosc-txn-0"
    _init(b, 1, tid, "ok", 0, meta={"producer_id": 7, "producer_epoch": 32765})
    b.txn(1, [("t0/0", 1, 0)], tid=tid)
    b.txn(1, [("t0/0", 2, 2)], "fail", tid=tid, error=["_REINIT", "abandoned open at producer epoch 32766"])
    if rotated:
        _init(b, 2, tid, "ok", 1 * S, meta={"producer_id": 8, "producer_epoch": 0})
        b.txn(2, [("t0/0", 3, 4)], tid=tid)
    else:
        for n in range(20):  # the worker retries every ~0.5 s, each attempt a new instance
            _init(b, 2 + n, tid, "fail", (1 + n) * S,
                  error=["UnknownServerException", "The server experienced an unexpected error"])
    b.assign(100, ["t0/0"])
    b.poll(100, {"t0/0": [(0, 1)]}, final=True)
    return b


def test_init_refused_until_the_end_is_one_case():
    cases = epoch_exhausted_cases(load_history(_exhausted(rotated=False).events))
    assert len(cases) == 1
    c = cases[0]
    assert c["transactional_id"] == "eosc-txn-0"
    assert c["failures"] == 20 and c["errors"] == {"UnknownServerException": 20}
    assert c["producer_epoch"] == 32765 and c["last_ok"]["process"] == 1
    assert c["last_txn"]["type"] == "fail"  # the transaction open when the init came
    assert c["op"]["f"] == "init" and c["op"]["process"] == 2
    assert c["seconds"] > 10
    # the case holds from the first failed init that ends more than 10 s after the streak began
    assert c["past_bound"]["process"] == 12


def test_new_producer_id_at_the_epoch_limit_is_no_case():
    assert epoch_exhausted_cases(load_history(_exhausted(rotated=True).events)) == []


OVERFLOW = ["IllegalStateException", "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow"]


def test_a_short_streak_or_a_later_ok_is_no_case():
    b = HistoryBuilder()
    _init(b, 1, "a", "ok", 0)
    _init(b, 2, "a", "fail", 1 * S, error=OVERFLOW)
    _init(b, 3, "a", "fail", 2 * S, error=OVERFLOW)  # 1 s: below the bound
    _init(b, 10, "b", "fail", 1 * S, error=OVERFLOW)
    _init(b, 11, "b", "fail", 20 * S, error=OVERFLOW)
    _init(b, 12, "b", "ok", 25 * S)  # initialised again: no case
    h = load_history(b.events)
    assert epoch_exhausted_cases(h) == []
    assert [c["transactional_id"] for c in epoch_exhausted_cases(h, bound_s=0.5)] == ["a"]


def test_a_streak_that_does_not_show_the_epochs_end_is_no_case():
    """Failed inits over more than the bound until the end, but nothing says the epoch ran out:
    a coordinator cut off (TimeoutException "awaiting InitProducerId", COORDINATOR_NOT_AVAILABLE),
    or an UNKNOWN_SERVER_ERROR after an ok init at an ordinary epoch. Before issue 43 each was a
    case (any streak of >= 2 failed inits over > 10 s)."""
    b = HistoryBuilder()
    _init(b, 1, "a", "ok", 0)  # no epoch recorded (librdkafka)
    _init(b, 2, "a", "fail", 1 * S, error=["TimeoutException", "Timeout expired after 10000ms while awaiting "
                                             "InitProducerId"])
    _init(b, 3, "a", "fail", 12 * S, error=["COORDINATOR_NOT_AVAILABLE", "Coordinator not available"])
    _init(b, 10, "b", "ok", 0, meta={"producer_id": 4, "producer_epoch": 1200})
    _init(b, 11, "b", "fail", 1 * S, error=["UnknownServerException", "The server experienced an unexpected error"])
    _init(b, 12, "b", "fail", 15 * S, error=["UnknownServerException", "The server experienced an unexpected error"])
    assert epoch_exhausted_cases(load_history(b.events)) == []
    # the same streaks at the end of the epochs: a's error names the overflow, b's epoch is near it
    b = HistoryBuilder()
    _init(b, 1, "a", "ok", 0)
    _init(b, 2, "a", "fail", 1 * S, error=OVERFLOW)
    _init(b, 3, "a", "fail", 12 * S, error=OVERFLOW)
    _init(b, 10, "b", "ok", 0, meta={"producer_id": 4, "producer_epoch": 32710})
    _init(b, 11, "b", "fail", 1 * S, error=["UnknownServerException", "x"])
    _init(b, 12, "b", "fail", 15 * S, error=["UnknownServerException", "x"])
    cases = {c["transactional_id"]: c for c in epoch_exhausted_cases(load_history(b.events))}
    assert "overflow" in cases["a"]["epoch_evidence"] and cases["a"]["epoch_reached"] is None
    assert cases["b"]["epoch_reached"] == 32710 and "within 64 of 32766" in cases["b"]["epoch_evidence"]


def test_a_liveness_report_fails_only_through_fail_on():
    events = _exhausted(rotated=False).events
    v = check(events)
    assert v.anomaly_counts.get("epoch-exhausted") == 1 and "epoch-exhausted" not in v.failing
    v = check(events, meta={"fail_on": ["epoch-exhausted"]})
    assert v.valid is False and "epoch-exhausted" in v.failing


def test_real_histories_have_no_case():
    """Negative controls: runs whose producers initialised (and re-initialised after kills)
    as they should, one with the Java client's processors and producers."""
    for run in ("real-smoke-s1", "real-inflight-abort-s2", "real-app-streams-s1"):
        h = load_history(DATA / run / "history.jsonl")
        assert (h.ops["f"] == "init").sum() > 0, run
        assert epoch_exhausted_cases(h) == [], run


def test_real_epoch_burn_runs_kafka_4_0_0_caught_and_4_0_1_rotated():
    """scenarios/zoo/kafka-19367.yaml seed 1 (2026-11-26): on 4.0.0 both transactional.ids are
    refused for the rest of the run after re-initialising with a transaction open at epoch
    32766; on 4.0.1 (the first 263 lines of the history: up to both re-inits) each gets a new
    producer id at epoch 0, which is no case (the negative control)."""
    h = load_history(DATA / "real-epoch-burn-4.0.0-s1" / "history.jsonl")
    cases = sorted(epoch_exhausted_cases(h), key=lambda c: c["transactional_id"])
    assert [c["transactional_id"] for c in cases] == ["eosc-txn-0", "eosc-txn-1"]
    assert all(set(c["errors"]) == {"KafkaException"} and c["failures"] > 50 for c in cases)
    assert all(c["producer_epoch"] == 32741 and c["last_txn"]["type"] == "fail" for c in cases)
    h = load_history(DATA / "real-epoch-burn-4.0.1-s1" / "history.jsonl")
    assert epoch_exhausted_cases(h) == []
    rotated = [x["meta"] for op, x in h.extras.items()
               if h.ops["f"][op] == "init" and x["meta"].get("producer_epoch") == 0]
    assert len(rotated) == 2 and {m["producer_id"] for m in rotated} == {2, 3}


# ---- the second mark: a transaction at epoch 32767 its coordinator did not abort (KAFKA-20090)

def _open_at_end(epoch: int, duration_ms: int, timeout_ms: int = 2000, state: str = "Ongoing") -> HistoryBuilder:
    """Process 1 commits, then opens a transaction at ``epoch`` that never ends; the runner's
    open-transactions record (harness.cluster.open_txns) lists its holder as the coordinator
    described it when the writers stopped."""
    b = HistoryBuilder()
    tid = "eosc-txn-0"
    _init(b, 1, tid, "ok", 0, meta={"producer_id": 1, "producer_epoch": epoch - 1})
    b.txn(1, [("t0/0", 1, 0)], tid=tid)
    b.txn(1, [("t0/0", 2, 1)], "fail", tid=tid, error=["TimeoutException", "Timeout expired after 2000ms"])
    holder = {"key": "t0/0", "lso": 1, "producer_id": 1, "producer_epoch": epoch, "start_offset": 1,
              "transactional_id": tid, "coordinator": 1, "state": state, "timeout_ms": timeout_ms,
              "duration_ms": duration_ms, "partitions": ["t0/0"], "status": "open"}
    b.nemesis("open-transactions", {"held": {"t0/0": [1, 2]}, "holders": {"t0/0": [holder]}, "unjudged": {}})
    b.assign(100, ["t0/0"])
    b.poll(100, {"t0/0": [(0, 1)]}, final=True)
    return b


def test_a_transaction_at_epoch_32767_the_coordinator_did_not_abort_is_a_case():
    cases = epoch_exhausted_cases(load_history(_open_at_end(32767, duration_ms=30_000).events))
    assert len(cases) == 1
    c = cases[0]
    assert c["transactional_id"] == "eosc-txn-0" and c["producer_epoch"] == 32767 and c["keys"] == ["t0/0"]
    assert "did not abort" in c["epoch_evidence"] and "28.0 s past" in c["epoch_evidence"]
    assert c["observed"]["f"] == "open-transactions" and isinstance(c["observed"]["invoke_index"], int)


def test_an_open_transaction_within_its_timeout_or_below_the_epoch_end_is_no_case():
    # within the timeout and one abort interval: the coordinator may still abort it
    assert epoch_exhausted_cases(load_history(_open_at_end(32767, duration_ms=2000 + 14_000).events)) == []
    # the same anomaly from another cause: a coordinator that did not abort an overdue
    # transaction at an ordinary epoch is not the epoch's end (stalled-lso and the
    # open-transactions wait report it)
    assert epoch_exhausted_cases(load_history(_open_at_end(40, duration_ms=60_000).events)) == []
    # being completed by the coordinator (PrepareAbort) is not an abort it failed to start
    assert epoch_exhausted_cases(load_history(_open_at_end(32767, 60_000, state="PrepareAbort").events)) == []


def test_real_kafka_20090_run_whose_transactions_hung_at_32767_is_caught():
    """scenarios/zoo/kafka-20090.yaml's affected side (Kafka 4.2.2), seed 2 (2026-11-29): both
    transactional.ids ended the load with a transaction at epoch 32767 that the coordinator
    listed Ongoing 32.8 s and 35.9 s with transaction.timeout.ms 2000 (its abort check every
    1 s): before this mark the verdict was UNKNOWN (the final drain left both keys out) and the
    bug went uncaught. The verdict now fails on epoch-exhausted (the entry's fail_on)."""
    h = load_history(DATA / "real-kafka-20090-unaborted-4.2.2-s2" / "history.jsonl")
    cases = sorted(epoch_exhausted_cases(h), key=lambda c: c["transactional_id"])
    assert [(c["transactional_id"], c["producer_epoch"], c["keys"]) for c in cases] == [
        ("eosc-txn-0", 32767, ["t0/0"]), ("eosc-txn-1", 32767, ["t0/1"])]
    assert [c["duration_ms"] for c in cases] == [32764, 35924]
    v = check_run(DATA / "real-kafka-20090-unaborted-4.2.2-s2")
    assert v.valid is False and v.failing == ["epoch-exhausted"]
    named = {k["id"]: k for k in v.known_bugs}
    assert named["KAFKA-20090"]["match"] == "looks-like"
    assert named["KAFKA-19367"]["match"] == "resembles" and "4.0.0 only" in named["KAFKA-19367"]["why"]


def test_real_runs_with_an_open_transactions_record_have_no_unaborted_case():
    h = load_history(DATA / "real-zombie-paused-mid-init-s2" / "history.jsonl")
    assert any(e.get("f") == "open-transactions" for e in h.nemesis)
    assert epoch_exhausted_cases(h) == []
