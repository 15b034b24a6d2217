"""int-nonmonotonic-send / nonmonotonic-send: a process's later send landed earlier."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..history import History
from ..history import stable_order
from ..history.log import describe_op, index, writes
from ..history.polls import process_rank


def nonmonotonic_send_cases(h: History) -> list[dict]:
    """int-nonmonotonic-send / nonmonotonic-send: a process's later send to a key landed
    at an earlier position than its earlier send, within one op (int-) or across the
    process's ops (Jepsen ``kafka.clj``).

    Offsets learned by sends are compared (any outcome: aborted batches still take offsets
    in send order); offset order is log order, so no position mapping is needed. A send
    whose offset the client did not learn (``null``: an ``info`` op, a lost delivery report)
    is placed at the offset where polls returned its value, as Jepsen does; one never read
    cannot be placed. An
    idempotent producer (KIP-98, max.in.flight <= 5) must never reorder one partition's
    records; a non-idempotent one with retries may, so such scenarios allow this.

    Example: {"anomaly": "int-nonmonotonic-send" | "nonmonotonic-send", "key", "process",
    "op", "prev_op" (op refs), "from": {"offset", "value"}, "to": {"offset", "value"},
    "explanation"}.
    """
    ix = index(h)
    rows = np.flatnonzero(ix.w_place >= 0)  # sends placed in the log, in (op, seq) order
    if len(rows) < 2:
        return []
    pr, _ = process_rank(h)
    o = rows[stable_order(pr[ix.w_op[rows]] * max(len(h.keys), 1) + ix.w_key[rows])]
    same = (pr[ix.w_op[o[1:]]] == pr[ix.w_op[o[:-1]]]) & (ix.w_key[o[1:]] == ix.w_key[o[:-1]])
    off = np.where(ix.w_place >= 0, ix.slot_off[np.maximum(ix.w_place, 0)], -1) \
        if ix.n_slots else np.full(len(ix.w_place), -1)
    bad_at = np.flatnonzero(same & (off[o[1:]] <= off[o[:-1]]))
    if not len(bad_at):
        return []
    cur, prev = o[1:][bad_at], o[:-1][bad_at]
    w = writes(h).with_columns(placed=pl.Series(off), learned=pl.col("offset").is_not_null())
    bad = w[cur].select("key", "process", "op", "value", "learned", offset="placed").with_columns(
        prev_op=w["op"].gather(prev), prev_offset=w["placed"].gather(prev),
        prev_value=w["value"].gather(prev), prev_learned=w["learned"].gather(prev))
    out = []
    for row in bad.iter_rows(named=True):
        key = h.keys[row["key"]]
        internal = row["op"] == row["prev_op"]
        where = "earlier in the same op" if internal else f"in {describe_op(h, row['prev_op'])}"
        out.append({
            "anomaly": "int-nonmonotonic-send" if internal else "nonmonotonic-send",
            "key": key,
            "process": row["process"],
            "op": h.op_ref(row["op"]),
            "prev_op": h.op_ref(row["prev_op"]),
            "from": {"offset": row["prev_offset"], "value": row["prev_value"]},
            "to": {"offset": row["offset"], "value": row["value"]},
            "explanation": (
                f"{describe_op(h, row['op'])} sent value {row['value']} of key {key}, which "
                f"landed at offset {row['offset']}{_how(row['learned'])}, not after offset "
                f"{row['prev_offset']}{_how(row['prev_learned'])} where value {row['prev_value']}, "
                f"sent {where}, landed"
            ),
        })
    return out


def _how(learned: bool) -> str:
    return "" if learned else " (where polls returned it; the send did not learn its offset)"
