"""Pairing invokes with completions: no Python loop over events."""

from __future__ import annotations

import numpy as np
import polars as pl

from .arrays import stable_order
from .events import _Events
from .model import MAX_PROBLEMS


def _pair(ev: _Events) -> pl.DataFrame:
    """Ops from client events: each invoke with the next event of its process when that is a
    completion. Reports orphan completions, invokes while in flight and f mismatches."""
    E, order = ev.frame()  # rows sorted by pos: E[order]

    def col(a: np.ndarray) -> np.ndarray:
        return a if order is None else a[order]

    n = E.height
    proc = col(E["process"].to_numpy())
    is_inv = col((E["type"] == "invoke").to_numpy())
    perm = (stable_order(proc) if n and proc.min() >= 0  # by process, then position
            else np.argsort(proc, kind="stable"))
    same = proc[perm[1:]] == proc[perm[:-1]]
    nxt = np.full(n, -1, np.int64)
    prv = np.full(n, -1, np.int64)
    nxt[perm[:-1][same]] = perm[1:][same]
    prv[perm[1:][same]] = perm[:-1][same]
    del perm, same
    has_next = nxt >= 0
    nxt_inv = np.zeros(n, bool)
    nxt_inv[has_next] = is_inv[nxt[has_next]]
    paired = is_inv & has_next & ~nxt_inv
    superseded = is_inv & has_next & nxt_inv
    has_prev = prv >= 0
    prev_inv = np.zeros(n, bool)
    prev_inv[has_prev] = is_inv[prv[has_prev]]
    orphan = ~is_inv & ~prev_inv
    where = ev.where
    pos = col(E["pos"].to_numpy())
    idx = col(E["index"].to_numpy())
    f = E["f"] if order is None else E["f"].gather(order)
    nt = np.flatnonzero(col(E["time"].is_null().to_numpy()))
    if len(nt):  # docs/history.md: every event has an int time (ns since the run started)
        ev.problems.add_first(len(nt), (
            (int(pos[r]), 1, f"{where(int(pos[r]))}: event {idx[r]} has no integer time "
                             "(ns since the run started)") for r in nt[:MAX_PROBLEMS]))
    o = np.flatnonzero(orphan)
    if len(o):
        ev.problems.add_first(len(o), (
            (int(pos[r]), 1, f"{where(int(pos[r]))}: completion {idx[r]} of process {proc[r]} "
                             "has no open invoke; ignored") for r in o[:MAX_PROBLEMS]))
    sp = np.flatnonzero(superseded)
    if len(sp):
        ev.problems.add_first(len(sp), (
            (int(pos[nxt[r]]), 1, f"{where(int(pos[nxt[r]]))}: process {proc[r]} invoked "
                                  f"{idx[nxt[r]]} while op {idx[r]} was in flight; the earlier "
                                  "op reads as info") for r in sp[:MAX_PROBLEMS]))
    inv_rows = np.flatnonzero(is_inv)
    cmp_rows = np.where(paired[inv_rows], nxt[inv_rows], -1)

    def col_rows(r: np.ndarray) -> np.ndarray:  # sorted row numbers -> rows of E
        return r if order is None else order[r]
    has_cmp = cmp_rows >= 0
    ic = inv_rows[has_cmp]
    mm = ic[(f.gather(ic) != f.gather(cmp_rows[has_cmp])).to_numpy()]
    if len(mm):
        ev.problems.add_first(len(mm), (
            (int(pos[nxt[r]]), 1, f"{where(int(pos[nxt[r]]))}: completion {idx[nxt[r]]} has f "
                                  f"{f[int(nxt[r])]!r} but its invoke has {f[int(r)]!r}")
            for r in mm[:MAX_PROBLEMS]))
    I = E[col_rows(inv_rows)]
    C = E.select("pos", "index", "time", "type", "tid", "gid", "final", "err", "fast", "nsend",
                 "commit").gather(pl.Series(col_rows(np.where(has_cmp, cmp_rows, 0))).set(
                     pl.Series(~has_cmp), None))
    sup_pos = pl.Series(np.where(superseded[inv_rows], pos[np.maximum(nxt[inv_rows], 0)], 0)
                        ).set(pl.Series(~superseded[inv_rows]), None)
    del E, proc, is_inv, nxt, prv, has_next, nxt_inv, paired, has_prev, prev_inv, orphan, idx
    # a completion timed before its own invoke: the clock or the writer is broken; its time
    # is dropped (read as unknown) so it cannot order the op before others (no realtime edge)
    back = (C["time"] < I["time"]).fill_null(False)
    if back.any():
        bi = np.flatnonzero(back.to_numpy())
        # (nulls filled: the rows reported all have both times, and ints print as ints)
        cp, ci, ct = (C[c].fill_null(-1).to_numpy() for c in ("pos", "index", "time"))
        ip, ii, it = (I[c].fill_null(-1).to_numpy() for c in ("pos", "index", "time"))
        ev.problems.add_first(len(bi), (
            (int(cp[r]), 1, f"{where(int(cp[r]))}: completion {ci[r]} is timed {ct[r]} ns, before "
                            f"its invoke {ii[r]} ({where(int(ip[r]))}) at {it[r]} ns; its time is "
                            "ignored") for r in bi[:MAX_PROBLEMS]))
        C = C.with_columns(time=pl.when(back).then(None).otherwise(pl.col("time")))
    return pl.DataFrame({
        "op": pl.Series(np.arange(len(inv_rows), dtype=np.uint32)),
        "invoke_index": I["index"],
        "complete_index": C["index"],
        "process": I["process"],
        "f": I["f"],
        "type": C["type"].fill_null("info"),
        "invoke_time": I["time"],
        "complete_time": C["time"],
        "transactional_id": I["tid"].fill_null(C["tid"]),
        "group_id": I["gid"].fill_null(C["gid"]),
        "final": I["final"] | C["final"].fill_null(False),
        "error": C["err"],
        "commit_time": C["commit"],
        # private, for the micro-ops
        "_inv_pos": I["pos"], "_inv_fast": I["fast"], "_inv_nsend": I["nsend"],
        "_cmp_pos": C["pos"], "_cmp_fast": C["fast"], "_cmp_nsend": C["nsend"],
        "_sup_pos": sup_pos,
    })

