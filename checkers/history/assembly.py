"""From paired events to ``History``: micro-op rows, extras, key order; ``load_history``."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Iterable

import numpy as np
import polars as pl

from ..timing import laps
from .arrays import positions
from .checks import check_keys, check_offsets
from .events import _Events
from .exact import _py_completion, _py_invoke_rows, _py_invoke_sends
from .model import BULK_FS, END, KIND, POLL, SEND, TYPE, History
from .pairing import _pair
from .reader import _read_events, _read_file


def _micro_ops(ev: _Events, ops: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """mops (keys as ids into the returned key list)."""
    bulk = ops.select("op", "f", "invoke_index", "_inv_pos", "_inv_fast", "_inv_nsend",
                      "_cmp_pos", "_cmp_fast", "_cmp_nsend", "_sup_pos"
                      ).filter(pl.col("f").is_in(list(BULK_FS)))
    schema = {"op": pl.UInt32, "part": pl.UInt8, "ord": pl.Int64, "kind": pl.UInt8,
              "key": pl.UInt32, "offset": pl.Int64, "value": pl.Int64}
    gid_of = ev.key_ids
    gkeys = ev.gkeys

    # 1. completion micro-ops: the regular completions' tokens (by position) -> ops, in op
    # order (a stable sort keeps the order inside each completion)
    paired = bulk.filter(pl.col("_cmp_pos").is_not_null())
    big = pl.DataFrame(schema=schema)
    if ev.tokens is not None and ev.tokens.height:
        fc = paired.filter(pl.col("_cmp_fast"))
        tp = ev.tokens["rid"].to_numpy()
        cpos = fc["_cmp_pos"].to_numpy()
        op_at = np.full(int(max(tp.max(), cpos.max() if len(cpos) else 0)) + 1, -1, np.int64)
        op_at[cpos] = fc["op"].to_numpy()
        # a completion's tokens are one run; order the runs by op, then expand them
        start = np.flatnonzero(np.concatenate([[True], tp[1:] != tp[:-1]]))
        length = np.diff(np.append(start, len(tp)))
        r_op = op_at[tp[start]]
        del op_at, tp
        keep = np.flatnonzero(r_op >= 0)
        keep = keep[np.argsort(r_op[keep], kind="stable")]
        start, length, r_op = start[keep], length[keep], r_op[keep]
        cum = np.cumsum(length) - length
        o = np.repeat(start - cum, length) + np.arange(int(length.sum()))
        big = ev.tokens.drop("rid")[o].select(
            op=pl.Series(np.repeat(r_op, length), dtype=pl.UInt32), part=pl.lit(0, pl.UInt8),
            kind="kind", key="key", offset="offset", value="value")
        ev.tokens = None
        del o, start, length, r_op, cum, keep
    laps("load: completion micro-ops to ops")
    n_cmp_sends: dict[int, int] = {}
    py_rows: list[tuple] = []
    py_inv_rows: list[tuple] = []
    problems = ev.problems
    for op, cpos, inv_index in paired.filter(~pl.col("_cmp_fast")).select(
            "op", "_cmp_pos", "invoke_index").iter_rows():
        rows, n = _py_completion(ev.event_at(cpos).get("value"), ev.where(cpos), inv_index,
                                 lambda m, cpos=cpos: problems.add(cpos, 2, m))
        n_cmp_sends[op] = n
        py_rows.extend((op, 0, i, k, key, off, v) for i, (k, key, off, v) in enumerate(rows))

    # 2. sends the completion did not list (info/fail completions may carry no value)
    counts = bulk.select("op", "_inv_fast", "_inv_nsend", "_inv_pos", "_cmp_pos", "_cmp_nsend",
                         "_sup_pos", "invoke_index")
    if n_cmp_sends:
        counts = counts.join(pl.DataFrame({"op": list(n_cmp_sends), "_py_n": list(n_cmp_sends.values())},
                                          schema={"op": pl.UInt32, "_py_n": pl.Int64}), on="op", how="left"
                             ).with_columns(_cmp_nsend=pl.coalesce("_py_n", "_cmp_nsend")).drop("_py_n")
    counts = counts.with_columns(_cmp_nsend=pl.col("_cmp_nsend").fill_null(0))
    inv_sends_py: dict[int, list] = {}
    slow_inv = counts.filter(~pl.col("_inv_fast"))  # regular invokes' send counts are known
    if slow_inv.height:
        ns = []
        for op, ipos in slow_inv.select("op", "_inv_pos").iter_rows():
            s = _py_invoke_sends(ev.event_at(ipos).get("value"))
            inv_sends_py[op] = s
            ns.append(len(s))
        counts = counts.join(pl.DataFrame({"op": slow_inv["op"], "_py_n": ns},
                                          schema={"op": pl.UInt32, "_py_n": pl.Int64}), on="op", how="left"
                             ).with_columns(_inv_nsend=pl.coalesce("_inv_nsend", "_py_n")).drop("_py_n")
    need = counts.filter((pl.col("_inv_nsend") > 0) & (pl.col("_inv_nsend") != pl.col("_cmp_nsend")))
    laps("load: odd completions, send counts")
    if need.height:  # rare: read those invokes one by one
        for op, ipos, cpos, spos, inv_index in need.select(
                "op", "_inv_pos", "_cmp_pos", "_sup_pos", "invoke_index").iter_rows():
            if op not in inv_sends_py:
                inv_sends_py[op] = _py_invoke_sends(ev.event_at(ipos).get("value"))
            if cpos is not None:
                where, at, sub = ev.where(cpos), cpos, 2
            else:
                where, at, sub = f"op {inv_index}", (spos if spos is not None else END), 2 if spos is not None else op
            rows = _py_invoke_rows(inv_sends_py[op], where, inv_index,
                                   lambda m, at=at, sub=sub: problems.add(at, sub, m))
            py_inv_rows.extend((op, 1, i, 0, key, None, v) for i, (key, v) in enumerate(rows))
    laps("load: unlisted invoke sends")
    parts: list[pl.DataFrame] = []
    for rows in (py_rows, py_inv_rows):
        if not rows:
            continue
        ids = gid_of([r[4] for r in rows])
        parts.append(pl.DataFrame({
            "op": [r[0] for r in rows], "part": [r[1] for r in rows],
            "ord": [r[2] for r in rows], "kind": [r[3] for r in rows], "key": ids,
            "offset": [r[5] for r in rows], "value": [r[6] for r in rows],
        }, schema=schema))
    # the completions' tokens are the bulk of the rows, in (op, ord) order; the other parts
    # are small: sorted on their own, then merged in by position
    small = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    schema = {k: v for k, v in schema.items() if k != "ord"}
    big = big.select(list(schema)).cast(schema)
    parts.clear()
    inv = small.filter(pl.col("part") == 1)
    if inv.height:  # invoke-only sends whose (key, value) the completion listed: not repeated
        iops = np.unique(inv["op"].to_numpy())
        bo = big["op"].to_numpy()  # sorted: each op's rows are one range
        lo, hi = np.searchsorted(bo, iops, "left"), np.searchsorted(bo, iops, "right")
        ln = hi - lo
        rows = np.repeat(lo - (np.cumsum(ln) - ln), ln) + np.arange(int(ln.sum()))
        listed = pl.concat([
            big[rows].filter(pl.col("kind") == 0).select("op", "key", "value"),
            small.filter((pl.col("part") == 0) & (pl.col("kind") == 0)
                         & pl.col("op").is_in(pl.Series(iops, dtype=pl.UInt32).implode()))
            .select("op", "key", "value")]).unique()
        small = pl.concat([small.filter(pl.col("part") == 0),
                           inv.join(listed, on=["op", "key", "value"], how="anti")])
    m = _merge_sorted(big, small.sort("op", "part", "ord").drop("ord"))
    del big, small, inv
    laps("load: merge micro-op parts")

    opn = m["op"].to_numpy()
    seq = positions(opn)
    # key ids in the order the history first mentions them: by the position of the
    # completion that reported the micro-op (an op that never completed: where it was
    # superseded, or at the end), then by the order inside the op
    kv = m["key"].to_numpy()
    names = [None] * len(gkeys)
    for k, i in gkeys.items():
        names[i] = k
    if len(kv):
        at = ops.select(pl.coalesce("_cmp_pos", "_sup_pos",
                                    pl.col("op").cast(pl.Int64) + END)).to_series().to_numpy()
        at_row = at[opn]
        kmin = np.full(len(gkeys), np.iinfo(np.int64).max, np.int64)
        np.minimum.at(kmin, kv, at_row)
        cand = np.flatnonzero(at_row == kmin[kv])  # rows of each key's first mentioning op
        ck, first_row = np.unique(kv[cand], return_index=True)
        first = ck[np.lexsort((cand[first_row], kmin[ck]))]
        del at_row, cand
        remap = np.zeros(len(gkeys), np.uint32)
        remap[first] = np.arange(len(first), dtype=np.uint32)
        kv = remap[kv]
        keys = [names[i] for i in first]
    else:
        keys = []
    mops = pl.DataFrame({
        "op": m["op"],
        "seq": pl.Series(seq, dtype=pl.UInt32),
        "kind": m["kind"].replace_strict({0: SEND, 1: POLL}, return_dtype=KIND),
        "key": pl.Series(kv, dtype=pl.UInt32),
        "offset": m["offset"],
        "value": m["value"],
    })
    laps("load: mops frame")
    return mops, keys


def _merge_sorted(big: pl.DataFrame, small: pl.DataFrame) -> pl.DataFrame:
    """Rows of two frames sorted by (op, part, ord), merged; no (op, part) is in both."""
    if small.is_empty():
        return big
    if big.is_empty():
        return small
    kb = big["op"].cast(pl.Int64).to_numpy() * 2 + big["part"].to_numpy()
    ks = small["op"].cast(pl.Int64).to_numpy() * 2 + small["part"].to_numpy()
    cut = np.searchsorted(kb, ks, side="right")  # where each small row goes in big
    if len(ks) <= 512:  # few: interleave slices (no copy of big until the concat)
        pieces, prev = [], 0
        for i, c in enumerate(cut.tolist()):
            if c > prev:
                pieces.append(big.slice(prev, c - prev))
            pieces.append(small.slice(i, 1))
            prev = c
        pieces.append(big.slice(prev))
        return pl.concat(pieces, rechunk=True)
    at_b = np.arange(len(kb)) + np.searchsorted(ks, kb, side="left")
    at_s = np.arange(len(ks)) + cut
    order = np.empty(len(kb) + len(ks), np.int64)
    order[at_b] = np.arange(len(kb))
    order[at_s] = len(kb) + np.arange(len(ks))
    return pl.concat([big, small]).gather(order)


def _extras(ev: _Events, ops: pl.DataFrame) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for op, ipos, cpos in ops.filter(~pl.col("f").is_in(list(BULK_FS))).select(
            "op", "_inv_pos", "_cmp_pos").iter_rows():
        inv = ev.event_at(ipos)
        meta = inv.get("meta")
        ex = {"value": inv.get("value"), "completion_value": None,
              "meta": meta if isinstance(meta, dict) else {}}
        if cpos is not None:
            c = ev.event_at(cpos)
            ex["completion_value"] = c.get("value")
            cm = c.get("meta")
            if isinstance(cm, dict):
                ex["meta"] = {**ex["meta"], **cm}
            if c.get("error") is not None:  # the whole error, message too (checkers/finders/epoch_exhausted.py)
                ex["error"] = c.get("error")
        out[op] = ex
    return out


def _assemble(ev: _Events, index_gaps: bool = True) -> History:
    if index_gaps:
        ev.index_gaps()
    laps("load: index gaps")
    ops = _pair(ev)
    ev.fast = None  # the events are in ops now
    laps("load: pair invokes/completions")
    extras = _extras(ev, ops)
    mops, keys = _micro_ops(ev, ops)
    check_keys(ev, keys)
    check_offsets(ev, ops, mops, keys)
    ev.raw = None
    ops = ops.select(
        "op", "invoke_index", "complete_index", "process",
        pl.col("f").cast(pl.Categorical),
        pl.col("type").cast(TYPE),
        "invoke_time", "complete_time", "transactional_id", "group_id", "final",
        "error", "commit_time",
    )
    # a producer process is one instance of one transactional.id: ops that do not
    # repeat it in their meta inherit it from the process's init/earlier ops
    tids = (ops.filter(pl.col("transactional_id").is_not_null())
            .group_by("process").agg(tid_=pl.col("transactional_id").first()))
    if tids.height:
        ops = (ops.join(tids, on="process", how="left")
               .with_columns(transactional_id=pl.coalesce("transactional_id", "tid_"))
               .drop("tid_").sort("op"))
    nemesis = [e for _, e in sorted(ev.nemesis, key=lambda x: x[0])]
    laps("load: ops frame, extras")
    return History(
        ops=ops, mops=mops, keys=keys, nemesis=nemesis, extras=extras,
        problems=ev.problems.result(), n_events=ev.n_events, n_problems=ev.problems.count,
        truncated=ev.truncated, garbled_lines=ev.garbled,
    )


def load_history(source: str | Path | Iterable[dict], index_gaps: bool = True) -> History:
    """Read a history from a ``history.jsonl`` path or from an iterable of event dicts.

    Returns a :class:`History`; content problems land in ``History.problems`` (and set
    ``truncated`` for a dropped last line, ``garbled_lines`` for dropped lines mid-file).
    ``index_gaps=False``: event indices need not be consecutive (a part of a history cut by
    key, ``checkers.engines.parts``, which checks the whole file's indices itself).
    """
    # parsing allocates many short-lived containers that refcounting frees; the cyclic
    # collector would only rescan them, so it is paused while reading
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if isinstance(source, (str, Path)):
            ev = _read_file(Path(source))
        else:
            ev = _read_events(source)
        return _assemble(ev, index_gaps)
    finally:
        if was_enabled:
            gc.enable()


def as_history(history: "History | str | Path | Iterable[dict]") -> History:
    """Accept a History, a path, or a list of event dicts."""
    if isinstance(history, History):
        return history
    return load_history(history)
