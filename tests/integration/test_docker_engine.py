"""The docker primitives end to end on the real engine: dockerd (started when none runs), the
locally built Kafka image, one combined KRaft broker in a container reached from the host by
confluent-kafka, kill + start on the same data volume, pause + resume, label cleanup."""
from __future__ import annotations

import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
from harness.cluster.kafka import random_cluster_id
from harness.cluster.docker import (DATA_DIR, BrokerContainer, build_kafka_image, cleanup, create_network, ensure_engine,
                            leftovers, nsenter_prefix)
from harness.cluster.docker.image import LOG4J2
from harness.cluster.lock import cluster_lock
from harness.util import wait_until

pytestmark = pytest.mark.integration

TOPIC = "d"


def _config(ip: str) -> str:
    conf = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{ip}:9093",
        "listeners": f"PLAINTEXT://{ip}:9092,CONTROLLER://{ip}:9093",
        "advertised.listeners": f"PLAINTEXT://{ip}:9092",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": DATA_DIR,
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "group.initial.rebalance.delay.ms": "0",
    }
    return "".join(f"{k}={v}\n" for k, v in conf.items())


def _metadata_ok(bootstrap: str) -> bool:
    try:
        # log_level 0: "connection refused" every 50 ms while the JVM starts is not news
        md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=2)
        return bool(md.brokers)
    except KafkaException:
        return False


def _produce_txn(bootstrap: str, values: list[str]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"t-{uuid.uuid4().hex[:8]}",
                  "enable.idempotence": True})
    p.init_transactions(60)
    p.begin_transaction()
    for v in values:
        p.produce(TOPIC, value=v.encode(), partition=0)
    p.commit_transaction(60)


def _consume_all(bootstrap: str, expect: int, timeout: float = 60.0) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])  # OFFSET 0: from the start, no group join
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and not m.error():
                got.append(m.value().decode())
        return got
    finally:
        c.close()


def test_one_broker_container_produce_consume_kill_pause_cleanup(tmp_path):
    t0 = time.monotonic()
    client = ensure_engine()
    t_engine = time.monotonic() - t0
    image = build_kafka_image(DEFAULT_KAFKA_VERSION, client=client)
    t_image = time.monotonic() - t0 - t_engine
    run_id = f"itest-{os.getpid()}"
    with cluster_lock():
        t_locked = time.monotonic()
        try:
            net = create_network(client, run_id)
            ip = net.address(1)
            conf_dir = tmp_path / "n1"
            conf_dir.mkdir()
            (conf_dir / "server.properties").write_text(_config(ip))
            (conf_dir / "log4j2.properties").write_text(LOG4J2)
            log = tmp_path / "logs" / "n1.log"
            node = BrokerContainer(client, run_id, 1, image, net, conf_dir, random_cluster_id(), log, heap_mb=384)
            node.create()
            assert client.containers.get(node.name).labels["eos-chaos.run"] == run_id
            t1 = time.monotonic()
            node.start()
            bootstrap = f"{ip}:9092"
            wait_until(lambda: _metadata_ok(bootstrap), 120, f"the broker at {bootstrap} (log: {log})")
            t_ready = time.monotonic() - t1

            # host -> container through the bridge's gateway address, a transaction committed
            admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures die with it
            admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
            _produce_txn(bootstrap, ["a", "b", "c"])
            assert _consume_all(bootstrap, 3) == ["a", "b", "c"]
            assert "formatting" in log.read_text().lower() or "Formatting" in log.read_text()

            # the container's network namespace from the host, as the partition nemesis enters it
            pid = node.pid()
            assert pid and pid > 1
            addrs = subprocess.run(nsenter_prefix(pid) + ["ip", "-4", "-br", "addr"], capture_output=True,
                                   text=True, check=True).stdout
            assert ip in addrs

            # kill = SIGKILL, then start the same container: the data volume keeps the records
            assert node.kill() is True
            assert not node.running() and node.exit_code() == 137
            t2 = time.monotonic()
            node.start()
            wait_until(lambda: _metadata_ok(bootstrap), 120, f"the restarted broker (log: {log})")
            t_restart = time.monotonic() - t2
            assert log.read_text().count("===== eos-chaos: starting node") == 2
            assert log.read_text().lower().count("formatting") <= 1  # formatted once, not on restart
            _produce_txn(bootstrap, ["d"])
            assert _consume_all(bootstrap, 4) == ["a", "b", "c", "d"]

            # pause = cgroup freezer: the broker stops answering, and answers again once thawed
            assert node.pause() is True and node.paused and node.running()
            assert not _metadata_ok(bootstrap)
            assert node.resume() is True and not node.paused
            wait_until(lambda: _metadata_ok(bootstrap), 60, "the resumed broker")
            print(f"\nengine {t_engine:.1f} s, image {t_image:.1f} s, first start to metadata {t_ready:.1f} s, "
                  f"restart to metadata {t_restart:.1f} s, under the lock {time.monotonic() - t_locked:.1f} s")
        finally:
            problems = cleanup(run_id, client)
    assert problems == []
    assert leftovers(run_id, client) == {"containers": [], "networks": [], "volumes": []}


CRASHING_CONTROLLER = """
import os, signal, sys
from pathlib import Path
from harness.cluster.docker import BrokerContainer, create_network, ensure_engine
run_id, image, conf = sys.argv[1], sys.argv[2], Path(sys.argv[3])
client = ensure_engine()
net = create_network(client, run_id)
BrokerContainer(client, run_id, 1, image, net, conf, "AAAAAAAAAAAAAAAAAAAAAA").create()
BrokerContainer(client, run_id, 2, image, net, conf, "AAAAAAAAAAAAAAAAAAAAAA").create()
print("made", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_cleanup_after_a_sigkill_of_the_controller(tmp_path):
    """A controller SIGKILLed after making a network, volumes and containers leaves them behind;
    cleanup finds them by label alone and leaves none."""
    import sys

    client = ensure_engine()
    image = build_kafka_image(DEFAULT_KAFKA_VERSION, client=client)
    run_id = f"crash-{os.getpid()}"
    (tmp_path / "server.properties").write_text("process.roles=broker\n")
    # the lock: another run's clean_leftovers (every run's labels) must not race this one
    with cluster_lock():
        proc = subprocess.run([sys.executable, "-c", CRASHING_CONTROLLER, run_id, image, str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == -9 and "made" in proc.stdout, proc.stderr[-2000:]
        left = leftovers(run_id, client)
        assert len(left["containers"]) == 2 and len(left["networks"]) == 1 and len(left["volumes"]) == 2
        assert cleanup(run_id, client) == []
    assert leftovers(run_id, client) == {"containers": [], "networks": [], "volumes": []}
