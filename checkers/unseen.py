"""unseen: a committed write that no poll had read by the end of the run."""

from __future__ import annotations

import polars as pl

from .history import History
from .log import describe_op, final_keys, writes


def unseen_cases(h: History) -> list[dict]:
    """unseen: a committed write that no poll had read by the end of the run, after the
    final drain (Jepsen ``kafka.clj`` unseen).

    Judged only on keys that a final-drain consumer (a process with a poll whose
    ``meta.final`` is true) was assigned to, subscribed to or read: without a final drain
    nothing can be called unseen, and this finder returns no cases (``check`` notes it).
    Committed means must-have-committed (ok, or info with a value read); since an info op
    counts only when read, in practice these are ``ok`` writes.

    Example: {"anomaly": "unseen", "key", "value", "offset" (or null), "writer": op ref,
    "explanation"}.
    """
    keys = final_keys(h)
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
            "explanation": (
                f"value {row['value']} of key {key}, written at {where} by "
                f"{describe_op(h, row['op'])} which must have committed, was never returned "
                f"by any poll, including the final drain"
            ),
        })
    return out
