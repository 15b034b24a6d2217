"""duplicate: one value appears at more than one offset of a key (Jepsen ``kafka.clj``)."""

from __future__ import annotations

import polars as pl

from ..history import History
from ..history.log import describe_op, distinct_obs, index, reads, writes


def observations(h: History) -> pl.DataFrame:
    """Every (key, offset, value) seen: sends that learned their offset (whatever the op's
    outcome: aborted records still occupy offsets) and poll records. Columns: key, offset,
    value, op, source ("send" | "poll"). One row per micro-op row: built only to explain
    cases (``distinct_observations`` finds them)."""
    def build(h: History):
        w = writes(h).filter(pl.col("offset").is_not_null()).select(
            "key", "offset", "value", "op", source=pl.lit("send"))
        r = reads(h).select("key", "offset", "value", "op", source=pl.lit("poll"))
        return pl.concat([w, r])
    return h.cached("observations", build)


def distinct_observations(h: History) -> pl.DataFrame:
    """Distinct (key, offset, value) observations (sends with a known offset, poll records),
    with ``slot`` (index(h)) and ``consistent`` (the only value observed at its offset)."""
    return h.cached("distinct_observations", lambda h: distinct_obs(index(h)))


def duplicated_values(h: History) -> pl.DataFrame:
    """(key, value) pairs observed at more than one offset."""
    return index(h).dup_kv


def duplicate_cases(h: History) -> list[dict]:
    """duplicate: one value appears at more than one offset of a key.

    Values are unique per key (docs/history.md), so a second offset holding the same value is a
    second copy of one write: an idempotent-producer retry that was not deduplicated, or an
    application-level resend (Kafka's exactly-once design, KIP-98/KIP-447). Sources: sends with a known offset and polls.

    Example: {"anomaly": "duplicate", "key", "value", "offsets": [...], "writer": op ref|None,
    "observed_by": {offset: [op invoke indices]}, "explanation"}.
    """
    many = duplicated_values(h)
    if many.is_empty():
        return []
    obs = observations(h)
    dup = (
        distinct_observations(h).join(many, on=["key", "value"], how="semi")
        .group_by("key", "value").agg(pl.col("offset").sort().alias("offsets"))
        .sort("key", "value")
    )
    writer = writes(h).group_by("key", "value").agg(pl.col("op").first().alias("writer"))
    dup = dup.join(writer, on=["key", "value"], how="left")
    seen = (
        obs.join(dup.select("key", "value"), on=["key", "value"], how="semi")
        .join(h.ops.select("op", "invoke_index"), on="op")
        .group_by("key", "value", "offset").agg(pl.col("invoke_index").unique().sort().head(5))
    )
    by = {}
    for k, v, o, idxs in seen.iter_rows():
        by.setdefault((k, v), {})[o] = idxs
    out = []
    for k, v, offsets, wop in dup.iter_rows():
        key = h.keys[k]
        wdesc = describe_op(h, wop) if wop is not None else "no recorded send"
        out.append({
            "anomaly": "duplicate",
            "key": key,
            "value": v,
            "offsets": offsets,
            "writer": h.op_ref(wop) if wop is not None else None,
            "observed_by": {str(o): i for o, i in sorted(by.get((k, v), {}).items())},
            "explanation": f"value {v} of key {key}, written by {wdesc}, appears at "
                           f"{len(offsets)} offsets {offsets}",
        })
    return out
