"""precommitted-read: an op polled a value that the same op sent, before its own commit."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..history import History
from ..history.log import describe_op, index, reads, writes


def precommitted_read_cases(h: History) -> list[dict]:
    """precommitted-read: one op polled a value that the same op sent, before its own
    commit (Jepsen ``kafka.clj``).

    Only ops holding both poll and send micro-ops can show it (a consume-transform-produce
    processor's txn): a read_committed consumer never returns records of an open
    transaction, its own included (KIP-98: the LSO stops at the first open transaction).

    Example: {"anomaly": "precommitted-read", "key", "value", "offset", "op": op ref,
    "explanation"}.
    """
    ix = index(h)
    both = np.zeros(h.ops.height, bool)
    both[ix.w_op] = True
    has_read = np.zeros(h.ops.height, bool)
    has_read[ix.r_op] = True
    both &= has_read  # only ops that polled and sent can read their own sends
    if not both.any():
        return []
    w = writes(h).filter(pl.Series(both[ix.w_op])).select("op", "key", "value")
    r = reads(h).filter(pl.Series(both[ix.r_op]))
    bad = r.join(w, on=["op", "key", "value"], how="inner").sort("op", "seq", maintain_order=True)
    out = []
    for row in bad.iter_rows(named=True):
        key = h.keys[row["key"]]
        out.append({
            "anomaly": "precommitted-read",
            "key": key,
            "value": row["value"],
            "offset": row["offset"],
            "op": h.op_ref(row["op"]),
            "explanation": (
                f"{describe_op(h, row['op'])} polled value {row['value']} of key {key} "
                f"(offset {row['offset']}) which it sent itself, before its commit"
            ),
        })
    return out
