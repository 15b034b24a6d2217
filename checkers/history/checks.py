"""Well-formedness of the paired history (docs/history.md) beyond what reading and pairing see:
micro-op keys that are not ``topic/partition`` and negative offsets. Each is a loader
problem, so a history with one is judged unknown, never valid or invalid on its artifacts."""

from __future__ import annotations

import re

import polars as pl

from .events import _Events
from .model import END, MAX_PROBLEMS

#: docs/history.md: a key is "topic/partition" (a topic has no "/"; a partition is a number)
KEY = re.compile(r"[^/]+/[0-9]+")


def check_keys(ev: _Events, keys: list[str]) -> None:
    """A problem for each key that is not ``topic/partition``."""
    bad = [k for k in keys if not KEY.fullmatch(k)]
    if bad:
        ev.problems.add_first(len(bad), (
            (END, 3, f"key {k[:80]!r} is not topic/partition (docs/history.md)")
            for k in bad[:MAX_PROBLEMS]))


def check_offsets(ev: _Events, ops: pl.DataFrame, mops: pl.DataFrame, keys: list[str]) -> None:
    """A problem for each op with a micro-op at a negative offset (offsets start at 0).
    ``ops`` still holds the private positions (``_cmp_pos``) of the pairing."""
    neg = mops.filter(pl.col("offset") < 0)
    if neg.is_empty():
        return
    per_op = neg.group_by("op", maintain_order=True).first()
    at = ops.select("op", "_cmp_pos", "invoke_index").join(per_op, on="op", how="inner")
    rows = at.select("_cmp_pos", "invoke_index", "key", "offset").head(MAX_PROBLEMS).iter_rows()
    ev.problems.add_first(per_op.height, (
        (END if cpos is None else int(cpos), 2,
         f"{'op' if cpos is None else ev.where(int(cpos)) + ': op'} {inv}: negative offset {off} "
         f"of key {keys[k][:80]!r}")
        for cpos, inv, k, off in rows))
