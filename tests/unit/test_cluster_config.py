from pathlib import Path

from harness.cluster.artifacts import KafkaDist, _pom
from harness.cluster import Cluster, random_cluster_id
from harness.cluster.namespaces import TestNetwork


def props(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


def test_kraft_config_has_the_production_shape(tmp_path):
    net = TestNetwork([1, 2, 3])  # nothing is created: only names and addresses
    cluster = Cluster(KafkaDist("4.3.1", tmp_path / "k"), net, tmp_path / "w", tmp_path / "l",
                      overrides={"min.insync.replicas": "1"})
    node = cluster.node(2)
    node.write_config(cluster.voters)
    p = props(node.config_path)
    assert p["process.roles"] == "broker,controller" and p["node.id"] == "2"
    assert p["controller.quorum.voters"] == "1@198.18.0.11:9093,2@198.18.0.12:9093,3@198.18.0.13:9093"
    assert p["advertised.listeners"] == "PLAINTEXT://198.18.0.12:9092"
    for k, v in {"transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
                 "transaction.state.log.num.partitions": "50", "unclean.leader.election.enable": "false",
                 "transaction.max.timeout.ms": "900000"}.items():
        assert p[k] == v, k
    assert p["min.insync.replicas"] == "1"  # scenario overrides win
    assert (node.workdir / "log4j2.properties").exists()
    assert cluster.bootstrap == "198.18.0.11:9092,198.18.0.12:9092,198.18.0.13:9092"


def test_kafka3_logs_through_reload4j_and_kafka4_through_log4j2():
    assert "slf4j-reload4j" in _pom("3.9.1") and "log4j-slf4j-impl" not in _pom("3.9.1")
    assert "log4j-slf4j-impl" in _pom("4.3.1")


def test_cluster_ids_never_look_like_options():
    assert all(random_cluster_id()[0].isalnum() for _ in range(500))
