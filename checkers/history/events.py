"""Client events as read (the fast columnar rows and the exact per-event path), before pairing."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import polars as pl

from .model import COMPLETION_TYPES, MAX_PROBLEMS
from .problems import _Problems

_EV_SCHEMA = {
    "pos": pl.Int64, "index": pl.Int64, "time": pl.Int64, "process": pl.Int64,
    "type": pl.String, "f": pl.String, "tid": pl.String, "gid": pl.String,
    "final": pl.Boolean, "err": pl.String, "fast": pl.Boolean, "nsend": pl.Int64,
    "commit": pl.Int64,
}


def _int64(v: Any) -> bool:
    """An int (bools count, as ever) that fits a 64-bit column."""
    return isinstance(v, int) and -(1 << 63) <= v < (1 << 63)


def _error_name(err: Any) -> str | None:
    if isinstance(err, list) and err and isinstance(err[0], str):
        return err[0]
    if isinstance(err, str):
        return err
    return None


class _Events:
    """Client events gathered from the fast columnar path and from the exact per-event path,
    plus nemesis events, problems and counters. Positions (``pos``) order everything: a
    physical line number - 1 for files, the event's ordinal for lists."""

    def __init__(self, where: Callable[[int], str]) -> None:
        self.where = where
        self.problems = _Problems()
        self.nemesis: list[tuple[int, dict]] = []
        self.n_events = 0
        self.x_cols: dict[str, list] = {k: [] for k in _EV_SCHEMA}
        self.x_ev: dict[int, dict] = {}  # pos -> event dict (exact events only)
        self.i_pos: list[int] = []  # (pos, index) of exact events for the index-gap check
        self.i_index: list[int] = []
        self.fast: pl.DataFrame | None = None  # regular rows: _EV_SCHEMA columns
        self.tokens: pl.DataFrame | None = None  # their completions' micro-ops, by position
        self.gkeys: dict[str, int] = {}  # key name -> id used in tokens
        self.raw: Callable[[int], Any] | None = None  # pos -> event parsed from the source
        self.truncated = False
        self.garbled = 0

    def key_ids(self, keys: list[str]) -> np.ndarray:
        g = self.gkeys
        return np.array([g.setdefault(k, len(g)) for k in keys], dtype=np.uint32)

    def event_at(self, pos: int) -> Any:
        ev = self.x_ev.get(pos)
        if ev is None and self.raw is not None:
            ev = self.raw(pos)
        return ev if isinstance(ev, dict) else {}

    def event(self, ev: Any, pos: int) -> None:
        """The exact path: one event dict (Jepsen-style validation, same rules as ever)."""
        where = self.where(pos)
        if not isinstance(ev, dict):
            self.problems.add(pos, 0, f"{where}: event is not a JSON object")
            return
        self.n_events += 1
        idx = ev.get("index")
        typ = ev.get("type")
        proc = ev.get("process")
        f = ev.get("f")
        if not _int64(idx) or not isinstance(typ, str) or not isinstance(f, str):
            self.problems.add(pos, 0, f"{where}: event lacks an int index, a type or an f")
            return
        self.i_pos.append(pos)
        self.i_index.append(int(idx))
        if proc == "nemesis":
            if not _int64(ev.get("time")) or isinstance(ev.get("time"), bool):
                self.problems.add(pos, 1, f"{where}: event {idx} has no integer time "
                                          "(ns since the run started)")
            self.nemesis.append((pos, ev))
            return
        if not _int64(proc):
            self.problems.add(pos, 1, f"{where}: event {idx} has non-integer process {proc!r}; ignored")
            return
        if typ != "invoke" and typ not in COMPLETION_TYPES:
            self.problems.add(pos, 1, f"{where}: event {idx} has unknown type {typ!r}; ignored")
            return
        meta = ev.get("meta")
        if not isinstance(meta, dict):
            meta = {}
        t = ev.get("time")
        tid, gid = meta.get("transactional_id"), meta.get("group_id")
        c = self.x_cols
        c["pos"].append(pos)
        c["index"].append(int(idx))
        c["time"].append(int(t) if _int64(t) and not isinstance(t, bool) else None)
        c["process"].append(int(proc))
        c["type"].append(typ)
        c["f"].append(f)
        c["tid"].append(tid if isinstance(tid, str) else None)
        c["gid"].append(gid if isinstance(gid, str) else None)
        c["final"].append(meta.get("final") is True)
        cn = meta.get("commit_ns")
        c["commit"].append(int(cn) if _int64(cn) and not isinstance(cn, bool) else None)
        c["err"].append(_error_name(ev.get("error")))
        c["fast"].append(False)
        c["nsend"].append(None)
        self.x_ev[pos] = ev

    def frame(self) -> tuple[pl.DataFrame, np.ndarray | None]:
        """All client events (fast and exact) and the row order that sorts them by position
        (None: already sorted)."""
        x = pl.DataFrame(self.x_cols, schema=_EV_SCHEMA)
        if self.fast is None or self.fast.is_empty():
            return x, None
        fast = self.fast.select(list(_EV_SCHEMA))
        if x.is_empty():
            return fast, None
        # both are sorted by position and the exact rows are few: merge by position
        fp, xp = fast["pos"].to_numpy(), x["pos"].to_numpy()
        order = np.empty(len(fp) + len(xp), np.int64)
        order[np.arange(len(fp)) + np.searchsorted(xp, fp)] = np.arange(len(fp))
        order[np.arange(len(xp)) + np.searchsorted(fp, xp)] = len(fp) + np.arange(len(xp))
        return pl.concat([fast, x]), order

    def index_gaps(self) -> None:
        parts = [pl.DataFrame({"pos": self.i_pos, "index": self.i_index},
                              schema={"pos": pl.Int64, "index": pl.Int64})]
        if self.fast is not None:
            parts.append(self.fast.select("pos", "index"))
        ix = pl.concat(parts).sort("pos")
        bad = ix.with_columns(prev=pl.col("index").shift(1)).filter(
            pl.col("prev").is_not_null() & (pl.col("index") != pl.col("prev") + 1))
        if bad.height:
            self.problems.add_first(bad.height, (
                (p, 0, f"{self.where(p)}: index {i} follows {q} (gap or disorder)")
                for p, i, q in bad.head(MAX_PROBLEMS).iter_rows()))

