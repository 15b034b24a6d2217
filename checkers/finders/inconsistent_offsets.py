"""inconsistent-offsets: one offset of a key holds different values in different observations."""

from __future__ import annotations

import polars as pl

from .duplicate import distinct_observations, observations
from ..history.log import index
from ..history import History


def inconsistent_offsets_cases(h: History) -> list[dict]:
    """inconsistent-offsets: one offset of a key holds different values in different
    observations (Jepsen ``kafka.clj``).

    Observations are sends with a known offset (any outcome) and poll records. Two values at
    one offset mean replicas diverged (e.g. a truncated leader whose log was rewritten) or a
    client misreported an offset.

    Example: {"anomaly": "inconsistent-offsets", "key", "offset", "values": [...],
    "observed_by": {value: [{"op": invoke index, "source": "send"|"poll"}]}, "explanation"}.
    """
    if index(h).o_cons.all():
        return []
    d = distinct_observations(h)
    many = d.filter(~pl.col("consistent")).group_by("key", "offset").len().filter(pl.col("len") > 1)
    if many.is_empty():
        return []
    obs = observations(h)
    bad = (
        distinct_observations(h).join(many.select("key", "offset"), on=["key", "offset"], how="semi")
        .group_by("key", "offset").agg(pl.col("value").sort().alias("values"))
        .sort("key", "offset")
    )
    detail = (
        obs.join(bad.select("key", "offset"), on=["key", "offset"], how="semi")
        .join(h.ops.select("op", "invoke_index", "process"), on="op")
        .sort("invoke_index")
    )
    by: dict = {}
    for k, o, v, src, idx, proc in detail.select(
            "key", "offset", "value", "source", "invoke_index", "process").iter_rows():
        lst = by.setdefault((k, o), {}).setdefault(str(v), [])
        if len(lst) < 5:
            lst.append({"op": idx, "process": proc, "source": src})
    out = []
    for k, o, values in bad.iter_rows():
        key = h.keys[k]
        ob = by.get((k, o), {})
        parts = "; ".join(
            f"value {v} by " + ", ".join(f"{x['source']} op {x['op']} of process {x['process']}" for x in xs)
            for v, xs in ob.items())
        out.append({
            "anomaly": "inconsistent-offsets",
            "key": key,
            "offset": o,
            "values": values,
            "observed_by": ob,
            "explanation": f"offset {o} of key {key} holds {len(values)} different values: {parts}",
        })
    return out
