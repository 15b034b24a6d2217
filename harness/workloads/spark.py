"""``spark``: transactional producers -> Kafka -> a Spark Structured Streaming query -> a sink.

Writers are the txn-queue workload's transactional producers (composed: ``TxnQueue`` makes
them, its topics ``t0..``, keys and respawn). The reader is one Spark driver
(harness.workers.spark_driver, worker ``spark-consumer``) subscribed to every topic with
``kafka.isolation.level`` = ``isolation_level``, ``startingOffsets=earliest``,
``failOnDataLoss=true``, writing every record either to Spark's exactly-once parquet file
sink (``sink: parquet``) or to Spark's Kafka sink (``sink: kafka``; topic ``<topic>-out``),
which Spark documents as at-least-once ("Structured Streaming + Kafka Integration Guide",
writing data to Kafka: a record may be written more than once when a batch is re-run).

The final drain (harness.workers.spark_drain) reads the input to its end as the ordinary
drain does (read_committed: it is the reference, Spark is under test), then waits for Spark
to commit a batch reaching that end, then (Kafka sink) reads the output topics.

``finish`` turns the committed micro-batches into history ops (harness.workloads.spark_batches): one
``poll`` invoke/ok pair per committed batch with records, on process
``process_base + instance``, where ``process_base`` is the largest process number in the
history at finish plus 1000 and ``instance`` counts driver starts (1, 2, ... after each
kill-client restart): a restarted driver is a new process. The invoke is at the batch's
planning (its offset-log entry, not before its driver started), the ok at its commit (the
file sink's ``_spark_metadata/<N>``, or the checkpoint's ``commits/<N>`` for the Kafka
sink), ``meta``: ``batch_id``, ``spark: true``, ``instance``, ``worker``. It fills
``meta["sink"]`` for the sink-duplicate / sink-loss checker (``{"records": [[source key,
value], ...], "keys": [input keys]}``, docs/checkers.md) and ``meta["spark"]`` with a
summary, and copies the query's files into ``<run_dir>/spark/`` (see docs/spark.md).

The driver needs the connector jars (``eos-chaos setup --spark``); the workload fetches them
(``harness.cluster.artifacts.spark_connector_jars``) when it is built, from the controller, which
can reach Maven Central.
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Literal

from pydantic import Field

from checkers.run import DEFAULT_ISOLATION_LEVEL, IsolationLevel

from harness.workloads.base import MAX_INT64, MAX_TIME_S, Setting, Strict, TopicSpec, WorkerSpec
from harness.workloads.txn_queue import TxnQueue, TxnQueueSpec

SPARK_WORKER = "spark-consumer"
#: gap between the other workers' process numbers and the Spark driver instances'
PROCESS_GAP = 1000


class SparkSpec(Strict):
    name: Literal["spark"] = "spark"
    # writers (txn-queue's transactional producers)
    producers: int = Field(3, ge=1, le=64)
    topics: int = Field(2, ge=1, le=32)
    partitions: int = Field(3, ge=1, le=64)
    max_sends_per_txn: int = Field(4, ge=1, le=10_000)
    abort_probability: float = Field(0.1, ge=0.0, le=1.0)
    producer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka producer settings")
    #: librdkafka read_committed consumers beside Spark (txn-queue's), 0 for Spark alone
    consumers: int = Field(0, ge=0, le=16)
    # the Spark query
    #: the Kafka source's kafka.isolation.level; read_uncommitted is the negative control
    isolation_level: IsolationLevel = DEFAULT_ISOLATION_LEVEL
    sink: Literal["parquet", "kafka"] = "parquet"
    #: Spark master URL: local[N] here; spark://host:7077, yarn, k8s://... for a real cluster
    #: (its executors must reach the brokers, and work_dir must be on storage they share)
    master: str = "local[2]"
    driver_memory: str = "1g"
    #: Spark version whose Kafka connector jars are fetched (pyspark's own version is pinned
    #: in pyproject.toml)
    spark_version: str = "4.3.0"
    max_offsets_per_trigger: int | None = Field(None, ge=1, le=MAX_INT64)
    #: processing-time trigger interval in seconds; 0: the next batch starts when one ends
    trigger_s: float = Field(0.0, ge=0, le=MAX_TIME_S)
    conf: dict[str, str] = Field(default_factory=dict, description="extra Spark settings")
    kafka: dict[str, str] = Field(default_factory=dict,
                                  description="extra Kafka source options; kafka.* ones go to the Kafka sink too")
    #: seconds the final drain waits for Spark to commit up to the end of the input
    catchup_s: float = Field(90.0, gt=0, le=MAX_TIME_S)
    #: where the query's sink and checkpoint live while it runs (default: a fresh temporary
    #: folder, copied into <run_dir>/spark/ by finish)
    work_dir: str | None = None


class Spark:
    def __init__(self, spec: SparkSpec, bootstrap: str, seed: int, run_dir: Path | None = None):
        from harness.cluster.artifacts import spark_connector_jars

        self.spec, self.bootstrap, self.seed = spec, bootstrap, seed
        self.queue = TxnQueue(TxnQueueSpec(
            producers=spec.producers, consumers=spec.consumers, topics=spec.topics,
            partitions=spec.partitions, max_sends_per_txn=spec.max_sends_per_txn,
            abort_probability=spec.abort_probability, isolation_level="read_committed",
            producer=spec.producer), bootstrap, seed)
        self.jars = [str(p) for p in spark_connector_jars(spec.spark_version)]
        if spec.work_dir:
            self.work = Path(spec.work_dir)
            self._temporary = False
        elif run_dir is not None:
            self.work = Path(run_dir) / "spark" / "work"
            self._temporary = False
        else:
            self.work = Path(tempfile.mkdtemp(prefix="eosc-spark-"))
            self._temporary = True
        self.work.mkdir(parents=True, exist_ok=True)
        self._instances = 0
        self._spark_meta: dict = {"sink": spec.sink, "master": spec.master, "isolation_level": spec.isolation_level,
                                  "work_dir": str(self.work)}

    # -- topics and keys -----------------------------------------------------------------------
    def input_topics(self) -> list[str]:
        return [t.name for t in self.queue.topics()]

    def output_keys(self) -> list[str]:
        return [f"{k.rsplit('/', 1)[0]}-out/{k.rsplit('/', 1)[1]}" for k in self.keys()] if self.spec.sink == "kafka" else []

    def topics(self) -> list[TopicSpec]:
        out = self.queue.topics()
        if self.spec.sink == "kafka":
            out += [TopicSpec(f"{t.name}-out", t.partitions) for t in self.queue.topics()]
        return out

    def keys(self) -> list[str]:
        return self.queue.keys()

    # -- workers -------------------------------------------------------------------------------
    def _spark_cfg(self, instance: int) -> dict:
        s = self.spec
        return {"bootstrap": self.bootstrap, "topics": self.input_topics(), "isolation_level": s.isolation_level,
                "sink": s.sink, "master": s.master, "driver_memory": s.driver_memory, "jars": self.jars,
                "work_dir": str(self.work), "instance": instance, "conf": s.conf, "kafka": s.kafka,
                "max_offsets_per_trigger": s.max_offsets_per_trigger, "trigger_s": s.trigger_s}

    def readers(self) -> list[WorkerSpec]:
        self._instances = 1
        return [WorkerSpec(SPARK_WORKER, "spark-consumer", self._spark_cfg(1))] + self.queue.readers()

    def writers(self) -> list[WorkerSpec]:
        return self.queue.writers()

    def drain(self) -> WorkerSpec:
        base = self.queue.drain()
        return WorkerSpec(base.name, "spark-drain", dict(
            base.cfg, work_dir=str(self.work), catchup_s=self.spec.catchup_s,
            output_keys=self.output_keys(), drain_timeout_s=60))

    def respawn(self, spec: WorkerSpec) -> WorkerSpec:
        """A restarted Spark driver is the next instance on the same checkpoint and sink;
        other workers restart as txn-queue's do (same transactional.id, fresh values)."""
        if spec.role == "spark-consumer":
            self._instances += 1
            return WorkerSpec(spec.name, spec.role, dict(spec.cfg, instance=self._instances))
        return self.queue.respawn(spec)

    def meta(self) -> dict:
        return {"transactional": True, "isolation_level": self.spec.isolation_level,
                "spark": dict(self._spark_meta)}

    # -- after the drain -----------------------------------------------------------------------
    def finish(self, run_dir: Path, history) -> dict:
        """Append the committed batches as poll ops to ``history``, copy the query's files to
        ``run_dir/spark``; returns meta["sink"] and meta["spark"]. See the module docstring."""
        from harness.workloads import spark_batches as sb
        out = Path(run_dir) / "spark"
        out.mkdir(parents=True, exist_ok=True)
        events = sb.read_events(self.work)
        clock = sb.Clock(events, fallback=time.time_ns() - history.now())
        read = sb.parquet_batches(self.work) if self.spec.sink == "parquet" else sb.kafka_batches(self.work)
        writes, base, kills = _history_facts(Path(history.path))
        base += PROCESS_GAP
        starts = sb.instance_starts(events)
        meta = {"worker": SPARK_WORKER, "isolation_level": self.spec.isolation_level}
        ops = sb.poll_events(read, clock, starts, base, meta=meta)
        crashes = sb.crash_events(events, kills, base, meta=meta)
        for ev in sb.in_time_order(ops + crashes):
            history.append(ev)
        sink = sb.sink_meta(read, self.keys())
        catchup = _json_or_none(self.work / "catchup.json")
        summary = _summary(read, ops, crashes, events, writes, catchup)
        if self.spec.sink == "parquet":
            read.problems += sb.progress_mismatches(read, events)
        summary["problems"] = read.problems[:50]
        spark = dict(self._spark_meta, **summary, process_base=base)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        if self._temporary:
            _copy_tree(self.work, out / "work")
            _remove_when_stopped(self.work, events)
        spark["files"] = str(out)
        return {"sink": sink, "spark": spark}


def _history_facts(path: Path) -> tuple[dict[tuple[str, int], int], int, dict[int, int]]:
    """From the history file as written so far: the commit time of every value an ok txn/send
    wrote, by (key, value); the largest integer process number; the time of every kill-client
    of the Spark worker, by the pid its result names ("killed pid 1234")."""
    writes: dict[tuple[str, int], int] = {}
    kills: dict[int, int] = {}
    top = -1
    with open(path) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            p = ev.get("process")
            if isinstance(p, int):
                top = max(top, p)
            elif p == "nemesis" and ev.get("f") == "kill-client":
                v = ev.get("value") or {}
                res = str(v.get("result", ""))
                m = re.match(r"killed pid (\d+)", res)
                if v.get("client") == SPARK_WORKER and m:
                    kills[int(m.group(1))] = ev["time"]
            if ev.get("type") == "ok" and ev.get("f") in ("txn", "send"):
                for mop in ev.get("value") or []:
                    if mop and mop[0] == "send" and isinstance(mop[2], list):
                        writes.setdefault((mop[1], mop[2][1]), ev["time"])
    return writes, max(top, 0), kills


def _quantiles_ms(xs: list[int]) -> dict:
    if not xs:
        return {}
    xs = sorted(xs)
    pick = lambda q: round(xs[min(len(xs) - 1, int(q * len(xs)))] / 1e6, 1)  # noqa: E731
    return {"p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99), "max": round(xs[-1] / 1e6, 1), "n": len(xs)}


def _summary(read, ops: list[dict], crashes: list[dict], events: list[dict], writes: dict,
             catchup: dict | None) -> dict:
    """Figures of the Spark side of a run (docs/spark.md "Summary")."""
    oks = [e for e in ops if e["type"] == "ok"]
    lags = []
    for e in oks:
        for key, recs in e["value"][0][1].items():
            for _off, val in recs:
                t = writes.get((key, val))
                if t is not None:
                    lags.append(e["time"] - t)
    started = [e for e in events if e.get("event") == "spark-started"]
    copies: dict[tuple[str, int], int] = {}
    for key, off, _v in read.sink_records:
        copies[(key, off)] = copies.get((key, off), 0) + 1
    return {
        "batches_committed": len(read.batches),
        "batches_with_records": len(oks),
        "sink_records": len(read.sink_records),
        "sink_distinct_records": len(copies),
        "sink_records_more_than_once": sum(1 for n in copies.values() if n > 1),
        "driver_instances": sorted({e["instance"] for e in events if e.get("event") == "start"}),
        "startup_s": [e.get("startup_s") for e in started],
        "driver_crashes": len({e["meta"]["instance"] for e in crashes}),
        "query_failures": sum(1 for e in events if e.get("event") == "query-terminated" and e.get("exception")),
        "processes": sorted({e["process"] for e in oks}),
        "caught_up": (catchup or {}).get("caught_up"),
        "catchup_wait_s": (catchup or {}).get("waited_s"),
        "end_to_end_lag_ms": _quantiles_ms(lags),
    }


def _json_or_none(p: Path):
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _copy_tree(src: Path, dst: Path) -> None:
    """Copy the query's files (not the java wrapper or Spark's scratch space); files that vanish
    while copying are skipped."""
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("java", "tmp", "*.crc"),
                    ignore_dangling_symlinks=True, copy_function=_copy_if_there)


def _copy_if_there(s, d):
    try:
        return shutil.copy2(s, d)
    except FileNotFoundError:
        return d


def _remove_when_stopped(work: Path, events: list[dict], timeout: float = 300.0) -> None:
    """Delete the temporary work folder once every driver instance has exited (the runner stops
    the readers right after finish)."""
    import os

    pids = [e["pid"] for e in events if e.get("event") == "start" and "pid" in e]

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def wait_and_remove():
        deadline = time.monotonic() + timeout
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(1)
        shutil.rmtree(work, ignore_errors=True)

    threading.Thread(target=wait_and_remove, name="spark-work-cleanup", daemon=True).start()
