"""The report's history table: one row per event in index order (an op's invoke and its
completion from ``History.ops`` / ``mops``, nemesis events as they were), or an excerpt of a
long history (the first and last rows, the nemesis events, every event an example names)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import analysis as an
from . import examples as ex
from . import ops

if TYPE_CHECKING:
    import polars as pl

    from checkers.history import History

MAX_FULL_TABLE = 3000  # events; above this the table shows an excerpt
EDGE_ROWS = 500  # first and last events kept in an excerpt
MAX_CELL = 240  # characters of a value shown in a table cell


def history_table(h: "History", index: np.ndarray, op_of: np.ndarray, what: np.ndarray,
                   referenced: set[int]) -> dict[str, Any]:
    """The history as rows, one per event in index order (an op's invoke and completion from
    ``History.ops`` / ``mops``, nemesis events as they were); above MAX_FULL_TABLE events an
    excerpt: the first and last EDGE_ROWS, the first EDGE_ROWS nemesis events, and every
    event an example references with its partner."""
    n = len(index)
    if n <= MAX_FULL_TABLE:
        keep = list(range(n))
        excerpt = False
    else:
        wanted = set(range(EDGE_ROWS)) | set(range(n - EDGE_ROWS, n))
        pos_of = {int(i): p for p, i in enumerate(index) if int(i) in referenced}
        ref_ops = {int(op_of[p]) for p in pos_of.values() if what[p] != 2}
        wanted |= set(pos_of.values())
        wanted |= {int(p) for p in np.flatnonzero(np.isin(op_of, list(ref_ops)) & (what != 2))}
        wanted |= {int(p) for p in np.flatnonzero(what == 2)[:EDGE_ROWS]}
        keep = sorted(wanted)
        excerpt = True
    rows: list[dict[str, Any]] = []
    prev = -1
    opsd = h.ops
    page = ops.mops_of(h, (int(op_of[p]) for p in keep if what[p] != 2))
    empty = h.mops.clear()
    for pos in keep:
        if pos != prev + 1:
            rows.append({"gap": pos - prev - 1})
        prev = pos
        if what[pos] == 2:
            rows.append(_nemesis_row(h.nemesis[int(op_of[pos])], referenced))
        else:
            op = int(op_of[pos])
            rows.append(_op_row(h, opsd.row(op, named=True), op, bool(what[pos]), referenced,
                                page.get(op, empty)))
    if excerpt and prev != n - 1:
        rows.append({"gap": n - 1 - prev})
    shown = sum(1 for r in rows if "gap" not in r)
    return {"rows": rows, "excerpt": excerpt, "shown": shown, "total": n,
            "edge": EDGE_ROWS, "limit": MAX_FULL_TABLE}


def _cell(full: str) -> dict[str, str]:
    return {"value": full if len(full) <= MAX_CELL else full[: MAX_CELL - 1] + "…",
            "value_full": full[:5000] if len(full) > MAX_CELL else ""}


def _op_row(h: "History", r: dict, op: int, completion: bool, referenced: set[int],
            mops: "pl.DataFrame | None" = None) -> dict[str, Any]:
    idx = r["complete_index"] if completion else r["invoke_index"]
    t = r["complete_time"] if completion else r["invoke_time"]
    partner = r["invoke_index"] if completion else r["complete_index"]
    lat = (r["complete_time"] - r["invoke_time"]) if completion and isinstance(
        r["complete_time"], int) and isinstance(r["invoke_time"], int) else None  # a time may be unknown
    value = ops.op_value(h, op, completion, mops)
    meta = {k: r[k] for k in ("transactional_id", "group_id") if r.get(k)}
    if r.get("final"):
        meta["final"] = True
    return {
        "index": idx, "anchor": f"op-{idx}",
        "time": f"{t / 1e9:.3f}" if isinstance(t, (int, float)) else "",
        "process": r["process"], "type": str(r["type"]) if completion else "invoke", "f": str(r["f"]),
        **_cell(ops.compact(value) if value is not None else ""),
        "error": (r.get("error") or "") if completion else "",
        "meta": ex.compact(meta, 200) if meta else "",
        "partner": partner, "latency": an.fmt_duration(lat) if lat is not None else "",
        "pending": not completion and r["complete_index"] is None,
        "nemesis": False, "referenced": idx in referenced,
    }


def _nemesis_row(e: dict, referenced: set[int]) -> dict[str, Any]:
    idx = e.get("index")
    t = e.get("time")
    value = e.get("value")
    return {
        "index": idx, "anchor": f"op-{idx}",
        "time": f"{t / 1e9:.3f}" if isinstance(t, (int, float)) else "",
        "process": e.get("process", ""), "type": str(e.get("type", "")), "f": e.get("f", ""),
        **_cell(ex.compact(value) if value is not None else ""),
        "error": ex.compact(e["error"], 300) if e.get("error") else "",
        "meta": ex.compact(e["meta"], 200) if e.get("meta") else "",
        "partner": None, "latency": "", "pending": False, "nemesis": True,
        "referenced": isinstance(idx, int) and idx in referenced,
    }
