"""epoch-exhausted: a transactional.id that cannot initialise again, or whose transaction its
coordinator cannot abort, at the end of its producer epochs (KAFKA-19367, KAFKA-20090)."""

from __future__ import annotations

import re

import polars as pl

from ..history import History
from .stalled_lso import OPEN_TXNS_F, open_transactions_event

DEFAULT_BOUND_S = 10.0
#: init failures needed in a streak: one failed init followed by the end of a worker is not
#: a transactional.id that cannot initialise, a worker retrying for seconds is
MIN_FAILURES = 2
#: the producer epoch is an int16: Short.MAX_VALUE (KIP-98's ProducerIdAndEpoch, the record
#: batch header's producer epoch field)
EPOCH_MAX = 32767
#: Kafka's coordinator calls a producer id's epochs exhausted at Short.MaxValue - 1
#: (kafka.coordinator.transaction.TransactionMetadata.isProducerEpochExhausted,
#: ``producerEpoch >= Short.MaxValue - 1``) and then answers InitProducerId with a new producer
#: id at epoch 0 (KIP-360 "Improve reliability of idempotent/transactional producer"; the
#: epoch one below the maximum is kept so that the coordinator can always fence the current
#: producer with one more bump). KAFKA-19367 overflows at 32766, KAFKA-20090 at 32767.
EPOCH_EXHAUSTED_AT = EPOCH_MAX - 1
#: how far below EPOCH_EXHAUSTED_AT the epoch a streak began at may be estimated and still be
#: "near the end": the estimate (``epoch_reached``) misses the client's own epoch bumps that the
#: history does not record (KIP-360's bump after an abortable error, transaction version 1) and
#: transactions that completed info; a handful per streak, 64 covers them with room. A coordinator
#: outage at an ordinary epoch (a few thousand at most in any run: the epoch moves by one per
#: InitProducerId, or per transaction with transaction version 2) is far below it.
EPOCH_MARGIN = 64
EPOCH_NEAR_END = EPOCH_EXHAUSTED_AT - EPOCH_MARGIN
#: an init error that names the overflow itself (Kafka's "Cannot fence producer with epoch
#: equal to Short.MaxValue since this would overflow", "Illegal new producer epoch -32768",
#: a client's "epoch exhausted"); an epoch number near the end (below) counts too
OVERFLOW_WORDS = re.compile(r"overflow|exhaust|short\.?max|max_?value", re.IGNORECASE)
#: how long past its ``transaction.timeout.ms`` a transaction may stay Ongoing at a working
#: coordinator (ms): the coordinator aborts timed-out transactions when it next looks, every
#: ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10000 ms by default, Kafka's
#: broker configs; the zoo's epoch entries set 1000), and the abort is one marker write; 5 s of
#: slack on top of the default interval
ABORT_GRACE_MS = 10_000 + 5_000


def _error_text(err) -> str:
    """An op's error as one string: ``[name, message]`` or a bare name."""
    if isinstance(err, list):
        return " ".join(str(x) for x in err)
    return str(err or "")


def error_names_epoch_end(err) -> str | None:
    """What in an init's error (name and message) names the end of the producer epochs: an
    overflow word (``OVERFLOW_WORDS``) or an epoch number at or above ``EPOCH_NEAR_END`` (or
    -32768, the int16 wrap); None when it names neither (a TimeoutException "awaiting
    InitProducerId", COORDINATOR_NOT_AVAILABLE, an UNKNOWN_SERVER_ERROR with no more said)."""
    text = _error_text(err)
    m = OVERFLOW_WORDS.search(text)
    if m:
        return m.group(0)
    for n in re.findall(r"-?\d+", text):
        v = int(n)
        if EPOCH_NEAR_END <= v <= EPOCH_MAX + 1 or v == -(EPOCH_MAX + 1):
            return n
    return None


def unaborted_at_epoch_end(h: History) -> list[dict]:
    """epoch-exhausted's second mark: a transaction at producer epoch 32767 (Short.MAX_VALUE)
    that its coordinator still listed Ongoing more than ``ABORT_GRACE_MS`` past its
    ``transaction.timeout.ms`` when the writers stopped, read from the history's last
    ``open-transactions`` event (the holders of each key's last stable offset, with the
    coordinator's ``kafka-transactions.sh describe``: state, ``timeout_ms``, ``duration_ms``).

    A coordinator aborts a timed-out transaction by fencing its producer with one more epoch
    bump (TransactionMetadata.prepareFenceProducerEpoch); at 32767 it cannot, and with Kafka
    4.0.0-4.2.x (KAFKA-20090: a timeout abort at 32766, then a late EndTxn answered with epoch
    32767) it throws in the abort task every time it looks: the transaction hangs and holds the
    last stable offset. A correct coordinator never lets a producer id reach a transaction at
    32767 (it rotates the producer id at 32766, KIP-360), so this is a case on any release.
    One case per transactional.id: {"anomaly", "transactional_id", "producer_id",
    "producer_epoch", "coordinator", "state", "timeout_ms", "duration_ms", "keys", "observed"
    (the open-transactions event's ref: the case is known when the harness asked),
    "epoch_evidence", "explanation"}; [] without the event (an older run, an external cluster
    the tool could not ask)."""
    ev = open_transactions_event(h)
    if ev is None:
        return []
    by_tid: dict[str, dict] = {}
    for key, holders in sorted((ev["value"].get("holders") or {}).items()):
        for hd in holders or []:
            if not isinstance(hd, dict):
                continue
            epoch, state, tid = hd.get("producer_epoch"), hd.get("state"), hd.get("transactional_id")
            timeout, dur = hd.get("timeout_ms"), hd.get("duration_ms")
            if (not isinstance(epoch, int) or epoch < EPOCH_MAX or state != "Ongoing" or tid is None
                    or not isinstance(timeout, (int, float)) or not isinstance(dur, (int, float))
                    or dur - timeout <= ABORT_GRACE_MS):
                continue
            c = by_tid.get(tid)
            if c is None:
                why = (f"its transaction at producer epoch {epoch} (Short.MAX_VALUE) was still Ongoing at its "
                       f"coordinator (broker {hd.get('coordinator')}) after {dur / 1000:.1f} s, "
                       f"{(dur - timeout) / 1000:.1f} s past its transaction.timeout.ms {int(timeout)} ms: the "
                       "coordinator did not abort it (a timeout abort fences the producer with one more epoch "
                       "bump, which 32767 cannot take)")
                c = by_tid[tid] = {
                    "anomaly": "epoch-exhausted", "transactional_id": tid, "producer_id": hd.get("producer_id"),
                    "producer_epoch": epoch, "coordinator": hd.get("coordinator"), "state": state,
                    "timeout_ms": timeout, "duration_ms": dur, "keys": [],
                    "observed": {"f": OPEN_TXNS_F, "invoke_index": ev.get("index"), "process": "nemesis"},
                    "epoch_evidence": why}
            c["keys"].append(key)
    for tid, c in by_tid.items():
        c["explanation"] = (f"transactional.id {tid}: {c['epoch_evidence']}; it holds the last stable "
                            f"offset of {', '.join(c['keys'])}")
    return list(by_tid.values())


def epoch_exhausted_cases(h: History, bound_s: float | None = None) -> list[dict]:
    """epoch-exhausted: a transactional.id whose ``init`` (InitProducerId) failed and never
    succeeded again until the history ends, at the end of its producer epochs, or whose
    transaction at producer epoch 32767 its coordinator did not abort past its timeout
    (``unaborted_at_epoch_end``) (docs/anomalies.md, liveness; docs/checkers.md).

    Per transactional.id: the init ops (``f == "init"``, any process) after its last ``ok``
    init (all of them when none succeeded) that completed ``fail`` or ``info``, or never
    completed. A streak when at least ``MIN_FAILURES`` of them completed and they span more
    than ``bound_s`` seconds (default ``DEFAULT_BOUND_S``; from the first one's invoke to the
    last one's completion). A streak is a case only when the history shows it is about the
    epoch, one of:

    * the epoch: the last ok init's producer epoch (its ``meta.producer_epoch``, where the
      client recorded it) plus the transactional.id's transactions that completed after it
      (``epoch_reached``: with transaction version 2 every transaction end bumps the epoch,
      KIP-890 part 2; with version 1 none does, so this is an upper bound) is at least
      ``EPOCH_NEAR_END`` (``EPOCH_EXHAUSTED_AT`` 32766 less ``EPOCH_MARGIN``);
    * the error: a failed init's error (name and message) names an overflow or an epoch near
      the end (``error_names_epoch_end``).

    A correct coordinator never refuses InitProducerId for good: at an exhausted epoch
    (Short.MAX_VALUE - 1, Kafka's TransactionMetadata.isProducerEpochExhausted) it hands out a
    new producer id at epoch 0 (KIP-360), which is no case. Kafka 4.0.0 does not when the init
    meets a transaction open at epoch 32766 (KAFKA-19367: the fence bump and the abort's bump
    overflow the int16 epoch; the coordinator then answers every InitProducerId of the
    transactional.id with an error), nor 4.0.0-4.2.x after a timeout abort at 32766 and a late
    EndTxn (KAFKA-20090). A streak of failed inits with neither (a coordinator unreachable
    until the producers stop: TimeoutException "awaiting InitProducerId") is not epoch
    exhaustion and no case here: the unavailable report covers it.

    A liveness report: it fails a run only when listed in ``meta["fail_on"]``.

    Example: {"anomaly": "epoch-exhausted", "transactional_id", "op": op ref of the first
    failed init, "past_bound": op ref of the failed init whose completion took the streak past
    the bound (when it became a case), "last_ok": op ref of the last ok init before it or None,
    "last_txn": op ref of the transactional.id's last txn invoked before it or None (the
    transaction open when the init came, with the epoch-burn workload), "producer_id",
    "producer_epoch" (the last ok init's ``meta``, when the client recorded them),
    "txns_after_last_ok" (transactions completed after it), "epoch_reached" (the estimate
    above, or None without a recorded epoch), "epoch_evidence" (what shows the epoch's end,
    in words), "failures" (count), "errors" ({error name: count}), "start_ns", "end_ns",
    "seconds", "nemesis": [first 5 nemesis events in the streak], "explanation"}.
    """
    bound = DEFAULT_BOUND_S if bound_s is None else bound_s
    ops = h.ops.filter(pl.col("transactional_id").is_not_null())
    inits = ops.filter(pl.col("f") == "init").sort("invoke_time", "op")
    unaborted = unaborted_at_epoch_end(h)
    if inits.is_empty():
        return unaborted
    txns = ops.filter(pl.col("f") == "txn").select("op", "transactional_id", "invoke_time", "complete_time")
    out = []
    for (tid,), g in inits.group_by(["transactional_id"], maintain_order=True):
        rows = g.to_dicts()
        last_ok = max((i for i, r in enumerate(rows) if r["type"] == "ok"), default=None)
        streak = rows[last_ok + 1:] if last_ok is not None else rows
        done = [r for r in streak if r["complete_time"] is not None]
        if len(done) < MIN_FAILURES:
            continue
        start, end = streak[0]["invoke_time"], max(r["complete_time"] for r in done)
        if end - start <= bound * 1e9:
            continue
        ok_meta = h.extras.get(rows[last_ok]["op"], {}).get("meta", {}) if last_ok is not None else {}
        epoch = ok_meta.get("producer_epoch")
        mine = txns.filter(pl.col("transactional_id") == tid)
        after = 0
        if last_ok is not None:
            ok_done = rows[last_ok]["complete_time"]
            after = mine.filter(pl.col("complete_time").is_not_null() & (pl.col("complete_time") > ok_done)
                                & (pl.col("invoke_time") < start)).height
        reached = epoch + after if isinstance(epoch, int) else None
        named = next(((r, w, _error_text(err)) for r in done
                      if (w := error_names_epoch_end(err := h.extras.get(r["op"], {}).get("error") or r["error"]))),
                     None)
        if reached is not None and reached >= EPOCH_NEAR_END:
            why = (f"its last ok init had producer epoch {epoch} and {after} transaction(s) completed after it: "
                   f"epoch {reached} at most, within {EPOCH_MARGIN} of {EPOCH_EXHAUSTED_AT} (Short.MAX_VALUE - 1, "
                   "where Kafka's coordinator must rotate the producer id)")
        elif named is not None:
            why = f"init op {named[0]['op']}'s error names the epoch's end ('{named[1]}'): {named[2][:160]}"
        else:
            continue  # failed inits that say nothing of the epoch: an unreachable coordinator, not this
        # the failed init whose completion made the streak longer than the bound: when the
        # case became one (what a zoo's time to detect reads, harness.detect.zoo op refs)
        past = min((r for r in done if r["complete_time"] - start > bound * 1e9), key=lambda r: r["complete_time"])
        errors: dict[str, int] = {}
        for r in done:
            name = r["error"] or f"({r['type']}, no error)"
            errors[name] = errors.get(name, 0) + 1
        before = mine.filter(pl.col("invoke_time") < start)
        last_txn = h.op_ref(before.sort("invoke_time")["op"][-1]) if before.height else None
        nem = [e for e in h.nemesis if isinstance(e.get("time"), int) and start <= e["time"] <= end]
        out.append({
            "anomaly": "epoch-exhausted",
            "transactional_id": tid,
            "op": h.op_ref(streak[0]["op"]),
            "last_ok": h.op_ref(rows[last_ok]["op"]) if last_ok is not None else None,
            "last_txn": last_txn,
            "past_bound": h.op_ref(past["op"]),
            "producer_id": ok_meta.get("producer_id"),
            "producer_epoch": epoch,
            "txns_after_last_ok": after,
            "epoch_reached": reached,
            "epoch_evidence": why,
            "failures": len(done),
            "errors": errors,
            "start_ns": start,
            "end_ns": end,
            "seconds": (end - start) / 1e9,
            "nemesis": [{"index": e.get("index"), "f": e.get("f"), "value": e.get("value")} for e in nem[:5]],
            "explanation": (
                f"transactional.id {tid}: {len(done)} init attempts failed over {(end - start) / 1e9:.1f} s "
                f"({', '.join(f'{k} x{v}' for k, v in errors.items())}) and none succeeded until the end; "
                f"{why} (bound {bound} s)"
            ),
        })
    streaks = {c["transactional_id"] for c in out}
    return out + [c for c in unaborted if c["transactional_id"] not in streaks]
