"""Rebalance figures of a run's consumer group members (statistics, not anomalies).

Read from the ``assign`` ops that group members record (``meta.via == "rebalance"``: the
eos-pipeline processors, docs/history.md), so that runs with the classic and the KIP-848
consumer group protocol can be compared (docs/scenarios.md "Group protocols"):

* ``rebalances``: how many ``ok`` assign ops the members recorded: one per rebalance callback
  that gave a member its assignment (a member that joins, is given partitions, or, under an
  eager protocol, gets its partitions back after revoking them all), over ``members``
  processes;
* ``pause_ms``: per assign op that follows revocations of the same member (``meta.revoke_ns``,
  the history time of the first revoke or lost callback since the member's previous assign):
  from that revocation to the assign's completion, i.e. how long the member held fewer
  partitions because of the rebalance (eager: it held none);
* ``handover_ms``: per key that an assign gives to a member when another member had read it
  last: from that member's last read of the key (the invoke time of its last ``txn`` op that
  polled the key before the assign; the new member's own op open across the assign, whose
  consume() ran the callback, does not count) to the assign's completion. It spans the failure
  detection (a killed member's session timeout, a static member's restart) and the rebalance;
  with records arriving on every key all the time, as the workloads write them, a key is read
  within milliseconds of its records, so the last read stands for the last moment it was
  processed;
* ``fencing_errors``: error name -> how many ops completed with it, for the errors by which
  Kafka fences a member or a producer (a stale generation or member epoch, an unknown
  member, a fenced instance id or producer epoch, a rebalance in progress);
* ``member_crashes``: error name -> ``crash`` ops of group members (a fatal consumer error
  between transactions: the member is replaced; e.g. librdkafka's ``_FATAL`` for a static
  member whose group.instance.id the group still holds, UNRELEASED_INSTANCE_ID under KIP-848).

Durations are summarised as ``{n, median, p95, max}`` in ms (``null`` quantiles when ``n`` is 0).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl

from .model import History

#: error names (librdkafka's and the Java client's exception names) that mean a fence
FENCING = re.compile(r"FENCED|EPOCH|GENERATION|MEMBER_ID|INSTANCE_ID|REBALANCE|Fenced|Epoch|Generation|"
                     r"MemberId|InstanceId|CommitFailed|Rebalance")


def _summary(ms: list[float]) -> dict[str, Any]:
    if not ms:
        return {"n": 0, "median": None, "p95": None, "max": None}
    a = np.asarray(ms, dtype=float)
    return {"n": len(ms), "median": round(float(np.median(a)), 1),
            "p95": round(float(np.percentile(a, 95)), 1), "max": round(float(a.max()), 1)}


def _last_reads(h: History) -> pl.DataFrame:
    """(key, process, t, done): invoke and completion time of every txn op of a group member
    that polled key (done: null when it never completed)."""
    ops = h.ops
    txn = ops.filter((pl.col("f").cast(pl.String) == "txn") & pl.col("group_id").is_not_null())
    if txn.is_empty() or h.mops.is_empty():
        return pl.DataFrame(schema={"key": pl.UInt32, "process": pl.Int64, "t": pl.Int64, "done": pl.Int64})
    polls = h.mops.filter(pl.col("kind") == "poll").select("op", "key").unique()
    return (polls.join(txn.select("op", "process", t="invoke_time", done="complete_time"), on="op")
            .select("key", "process", "t", "done").sort("t"))


def rebalance_stats(h: History) -> dict[str, Any] | None:
    """The module docstring's figures; None when no member recorded a rebalance."""
    ops = h.ops
    is_assign = ((ops["f"].cast(pl.String) == "assign") & (ops["type"] == "ok")).to_numpy()
    assigns = []
    for op in np.flatnonzero(is_assign):
        ex = h.extras.get(int(op)) or {}
        meta = ex.get("meta") or {}
        if meta.get("via") != "rebalance":
            continue
        val = ex.get("completion_value")
        val = val if isinstance(val, list) else ex.get("value")
        row = ops.row(int(op), named=True)
        assigns.append({"op": int(op), "process": row["process"], "at": row["invoke_time"],
                        "done": row["complete_time"] or row["invoke_time"],
                        "keys": [k for k in (val or []) if isinstance(k, str)],
                        "added": meta.get("added"), "revoke_ns": meta.get("revoke_ns")})
    if not assigns:
        return None
    pauses = [(a["done"] - a["revoke_ns"]) / 1e6 for a in assigns
              if isinstance(a["revoke_ns"], int) and a["done"] >= a["revoke_ns"]]
    reads = _last_reads(h)
    handovers: list[float] = []
    for a in assigns:
        gained = a["added"] if isinstance(a["added"], list) else a["keys"]
        for k in gained:
            if k not in h.keys:
                continue
            kid = h.keys.index(k)
            # the member's own txn op open across the assign (invoked before the consume() call
            # that ran the callback) read the key after it: not a read before the assign
            before = reads.filter((pl.col("key") == kid) & (pl.col("t") < a["at"])
                                  & ~((pl.col("process") == a["process"])
                                      & (pl.col("done").is_null() | (pl.col("done") > a["at"]))))
            if before.is_empty():
                continue
            last = before.row(before.height - 1, named=True)
            if last["process"] != a["process"]:  # the key moved here from another member
                handovers.append((a["done"] - last["t"]) / 1e6)
    errors = (ops.filter(pl.col("error").is_not_null()).group_by("error").len().sort("error"))
    fencing = {e: n for e, n in errors.iter_rows() if FENCING.search(str(e))}
    crashes = (ops.filter((pl.col("f").cast(pl.String) == "crash") & pl.col("group_id").is_not_null())
               .group_by(pl.col("error").fill_null("(none)")).len().sort("error"))
    return {"member_crashes": dict(crashes.iter_rows()),"rebalances": len(assigns), "members": len({a["process"] for a in assigns}),
            "pause_ms": _summary(pauses), "handover_ms": _summary(handovers), "fencing_errors": fencing}
