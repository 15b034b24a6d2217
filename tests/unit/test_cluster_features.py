"""Issue 43 section 2: ``cluster.features``, feature levels finalized when the brokers' KRaft log
dirs are formatted (``kafka-storage format --feature NAME=LEVEL``, KIP-1022), on both backends,
refused in one line where a release cannot format them, recorded in the run's versions, and
checked against what the brokers finalized. Pure: nothing is fetched or started."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.docker_fakes import fake_docker_client
import yaml

from harness.cluster import Cluster
from harness.cluster import releases as rl
from harness.cluster.artifacts import KafkaDist
from harness.cluster.backends import make_backend
from harness.cluster.docker.nodes import start_script
from harness.cluster.namespaces import TestNetwork
from harness.run.scenario import ScenarioError, load_scenario
from harness.run.scenario_cluster import ClusterSpec
from harness.run.versions import ORDER, collect_versions

ROOT = Path(__file__).resolve().parents[2]
TV1 = {"transaction.version": 1}


def test_release_answers_whether_it_formats_feature_levels():
    assert not rl.release("3.7.0").supports_format_features()
    assert rl.release("3.8.0").supports_format_features() and rl.release("4.4.0").supports_format_features()
    assert rl.first_release("format_feature_flag") == "3.8.0"


def test_the_netns_format_command_carries_the_feature_levels(tmp_path):
    spec = ClusterSpec(kafka_version="4.4.0", features=TV1)
    cluster = Cluster(KafkaDist("4.4.0", tmp_path / "k"), TestNetwork([1, 2, 3]), tmp_path / "w", tmp_path / "l",
                      features=spec.features)
    for node in cluster.nodes.values():
        node.write_config(cluster.voters)
        cmd = node.format_cmd("AbC")
        assert cmd[cmd.index("kafka.tools.StorageTool") + 1:] == [
            "format", "-t", "AbC", "-c", str(node.config_path), "--feature", "transaction.version=1"]
    # without features: the release's defaults, no --feature
    plain = Cluster(KafkaDist("4.4.0", tmp_path / "k"), TestNetwork([1]), tmp_path / "w2", tmp_path / "l2", nodes=1)
    assert "--feature" not in plain.node(1).format_cmd("AbC")


def test_make_backend_passes_the_levels_to_the_netns_backend_and_its_meta(tmp_path, monkeypatch):
    import harness.cluster.artifacts as art

    monkeypatch.setattr(art, "kafka_dist", lambda v, **kw: KafkaDist(v, tmp_path / "k"))
    b = make_backend(ClusterSpec(kafka_version="4.4.0", features=TV1), tmp_path / "w", tmp_path / "l")
    assert b.features == TV1 and b.meta()["cluster_features"] == TV1
    assert "cluster_features" not in make_backend(ClusterSpec(kafka_version="4.4.0"), tmp_path / "w", tmp_path / "l").meta()


def test_the_docker_start_script_carries_the_feature_levels():
    script = start_script("/etc/kafka/server.properties", None, "AbC", "4.4.0", TV1)
    assert ("kafka-storage.sh format -t AbC -c /etc/kafka/server.properties --feature transaction.version=1 "
            "--ignore-formatted") in script
    assert "--feature" not in start_script("/etc/kafka/server.properties", None, "AbC", "4.4.0")
    with pytest.raises(rl.UnsupportedRelease, match="--feature needs Kafka 3.8.0"):
        start_script("/c", None, "AbC", "3.7.0", TV1)


def test_the_docker_container_is_created_with_the_levels(tmp_path):
    from harness.cluster.docker.nodes import BrokerContainer, DockerNet

    client = fake_docker_client()
    (tmp_path / "server.properties").write_text("x=1\n")
    net = DockerNet(name="eosc-t", id="i", subnet="198.18.7.0/24", gateway="198.18.7.1")
    c = BrokerContainer(client, "t", 1, "img", net, tmp_path, "AbC", kafka_version="4.4.0", features=TV1)
    c.create()
    assert "--feature transaction.version=1" in client.containers.kw["command"][0]


@pytest.mark.parametrize("features, match", [
    ({"transaction.version": "one"}, "level is a whole number"),
    ({"transaction.version": True}, "level is a whole number"),
    ({"transaction.version": -1}, "level is a whole number"),
    ({"transaction.version": 40000}, "level is a whole number"),
    (["transaction.version"], "maps feature names to levels"),
    ("transaction.version=1", "maps feature names to levels"),
    ({"Transaction": 1}, "not a feature name"),
    ({"transaction": 1}, "not a feature name"),
    ({"metadata.version": 20}, "metadata.version cannot be set"),
])
def test_validation_refuses_unknown_shapes(features, match):
    with pytest.raises(ValueError, match=match):
        ClusterSpec(kafka_version="4.4.0", features=features)


def test_a_release_that_cannot_format_levels_is_refused_in_one_line_saying_what_to_fix(tmp_path):
    with pytest.raises(ValueError) as exc:
        ClusterSpec(kafka_version="3.7.0", features=TV1)
    assert "cannot be set on Kafka 3.7.0" in str(exc.value) and "3.8.0 or newer" in str(exc.value)
    assert rl.feature_problems("3.7.0", TV1) == [
        "cluster.features (transaction.version=1) cannot be set on Kafka 3.7.0: kafka-storage format --feature "
        "needs 3.8.0 or newer (KIP-1022); pick a newer kafka_version or remove cluster.features"]
    assert rl.feature_problems("3.8.0", TV1) == [] and rl.feature_problems("3.5.2", {}) == []
    # through a scenario file: the loader's one line names the field
    doc = yaml.safe_load((ROOT / "scenarios" / "smoke.yaml").read_text())
    doc.setdefault("cluster", {}).update(kafka_version="3.7.0", features=TV1)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioError, match="cannot be set on Kafka 3.7.0"):
        load_scenario(p)
    doc["cluster"]["kafka_version"] = "4.4.0"
    p.write_text(yaml.safe_dump(doc))
    assert load_scenario(p).cluster.features == TV1


def test_an_external_cluster_takes_no_feature_levels():
    with pytest.raises(ValueError, match="external cluster is not formatted by it"):
        ClusterSpec(kafka_version="4.4.0", backend="external", external={"bootstrap": "h:9092"}, features=TV1)


def test_the_levels_are_in_the_runs_versions():
    class Scn:
        cluster = ClusterSpec(kafka_version="4.4.0", features=TV1)
        workload = None

    v = collect_versions(Scn(), {"kafka_version": "4.4.0", "backend": "netns"})
    assert v["kafka-features"] == "transaction.version=1"
    assert list(v) == [k for k in ORDER if k in v]
    Scn.cluster = ClusterSpec(kafka_version="4.4.0")
    assert "kafka-features" not in collect_versions(Scn(), {"kafka_version": "4.4.0"})


def test_the_levels_asked_are_checked_against_what_the_brokers_finalized():
    assert rl.feature_mismatches(TV1, {"transaction.version": 1, "group.version": 1}) == []
    assert rl.feature_mismatches(TV1, {"transaction.version": 2}) == [
        "cluster.features asked transaction.version=1 at format time, the brokers finalized transaction.version=2: "
        "the run did not test the level it names"]
    assert "finalized transaction.version=0" in rl.feature_mismatches(TV1, {"group.version": 1})[0]
    assert rl.feature_mismatches(TV1, None) == [] and rl.feature_mismatches({}, {"transaction.version": 2}) == []


DESCRIBE_4_4 = (
    "Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0              SupportedMaxVersion: 1"
    "              FinalizedVersionLevel: 1              Epoch: 9\n"
    "Feature: metadata.version                          SupportedMinVersion: 3.3-IV3        "
    "SupportedMaxVersion: 4.4-IV2        FinalizedVersionLevel: 4.4-IV2        Epoch: 9\n"
    "Feature: transaction.version                       SupportedMinVersion: 0              "
    "SupportedMaxVersion: 2              FinalizedVersionLevel: 1              Epoch: 9\n")


def test_kafka_features_describe_is_parsed_into_levels():
    from harness.cluster.features_check import parse_describe

    assert parse_describe(DESCRIBE_4_4) == {"eligible.leader.replicas.version": 1, "transaction.version": 1}
    assert parse_describe("") == {} and parse_describe("no features here") == {}


def test_the_runner_reads_the_levels_back_after_the_start_and_names_a_mismatch(tmp_path, monkeypatch):
    from harness.cluster import features_check
    from harness.run import runner

    class Host:
        def exec_prefix(self):
            return ["ip", "netns", "exec", "eosc-c"]

    class Service:
        client_host = Host()

        class backend:
            bootstrap = "10.0.0.1:9092"

    class Scn:
        cluster = ClusterSpec(kafka_version="4.4.0", features=TV1)

    seen = {}

    def fake(version, bootstrap, prefix, log=None, timeout=60.0):
        seen.update(version=version, bootstrap=bootstrap, prefix=prefix)
        return features_check.parse_describe(DESCRIBE_4_4), ""

    monkeypatch.setattr(features_check, "read_finalized", fake)
    meta = {}
    assert runner._check_features(Scn(), Service(), tmp_path, meta) == []
    assert seen == {"version": "4.4.0", "bootstrap": "10.0.0.1:9092", "prefix": ["ip", "netns", "exec", "eosc-c"]}
    assert meta["cluster_features_check"] == {"asked": TV1, "finalized": {"eligible.leader.replicas.version": 1,
                                                                           "transaction.version": 1}}
    monkeypatch.setattr(features_check, "read_finalized", lambda *a, **k: ({"transaction.version": 2}, ""))
    assert "the brokers finalized transaction.version=2" in runner._check_features(Scn(), Service(), tmp_path, meta)[0]
    monkeypatch.setattr(features_check, "read_finalized", lambda *a, **k: (None, "kafka-features.sh describe exited 1: x"))
    assert runner._check_features(Scn(), Service(), tmp_path, meta) == []
    assert meta["cluster_features_check"]["note"].startswith("kafka-features.sh describe exited 1")
