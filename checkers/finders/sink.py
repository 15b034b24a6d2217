"""sink-duplicate / sink-loss: an exactly-once sink holds a committed record twice or not at all.

Run metadata (``meta["sink"]``)::

    {"records": [["in/0", 17], ["in/0", 18], ...],  # what the sink holds: source key, value
                                                    # (or {"in/0": [17, 18, ...]})
     "keys": ["in/0", ...],                        # optional: source keys judged
                                                    # (default: every partition of the
                                                    # topics in records)
     "end_offsets": {"in/0": 1234}}                # optional: judge only source offsets below
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from ..history import History
from ..history.log import log


def _records(sink: dict) -> list[tuple[str, int]]:
    recs = sink.get("records")
    if isinstance(recs, dict):
        return [(k, v) for k, vs in recs.items() for v in vs]
    return [(r[0], r[1]) for r in recs or [] if isinstance(r, (list, tuple)) and len(r) == 2]


def sink_cases(h: History, sink: dict | None = None) -> list[dict]:
    """sink-duplicate / sink-loss (docs/anomalies.md; Spark Structured Streaming with
    ``kafka.isolation.level=read_committed`` and a checkpoint; SPARK-25005):

    * sink-duplicate: the sink holds one committed source record more than once.
    * sink-loss: a committed source record (one in its key's committed log, ``checkers.history.log``,
      below ``end_offsets`` if given) is not in the sink, also the last records of a
      partition and a partition the sink holds nothing of: without ``keys``, every
      partition of a topic the sink holds records of is judged.

    The Kafka sink is documented at-least-once, so scenarios using it allow sink-duplicate.
    Without ``sink`` there are no cases. Example: {"anomaly", "key", "value", "offset",
    "count" (sink copies), "explanation"}.
    """
    if not sink:
        return []
    recs = _records(sink)
    counts = Counter(recs)
    keys = set(sink.get("keys") or ())
    if not keys:  # a partition the sink lost entirely must still be judged
        topics = {k.rsplit("/", 1)[0] for k, _ in recs}
        keys = {k for k in h.keys if k.rsplit("/", 1)[0] in topics}
    ends = sink.get("end_offsets") or {}
    kid = {k: i for i, k in enumerate(h.keys)}
    lg = log(h).filter(pl.col("key").is_in([kid[k] for k in keys if k in kid]))
    out = []
    offs = {(h.keys[k], v): o for k, v, o in lg.select("key", "value", "offset").iter_rows()}
    for (k, v), n in sorted(counts.items()):
        if n > 1:
            out.append({"anomaly": "sink-duplicate", "key": k, "value": v, "offset": offs.get((k, v)),
                        "count": n,
                        "explanation": f"the sink holds value {v} of source key {k} {n} times"})
    for (k, v), o in sorted(offs.items()):
        if k in ends and o >= ends[k]:
            continue
        if (k, v) not in counts:
            out.append({"anomaly": "sink-loss", "key": k, "value": v, "offset": o, "count": 0,
                        "explanation": f"committed value {v} at offset {o} of source key {k} "
                                       "is missing from the sink"})
    return out
