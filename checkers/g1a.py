"""G1a (aborted read): a poll returned a value whose writing op was aborted."""

from __future__ import annotations

import polars as pl

from .history import History
from .log import describe_op, index, reads, writes


def g1a_cases(h: History) -> list[dict]:
    """G1a (aborted read): a poll returned a value whose writing op completed ``fail``
    (aborted) (Adya's G1a; Jepsen ``kafka.clj``).

    A read_committed consumer must filter aborted records using the abort markers
    (KIP-98); a read_uncommitted consumer may return them, so scenarios with such
    consumers list G1a in ``allowed``.

    Example: {"anomaly": "G1a", "key", "value", "offset", "writer": op ref,
    "reader": op ref, "explanation"}.
    """
    aborted = writes(h).filter(pl.col("type") == "fail").select(
        "key", "value", writer="op", write_offset="offset")
    if aborted.is_empty():
        return []
    # distinct read (key, value)s first: a consistent history has no hit and stops here
    hit = index(h).read_kv().join(aborted.select("key", "value").unique(),
                                  on=["key", "value"], how="semi")
    if hit.is_empty():
        return []
    bad = (
        reads(h).join(hit.unique(), on=["key", "value"], how="semi")
        .join(aborted, on=["key", "value"], how="inner")
        .sort("key", "value", "op", maintain_order=True)
    )
    out = []
    for row in bad.iter_rows(named=True):
        key = h.keys[row["key"]]
        out.append({
            "anomaly": "G1a",
            "key": key,
            "value": row["value"],
            "offset": row["offset"],
            "writer": h.op_ref(row["writer"]),
            "reader": h.op_ref(row["op"]),
            "explanation": (
                f"value {row['value']} of key {key}, written by {describe_op(h, row['writer'])} "
                f"which aborted, was returned at offset {row['offset']} by "
                f"{describe_op(h, row['op'])}"
            ),
        })
    return out
