"""unseen: a committed write that no poll had read by the end of the run."""

from __future__ import annotations

import polars as pl

from ..history import History
from ..history.log import describe_op, final_keys, reads, writes


def unseen_cases(h: History) -> list[dict]:
    """unseen: a committed write that no poll had read by the end of the run, after the
    final drain (Jepsen ``kafka.clj`` unseen).

    With a final drain (a process with a poll whose ``meta.final`` is true), judged on the
    keys it was assigned to, subscribed to or read, and such a case fails the run. Without
    one (a history from another tool, a killed run), judged at the end of the history on
    every key some poll read, as Jepsen does (acknowledged writes no poll had returned by
    the end), and reported as a liveness case (``"liveness": true``): a consumer may simply
    not have caught up yet, so it fails the run only when ``fail_on`` lists unseen.
    Committed means must-have-committed (ok, info with a value read, or an info send whose
    delivery report gave an offset).

    Example: {"anomaly": "unseen", "key", "value", "offset" (or null), "writer": op ref,
    "liveness": bool, "explanation"}.
    """
    keys = final_keys(h)
    drained = bool(keys)
    if not drained:
        keys = set(reads(h)["key"].unique().to_list())
    if not keys:
        return []
    w = (
        writes(h)
        .filter(pl.col("committed") & ~pl.col("read") & pl.col("key").is_in(sorted(keys)))
        .sort("key", "offset", "value", nulls_last=True)
    )
    out = []
    for row in w.iter_rows(named=True):
        key = h.keys[row["key"]]
        where = f"offset {row['offset']}" if row["offset"] is not None else "an unknown offset"
        out.append({
            "anomaly": "unseen",
            "key": key,
            "value": row["value"],
            "offset": row["offset"],
            "writer": h.op_ref(row["op"]),
            "liveness": not drained,
            "explanation": (
                f"value {row['value']} of key {key}, written at {where} by "
                f"{describe_op(h, row['op'])} which must have committed, was never returned "
                + ("by any poll, including the final drain" if drained else
                   "by any poll by the end of the history (no final drain: a liveness report)")
            ),
        })
    return out
