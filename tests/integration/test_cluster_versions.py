"""A second Kafka version (3.9.x) must start too, for the version matrix; brought up and down
through the cluster service like every other cluster (harness.cluster.service)."""
import pytest

from harness.cluster import namespaces as net
from harness.cluster.artifacts import SECOND_KAFKA_VERSION
from harness.cluster.backends import make_backend
from harness.cluster.service import ClusterService
from harness.cluster.lock import cluster_lock
from harness.run.scenario import ClusterSpec
from harness.util import wait_until

pytestmark = pytest.mark.integration


def test_kafka_39_cluster_starts_and_creates_topics(tmp_path):
    with cluster_lock():
        _start_39(tmp_path)


def _start_39(tmp_path):
    spec = ClusterSpec(kafka_version=SECOND_KAFKA_VERSION)
    service = ClusterService(make_backend(spec, tmp_path / "nodes", tmp_path / "logs"), tmp_path / "logs")
    assert service.clean_leftovers() == []
    try:
        service.start(timeout=120)
        agent = service.agent
        # "exists" when a retried request finds what its first, interrupted attempt created
        assert agent.request("create_topics", names=["v"], partitions=2, replication_factor=3)["v"] in ("created", "exists")
        desc = wait_until(lambda: (d := agent.request("describe", topics=["v"]))["topics"]["v"]["partitions"] and d,
                          60, "topic v")
        assert all(len(p["replicas"]) == 3 for p in desc["topics"]["v"]["partitions"].values())
        assert service.meta()["nodes"] == {"1": "198.18.0.11:9092", "2": "198.18.0.12:9092", "3": "198.18.0.13:9092"}
    finally:
        assert service.teardown() == []
    assert net.list_namespaces() == []
