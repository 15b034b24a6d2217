"""An exactly-once PyFlink DataStream job, written as a user writes one.

One file, PyFlink only: it knows nothing of the harness that tests it. It reads ``--input``
(comma-separated topics) with Flink's KafkaSource, ``isolation.level=read_committed``, passes
each record's value through a Python ``map`` (a copy: the output's value names its input) and
writes it to ``--output`` with Flink's KafkaSink, ``DeliveryGuarantee.EXACTLY_ONCE``: each
checkpoint's records go in one Kafka transaction per sink subtask, committed when the
checkpoint completes (two-phase commit), with transactional ids ``<prefix>-<subtask>-<n>``.

    python flink_job.py --bootstrap HOST:PORT --input in --output out --group g \
        --transactional-id-prefix g-0 --connector-jar flink-sql-connector-kafka.jar \
        --checkpoint-dir /state/checkpoints [--restore /state/checkpoints/<job>/chk-7] \
        [--client-properties FILE] [--checkpoint-interval-ms 1000] [--parallelism 2] \
        [--transaction-timeout-ms 60000] [--isolation-level read_committed] \
        [--delivery-guarantee exactly-once]

The job runs on a local mini-cluster inside this process (PyFlink starts a JVM as its child).
Checkpoints go to ``--checkpoint-dir`` and are retained when the job ends (externalized,
RETAIN_ON_CANCELLATION), so that a new process can resume from one with ``--restore``, as
``flink run -s`` does; choosing which one is the deployment's business (the harness's launcher,
``flink_app.py``, picks the newest completed one).

The settings that matter for exactly-once, and the flags that get them wrong on purpose (the
negative controls, docs/your-pipeline.md "Flink"):

* the source's ``isolation.level``: Flink's KafkaSource reads read_uncommitted unless told
  (``--isolation-level read_uncommitted``: records of aborted transactions reach the output);
* the sink's ``transaction.timeout.ms``: it must exceed the longest time between a checkpoint
  and the commit of its transaction, a restart included, or the broker aborts a transaction
  Flink has promised to commit (``--transaction-timeout-ms`` below an instance's downtime:
  loss). Flink's own default, 1 h, is above the brokers' default ``transaction.max.timeout.ms``
  (15 min), so the job sets one;
* the sink's delivery guarantee (``--delivery-guarantee at-least-once``: a restart writes the
  records since the last checkpoint again).
"""
import argparse
import sys

from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.base import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import (KafkaOffsetsInitializer, KafkaRecordSerializationSchema,
                                                 KafkaSink, KafkaSource)

GUARANTEES = {"exactly-once": DeliveryGuarantee.EXACTLY_ONCE, "at-least-once": DeliveryGuarantee.AT_LEAST_ONCE}


def read_properties(path):
    conf = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                conf[k.strip()] = v.strip()
    return conf


def copy(value):
    """The transformation: the record as it came (the harness matches output to input by value)."""
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap")
    ap.add_argument("--input", required=True, help="topics, comma-separated")
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--transactional-id-prefix", required=True)
    ap.add_argument("--connector-jar", required=True, help="flink-sql-connector-kafka's jar")
    ap.add_argument("--checkpoint-dir", required=True)
    ap.add_argument("--restore", help="a retained checkpoint (.../chk-N) to resume from")
    ap.add_argument("--client-properties")
    ap.add_argument("--checkpoint-interval-ms", type=int, default=1000)
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--transaction-timeout-ms", type=int, default=60000)
    ap.add_argument("--isolation-level", choices=["read_committed", "read_uncommitted"], default="read_committed")
    ap.add_argument("--delivery-guarantee", choices=sorted(GUARANTEES), default="exactly-once")
    a = ap.parse_args()

    common = read_properties(a.client_properties) if a.client_properties else {}
    bootstrap = a.bootstrap or common.pop("bootstrap.servers")
    common.pop("bootstrap.servers", None)

    conf = Configuration()
    conf.set_string("pipeline.jars", f"file://{a.connector_jar}")
    conf.set_string("execution.checkpointing.interval", f"{a.checkpoint_interval_ms} ms")
    conf.set_string("execution.checkpointing.mode", "EXACTLY_ONCE")
    conf.set_string("execution.checkpointing.dir", f"file://{a.checkpoint_dir}")
    conf.set_string("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
    conf.set_string("execution.checkpointing.num-retained", "3")
    if a.restore:
        conf.set_string("execution.state-recovery.path", f"file://{a.restore}")
    # Python functions run in this JVM through pemja, not in a separate worker process, on this
    # interpreter (the one PyFlink is installed in; "python" on PATH may lack it)
    conf.set_string("python.execution-mode", "thread")
    conf.set_string("python.executable", sys.executable)
    conf.set_string("python.client.executable", sys.executable)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(a.parallelism)

    source = (KafkaSource.builder()
              .set_bootstrap_servers(bootstrap)
              .set_topics(*a.input.split(","))
              .set_group_id(a.group)
              .set_starting_offsets(KafkaOffsetsInitializer.earliest())
              .set_value_only_deserializer(SimpleStringSchema())
              .set_property("isolation.level", a.isolation_level)
              .set_properties(common)
              .build())
    sink = (KafkaSink.builder()
            .set_bootstrap_servers(bootstrap)
            .set_record_serializer(KafkaRecordSerializationSchema.builder()
                                   .set_topic(a.output)
                                   .set_value_serialization_schema(SimpleStringSchema())
                                   .build())
            .set_delivery_guarantee(GUARANTEES[a.delivery_guarantee])
            .set_transactional_id_prefix(a.transactional_id_prefix)
            .set_property("transaction.timeout.ms", str(a.transaction_timeout_ms)))
    for k, v in common.items():  # the cluster's security settings, if any
        sink.set_property(k, v)

    (env.from_source(source, WatermarkStrategy.no_watermarks(), "input")
        .map(copy, output_type=Types.STRING()).name("copy")
        .sink_to(sink.build()).name("output"))
    env.execute(f"copy {a.input} -> {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
