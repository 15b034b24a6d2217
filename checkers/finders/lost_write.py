"""lost-write: a committed write missing from its key's log below a read position."""

from __future__ import annotations

import polars as pl

from ..history import History
from ..history.log import OUTCOME, describe_op, reads_with_pos, write_pos, writes


def lost_write_cases(h: History) -> list[dict]:
    """lost-write: a write that must have committed is missing from its key's log, although
    a later position of that log was read (Jepsen ``kafka.clj`` lost-write).

    "Missing" means no poll ever returned the value. The write's position comes from the
    offset its send learned (writes whose offset is unknown cannot be placed and are left to
    ``unseen``). "A later position was read": some poll returned a record at a higher
    position of the key's committed log.

    Example: {"anomaly": "lost-write", "key", "value", "offset", "pos", "writer": op ref,
    "max_read": {"pos", "offset", "value", "op", "process"}, "committed_because": "ok" |
    "acknowledged" | "op-read", "explanation"}.
    """
    w = writes(h).with_columns(pos=pl.Series(write_pos(h))).filter(
        pl.col("committed") & ~pl.col("read") & pl.col("offset").is_not_null())
    if w.is_empty():
        return []
    r = reads_with_pos(h).filter(pl.col("pos").is_not_null())
    if r.is_empty():
        return []
    top = (
        r.sort("pos", "op").group_by("key")
        .agg(pl.all().last())
        .select("key", max_pos="pos", max_offset="offset", max_value="value",
                max_op="op", max_process="process")
    )
    lost = (
        w.filter(pl.col("pos") >= 0)
        .join(top, on="key", how="inner")
        .filter(pl.col("pos") < pl.col("max_pos"))
        .sort("key", "pos")
    )
    out = []
    for row in lost.iter_rows(named=True):
        key = h.keys[row["key"]]
        rdesc = describe_op(h, row["max_op"])
        out.append({
            "anomaly": "lost-write",
            "key": key,
            "value": row["value"],
            "offset": row["offset"],
            "pos": row["pos"],
            "writer": h.op_ref(row["op"]),
            "committed_because": committed_because(row),
            "max_read": {"pos": row["max_pos"], "offset": row["max_offset"],
                         "value": row["max_value"], "op": h.ops["invoke_index"][row["max_op"]],
                         "process": row["max_process"]},
            "explanation": (
                f"value {row['value']} of key {key}, written at offset {row['offset']} "
                f"(position {row['pos']}) by {describe_op(h, row['op'])} which "
                f"{_why_committed(h, row)}, "
                f"was never returned by any poll, although {rdesc} read position "
                f"{row['max_pos']} (offset {row['max_offset']}, value {row['max_value']})"
            ),
        })
    return out


def committed_because(row: dict) -> str:
    """Why a write must have committed (docs/anomalies.md terms): ``ok`` (its op completed ok),
    ``op-read`` (an info op, one of whose values a poll returned: a transaction is atomic) or
    ``acknowledged`` (a non-transactional info send whose delivery report gave an offset).
    ``row`` is a writes(h) row."""
    if row["type"] == "ok":
        return "ok"
    if row["f"] != "send" and row["op_read"]:
        return "op-read"
    return "acknowledged" if row["offset"] is not None else "op-read"


def _why_committed(h: History, row: dict) -> str:
    why = committed_because(row)
    if why == "ok":
        return OUTCOME["ok"]
    if why == "acknowledged":
        return (f"must have committed (info, but its delivery report acknowledged offset "
                f"{row['offset']})")
    return "must have committed (info, and another value of the same op was read)"
