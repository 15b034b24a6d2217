"""Derived frames shared by the finders: writes, reads, and each key's committed log.

Terms (shared/design/ANOMALIES.md):

* A write *must have committed* when its op completed ``ok``, or completed ``info`` and any
  of the op's values was read by any poll (a transaction is atomic, so one read value
  commits all of them).
* A key's *log* is the order of values by offset as observed by all sends and polls. The
  *committed log* keeps the offsets read by polls and those of writes that must have
  committed, less offsets held by writes of ``fail`` ops (aborted data is never part of it).
  Positions (0, 1, 2, ...) in this committed log are what finders compare: a transactional
  topic's offsets have gaps (control records, aborted batches), so offset arithmetic lies.

All frames are memoised on the History (``History.cached``).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from .history import History


def shift_in_group(df: pl.DataFrame, by: list[str], cols: dict[str, str], n: int = 1) -> pl.DataFrame:
    """Add ``{new: col shifted by n}`` within runs of equal ``by`` (null across a group
    boundary). ``df`` must be sorted by ``by``. A plain shift plus a boundary mask is much
    cheaper than ``.over()`` windows on millions of rows."""
    same = pl.all_horizontal([pl.col(g) == pl.col(g).shift(n) for g in by])
    return df.with_columns(
        [pl.when(same).then(pl.col(c).shift(n)).otherwise(None).alias(new) for new, c in cols.items()])


def positions(keys: np.ndarray) -> np.ndarray:
    """0-based rank of each row within its run of equal sorted ``keys``."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return np.arange(n, dtype=np.int64) - start

OP_COLS = ["op", "invoke_index", "complete_index", "process", "f", "type",
           "invoke_time", "complete_time", "transactional_id", "final"]


def writes(h: History) -> pl.DataFrame:
    """One row per send micro-op.

    Columns: op, seq, key, offset (null if unknown), value, the op's columns (OP_COLS),
    ``read`` (this (key, value) was returned by some poll), ``op_read`` (some value of the
    op was), ``committed`` (must have committed).
    """
    return h.cached("writes", _writes)


def _writes(h: History) -> pl.DataFrame:
    sends = h.mops.filter(pl.col("kind") == "send").drop("kind")
    readvals = reads(h).select("key", "value").unique().with_columns(read=pl.lit(True))
    w = (
        sends.join(h.ops.select(OP_COLS), on="op", how="left")
        .join(readvals, on=["key", "value"], how="left")
        .with_columns(pl.col("read").fill_null(False))
    )
    read_ops = w.filter(pl.col("read")).select("op").unique().with_columns(op_read=pl.lit(True))
    w = w.join(read_ops, on="op", how="left").with_columns(pl.col("op_read").fill_null(False))
    return w.with_columns(
        committed=(pl.col("type") == "ok") | ((pl.col("type") == "info") & pl.col("op_read"))
    )


def reads(h: History) -> pl.DataFrame:
    """One row per record returned by a poll micro-op.

    Columns: op, seq, key, offset, value, and the reading op's process, final,
    complete_time.
    """
    return h.cached("reads", _reads)


READ_OP_COLS = ["op", "process", "final", "complete_time"]


def _reads(h: History) -> pl.DataFrame:
    # reads are the biggest frame (one row per returned record): carry only the op columns
    # finders need; the rest is looked up per example through History.op_ref
    return (
        h.mops.filter(pl.col("kind") == "poll").drop("kind")
        .join(h.ops.select(READ_OP_COLS), on="op", how="left")
    )


def log(h: History) -> pl.DataFrame:
    """The committed log: one row per (key, offset), sorted, with its position.

    Columns: key, offset, pos (0-based position in the key's committed log), value (the
    value observed there; the smallest one if observations disagree).
    """
    return h.cached("log", _log)


def _log(h: History) -> pl.DataFrame:
    w = writes(h)
    aborted = (
        w.filter((pl.col("type") == "fail") & pl.col("offset").is_not_null())
        .select("key", "offset").unique()
    )
    obs = pl.concat([
        reads(h).select("key", "offset", "value"),
        w.filter(pl.col("committed") & pl.col("offset").is_not_null()).select("key", "offset", "value"),
    ])
    if not aborted.is_empty():
        obs = obs.join(aborted, on=["key", "offset"], how="anti")
    lg = obs.group_by("key", "offset").agg(pl.col("value").min()).sort("key", "offset")
    return lg.with_columns(pos=pl.Series(positions(lg["key"].to_numpy()))).select(
        "key", "offset", "pos", "value")


def log_index(h: History) -> tuple[pl.DataFrame, dict[int, int]]:
    """The log plus, per key, the row at which its position 0 sits (row = start + pos)."""
    def build(h: History):
        lg = log(h)
        starts = lg.group_by("key").agg(pl.col("pos").len().alias("n")).sort("key")
        # the log is sorted by key, so the start of each key is the running sum of lengths
        start, acc = {}, 0
        for k, n in starts.iter_rows():
            start[k] = acc
            acc += n
        return lg, start
    return h.cached("log_index", build)


def log_slice(h: History, key: int, lo_pos: int, hi_pos: int, limit: int = 10) -> list[dict]:
    """Committed-log entries of ``key`` at positions lo_pos..hi_pos-1 (at most ``limit``)."""
    lg, start = log_index(h)
    s = start.get(key)
    if s is None or hi_pos <= lo_pos:
        return []
    part = lg.slice(s + lo_pos, min(hi_pos - lo_pos, limit))
    return [{"offset": o, "pos": p, "value": v} for o, p, v in
            part.select("offset", "pos", "value").iter_rows()]


def reads_with_pos(h: History) -> pl.DataFrame:
    """reads(h) joined with the committed-log position of each record (null when the record
    sits at an offset that holds aborted data, i.e. an aborted read)."""
    def build(h: History):
        return reads(h).join(log(h).select("key", "offset", "pos"), on=["key", "offset"], how="left")
    return h.cached("reads_with_pos", build)


def final_keys(h: History) -> set[int]:
    """Keys the final drain covered: assigned to, subscribed by, or polled by a process that
    made a poll with ``meta.final = true``."""
    def build(h: History):
        fprocs = set(h.ops.filter(pl.col("final"))["process"].to_list())
        if not fprocs:
            return set()
        keys = set(reads(h).filter(pl.col("process").is_in(list(fprocs)))["key"].unique().to_list())
        procs = h.ops.select("op", "process")["process"]
        for op, ex in h.extras.items():
            if procs[op] not in fprocs:
                continue
            val = ex.get("value")
            if not isinstance(val, list):
                continue
            for item in val:
                if not isinstance(item, str):
                    continue
                if item in h.keys:
                    keys.add(h.keys.index(item))
                else:  # a topic name: every partition of it seen in the history
                    prefix = item + "/"
                    keys.update(i for i, k in enumerate(h.keys) if k.startswith(prefix))
        return keys
    return h.cached("final_keys", build)


def describe_op(h: History, op: int) -> str:
    """'txn op 1204 of process 3 (transactional.id eosc-txn-2, ok)' style phrase."""
    r = h.op_ref(op)
    tid = f"transactional.id {r['transactional_id']}, " if r["transactional_id"] else ""
    return f"{r['f']} op {r['invoke_index']} of process {r['process']} ({tid}{r['type']})"


OUTCOME = {"ok": "committed (ok)", "fail": "aborted (fail)", "info": "had an unknown outcome (info)"}
