"""The Spark consumer: this worker process is the Spark driver of one Structured Streaming query.

The query reads the workload's topics with Spark's real Kafka source (spark-sql-kafka-0-10,
jars from ``harness.cluster.artifacts.spark_connector_jars``, passed as local paths in ``spark.jars``
because the client namespace has no route to any registry) and writes every record to one
sink, with a checkpoint under ``work_dir``:

* ``sink: parquet`` - Spark's file sink, exactly-once through its ``_spark_metadata`` log:
  rows ``topic`` (str), ``partition`` (int), ``offset`` (long), ``value`` (str, the record's
  value bytes as UTF-8: a decimal int for the workload's records), ``instance`` (int: the
  driver instance that wrote the row, from the config).
* ``sink: kafka`` - Spark's Kafka sink, which Spark documents as at-least-once: each record
  goes to topic ``<topic>-out``, the same partition, key ``<topic>/<partition>@<offset>``
  (the source record), value unchanged.

Kafka source options (Spark's "Structured Streaming + Kafka Integration Guide"):
``kafka.bootstrap.servers``, ``subscribe`` (comma-separated topics), ``startingOffsets=earliest``
(only used when the checkpoint is new: a restarted driver resumes from its checkpoint),
``failOnDataLoss=true`` (fail the query, rather than warn, when offsets are gone or out of
range), ``kafka.isolation.level`` (``read_committed``, or ``read_uncommitted`` as a negative
control; passed through to the Kafka consumer and the admin client that finds the latest
offsets), optional ``maxOffsetsPerTrigger``, and the extras of ``kafka`` (source options;
``kafka.``-prefixed ones are Kafka client settings and go to the Kafka sink too).

Config: ``harness.workers.configs.SparkConsumerConfig`` (its fields, defaults and units).

Layout of ``work_dir`` (shared with the workload's ``finish`` and the Spark drain)::

    sink/                  the parquet sink, with sink/_spark_metadata/<batch id>
    checkpoint/            offsets/<batch id>, commits/<batch id>, sources/, metadata
    events.jsonl           one JSON object a line, appended by every driver instance:
                           {"instance", "event": "start" | "spark-started" | "query-started" |
                            "progress" | "query-terminated" | "stopped", "time": ns since the
                            run started (the history's clock), "wall_ns", ...}; a "progress"
                           line holds Spark's StreamingQueryProgress JSON under "progress"

The worker writes nothing to the history itself: the workload turns the committed sink into
poll ops after the run (harness.workloads.spark). It tells the harness of each committed batch
with records at once, with a control message ``{"op_ok": {"f": "poll", "batch_id": N}}``
(harness.run.pool: a worker's first ok op). A failed query is logged, recorded as a
``query-terminated`` event with its exception, and started again from the checkpoint after
``restart_backoff_s``, as a supervisor would restart a production job.

The driver JVM is started through a ``java`` wrapper that sets ``PR_SET_PDEATHSIG=SIGKILL``
(util-linux ``setpriv``), so that SIGKILL of this process kills the JVM driver at once as
well (PySpark's gateway would otherwise notice EOF on its stdin and exit gracefully).
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

from harness.workers.base import Worker
from harness.workers.configs import SparkConsumerConfig

#: Spark settings every driver gets (the config's ``conf`` overrides them):
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    # keep every batch's offsets/commits entry and every sink metadata file, uncompacted, so
    # that the run can be analysed batch by batch afterwards (defaults: 100 batches, compaction
    # every 10 batches, deletion of compacted files)
    "spark.sql.streaming.minBatchesToRetain": "1000000",
    "spark.sql.streaming.fileSink.log.compactInterval": "1000000",
    "spark.sql.streaming.fileSink.log.deletion": "false",
    "spark.sql.session.timeZone": "UTC",
}
#: added for local masters: inside the client namespace the host name may not resolve; the
#: driver JVM (which runs the tasks too) compiles with C1 only and collects with the serial
#: GC: on 2 busy cores that halves the driver's start (16 -> 8 s) and its first job (8 -> 4 s)
LOCAL_CONF = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
              "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}


def source_options(cfg: SparkConsumerConfig) -> dict[str, str]:
    """The Kafka source's options for ``cfg`` (see the module docstring)."""
    opts = {
        "kafka.bootstrap.servers": cfg.bootstrap,
        "subscribe": ",".join(cfg.topics),
        "startingOffsets": "earliest",
        "failOnDataLoss": "true",
        "kafka.isolation.level": cfg.isolation_level,
    }
    if cfg.max_offsets_per_trigger:
        opts["maxOffsetsPerTrigger"] = str(int(cfg.max_offsets_per_trigger))
    opts.update({k: str(v) for k, v in (cfg.kafka or {}).items()})
    return opts


def spark_conf(cfg: SparkConsumerConfig, work: Path) -> dict[str, str]:
    """Spark settings of the driver: BASE_CONF, LOCAL_CONF for ``local`` masters, the jars,
    driver memory and local dir, then the config's ``conf``."""
    conf = dict(BASE_CONF)
    if cfg.master.startswith("local"):
        conf.update(LOCAL_CONF)
    conf.update({
        "spark.jars": ",".join(cfg.jars or []),
        "spark.driver.memory": cfg.driver_memory,
        "spark.local.dir": str(work / "tmp"),
    })
    conf.update({k: str(v) for k, v in (cfg.conf or {}).items()})
    return conf


def file_sink(df, path: Path):
    """``df``'s DataStreamWriter to Spark's file sink, parquet files in folder ``path``:
    exactly-once through ``path/_spark_metadata`` (a batch's files count once its log lists
    them; harness.workers.file_sink reads that log). The caller adds the checkpoint and starts
    the query; the same checkpoint and ``path`` after a restart resume it."""
    return df.writeStream.format("parquet").option("path", str(path))


def kafka_sink(df, bootstrap: str, options: dict[str, Any] | None = None):
    """``df``'s DataStreamWriter to Spark's Kafka sink (at-least-once, Spark's documentation)
    at ``bootstrap``, with the ``kafka.``-prefixed entries of ``options`` (Kafka producer
    settings). ``df`` names the topic in a ``topic`` column, or the caller adds the
    ``topic`` option."""
    writer = df.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in (options or {}).items():
        if k.startswith("kafka."):
            writer = writer.option(k, str(v))
    return writer


def java_wrapper(work: Path) -> Path | None:
    """Write ``work/java/bin/java``, which execs the real java with PR_SET_PDEATHSIG=SIGKILL;
    return the directory to use as JAVA_HOME, or None when setpriv or java is missing."""
    setpriv = shutil.which("setpriv")
    home = os.environ.get("JAVA_HOME")
    real = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not setpriv or not real or not os.path.exists(real):
        return None
    real = os.path.realpath(real)
    root = work / "java"
    (root / "bin").mkdir(parents=True, exist_ok=True)
    wrapper = root / "bin" / "java"
    tmp = wrapper.with_suffix(".tmp")
    tmp.write_text(f'#!/bin/sh\nexec {setpriv} --pdeathsig KILL -- {real} "$@"\n')
    tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    tmp.replace(wrapper)
    return root


class SparkConsumerWorker(Worker):
    """See the module docstring."""
    Config = SparkConsumerConfig


    def __init__(self, cfg: dict[str, Any]):
        super().__init__(cfg)
        self.work = Path(self.cfg.work_dir)
        self.instance = int(self.cfg.instance)
        self.events_path = self.work / "events.jsonl"

    def event(self, event: str, **fields: Any) -> None:
        """Append one line to events.jsonl (one write on an O_APPEND descriptor)."""
        line = json.dumps({"instance": self.instance, "event": event, "time": self.now(),
                           "wall_ns": time.time_ns(), **fields}, default=str) + "\n"
        fd = os.open(self.events_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    # -- Spark ---------------------------------------------------------------------------------
    def session(self):
        from pyspark.sql import SparkSession

        wrapper = java_wrapper(self.work)
        if wrapper is not None:
            os.environ["JAVA_HOME"] = str(wrapper)
        else:
            self.log("setpriv or java not found: a SIGKILL of this worker leaves the JVM to exit on its own")
        builder = SparkSession.builder.master(self.cfg.master).appName(
            f"eosc-spark-consumer-{self.instance}")
        for k, v in spark_conf(self.cfg, self.work).items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        return spark

    def query(self, spark):
        from pyspark.sql import functions as F

        reader = spark.readStream.format("kafka")
        for k, v in source_options(self.cfg).items():
            reader = reader.option(k, v)
        df = reader.load()
        sink = self.cfg.sink
        if sink == "parquet":
            out = df.select(
                F.col("topic"), F.col("partition"), F.col("offset"),
                F.col("value").cast("string").alias("value"),
                F.lit(self.instance).cast("int").alias("instance"),
            )
            writer = file_sink(out, self.work / "sink")
        elif sink == "kafka":
            out = df.select(
                F.concat(F.col("topic"), F.lit("-out")).alias("topic"),
                F.col("partition"),
                F.concat(F.col("topic"), F.lit("/"), F.col("partition").cast("string"), F.lit("@"),
                         F.col("offset").cast("string")).alias("key"),
                F.col("value"),
            )
            writer = kafka_sink(out, self.cfg.bootstrap, self.cfg.kafka)
        else:
            raise ValueError(f"unknown sink {sink!r}")
        writer = writer.option("checkpointLocation", str(self.work / "checkpoint")).queryName("eosc")
        trigger_s = float(self.cfg.trigger_s or 0)
        if trigger_s > 0:
            writer = writer.trigger(processingTime=f"{int(trigger_s * 1000)} milliseconds")
        return writer.start()

    def listener(self):
        from pyspark.sql.streaming import StreamingQueryListener

        worker = self

        class Progress(StreamingQueryListener):
            def onQueryStarted(self, event):
                worker.event("query-started", id=str(event.id), run_id=str(event.runId))

            def onQueryProgress(self, event):
                progress = json.loads(event.progress.json)
                worker.event("progress", progress=progress)
                if progress.get("numInputRows"):
                    # a committed batch with records: the poll op the workload writes to the
                    # history after the run; the harness needs it now (nemesis.start_after_ok)
                    worker.control(op_ok={"f": "poll", "batch_id": progress.get("batchId")})

            def onQueryIdle(self, event):
                pass

            def onQueryTerminated(self, event):
                worker.event("query-terminated", id=str(event.id), run_id=str(event.runId),
                             exception=event.exception)

        return Progress()

    def run(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self.event("start", pid=os.getpid())
        t0 = time.monotonic()
        spark = self.session()
        startup = round(time.monotonic() - t0, 2)
        self.event("spark-started", startup_s=startup, version=spark.version)
        self.control(spark_started=True, instance=self.instance, startup_s=startup)
        self.log(f"Spark {spark.version} driver started in {startup} s (master {self.cfg.master})")
        spark.streams.addListener(self.listener())
        backoff = float(self.cfg.restart_backoff_s)
        failures = 0
        try:
            while not self.stopping.is_set():
                try:
                    q = self.query(spark)
                except Exception as exc:  # e.g. an unreadable checkpoint: retried like a failed query
                    failures += 1
                    self.event("query-terminated", exception=f"query did not start: {exc}")
                    self.log(f"query did not start (retry {failures} in {backoff} s): {exc}")
                    if self.stopping.wait(backoff):
                        break
                    continue
                while not self.stopping.is_set() and q.isActive:
                    try:
                        q.awaitTermination(0.5)
                    except Exception:  # StreamingQueryException: the query failed; see below
                        break
                if self.stopping.is_set():
                    q.stop()
                    break
                exc = q.exception()
                failures += 1
                self.log(f"query failed (restart {failures} from the checkpoint in {backoff} s): {exc}")
                if self.stopping.wait(backoff):
                    break
        finally:
            self.event("stopped", query_failures=failures)
            try:
                spark.stop()
            except Exception as exc:  # the JVM may already be gone; the run goes on
                self.log(f"spark.stop() failed: {exc}")
        self.control(done=True, query_failures=failures)


def _main() -> None:  # pragma: no cover - for running one driver by hand
    SparkConsumerWorker(dict(json.loads(sys.argv[1]), start_ns=time.monotonic_ns())).run()


if __name__ == "__main__":  # pragma: no cover
    _main()
