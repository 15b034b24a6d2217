"""G1a (aborted read): a poll returned a value whose writing op was aborted."""

from __future__ import annotations

import polars as pl

from ..history import History
from ..history.log import describe_op, index, reads, writes


def g1a_cases(h: History) -> list[dict]:
    """G1a (aborted read): a poll returned a value whose writing op completed ``fail``
    (aborted) (Adya's G1a; Jepsen ``kafka.clj``).

    A read_committed consumer must filter aborted records using the abort markers
    (KIP-98); a read_uncommitted consumer may return them, so scenarios with such
    consumers list G1a in ``allowed``.

    Example: {"anomaly": "G1a", "key", "value", "offset", "writer": op ref,
    "reader": op ref, "reader_isolation_level": the reader process's isolation level as its
    assign ops' meta say it (None when they do not, or disagree), "explanation"}.
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
    levels = _isolation_by_process(h)
    for row in bad.iter_rows(named=True):
        key = h.keys[row["key"]]
        reader = h.op_ref(row["op"])
        out.append({
            "anomaly": "G1a",
            "key": key,
            "value": row["value"],
            "offset": row["offset"],
            "writer": h.op_ref(row["writer"]),
            "reader": reader,
            "reader_isolation_level": levels.get(reader["process"]),
            "explanation": (
                f"value {row['value']} of key {key}, written by {describe_op(h, row['writer'])} "
                f"which aborted, was returned at offset {row['offset']} by "
                f"{describe_op(h, row['op'])}"
            ),
        })
    return out


def _isolation_by_process(h: History) -> dict:
    """process -> the one ``meta.isolation_level`` its non-bulk ops (assign) name; a process
    whose ops name none, or more than one, is left out."""
    seen: dict = {}
    proc = h.ops["process"]
    for op, ex in h.extras.items():
        iso = (ex.get("meta") or {}).get("isolation_level")
        if isinstance(iso, str):
            seen.setdefault(proc[op], set()).add(iso)
    return {p: next(iter(s)) for p, s in seen.items() if len(s) == 1}
