"""The report's view of a run's ops, built from the checkers' History (``checkers.history``),
the one reader of history.jsonl: the report never parses or pairs events itself.

``History.ops`` has one row per op (invoke and completion paired, an invoke never completed
reads as ``info``), ``History.mops`` one row per micro-op record, ``History.nemesis`` the raw
nemesis events, ``History.extras`` the values of ops other than send/poll/txn (their
``meta.worker`` names a process). Times are ns since the run's start.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import polars as pl

from checkers.history import History, load_history

from .analysis import OUTCOMES, OpColumns


def read(source: "History | str | Path | Iterable[dict]") -> tuple[History, list[str]]:
    """The History of ``source`` (a History, a history.jsonl path or event dicts) and warnings
    for the report: a missing file gives an empty history; what the loader could not read
    (a truncated last line, garbled lines) is said in one line each."""
    if isinstance(source, History):
        h = source
    elif isinstance(source, (str, Path)) and not Path(source).exists():
        return load_history([]), [f"{Path(source).name} is missing: the report shows no history."]
    else:
        h = load_history(source)
    warnings = []
    if h.truncated:
        warnings.append("The last line of history.jsonl is truncated or unreadable and was ignored: "
                        "the run probably died while writing it.")
    if h.garbled_lines:
        warnings.append(f"{h.garbled_lines} unreadable line(s) inside history.jsonl were ignored.")
    other = h.n_problems - bool(h.truncated) - h.garbled_lines
    if other > 0:
        first = "; ".join(h.problems[:3])
        warnings.append(f"The history loader reported {other:,} problem(s) with events it skipped: {first[:600]}")
    return h, warnings


def timed(h: History) -> tuple[History, list[str]]:
    """``h``, or when some op has no usable time (an event without an int time, a completion
    timed before its invoke: a history that is not well-formed) a copy for drawing only, each
    missing invoke time taken from the op before it and each missing completion time from
    its invoke, with a warning saying so. The verdict is the checkers' on ``h`` as it is."""
    o = h.ops
    bad = o.select(inv=pl.col("invoke_time").is_null().sum(),
                   cmp=(pl.col("complete_index").is_not_null() & pl.col("complete_time").is_null()).sum()).row(0)
    if not any(bad):
        return h, []
    inv = pl.col("invoke_time").forward_fill().backward_fill().fill_null(0)
    ops = o.with_columns(invoke_time=inv).with_columns(
        complete_time=pl.when(pl.col("complete_index").is_not_null() & pl.col("complete_time").is_null())
        .then(pl.col("invoke_time")).otherwise(pl.col("complete_time")))
    return dataclasses.replace(h, ops=ops, _cache={}, _locks={}), [
        f"{bad[0] + bad[1]:,} time(s) of the history's ops are missing or unusable: each is drawn at "
        "the time of the op before it (invokes) or of its invoke (completions)."]


def run_end(h: History) -> int:
    """The last time in the history (ns): of any op's invoke or completion, or nemesis event."""
    ends = [h.ops["invoke_time"].max(), h.ops["complete_time"].max(),
            *(e.get("time") for e in h.nemesis[-4:])]
    return int(max((t for t in ends if isinstance(t, (int, float))), default=0))


def op_columns(h: History) -> OpColumns:
    """The completed ops as numpy columns (analysis.OpColumns)."""
    # an op whose invoke or completion has no time (a history that is not well-formed) has no
    # place on the time axis
    done = h.ops.filter(pl.col("complete_index").is_not_null() & pl.col("complete_time").is_not_null()
                        & pl.col("invoke_time").is_not_null())
    fs = sorted(set(done["f"].cast(pl.Utf8).to_list()))
    code = {f: i for i, f in enumerate(fs)}
    f = np.array([code[x] for x in done["f"].cast(pl.Utf8).to_list()], dtype=np.int16)
    outcome = done["type"].cast(pl.Utf8).replace_strict({o: i for i, o in enumerate(OUTCOMES)},
                                                         return_dtype=pl.Int8).to_numpy()
    done_ns = done["complete_time"].to_numpy().astype(np.int64)
    lat = np.maximum(done_ns - done["invoke_time"].to_numpy().astype(np.int64), 0).astype(np.float64)
    return OpColumns(fs, f, outcome.astype(np.int8), done_ns, lat)


def op_counts(h: History) -> list[dict[str, Any]]:
    """Rows of op counts per f and outcome (an op never completed counts as info and as
    pending), plus a total row (f = "all")."""
    g = (h.ops.group_by(pl.col("f").cast(pl.Utf8))
         .agg(ok=(pl.col("type") == "ok").sum(), fail=(pl.col("type") == "fail").sum(),
              info=(pl.col("type") == "info").sum(), pending=pl.col("complete_index").is_null().sum())
         .sort("f"))
    rows = [{k: (int(v) if k != "f" else v) for k, v in r.items()} for r in g.iter_rows(named=True)]
    for r in rows:
        r["total"] = r["ok"] + r["fail"] + r["info"]
    total = {k: sum(r[k] for r in rows) for k in ("ok", "fail", "info", "pending", "total")}
    return [*rows, {"f": "all", **total}]


def process_labels(h: History) -> dict[int, str]:
    """process -> ``meta.worker`` of any of its ops that kept its meta (assign, init, ...)."""
    out: dict[int, str] = {}
    if not h.extras:
        return out
    procs = h.ops["process"]
    for op, x in h.extras.items():
        m = x.get("meta") if isinstance(x, dict) else None
        if isinstance(m, dict) and m.get("worker"):
            out.setdefault(int(procs[int(op)]), str(m["worker"]))
    return out


# -- the history table ---------------------------------------------------------------------


def event_order(h: History) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every event of the history in index order: (index, op or -1 for a nemesis event,
    what: 0 invoke, 1 completion, 2 nemesis; for a nemesis event ``op`` is its position in
    ``History.nemesis``)."""
    inv = h.ops["invoke_index"].to_numpy().astype(np.int64)
    ci = h.ops["complete_index"]
    has = ci.is_not_null().to_numpy()
    comp = ci.fill_null(-1).to_numpy().astype(np.int64)[has]
    ops = np.arange(h.ops.height, dtype=np.int64)
    nem = np.array([e.get("index", -1) if isinstance(e.get("index"), int) else -1 for e in h.nemesis],
                   dtype=np.int64)
    index = np.concatenate([inv, comp, nem])
    op = np.concatenate([ops, ops[has], np.arange(len(h.nemesis), dtype=np.int64)])
    what = np.concatenate([np.zeros(len(inv), np.int8), np.ones(len(comp), np.int8),
                           np.full(len(nem), 2, np.int8)])
    order = np.argsort(index, kind="stable")
    return index[order], op[order], what[order]


def mops_of(h: History, op_ids: Iterable[int]) -> dict[int, pl.DataFrame]:
    """op -> its rows of ``History.mops`` (in seq order), for the ops of ``op_ids``: one pass
    over the frame for a whole table page instead of one per op."""
    ids = sorted(set(int(o) for o in op_ids))
    if not ids:
        return {}
    sub = h.mops.filter(pl.col("op").is_in(ids)).sort("op", "seq")
    return {int(k[0]): v for k, v in sub.partition_by("op", as_dict=True, maintain_order=True).items()}


def op_value(h: History, op: int, completion: bool, rows: pl.DataFrame | None = None) -> Any:
    """An op's invoke or completion value as the history holds it, rebuilt from its micro-ops
    (sends as ``["send", key, value]``, with ``[offset, value]`` in a completion when the
    offset is known; a poll's records grouped per key) or taken from ``History.extras``.
    ``rows``: the op's micro-op rows when the caller has them (``mops_of``)."""
    if op in h.extras:
        x = h.extras[op]
        return x.get("completion_value" if completion else "value")
    if rows is None:
        rows = h.mops.filter(pl.col("op") == op).sort("seq")
    value: list = []
    polls: dict[str, list] = {}
    for r in rows.iter_rows(named=True):
        key = h.keys[r["key"]]
        if r["kind"] == "send":
            if polls:
                value.append(["poll", polls])
                polls = {}
            v = [r["offset"], r["value"]] if completion and r["offset"] is not None else r["value"]
            value.append(["send", key, v])
        elif completion:
            polls.setdefault(key, []).append([r["offset"], r["value"]])
        elif not value or value[-1] != ["poll"]:
            value.append(["poll"])
    if polls:
        value.append(["poll", polls])
    if not completion and not value and str(h.ops["f"][op]) in ("poll", "txn"):
        value = [["poll"]]
    return value


def compact(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), default=str)
