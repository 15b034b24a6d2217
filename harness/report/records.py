"""Every record the clients wrote or read, as numpy columns, and the series the liveness plot
draws: realtime lag per (write, consumer) and the unseen count over time.

A record is one (key, offset, value) of a send micro-op (offset from the completion, unknown
when the op never completed) or of a poll micro-op: a row of the checkers' ``History.mops``.
Like the rest of the report this only describes what happened; the checkers judge it, and the
series come from the checkers' own model (``checkers.finders.realtime_lag.lags``, ``checkers.history.log``'s
committed writes and reads), so the plot and the verdict never disagree on what a lag or a
committed write is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from checkers.history import History
from checkers.history.log import op_col, reads, writes
from checkers.finders.realtime_lag import lags

from .analysis import OUTCOMES

SEND, POLL = 0, 1
OK, FAIL, INFO = (OUTCOMES.index(o) for o in ("ok", "fail", "info"))


@dataclass
class Records:
    keys: list[str]  # key code -> "topic/partition"
    processes: list[Any]  # process code -> the history's process
    key: np.ndarray  # int32 key code
    offset: np.ndarray  # int64, -1 where unknown
    value: np.ndarray  # int64; values that are not ints get negative codes
    kind: np.ndarray  # int8 SEND or POLL
    process: np.ndarray  # int32 process code
    time: np.ndarray  # int64 ns: the op's completion (its invoke when it never completed)
    outcome: np.ndarray  # int8 index into OUTCOMES: the op's outcome
    op: np.ndarray  # int64: the op's invoke index (its completion's when it has no invoke)
    final: np.ndarray  # bool: the op belongs to the final drain (meta.final)
    skipped: int = 0  # micro-ops or records that could not be read
    workers: dict[int, str] = field(default_factory=dict)  # process code -> meta.worker

    def process_label(self, code: int) -> str:
        w = self.workers.get(code)
        p = self.processes[code]
        return f"p{p} {w}" if w else f"p{p}"

    def __len__(self) -> int:
        return int(self.key.size)

    def key_code(self, key: str) -> int | None:
        try:
            return self.keys.index(key)
        except ValueError:
            return None


def extract_records(h: History, workers: dict[int, str] | None = None) -> Records:
    """The records of all client ops of the checkers' History, in op order: one row per
    micro-op record of ``History.mops`` with its op's process, time (completion, else
    invoke), outcome, invoke index and final flag. ``workers``: process -> meta.worker."""
    ops = h.ops.select("op", "invoke_index", "process", "type", "final",
                       time=pl.coalesce("complete_time", "invoke_time"))
    m = h.mops.select("op", "kind", "key", "offset", "value").join(ops, on="op", how="left")
    processes = sorted(set(h.ops["process"].to_list()))
    pcode = {p: i for i, p in enumerate(processes)}
    proc = m["process"].to_numpy().astype(np.int64)
    pidx = np.searchsorted(np.asarray(processes, dtype=np.int64), proc) if len(processes) else proc
    outcome = m["type"].cast(pl.Utf8).replace_strict({o: i for i, o in enumerate(OUTCOMES)},
                                                     return_dtype=pl.Int8)
    return Records(
        keys=list(h.keys), processes=processes,
        key=m["key"].to_numpy().astype(np.int32),
        offset=m["offset"].fill_null(-1).to_numpy().astype(np.int64),
        value=m["value"].to_numpy().astype(np.int64),
        kind=(m["kind"].cast(pl.Utf8) == "poll").to_numpy().astype(np.int8),
        process=pidx.astype(np.int32),
        time=m["time"].to_numpy().astype(np.int64),
        outcome=outcome.to_numpy().astype(np.int8),
        op=m["invoke_index"].to_numpy().astype(np.int64),
        final=m["final"].to_numpy().astype(bool),
        workers={pcode[p]: w for p, w in (workers or {}).items() if p in pcode},
    )


@dataclass
class Lags:
    commit_ns: np.ndarray  # when the write's op completed ok, sorted ascending
    lag_ns: np.ndarray  # first read by that consumer minus commit (may be negative)
    process: np.ndarray  # the consumer (process code)


def realtime_lags(h: History, rec: Records) -> Lags:
    """Per (ok write, non-final consumer that read it): the time from the write's completion to
    the completion of the consumer's first poll returning it: the checkers' own pairs
    (``checkers.finders.realtime_lag.lags``), with the consumer as a process code of ``rec``."""
    lg = lags(h)
    if lg.is_empty():
        z = np.zeros(0, dtype=np.int64)
        return Lags(z, z, z.astype(np.int32))
    commit = h.ops["complete_time"].gather(lg["writer"]).to_numpy().astype(np.int64)
    o = np.argsort(commit, kind="stable")
    procs = np.asarray(rec.processes, dtype=np.int64)
    code = np.searchsorted(procs, lg["process"].to_numpy().astype(np.int64))
    return Lags(commit[o], lg["lag_ns"].to_numpy().astype(np.int64)[o], code[o].astype(np.int32))


@dataclass
class Unseen:
    """Committed writes not yet read by any poll, as a step function of time."""

    commit_ns: np.ndarray  # sorted: when each committed write's op completed
    seen_ns: np.ndarray  # sorted: when each stopped being unseen (first read, not before commit)
    never: int  # committed writes no poll ever returned
    total: int  # committed writes

    def count_at(self, t: np.ndarray) -> np.ndarray:
        return (np.searchsorted(self.commit_ns, t, side="right")
                - np.searchsorted(self.seen_ns, t, side="right"))

    def change_points(self) -> np.ndarray:
        return np.unique(np.concatenate([self.commit_ns, self.seen_ns]))


def unseen_over_time(h: History) -> Unseen:
    """The writes the checkers count as committed (``writes(h)["committed"]``: ok, info with
    a value read, an info send whose delivery report gave an offset) against their first
    read by any poll, the final drain included. A write's time is its op's completion (its
    invoke when it never completed); a read's, its poll's completion."""
    w = writes(h).filter(pl.col("committed"))
    if w.is_empty():
        z = np.zeros(0, dtype=np.int64)
        return Unseen(z, z, 0, 0)
    t = pl.coalesce("complete_time", "invoke_time")
    w = (w.with_columns(op_col(h, "invoke_time", w["op"]))
         .group_by("key", "value").agg(commit=t.min()))
    r = reads(h)
    r = (r.select("key", "value").with_columns(
            op_col(h, "complete_time", r["op"]), op_col(h, "invoke_time", r["op"]))
         .group_by("key", "value").agg(first=t.min()))
    w = w.join(r, on=["key", "value"], how="left")
    commit = np.sort(w["commit"].to_numpy().astype(np.int64))
    seen = w.filter(pl.col("first").is_not_null()).select(
        pl.max_horizontal("commit", "first").alias("s"))["s"].to_numpy().astype(np.int64)
    return Unseen(commit, np.sort(seen), int(w["first"].null_count()), int(w.height))
