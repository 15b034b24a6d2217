"""A second Kafka version (3.9.x) must start too, for the version matrix."""
import pytest

from harness import net
from harness.agent import Agent
from harness.artifacts import SECOND_KAFKA_VERSION, kafka_dist
from harness.cluster import Cluster
from harness.lock import cluster_lock
from harness.util import wait_until

pytestmark = pytest.mark.integration


def test_kafka_39_cluster_starts_and_creates_topics(tmp_path):
    with cluster_lock():
        _start_39(tmp_path)


def _start_39(tmp_path):
    assert net.cleanup() == []
    network = net.TestNetwork([1, 2, 3])
    network.up()
    cluster = agent = None
    try:
        cluster = Cluster(kafka_dist(SECOND_KAFKA_VERSION), network, tmp_path / "nodes", tmp_path / "logs")
        cluster.format_and_start()
        agent = Agent(network.client, cluster.bootstrap, tmp_path / "agent.log")
        wait_until(lambda: len(agent.request("describe", timeout=3)["brokers"]) == 3, 120, "3 brokers")
        # "exists" when a retried request finds what its first, interrupted attempt created
        assert agent.request("create_topics", names=["v"], partitions=2, replication_factor=3)["v"] in ("created", "exists")
        desc = wait_until(lambda: (d := agent.request("describe", topics=["v"]))["topics"]["v"]["partitions"] and d,
                          60, "topic v")
        assert all(len(p["replicas"]) == 3 for p in desc["topics"]["v"]["partitions"].values())
    finally:
        if agent:
            agent.close()
        if cluster:
            cluster.shutdown()
        assert network.down() == []
    assert net.list_namespaces() == []
