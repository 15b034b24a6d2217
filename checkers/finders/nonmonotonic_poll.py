"""int-nonmonotonic-poll / nonmonotonic-poll: a consumer's positions went backwards or repeated."""

from __future__ import annotations

import polars as pl

from ..history import History
from ..history.log import describe_op
from ..history.polls import read_steps, step_example


def nonmonotonic_poll_cases(h: History) -> list[dict]:
    """int-nonmonotonic-poll / nonmonotonic-poll: within one poll (int-), or between a
    consumer's consecutive polls of a key with no seek or reassignment between, the
    positions of the key's committed log went backwards or repeated (Jepsen ``kafka.clj``).

    An ``assign``/``subscribe``/``seek`` op, or any op of the process that did not complete
    ``ok``, starts a fresh comparison (``checkers.history.polls``). With ``subscribe`` a group
    rebalance the history does not record can also rewind a consumer: scenarios that
    subscribe should record the rebalance as an op or allow this anomaly.

    Example: {"anomaly": "int-nonmonotonic-poll" | "nonmonotonic-poll", "key", "process",
    "op", "prev_op" (op refs), "from": {"offset", "pos", "value"}, "to": {...},
    "explanation"}.
    """
    bad = read_steps(h).filter(pl.col("pos") <= pl.col("prev_pos")).sort("process", "op", maintain_order=True)
    out = []
    for row in bad.iter_rows(named=True):
        key = h.keys[row["key"]]
        name = "int-nonmonotonic-poll" if row["internal"] else "nonmonotonic-poll"
        how = "repeated" if row["pos"] == row["prev_pos"] else "went back to"
        where = ("earlier in the same poll" if row["internal"]
                 else f"in its previous read, {describe_op(h, row['prev_op'])}")
        out.append({
            **step_example(h, row, name),
            "explanation": (
                f"{describe_op(h, row['op'])} {how} position {row['pos']} of key {key} "
                f"(offset {row['offset']}, value {row['value']}) after reading position "
                f"{row['prev_pos']} (offset {row['prev_offset']}, value {row['prev_value']}) "
                f"{where}"
            ),
        })
    return out
