"""What a Structured Streaming query committed, batch by batch, read from its files.

Sources (Spark's on-disk formats, each a text file named by the batch id, first line ``v1``):

* ``<checkpoint>/offsets/<N>`` - the offset log (write-ahead: written when batch N is planned):
  line 2 the batch metadata, line 3 the Kafka source's end offsets
  ``{topic: {partition: next offset}}``. Its mtime is when batch N was planned.
* ``<checkpoint>/commits/<N>`` - the commit log: batch N completed (sink written). Its mtime
  is when the query committed batch N.
* ``<sink>/_spark_metadata/<N>`` (file sink) - the sink's own log: one JSON line per file batch
  N added (``{"path": "file:///...", "action": "add", ...}``). Only files listed here belong to
  the sink: files of a batch that never committed (a killed driver) are ignored, as Spark's
  own readers ignore them. Its mtime is when the sink committed batch N, the exactly-once
  commit point. ``N.compact`` files (every ``compactInterval`` batches) repeat all earlier
  entries; a batch's own files are then the entries not listed by earlier batches. Read by
  harness.workers.file_sink (shared with the app workload's readers of a parquet sink).
* ``events.jsonl`` - the Spark worker's event lines (harness.workers.spark_driver).
* ``output.jsonl`` - the Kafka sink's output topic as read by the Spark drain
  (harness.workers.spark_drain): ``[out_key, out_offset, record_key, value]``, record_key
  ``<topic>/<partition>@<offset>`` of the source record.

Times: file mtimes are wall-clock nanoseconds; ``Clock`` maps them onto the history's clock
(nanoseconds since the run started) with the offset the worker's own event lines show.
Everything here raises nothing on missing files (an empty result); malformed lines are
skipped and counted in ``SinkBatches.problems``.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from harness.workers.file_sink import committed_batches, json_lines, numbered

#: a micro-batch's records: key "topic/partition" -> [(offset, value string or None), ...]
Records = dict[str, list[tuple[int, str | None]]]


@dataclass
class Batch:
    """One committed micro-batch. ``records`` are sorted by offset per key; ``copies`` counts
    how often each (key, offset) is in the sink (more than 1 only for an at-least-once sink)."""

    batch_id: int
    commit_wall_ns: int
    plan_wall_ns: int | None
    instance: int | None
    records: Records = field(default_factory=dict)

    @property
    def n_records(self) -> int:
        return sum(len(v) for v in self.records.values())


@dataclass
class SinkBatches:
    """Committed batches in batch-id order, the sink's raw content, and what could not be read.

    ``sink_records``: every record the sink holds, duplicates included, as
    ``(source key, source offset, value string or None)``."""

    batches: list[Batch]
    sink_records: list[tuple[str, int, str | None]]
    problems: list[str] = field(default_factory=list)


def offset_log(checkpoint: Path, problems: list[str] | None = None) -> dict[int, tuple[int, dict[str, int]]]:
    """Batch id -> (mtime ns, end offsets {key: next offset}) from ``checkpoint/offsets``."""
    problems = [] if problems is None else problems
    out = {}
    for n, p in sorted(numbered(checkpoint / "offsets").items()):
        entries = json_lines(p, problems)
        ends: dict[str, int] = {}
        for src in entries[1:]:  # entries[0] is the batch metadata
            if isinstance(src, dict):
                for topic, parts in src.items():
                    if isinstance(parts, dict):
                        ends.update({f"{topic}/{part}": int(off) for part, off in parts.items()})
        out[n] = (p.stat().st_mtime_ns, ends)
    return out


def commit_log(checkpoint: Path) -> dict[int, int]:
    """Batch id -> mtime ns of ``checkpoint/commits/<N>``."""
    return {n: p.stat().st_mtime_ns for n, p in numbered(checkpoint / "commits").items()}


def read_events(work: Path) -> list[dict]:
    """The Spark worker's event lines (a torn last line of a killed driver is skipped)."""
    out = []
    try:
        text = (work / "events.jsonl").read_text()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


class Clock:
    """Wall-clock ns -> the history's ns since the run started: ``run_ns = wall_ns - offset``,
    ``offset`` the median of ``wall_ns - time`` over the worker's event lines (``fallback``
    when there are none)."""

    def __init__(self, events: list[dict], fallback: int):
        pairs = [e["wall_ns"] - e["time"] for e in events if "wall_ns" in e and "time" in e]
        self.offset = int(statistics.median(pairs)) if pairs else fallback

    def run_ns(self, wall_ns: int) -> int:
        return int(wall_ns - self.offset)


def instance_starts(events: list[dict]) -> list[tuple[int, int]]:
    """(time ns on the history's clock, instance) of every driver start, in time order."""
    return sorted((e["time"], e["instance"]) for e in events if e.get("event") == "start")


def instance_at(starts: list[tuple[int, int]], run_ns: int) -> int | None:
    """The driver instance running at ``run_ns``: the last one started before it. Driver
    instances never overlap (the next starts after the previous was killed or stopped)."""
    found = None
    for t, inst in starts:
        if t <= run_ns:
            found = inst
    return found


def parquet_batches(work: Path) -> SinkBatches:
    """Committed batches of the parquet file sink at ``work/sink`` (rows topic, partition,
    offset, value, instance), with plan times from ``work/checkpoint/offsets``."""
    import pyarrow.parquet as pq

    problems: list[str] = []
    sink = work / "sink"
    plans = offset_log(work / "checkpoint", problems)
    batches, raw = [], []
    for committed in committed_batches(sink, problems):
        n = committed.batch_id
        batch = Batch(n, committed.commit_wall_ns, plans.get(n, (None, {}))[0], None)
        instances = set()
        for path in committed.files:
            try:
                t = pq.read_table(path, columns=["topic", "partition", "offset", "value", "instance"]).to_pydict()
            except Exception as exc:  # a committed file that cannot be read is a finding
                problems.append(f"batch {n}: committed file {path} unreadable: {type(exc).__name__}: {exc}")
                continue
            for topic, part, off, val, inst in zip(t["topic"], t["partition"], t["offset"], t["value"], t["instance"]):
                key = f"{topic}/{part}"
                batch.records.setdefault(key, []).append((int(off), val))
                raw.append((key, int(off), val))
                instances.add(inst)
        for recs in batch.records.values():
            recs.sort(key=lambda r: r[0])
        if len(instances) > 1:
            problems.append(f"batch {n}: rows written by several driver instances {sorted(instances)}")
        batch.instance = min(instances) if instances else None
        batches.append(batch)
    return SinkBatches(batches, raw, problems)


def kafka_batches(work: Path) -> SinkBatches:
    """Committed batches of the Kafka sink: the output records (``work/output.jsonl``) placed
    in the batch whose offset range ``[end of batch N-1, end of batch N)`` (offset log) holds
    their source offset; commit times from the commit log. A batch's records are the distinct
    source records; ``sink_records`` keeps every copy in the output topic."""
    problems: list[str] = []
    plans = offset_log(work / "checkpoint", problems)
    commits = commit_log(work / "checkpoint")
    raw: list[tuple[str, int, str | None]] = []
    try:
        lines = (work / "output.jsonl").read_text().splitlines()
    except FileNotFoundError:
        lines = []
        problems.append("no output.jsonl: the Kafka sink's output topic was not read")
    for line in lines:
        try:
            _out_key, _out_off, rkey, val = json.loads(line)
            src, off = rkey.rsplit("@", 1)
            raw.append((src, int(off), val))
        except (ValueError, TypeError, AttributeError):
            problems.append(f"output record not from the query: {line[:80]!r}")
    # batch ranges per key, from consecutive offset-log entries
    bounds: dict[str, list[tuple[int, int]]] = {}  # key -> [(end offset, batch id)] ascending
    for n in sorted(plans):
        for key, end in plans[n][1].items():
            bounds.setdefault(key, []).append((end, n))
    batches = {n: Batch(n, commits[n], plans.get(n, (None, {}))[0], None) for n in sorted(commits)}
    distinct: dict[tuple[str, int], str | None] = {}
    for key, off, val in raw:
        distinct.setdefault((key, off), val)
    for (key, off), val in sorted(distinct.items()):
        n = next((b for end, b in bounds.get(key, []) if off < end), None)
        if n is None or n not in batches:
            problems.append(f"output record of {key}@{off} is in no committed batch")
            continue
        batches[n].records.setdefault(key, []).append((off, val))
    return SinkBatches(list(batches.values()), raw, problems)


def int_value(v: str | None) -> int | None:
    """The workload's record values are decimal ints; anything else is foreign (None)."""
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def poll_events(sb: SinkBatches, clock: Clock, starts: list[tuple[int, int]], process_base: int,
                meta: dict | None = None) -> list[dict]:
    """History events for the committed batches: for each batch with records, in commit order,
    an ``invoke`` (at the batch's planning, not before its driver instance started) and an
    ``ok`` poll (at its commit), process ``process_base + instance``, value
    ``[["poll", {key: [[offset, value], ...]}]]``, ``meta`` plus ``batch_id``, ``spark: true``,
    ``instance``. Records whose value is not an int are left out."""
    out = []
    for b in sorted(sb.batches, key=lambda b: (b.commit_wall_ns, b.batch_id)):
        polled = {k: [[o, iv] for o, v in recs if (iv := int_value(v)) is not None]
                  for k, recs in sorted(b.records.items())}
        polled = {k: v for k, v in polled.items() if v}
        if not polled:
            continue
        t_ok = clock.run_ns(b.commit_wall_ns)
        inst = b.instance if b.instance is not None else instance_at(starts, t_ok)
        inst_start = max((t for t, i in starts if i == inst and t <= t_ok), default=None)
        t_inv = clock.run_ns(b.plan_wall_ns) if b.plan_wall_ns is not None else t_ok
        if inst_start is not None:
            t_inv = max(t_inv, inst_start)
        t_inv = min(t_inv, t_ok)
        m = dict(meta or {}, batch_id=b.batch_id, spark=True, instance=inst)
        proc = process_base + (inst or 0)
        out.append({"process": proc, "type": "invoke", "f": "poll", "value": [["poll"]], "time": t_inv, "meta": m})
        out.append({"process": proc, "type": "ok", "f": "poll", "value": [["poll", polled]], "time": t_ok, "meta": m})
    return out


def progress_mismatches(sb: SinkBatches, events: list[dict]) -> list[str]:
    """Batches whose sink rows differ in number from the ``numInputRows`` of a progress report
    for that batch by the instance that committed it (Spark counts the records its Kafka
    source returned: with read_committed, aborted records are not among them)."""
    reported: dict[tuple[int, int], int] = {}
    for e in events:
        if e.get("event") == "progress":
            p = e.get("progress") or {}
            if "batchId" in p and "numInputRows" in p:
                reported[(e.get("instance"), p["batchId"])] = p["numInputRows"]
    out = []
    for b in sb.batches:
        n = reported.get((b.instance, b.batch_id))
        if n is not None and n != b.n_records:
            out.append(f"batch {b.batch_id}: {b.n_records} rows in the sink, but Spark's progress report "
                       f"of instance {b.instance} says it read {n}")
    return out


def crash_events(events: list[dict], kill_times: dict[int, int], process_base: int,
                 meta: dict | None = None) -> list[dict]:
    """A ``crash`` op (invoke + info, docs/history.md) for every driver instance that died: killed
    (its pid in ``kill_times``: pid -> ns on the history's clock, from the nemesis's
    kill-client results), or followed by a later instance without having stopped gracefully
    (no ``stopped`` event). At the kill time, else at the instance's last event line. The
    instance still running when this is called (finish runs before the readers stop) did not
    crash. Without these ops a killed instance's last batch would look like the consumer
    stalling until the end of the history."""
    out = []
    stopped = {e["instance"] for e in events if e.get("event") == "stopped"}
    starts = [e for e in events if e.get("event") == "start"]
    last = max((e["instance"] for e in starts), default=None)
    for start in starts:
        inst = start["instance"]
        killed = start.get("pid") in kill_times
        if inst in stopped or (inst == last and not killed):
            continue
        t = kill_times.get(start.get("pid"))
        if t is None:
            t = max(e["time"] for e in events if e.get("instance") == inst)
        m = dict(meta or {}, spark=True, instance=inst, pid=start.get("pid"))
        proc = process_base + inst
        out.append({"process": proc, "type": "invoke", "f": "crash", "value": None, "time": t, "meta": m})
        out.append({"process": proc, "type": "info", "f": "crash", "value": None, "time": t, "meta": m})
    return out


def in_time_order(events: list[dict]) -> list[dict]:
    """Invoke/completion pairs (consecutive, as the functions above make them) ordered by their
    completion time, each pair kept together."""
    pairs = [events[i:i + 2] for i in range(0, len(events), 2)]
    return [e for pair in sorted(pairs, key=lambda p: (p[-1]["time"], p[0]["process"])) for e in pair]


def sink_meta(sb: SinkBatches, keys: list[str]) -> dict:
    """``meta["sink"]`` for checkers.finders.sink (docs/checkers.md): every sink record as
    ``[source key, value]`` (duplicates kept, foreign values left out) and the judged keys."""
    recs = [[k, iv] for k, _o, v in sb.sink_records if (iv := int_value(v)) is not None]
    return {"records": recs, "keys": list(keys)}


