"""The workload's ``compression`` field (harness.workloads.base.ClientSpec): one codec name that
reaches every producer of both clients as ``compression.type`` (librdkafka and kafka-clients use
the same key and values), checked when the scenario loads."""
import pytest
from confluent_kafka import Producer
from pydantic import ValidationError

from harness.workers.txn_producer import TxnProducerWorker
from harness.workloads import WORKLOADS, EosPipelineSpec, IdempotentSpec
from harness.workloads.txn_queue import TxnQueueSpec

BOOT = "198.18.0.11:9092"


def writers(spec, name="txn-queue"):
    return WORKLOADS[name](spec, BOOT, 7).writers()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_reaches_the_librdkafka_txn_producers_and_librdkafka_takes_it(codec):
    ws = writers(TxnQueueSpec(compression=codec, producer={"linger.ms": 20}))
    assert [w.cfg["producer"] for w in ws] == [{"linger.ms": 20, "compression.type": codec}] * 4
    w = object.__new__(TxnProducerWorker)  # no process (no stdin watcher): only conf()
    w.cfg = TxnProducerWorker.Config.model_validate(ws[0].cfg)
    w.tid = w.cfg.transactional_id
    conf = w.conf()
    assert conf["compression.type"] == codec and conf["linger.ms"] == 20
    Producer({"bootstrap.servers": BOOT, "compression.type": codec})  # built with this codec


def test_compression_reaches_the_busy_variant_and_the_java_workers():
    busy = writers(TxnQueueSpec(compression="lz4", producers=8, producers_per_worker=4))
    assert [w.role for w in busy] == ["txn-producers"] * 2
    assert all(w.cfg["producer"] == {"compression.type": "lz4"} for w in busy)
    # the Java TxnProducer puts cfg["producer"] into its Properties (extra(p, "producer"))
    java = writers(TxnQueueSpec(compression="zstd", client="java"))
    assert all(w.cfg["client"] == "java" and w.cfg["producer"]["compression.type"] == "zstd" for w in java)


def test_compression_in_the_other_workloads_with_producers():
    assert all(w.cfg["producer"]["compression.type"] == "gzip"
               for w in writers(IdempotentSpec(compression="gzip"), "idempotent"))
    ws = writers(EosPipelineSpec(compression="snappy"), "eos-pipeline")
    assert ws and all(w.cfg["producer"]["compression.type"] == "snappy" for w in ws)


def test_no_compression_leaves_the_settings_alone_and_a_disagreement_is_an_error():
    assert TxnQueueSpec(producer={"compression.type": "zstd"}).producer == {"compression.type": "zstd"}
    assert TxnQueueSpec().producer == {}
    assert TxnQueueSpec(compression="zstd", producer={"compression.type": "zstd"}).producer == {
        "compression.type": "zstd"}
    with pytest.raises(ValidationError, match="disagree"):
        TxnQueueSpec(compression="zstd", producer={"compression.codec": "lz4"})
    with pytest.raises(ValidationError):
        TxnQueueSpec(compression="brotli")


def test_a_scenario_as_run_loads_again_with_the_same_settings():
    s = TxnQueueSpec(compression="gzip")
    again = TxnQueueSpec(**s.model_dump(mode="json", exclude_defaults=True))
    assert again.compression == "gzip" and again.producer == {"compression.type": "gzip"}
