"""Consecutive reads of a key by one consumer, the basis of poll-skip and nonmonotonic-poll.

A consumer's reads of a key are compared only within a *segment*: a run of the process's
ops with no seek, assignment or subscription between and no op whose outcome was not
``ok`` (after an aborted or unknown op a consumer, or a consume-transform-produce processor,
legitimately rewinds to its committed offsets). Any op of the process whose ``f`` is not
``poll``, ``txn`` or ``send`` starts a new segment (``assign``, ``subscribe``, ``seek``, and
unknown ``f``s, conservatively).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from .history import History
from .history import stable_order
from .log import dense_rank, index

READ_FS = ["poll", "txn", "send"]


def process_rank(h: History) -> tuple[np.ndarray, int]:
    """Dense rank of each op's process (by op id) and the number of processes."""
    return h.cached("process_rank", lambda h: dense_rank(h.ops["process"].to_numpy()))


def segments(h: History) -> np.ndarray:
    """Segment number of each op (by op id); unique across processes."""
    def build(h: History):
        n = h.ops.height
        if n == 0:
            return np.zeros(0, np.int64)
        pr, _ = process_rank(h)
        o = stable_order(pr)  # ops by process, then op
        reset = ~h.ops["f"].is_in(READ_FS).to_numpy()[o]
        not_ok = (h.ops["type"] != "ok").to_numpy()[o]
        first = np.ones(n, bool)
        first[1:] = pr[o][1:] != pr[o][:-1]
        prev_not_ok = np.ones(n, bool)
        prev_not_ok[1:] = not_ok[:-1]
        reset |= first | prev_not_ok
        seg = np.empty(n, np.int64)
        seg[o] = np.cumsum(reset)
        return seg
    return h.cached("segments", build)


STEP_SCHEMA = {"process": pl.Int64, "key": pl.UInt32, "op": pl.UInt32, "offset": pl.Int64,
               "value": pl.Int64, "pos": pl.Int64, "prev_op": pl.UInt32,
               "prev_offset": pl.Int64, "prev_value": pl.Int64, "prev_pos": pl.Int64,
               "internal": pl.Boolean}


def read_steps(h: History) -> pl.DataFrame:
    """Each read paired with the same consumer's previous read of that key in the segment,
    keeping only the pairs whose positions do not step by exactly +1 (the only ones
    poll-skip and nonmonotonic-poll report).

    Columns: process, key, op, offset, value, pos, prev_op, prev_offset, prev_value,
    prev_pos, internal (both reads in one op); ordered by process, key, op, seq. Reads of
    aborted data (no position) are left out: they are G1a, not ordering.
    """
    def build(h: History):
        ix = index(h)
        valid = ix.r_pos >= 0
        rows = np.flatnonzero(valid) if not valid.all() else None  # in (op, seq) order
        op = ix.r_op if rows is None else ix.r_op[rows]
        key = ix.r_key if rows is None else ix.r_key[rows]
        pos = ix.r_pos if rows is None else ix.r_pos[rows]
        if len(op) < 2:
            return pl.DataFrame(schema=STEP_SCHEMA)
        pr, _ = process_rank(h)
        g = pr[op] * max(len(h.keys), 1) + key  # (process, key) group
        o = stable_order(g)  # by group, then (op, seq)
        # few gathers in sorted order (random access is what costs at this size)
        g = g[o]
        op_s = op[o]
        seg = segments(h)[op_s]
        pos = pos[o]
        bad = np.flatnonzero((g[1:] == g[:-1]) & (seg[1:] == seg[:-1])
                             & (pos[1:] - pos[:-1] != 1))
        del g, seg, pos, op_s
        cur, prev = o[bad + 1], o[bad]
        if rows is not None:
            cur, prev = rows[cur], rows[prev]
        off = pl.Series(ix.slot_off)  # a read's offset is its slot's
        return pl.DataFrame({
            "process": h.ops["process"].gather(ix.r_op[cur]),
            "key": ix.r_key[cur],
            "op": ix.r_op[cur],
            "offset": off.gather(ix.r_slot[cur]),
            "value": ix.r_val[cur],
            "pos": ix.r_pos[cur],
            "prev_op": ix.r_op[prev],
            "prev_offset": off.gather(ix.r_slot[prev]),
            "prev_value": ix.r_val[prev],
            "prev_pos": ix.r_pos[prev],
            "internal": ix.r_op[cur] == ix.r_op[prev],
        }, schema=STEP_SCHEMA)
    return h.cached("read_steps", build)


def step_example(h: History, row: dict, name: str) -> dict:
    """The data part of an example about one read step (a row of ``read_steps``): the
    anomaly, key, process, the two ops and both ends of the step."""
    return {
        "anomaly": name,
        "key": h.keys[row["key"]],
        "process": row["process"],
        "op": h.op_ref(row["op"]),
        "prev_op": h.op_ref(row["prev_op"]),
        "from": {"offset": row["prev_offset"], "pos": row["prev_pos"], "value": row["prev_value"]},
        "to": {"offset": row["offset"], "pos": row["pos"], "value": row["value"]},
    }
