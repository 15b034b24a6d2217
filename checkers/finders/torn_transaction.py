"""torn-transaction: in the final reads a transaction's writes are partly visible."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..history import History
from ..history.log import describe_op, final_keys, index, writes


def torn_transaction_cases(h: History) -> list[dict]:
    """torn-transaction: in the final complete reads, a transaction's writes are partly
    visible and partly not (docs/anomalies.md; atomicity of KIP-98 transactions).

    Judged on the op's sends to keys the final drain covered (``checkers.history.log.final_keys``);
    *visible* means returned by a final-drain poll (``meta.final``). Any outcome counts: an
    ok txn with a write missing, an info txn half applied, and an aborted txn half visible
    (which is also G1a) are all torn. Non-transactional ``send`` ops are not atomic and are
    left out.

    Example: {"anomaly": "torn-transaction", "op": op ref, "visible": [{"key", "value"}],
    "missing": [{"key", "value", "offset"}], "explanation"}.
    """
    keys = final_keys(h)
    if not keys:
        return []
    ix = index(h)
    fr = np.flatnonzero(h.ops["final"].to_numpy()[ix.r_op])  # final-drain read rows
    S = ix.n_slots
    f_slot, f_val = ix.r_slot[fr], ix.r_val[fr]
    f_cnt = np.bincount(f_slot, minlength=S) if S else np.zeros(0, np.int64)
    f_first = np.zeros(S, np.int64)
    f_first[f_slot[::-1]] = f_val[::-1]
    f_cons = np.ones(S, bool)
    f_cons[f_slot[f_val != f_first[f_slot]]] = False
    wall = writes(h)
    rows = np.flatnonzero(((wall["f"] == "txn") & wall["key"].is_in(sorted(keys))).to_numpy())
    if not len(rows):
        return []
    # visible: returned by a final poll; settled per offset where the final reads agree,
    # by value for the rest (values read at another offset, unknown offsets)
    sl, wv = ix.w_slot[rows], ix.w_val[rows]
    vis = np.zeros(len(rows), bool)
    ok = sl >= 0
    s_ok = sl[ok]
    vis[ok] = (f_cnt[s_ok] > 0) & f_cons[s_ok] & (f_first[s_ok] == wv[ok])
    rest = np.flatnonzero(~vis)
    if len(rest):
        rk = pl.DataFrame({"key": ix.w_key[rows][rest], "value": wv[rest]})
        hit = pl.DataFrame({"key": ix.r_key[fr], "value": f_val}).join(
            rk.unique(), on=["key", "value"], how="semi").unique()
        if hit.height:
            vis[rest] = rk.join(hit.with_columns(_v=pl.lit(True)), on=["key", "value"], how="left",
                                maintain_order="left")["_v"].fill_null(False).to_numpy()
    wop = ix.w_op[rows]
    n = np.bincount(wop, minlength=h.ops.height)
    nv = np.bincount(wop, weights=vis, minlength=h.ops.height)
    torn_ops = (nv > 0) & (nv < n)
    if not torn_ops.any():
        return []
    keep = torn_ops[wop]
    detail = wall[rows[keep]].with_columns(visible=pl.Series(vis[keep])).sort(
        "op", "seq", maintain_order=True)
    by: dict[int, dict] = {}
    for op, k, v, o, vis in detail.select("op", "key", "value", "offset", "visible").iter_rows():
        d = by.setdefault(op, {"visible": [], "missing": []})
        if vis:
            d["visible"].append({"key": h.keys[k], "value": v})
        else:
            d["missing"].append({"key": h.keys[k], "value": v, "offset": o})
    out = []
    for op, d in by.items():
        vis = ", ".join(f"{x['value']}@{x['key']}" for x in d["visible"][:10])
        mis = ", ".join(f"{x['value']}@{x['key']}" for x in d["missing"][:10])
        out.append({
            "anomaly": "torn-transaction",
            "op": h.op_ref(op),
            "visible": d["visible"],
            "missing": d["missing"],
            "explanation": (
                f"the final drain saw {len(d['visible'])} write(s) of {describe_op(h, op)} "
                f"({vis}) but not {len(d['missing'])} other(s) ({mis})"
            ),
        })
    return out
