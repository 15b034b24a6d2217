"""torn-transaction: in the final reads a transaction's writes are partly visible."""

from __future__ import annotations

import polars as pl

from .history import History
from .log import describe_op, final_keys, reads, writes


def torn_transaction_cases(h: History) -> list[dict]:
    """torn-transaction: in the final complete reads, a transaction's writes are partly
    visible and partly not (ANOMALIES.md; atomicity of KIP-98 transactions).

    Judged on the op's sends to keys the final drain covered (``checkers.log.final_keys``);
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
    fin = reads(h).filter(pl.col("final")).select("key", "value").unique().with_columns(
        visible=pl.lit(True))
    w = (
        writes(h).filter((pl.col("f") == "txn") & pl.col("key").is_in(sorted(keys)))
        .join(fin, on=["key", "value"], how="left")
        .with_columns(pl.col("visible").fill_null(False))
    )
    torn = (
        w.group_by("op").agg(v=pl.col("visible").any(), a=pl.col("visible").all())
        .filter(pl.col("v") & ~pl.col("a")).sort("op")
    )
    if torn.is_empty():
        return []
    detail = w.join(torn.select("op"), on="op", how="semi").sort("op", "seq")
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
