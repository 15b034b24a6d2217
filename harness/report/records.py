"""Every record the clients wrote or read, as numpy columns, and what follows from them alone:
realtime lag per (write, consumer) and the unseen count over time.

A record is one (key, offset, value) of a send micro-op (offset from the completion, unknown when
the op never completed) or of a poll micro-op. Like the rest of the report this only describes
what happened; the checkers judge it. The lag follows checkers/realtime_lag.py (ok writes,
non-final polls, first read per consumer); `verdict.stats.realtime_lag_ms` stays the reference.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from .analysis import OUTCOMES, ClientOp, _time

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


class _Codes(dict):
    def code(self, v: Any) -> int:
        c = self.get(v)
        if c is None:
            c = self[v] = len(self)
        return c


def extract_records(ops: list[ClientOp]) -> Records:
    """The records of all client ops, in op order."""
    keys, procs = _Codes(), _Codes()
    key_code = keys.code
    k_col: list[int] = []
    off_col: list[Any] = []
    val_col: list[Any] = []
    kind_col: list[int] = []
    op_rows: list[tuple[int, int, int, int, int, bool]] = []  # (n, process, time, outcome, op, final)
    skipped = 0
    worker_of: dict[Any, str] = {}  # process -> meta.worker of any of its ops
    out_code = {o: i for i, o in enumerate(OUTCOMES)}
    for op in ops:
        done, inv = op.completion, op.invoke
        ev = done if done is not None else inv
        if op.process not in worker_of and ev is not None:
            m = ev.get("meta")
            if type(m) is dict and m.get("worker"):
                worker_of[op.process] = str(m["worker"])
        value = ev.get("value") if ev is not None else None
        if type(value) is not list or not value:
            continue
        n0 = len(k_col)
        for mop in value:
            if type(mop) is not list or len(mop) < 2:
                continue
            head = mop[0]
            if head == "send" and len(mop) >= 3:
                v = mop[2]
                if type(v) is list:
                    if len(v) != 2:
                        skipped += 1
                        continue
                    off, v = v
                else:
                    off = None
                k_col.append(key_code(str(mop[1])))
                off_col.append(off)
                val_col.append(v)
                kind_col.append(SEND)
            elif head == "poll" and type(mop[1]) is dict:
                for key, recs in mop[1].items():
                    if type(recs) is not list:
                        skipped += 1
                        continue
                    if not recs:
                        continue
                    try:
                        offs, vals = zip(*recs)
                    except (TypeError, ValueError):  # some record is not an [offset, value] pair
                        good = [r for r in recs if isinstance(r, list) and len(r) == 2]
                        skipped += len(recs) - len(good)
                        if not good:
                            continue
                        offs, vals = zip(*good)
                    n = len(offs)
                    k_col.extend([key_code(str(key))] * n)
                    off_col.extend(offs)
                    val_col.extend(vals)
                    kind_col.extend([POLL] * n)
        n = len(k_col) - n0
        if n:
            src = inv if inv is not None else done
            idx = src.get("index")
            pc = procs.code(op.process)
            m1 = done.get("meta") if done is not None else None
            m2 = inv.get("meta") if inv is not None else None
            final = (type(m1) is dict and bool(m1.get("final"))) or \
                    (type(m2) is dict and bool(m2.get("final")))
            outcome = 2 if done is None else out_code.get(done.get("type"), 2)
            op_rows.append((n, pc, _time(ev), outcome, idx if type(idx) is int else -1, final))
    if op_rows:
        rows = np.array(op_rows, dtype=np.int64)
        reps = rows[:, 0]
        process, time, outcome, opi, final = (np.repeat(rows[:, i], reps) for i in range(1, 6))
    else:
        process = time = outcome = opi = final = np.zeros(0, dtype=np.int64)
    workers = {c: worker_of[p] for p, c in procs.items() if p in worker_of}
    offsets, bad_off = _offset_column(off_col)
    values, bad_val = _int_column(val_col, unknown=None)
    return Records(
        keys=list(keys), processes=list(procs),
        key=np.asarray(k_col, dtype=np.int32), offset=offsets, value=values,
        kind=np.asarray(kind_col, dtype=np.int8), process=process.astype(np.int32),
        time=time.astype(np.int64), outcome=outcome.astype(np.int8), op=opi.astype(np.int64),
        final=final.astype(bool), skipped=skipped + bad_off, workers=workers,
    )


def _offset_column(items: list[Any]) -> tuple[np.ndarray, int]:
    """Offsets as int64, -1 where unknown (null); other non-int offsets are counted as bad."""
    try:
        return np.asarray(items, dtype=np.int64), 0
    except (TypeError, ValueError, OverflowError):
        pass
    try:  # the usual case: some offsets are null (sends whose op never completed)
        f = np.asarray(items, dtype=np.float64)
        if np.all(np.isnan(f) | (np.abs(f) < 2**53)):
            return np.where(np.isnan(f), -1, f).astype(np.int64), 0
    except (TypeError, ValueError):
        pass
    return _int_column(items, unknown=-1)


def _int_column(items: list[Any], unknown: int | None) -> tuple[np.ndarray, int]:
    """An int64 column; with unknown set, what is not an int becomes it (and is counted),
    else non-int values get stable negative codes (values are compared, never ordered)."""
    try:
        return np.asarray(items, dtype=np.int64), 0
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.empty(len(items), dtype=np.int64)
    codes: dict[str, int] = {}
    bad = 0
    for i, x in enumerate(items):
        if isinstance(x, int) and not isinstance(x, bool) and -2**63 <= x < 2**63:
            out[i] = x
        elif unknown is not None:
            out[i] = unknown
            bad += x is not None
        else:
            out[i] = -1 - codes.setdefault(repr(x), len(codes))
    return out, bad


def _frame(rec: Records) -> pl.DataFrame:
    return pl.DataFrame({
        "key": rec.key, "value": rec.value, "kind": rec.kind, "process": rec.process,
        "time": rec.time, "outcome": rec.outcome, "final": rec.final,
    })


@dataclass
class Lags:
    commit_ns: np.ndarray  # when the write's op completed ok, sorted ascending
    lag_ns: np.ndarray  # first read by that consumer minus commit (may be negative)
    process: np.ndarray  # the consumer (process code)


def realtime_lags(rec: Records) -> Lags:
    """Per (ok write, non-final consumer that read it): the time from the write's completion to
    the completion of the consumer's first poll returning it."""
    if not len(rec):
        z = np.zeros(0, dtype=np.int64)
        return Lags(z, z, z.astype(np.int32))
    df = _frame(rec)
    w = (df.filter((pl.col("kind") == SEND) & (pl.col("outcome") == OK))
         .group_by("key", "value").agg(commit=pl.col("time").min()))
    r = (df.filter((pl.col("kind") == POLL) & ~pl.col("final"))
         .group_by("key", "value", "process").agg(read=pl.col("time").min()))
    j = r.join(w, on=["key", "value"], how="inner").sort("commit")
    return Lags(j["commit"].to_numpy().astype(np.int64),
                (j["read"] - j["commit"]).to_numpy().astype(np.int64),
                j["process"].to_numpy().astype(np.int32))


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


def unseen_over_time(rec: Records) -> Unseen:
    """Committed writes (op ok, or op info with the value read by some poll: it must have
    committed) against their first read by any poll, the final drain included."""
    if not len(rec):
        z = np.zeros(0, dtype=np.int64)
        return Unseen(z, z, 0, 0)
    df = _frame(rec)
    reads = (df.filter(pl.col("kind") == POLL).group_by("key", "value")
             .agg(first=pl.col("time").min()))
    w = (df.filter((pl.col("kind") == SEND) & (pl.col("outcome") != FAIL))
         .group_by("key", "value").agg(commit=pl.col("time").min(),
                                       ok=(pl.col("outcome") == OK).any())
         .join(reads, on=["key", "value"], how="left")
         .filter(pl.col("ok") | pl.col("first").is_not_null()))
    commit = np.sort(w["commit"].to_numpy().astype(np.int64))
    seen = w.filter(pl.col("first").is_not_null()).select(
        pl.max_horizontal("commit", "first").alias("s"))["s"].to_numpy().astype(np.int64)
    return Unseen(commit, np.sort(seen), int(w["first"].null_count()), int(w.height))
