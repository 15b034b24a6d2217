"""The Spark driver of a user's PySpark job (``workload.app.pyspark``; harness.workloads.app).

``python -m harness.workers.app_pyspark --job mod:fn ...`` is the application's command: the
harness supplies the Kafka source (Spark's spark-sql-kafka-0-10, read_committed unless told,
``startingOffsets=earliest``, ``failOnDataLoss=true``; the same options and Spark settings as
the spark workload's driver, harness.workers.spark_driver) and the sink, with a checkpoint
under the instance's work dir; the transformation is the user's: ``fn(df) -> df`` gets the
source's DataFrame (key, value (binary), topic, partition, offset, timestamp, ...) and returns
one with ``key`` and ``value`` (string or binary), cast to strings and written to the sink:

* ``--sink kafka --output TOPIC``: Spark's Kafka sink, which Spark documents as at-least-once
  (declare ``output.semantics: at-least-once``);
* ``--sink parquet --path DIR``: Spark's file sink (harness.workers.spark_driver.file_sink),
  parquet files with columns ``key`` and ``value`` (strings) in ``DIR``, exactly-once through
  ``DIR/_spark_metadata``; the harness reads the committed files only
  (harness.workers.app_files). ``DIR`` is kept across restarts, as the checkpoint is.

SIGTERM stops the query and the session and exits 0; SIGKILL (the nemesis) kills the driver
JVM with this process (the java wrapper's PR_SET_PDEATHSIG); a restart resumes from the
checkpoint. Exit codes: 0 stopped, 2 bad arguments or job, 1 the query failed.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from pathlib import Path

from checkers.run import DEFAULT_ISOLATION_LEVEL
from harness.workers.configs import SparkConsumerConfig
from harness.workers.spark_driver import file_sink, java_wrapper, kafka_sink, source_options, spark_conf


def load_job(ref: str, base_dir: str | None):
    """The user's function ``module:function``, importable from ``base_dir``."""
    mod, _, name = ref.partition(":")
    if base_dir and base_dir not in sys.path:
        sys.path.insert(0, base_dir)
    return getattr(importlib.import_module(mod), name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="app_pyspark")
    ap.add_argument("--job", required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--input", required=True, help="comma-separated topics")
    ap.add_argument("--sink", choices=["kafka", "parquet"], default="kafka")
    ap.add_argument("--output", default=None, help="the output topic (--sink kafka)")
    ap.add_argument("--path", default=None, help="the sink folder (--sink parquet)")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--isolation-level", default=DEFAULT_ISOLATION_LEVEL)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--base-dir", default=None)
    ap.add_argument("--jars", default="", help="comma-separated local jar paths (Spark's Kafka connector)")
    a = ap.parse_args(argv)
    if (a.sink == "kafka" and not a.output) or (a.sink == "parquet" and not a.path):
        print(f"app_pyspark: --sink {a.sink} needs {'--output TOPIC' if a.sink == 'kafka' else '--path DIR'}",
              file=sys.stderr)
        return 2
    try:
        job = load_job(a.job, a.base_dir)
    except (ImportError, AttributeError, ValueError) as exc:
        print(f"app_pyspark: cannot load job {a.job}: {exc}", file=sys.stderr)
        return 2
    work = Path(a.checkpoint).parent
    work.mkdir(parents=True, exist_ok=True)
    wrapper = java_wrapper(work)
    if wrapper is not None:
        os.environ["JAVA_HOME"] = str(wrapper)
    from pyspark.sql import SparkSession

    cfg = SparkConsumerConfig(bootstrap=a.bootstrap, topics=a.input.split(","), isolation_level=a.isolation_level,
                              master=a.master, jars=[j for j in a.jars.split(",") if j], work_dir=str(work))
    builder = SparkSession.builder.master(a.master).appName("eosc-app-pyspark")
    for k, v in spark_conf(cfg, work).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    reader = spark.readStream.format("kafka")
    for k, v in source_options(cfg).items():
        reader = reader.option(k, v)
    out = job(reader.load()).selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
    if a.sink == "parquet":
        writer = file_sink(out, Path(a.path))
    else:
        writer = kafka_sink(out, a.bootstrap).option("topic", a.output)
    query = writer.option("checkpointLocation", a.checkpoint).queryName("eosc-app").start()
    stopped = threading.Event()

    def on_term(*_):
        stopped.set()

    signal.signal(signal.SIGTERM, on_term)
    while not stopped.is_set():
        if not query.isActive:
            print(f"app_pyspark: the query stopped: {query.exception()}", file=sys.stderr)
            return 1
        stopped.wait(0.5)
    query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
