"""EOS_CHAOS_BROKER_JVM_OPTS (harness.cluster.kafka): extra JVM options for every broker the
harness starts, on netns and docker, recorded in the run's versions; `make test` sets it. Kafka
tool JVMs (the storage format, kafka-transactions.sh) run C1 only whatever it says."""
from __future__ import annotations

import pytest

from tests.unit.docker_fakes import fake_docker_client

from harness.cluster import Cluster
from harness.cluster.artifacts import KafkaDist
from harness.cluster.kafka import BROKER_JVM_OPTS_ENV, broker_jvm_opts
from harness.cluster.namespaces import TestNetwork
from harness.run.versions import ORDER, collect_versions
from harness.run.scenario_cluster import ClusterSpec


def _node(tmp_path):
    cluster = Cluster(KafkaDist("4.3.1", tmp_path / "k"), TestNetwork([1]), tmp_path / "w", tmp_path / "l", nodes=1)
    node = cluster.node(1)
    node.write_config(cluster.voters)
    return node


def _broker_argv(node) -> list[str]:
    argv = node._java("kafka.Kafka", str(node.config_path))
    return argv[:argv.index("-cp")]


def test_unset_the_broker_runs_with_the_jvm_defaults_and_the_format_c1_only(tmp_path, monkeypatch):
    monkeypatch.delenv(BROKER_JVM_OPTS_ENV, raising=False)
    node = _node(tmp_path)
    assert broker_jvm_opts() == [] and not any("Tiered" in a for a in _broker_argv(node))
    fmt = node.format_cmd("AbC")
    assert "-XX:TieredStopAtLevel=1" in fmt[:fmt.index("-cp")]


def test_set_every_broker_gets_the_options_and_the_run_records_them(tmp_path, monkeypatch):
    monkeypatch.setenv(BROKER_JVM_OPTS_ENV, "-XX:TieredStopAtLevel=1 -Dx='a b'")
    node = _node(tmp_path)
    assert _broker_argv(node)[-3:-1] == ["-XX:TieredStopAtLevel=1", "-Dx=a b"]
    scn = type("S", (), {"cluster": ClusterSpec(kafka_version="4.3.1"), "workload": None})()
    v = collect_versions(scn, {"backend": "netns", "kafka_version": "4.3.1"})
    assert v["broker-jvm-opts"] == "-XX:TieredStopAtLevel=1 -Dx=a b" and "broker-jvm-opts" in ORDER
    assert "broker-jvm-opts" not in collect_versions(scn, {"backend": "external", "kafka_version": "4.3.1"})


def test_the_docker_container_carries_them_in_kafka_opts(tmp_path, monkeypatch):
    from harness.cluster.docker.nodes import BrokerContainer, DockerNet

    client = fake_docker_client()
    (tmp_path / "server.properties").write_text("x=1\n")
    net = DockerNet(name="eosc-t", id="i", subnet="198.18.7.0/24", gateway="198.18.7.1")
    monkeypatch.setenv(BROKER_JVM_OPTS_ENV, "-XX:TieredStopAtLevel=1")
    BrokerContainer(client, "t", 1, "img", net, tmp_path, "AbC", kafka_version="4.4.0").create()
    assert client.containers.kw["environment"]["KAFKA_OPTS"] == "-XX:TieredStopAtLevel=1"
    monkeypatch.delenv(BROKER_JVM_OPTS_ENV)
    BrokerContainer(client, "t", 1, "img", net, tmp_path, "AbC", kafka_version="4.4.0").create()
    assert "KAFKA_OPTS" not in client.containers.kw["environment"]


def test_an_unclosed_quote_is_a_value_error(monkeypatch):
    monkeypatch.setenv(BROKER_JVM_OPTS_ENV, "-Dx='a")
    with pytest.raises(ValueError):
        broker_jvm_opts()


def test_make_test_sets_c1_for_the_brokers():
    from pathlib import Path

    mk = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert "TEST_BROKER_JVM_OPTS ?= -XX:TieredStopAtLevel=1" in mk
    assert 'EOS_CHAOS_BROKER_JVM_OPTS="$(TEST_BROKER_JVM_OPTS)"' in mk
