"""epoch-exhausted: a transactional.id that cannot initialise again (KAFKA-19367)."""

from __future__ import annotations

import polars as pl

from .history import History

DEFAULT_BOUND_S = 10.0
#: init failures needed in a streak: one failed init followed by the end of a worker is not
#: a transactional.id that cannot initialise, a worker retrying for seconds is
MIN_FAILURES = 2


def epoch_exhausted_cases(h: History, bound_s: float | None = None) -> list[dict]:
    """epoch-exhausted: a transactional.id whose ``init`` (InitProducerId) failed and never
    succeeded again until the history ends (docs/anomalies.md, liveness).

    Per transactional.id: the init ops (``f == "init"``, any process) after its last ``ok``
    init (all of them when none succeeded) that completed ``fail`` or ``info``, or never
    completed. A case when at least ``MIN_FAILURES`` of them completed and they span more
    than ``bound_s`` seconds (default ``DEFAULT_BOUND_S``; from the first one's invoke to the
    last one's completion). A correct coordinator never refuses InitProducerId for good: at
    the end of a producer id's epochs (32767, Short.MAX_VALUE) it hands out a new producer id
    at epoch 0 (KIP-360; with transaction version 2, KIP-890 part 2, every transaction end also
    bumps the epoch, so a busy transactional.id gets there). Kafka 4.0.0 does not when the init
    meets a transaction open at epoch 32766 (KAFKA-19367: the fence bump and the abort's bump
    overflow the int16 epoch; the coordinator then answers every InitProducerId of the
    transactional.id with an error). A new producer id in an ok init is no case.

    A liveness report: it fails a run only when listed in ``meta["fail_on"]``. A coordinator
    unreachable for longer than the bound until the producers stop (a fault left on at the
    end of the load) also makes such a streak; the case lists the nemesis events in it.

    Example: {"anomaly": "epoch-exhausted", "transactional_id", "op": op ref of the first
    failed init, "past_bound": op ref of the failed init whose completion took the streak past
    the bound (when it became a case), "last_ok": op ref of the last ok init before it or None,
    "last_txn": op ref of
    the transactional.id's last txn invoked before it or None (the transaction open when the
    init came, with the epoch-burn workload), "producer_id", "producer_epoch" (the last ok
    init's ``meta``, when the client recorded them), "failures" (count), "errors" ({error
    name: count}), "start_ns", "end_ns", "seconds", "nemesis": [first 5 nemesis events in
    the streak], "explanation"}.
    """
    bound = DEFAULT_BOUND_S if bound_s is None else bound_s
    ops = h.ops.filter(pl.col("transactional_id").is_not_null())
    inits = ops.filter(pl.col("f") == "init").sort("invoke_time", "op")
    if inits.is_empty():
        return []
    txns = ops.filter(pl.col("f") == "txn").select("op", "transactional_id", "invoke_time")
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
        # the failed init whose completion made the streak longer than the bound: when the
        # case became one (what a zoo's time to detect reads, harness.detect.zoo op refs)
        past = min((r for r in done if r["complete_time"] - start > bound * 1e9), key=lambda r: r["complete_time"])
        errors: dict[str, int] = {}
        for r in done:
            name = r["error"] or f"({r['type']}, no error)"
            errors[name] = errors.get(name, 0) + 1
        ok_meta = h.extras.get(rows[last_ok]["op"], {}).get("meta", {}) if last_ok is not None else {}
        before = txns.filter((pl.col("transactional_id") == tid) & (pl.col("invoke_time") < start))
        last_txn = h.op_ref(before.sort("invoke_time")["op"][-1]) if before.height else None
        nem = [e for e in h.nemesis if isinstance(e.get("time"), int) and start <= e["time"] <= end]
        epoch = ok_meta.get("producer_epoch")
        out.append({
            "anomaly": "epoch-exhausted",
            "transactional_id": tid,
            "op": h.op_ref(streak[0]["op"]),
            "last_ok": h.op_ref(rows[last_ok]["op"]) if last_ok is not None else None,
            "last_txn": last_txn,
            "past_bound": h.op_ref(past["op"]),
            "producer_id": ok_meta.get("producer_id"),
            "producer_epoch": epoch,
            "failures": len(done),
            "errors": errors,
            "start_ns": start,
            "end_ns": end,
            "seconds": (end - start) / 1e9,
            "nemesis": [{"index": e.get("index"), "f": e.get("f"), "value": e.get("value")} for e in nem[:5]],
            "explanation": (
                f"transactional.id {tid}: {len(done)} init attempts failed over {(end - start) / 1e9:.1f} s "
                f"({', '.join(f'{k} x{v}' for k, v in errors.items())}) and none succeeded until the end"
                + (f"; its last ok init had producer epoch {epoch}" if epoch is not None else "")
                + (f" (bound {bound} s)")
            ),
        })
    return out
