"""int-poll-skip / poll-skip: a consumer skipped committed positions of a key's log."""

from __future__ import annotations

import polars as pl

from ..history import History
from ..history.log import describe_op, log_slice
from ..history.polls import read_steps, step_example


def poll_skip_cases(h: History) -> list[dict]:
    """int-poll-skip / poll-skip: within one poll (int-), or between a consumer's
    consecutive polls of a key with no seek or reassignment between, the consumer skipped
    committed positions of the log (Jepsen ``kafka.clj``).

    Positions are those of the committed log (``checkers.history.log``): a jump over offsets that
    hold control records or aborted data is not a skip; a jump over a value that must have
    committed (or that another consumer read) is.

    Example: {"anomaly": "int-poll-skip" | "poll-skip", "key", "process", "op", "prev_op"
    (op refs), "from": {"offset", "pos", "value"}, "to": {...}, "skipped": [{"offset",
    "pos", "value"}, ...] (first 10), "skipped_count", "explanation"}.
    """
    bad = read_steps(h).filter(pl.col("pos") > pl.col("prev_pos") + 1).sort("process", "op", maintain_order=True)
    out = []
    for row in bad.iter_rows(named=True):
        key = h.keys[row["key"]]
        name = "int-poll-skip" if row["internal"] else "poll-skip"
        skipped = log_slice(h, row["key"], row["prev_pos"] + 1, row["pos"])
        n = row["pos"] - row["prev_pos"] - 1
        where = ("in the same poll" if row["internal"]
                 else f"in its previous read, {describe_op(h, row['prev_op'])}")
        out.append({
            **step_example(h, row, name),
            "skipped": skipped,
            "skipped_count": n,
            "explanation": (
                f"{describe_op(h, row['op'])} read key {key} at offset {row['offset']} "
                f"(position {row['pos']}, value {row['value']}) right after offset "
                f"{row['prev_offset']} (position {row['prev_pos']}) {where}, skipping {n} "
                f"committed value(s): " + ", ".join(
                    f"{s['value']}@{s['offset']}" for s in skipped)
            ),
        })
    return out
