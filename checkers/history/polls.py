"""Consecutive reads of a key by one consumer, the basis of poll-skip and nonmonotonic-poll.

A consumer's reads of a key are compared only within a *segment*: a run of the process's
ops with no event between that moves its position. Only such events may: ``assign`` (also
the one a rebalance records), ``subscribe``, ``seek`` and ``rewind`` (the seek back to a
batch's first offsets that a processor records after an abort, docs/history.md), and,
conservatively, any other op whose ``f`` is not ``poll``, ``txn`` or ``send``. An aborted or
unknown op does not: a consumer that did not rewind continues where its last ``ok`` poll
left off, so Jepsen's rule applies (``kafka.clj``: each poll is compared with the
consumer's last ok poll). Across ops only reads of ``ok`` ops are compared; within one op,
all of its reads.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from .arrays import stable_order
from .model import History
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
        first = np.ones(n, bool)
        first[1:] = pr[o][1:] != pr[o][:-1]
        reset |= first
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
        ok_op = (h.ops["type"] == "ok").to_numpy()
        ok = valid & ok_op[ix.r_op] if len(ix.r_op) else valid
        cur, prev = _steps(h, ix, valid, ok)
        if not len(cur):
            return pl.DataFrame(schema=STEP_SCHEMA)
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


def _steps(h: History, ix, valid: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cur, prev) read rows of consecutive reads of one (process, key) in one segment whose
    positions do not step by +1, ordered by process, key, op, seq: within one op among the
    ``valid`` reads, across ops among the ``ok`` ones (a subset of valid). One sort."""
    none = np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.flatnonzero(valid) if not valid.all() else None  # in (op, seq) order
    op = ix.r_op if rows is None else ix.r_op[rows]
    if len(op) < 2:
        return none
    key = ix.r_key if rows is None else ix.r_key[rows]
    pos = ix.r_pos if rows is None else ix.r_pos[rows]
    pr, _ = process_rank(h)
    g = pr[op] * max(len(h.keys), 1) + key  # (process, key) group
    o = stable_order(g)  # by group, then (op, seq)
    # few gathers in sorted order (random access is what costs at this size)
    g = g[o]
    op_s = op[o]
    seg = segments(h)[op_s]
    pos = pos[o]

    def pairs(sub: np.ndarray | None, internal: bool) -> tuple[np.ndarray, np.ndarray]:
        gg, oo, ss, pp, orig = ((g, op_s, seg, pos, o) if sub is None else
                                (g[sub], op_s[sub], seg[sub], pos[sub], o[sub]))
        same_op = oo[1:] == oo[:-1]
        bad = np.flatnonzero((gg[1:] == gg[:-1]) & (ss[1:] == ss[:-1])
                             & (same_op if internal else ~same_op) & (pp[1:] - pp[:-1] != 1))
        return orig[bad + 1], orig[bad]

    c1, p1 = pairs(None, True)
    ok_s = ok[o] if rows is None else ok[rows][o]
    c2, p2 = pairs(None if ok_s.all() else np.flatnonzero(ok_s), False)
    # back to the sorted order (process, key, op, seq): positions in o
    rank = np.empty(len(o), np.int64)
    rank[o] = np.arange(len(o))
    cur, prev = np.concatenate([c1, c2]), np.concatenate([p1, p2])
    order = np.argsort(rank[cur], kind="stable")
    cur, prev = cur[order], prev[order]
    if rows is not None:
        cur, prev = rows[cur], rows[prev]
    return cur.astype(np.int64), prev.astype(np.int64)


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
