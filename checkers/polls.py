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
from .log import reads_with_pos, shift_in_group

READ_FS = ["poll", "txn", "send"]


def segments(h: History) -> pl.DataFrame:
    """Columns: op, seg (segment number, unique within the process)."""
    def build(h: History):
        o = shift_in_group(h.ops.select("op", "process", "f", "type").sort("process", "op"),
                           ["process"], {"prev_type": "type"})
        # segment numbers only need to be unique per process, so one global running sum of
        # resets (with a reset at each process's first op) serves every process at once
        return o.select(
            "op",
            seg=(~pl.col("f").is_in(READ_FS) | (pl.col("prev_type") != "ok").fill_null(True))
            .cast(pl.UInt32).cum_sum())
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
        )
        r = r.sort("process", "seg", "key", "op", "seq")
        return (
            shift_in_group(r, ["process", "seg", "key"], {
                "prev_op": "op", "prev_offset": "offset", "prev_value": "value",
                "prev_pos": "pos"})
            .filter(pl.col("prev_pos").is_not_null())
            .with_columns(internal=pl.col("op") == pl.col("prev_op"))
            .select("process", "key", "op", "offset", "value", "pos",
                    "prev_op", "prev_offset", "prev_value", "prev_pos", "internal")
        )
    return h.cached("read_steps", build)
