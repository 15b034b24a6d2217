"""realtime-lag: time from a write's commit to its first observation by each consumer."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..history import History
from ..history import stable_order
from ..history.log import index, reads, writes
from ..history.polls import process_rank


def lags(h: History) -> pl.DataFrame:
    """One row per (committed write, consumer process that read it): key, value, writer op,
    reader process, reader op (first read), lag_ns = completion time of that first poll minus
    completion time of the writing op (can be negative when a poll overlapped a slow ack).

    Only ``ok`` writes (their commit time is known) and non-final polls (a final drain reads
    everything late by design) take part.
    """
    lg = _lag_arrays(h)
    if isinstance(lg, pl.DataFrame):
        return lg
    ix = index(h)
    fr, wop = lg["rows"], lg["writer"]
    rop = ix.r_op[fr]
    return pl.DataFrame({
        "key": ix.r_key[fr],
        "value": ix.r_val[fr],
        "writer": wop.astype(np.uint32),
        "process": h.ops["process"].gather(rop),
        "op": rop,
        "lag_ns": lg["lag_ns"],
    })


def _lag_arrays(h: History) -> "dict | pl.DataFrame":
    """{"rows": first-read rows (into index(h) read arrays), "writer", "lag_ns"}, or the
    lags frame when the history needs the by-value path."""
    return h.cached("lag_arrays", _build_lags)


def _build_lags(h: History):
    ix = index(h)
    ct = h.ops["complete_time"]
    r_ok = (~h.ops["final"] & ct.is_not_null()).to_numpy()[ix.r_op]
    wsel = ((h.ops["type"] == "ok") & ct.is_not_null()).to_numpy()[ix.w_op]
    S = ix.n_slots
    # fast path: every offset holds one value, no value sits at two offsets, and each ok
    # write sits at its own offset holding its value. Then (process, offset) names
    # (process, key, value) and a slot names its writer.
    ws = ix.w_slot[wsel]
    fast = bool(ix.r_cons.all()) and ix.dup_kv.is_empty() and bool((ws >= 0).all())
    if fast and len(ws):
        fast = (np.bincount(ws, minlength=S).max() <= 1
                and bool((ix.r_first[ws] == ix.w_val[wsel])[ix.r_cnt[ws] > 0].all()))
    if not fast:
        return _lags_by_value(h)
    writer = np.full(S, -1, np.int64)
    writer[ws] = ix.w_op[wsel]
    rows = np.flatnonzero(r_ok & (writer[ix.r_slot] >= 0))
    del r_ok
    pr, _ = process_rank(h)
    g = pr[ix.r_op[rows]] * max(S, 1) + ix.r_slot[rows]
    o = stable_order(g)  # by (process, offset), then read order = time order
    go = g[o]
    first = np.ones(len(o), bool)
    first[1:] = go[1:] != go[:-1]
    fr = np.sort(rows[o[first]])
    del g, o, go, first, rows
    wop = writer[ix.r_slot[fr]]
    ctn = ct.to_numpy()
    return {"rows": fr, "writer": wop, "lag_ns": ctn[ix.r_op[fr]] - ctn[wop]}


def _lags_by_value(h: History) -> pl.DataFrame:
    """The same by (key, value) joins: any history."""
    w = writes(h).filter((pl.col("type") == "ok") & pl.col("complete_time").is_not_null()).select(
        "key", "value", writer="op", commit_time="complete_time")
    r = reads(h)
    r = r.with_columns(*[h.ops[c].gather(r["op"]) for c in ("process", "final", "complete_time")])
    r = r.filter(~pl.col("final") & pl.col("complete_time").is_not_null()).select(
        "key", "value", "process", "op", read_time="complete_time")
    first = r.sort("read_time", maintain_order=True).group_by(
        "key", "value", "process").agg(pl.all().first())
    return (
        first.join(w, on=["key", "value"], how="inner")
        .with_columns(lag_ns=pl.col("read_time") - pl.col("commit_time"))
        .select("key", "value", "writer", "process", "op", "lag_ns")
    )


def _lag_ns(h: History) -> np.ndarray:
    lg = _lag_arrays(h)
    return lg["lag_ns"].to_numpy() if isinstance(lg, pl.DataFrame) else lg["lag_ns"]


def lag_quantiles_ms(h: History) -> dict | None:
    """{"n", "p50", "p90", "p99", "max"} in milliseconds, or None when nothing was read."""
    ns = _lag_ns(h)
    if not len(ns):
        return None
    s = pl.Series(ns).cast(pl.Float64) / 1e6
    return {
        "n": len(ns),
        "p50": float(s.quantile(0.5, "linear")),
        "p90": float(s.quantile(0.9, "linear")),
        "p99": float(s.quantile(0.99, "linear")),
        "max": float(s.max()),
    }


def realtime_lag_cases(h: History, bound_s: float | None = None) -> list[dict]:
    """realtime-lag: time from a write's commit to its first observation by each consumer
    (docs/anomalies.md, liveness). A liveness report: a case is a (write, consumer) pair whose lag
    exceeded ``bound_s`` seconds (``meta.liveness.realtime_lag_bound_s``); with no bound there are
    no cases, only the quantiles in ``stats.realtime_lag_ms``.

    Example: {"anomaly": "realtime-lag", "key", "value", "lag_ms", "writer": op ref,
    "reader": op ref, "explanation"}.
    """
    if bound_s is None:
        return []
    if not (_lag_ns(h) > int(bound_s * 1e9)).any():
        return []
    bad = lags(h).filter(pl.col("lag_ns") > int(bound_s * 1e9)).sort(
        ["lag_ns", "key", "value", "process"], descending=[True, False, False, False])
    out = []
    for row in bad.iter_rows(named=True):
        key = h.keys[row["key"]]
        ms = row["lag_ns"] / 1e6
        out.append({
            "anomaly": "realtime-lag",
            "key": key,
            "value": row["value"],
            "lag_ms": ms,
            "writer": h.op_ref(row["writer"]),
            "reader": h.op_ref(row["op"]),
            "explanation": (
                f"value {row['value']} of key {key} was first read by process {row['process']} "
                f"{ms:.1f} ms after op {h.ops['invoke_index'][row['writer']]} committed it "
                f"(bound {bound_s} s)"
            ),
        })
    return out
