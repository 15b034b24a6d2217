"""precommitted-read: an op polled a value that the same op sent, before its own commit."""

from __future__ import annotations

import polars as pl

from .history import History
from .log import describe_op, reads, writes


def precommitted_read_cases(h: History) -> list[dict]:
    """precommitted-read: one op polled a value that the same op sent, before its own
    commit (Jepsen ``kafka.clj``).

    Only ops holding both poll and send micro-ops can show it (a consume-transform-produce
    processor's txn): a read_committed consumer never returns records of an open
    transaction, its own included (KIP-98: the LSO stops at the first open transaction).

    Example: {"anomaly": "precommitted-read", "key", "value", "offset", "op": op ref,
    "explanation"}.
    """
    w = writes(h).select("op", "key", "value")
    if w.is_empty():
        return []
    bad = reads(h).join(w, on=["op", "key", "value"], how="inner").sort("op", "seq")
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
