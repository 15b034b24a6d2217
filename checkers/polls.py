"""Consecutive reads of a key by one consumer, the basis of poll-skip and nonmonotonic-poll.

A consumer's reads of a key are compared only within a *segment*: a run of the process's
ops with no seek, assignment or subscription between and no op whose outcome was not
``ok`` (after an aborted or unknown op a consumer, or a consume-transform-produce processor,
legitimately rewinds to its committed offsets). Any op of the process whose ``f`` is not
``poll``, ``txn`` or ``send`` starts a new segment (``assign``, ``subscribe``, ``seek``, and
unknown ``f``s, conservatively).
"""

from __future__ import annotations

import polars as pl

from .history import History
from .log import reads_with_pos

READ_FS = ["poll", "txn", "send"]


def segments(h: History) -> pl.DataFrame:
    """Columns: op, seg (segment number, unique within the process)."""
    def build(h: History):
        return (
            h.ops.select("op", "process", "f", "type")
            .sort("process", "op")
            .with_columns(
                reset=(~pl.col("f").is_in(READ_FS)
                       | (pl.col("type").shift(1).over("process").fill_null("ok") != "ok"))
            )
            .with_columns(seg=pl.col("reset").cast(pl.UInt32).cum_sum().over("process"))
            .select("op", "seg")
        )
    return h.cached("segments", build)


def read_steps(h: History) -> pl.DataFrame:
    """Each read paired with the same consumer's previous read of that key in the segment.

    Columns: process, key, op, offset, value, pos, prev_op, prev_offset, prev_value,
    prev_pos, internal (both reads in one op). Reads of aborted data (no position) are left
    out: they are G1a, not ordering.
    """
    def build(h: History):
        r = (
            reads_with_pos(h).filter(pl.col("pos").is_not_null())
            .join(segments(h), on="op", how="left")
            .sort("process", "op", "seq")
        )
        grp = ["process", "seg", "key"]
        return (
            r.with_columns(
                prev_op=pl.col("op").shift(1).over(grp),
                prev_offset=pl.col("offset").shift(1).over(grp),
                prev_value=pl.col("value").shift(1).over(grp),
                prev_pos=pl.col("pos").shift(1).over(grp),
            )
            .filter(pl.col("prev_pos").is_not_null())
            .with_columns(internal=pl.col("op") == pl.col("prev_op"))
            .select("process", "key", "op", "offset", "value", "pos",
                    "prev_op", "prev_offset", "prev_value", "prev_pos", "internal")
        )
    return h.cached("read_steps", build)
