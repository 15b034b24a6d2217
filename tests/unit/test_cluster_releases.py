"""harness.cluster.releases: the one table of what differs between Kafka releases, the
one-line refusal of a release the harness cannot run, and both backends following the table.
Pure: nothing is fetched or started."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cluster import Cluster
from harness.cluster import releases as rl
from harness.cluster.artifacts import ArtifactError, KafkaDist, _pom, check_kafka_release, kafka_dist
from harness.cluster.docker.image import write_context
from harness.cluster.docker.nodes import start_script
from harness.cluster.namespaces import TestNetwork
from harness.run.scenario import ScenarioError, load_scenario, with_overrides

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "scenarios" / "smoke.yaml"


@pytest.mark.parametrize("version", ["3.4.1", "3.0.0", "2.8.2", "3.4.99", "3.4"])
def test_an_older_release_is_refused_in_one_line_naming_the_oldest(version):
    for call in (rl.check_release, check_kafka_release):
        with pytest.raises((rl.UnsupportedRelease, ArtifactError)) as exc:
            call(version)
        msg = str(exc.value)
        assert "\n" not in msg and "3.5.0" in msg and version in msg, msg
    with pytest.raises(ArtifactError, match="older than 3.5.0"):
        kafka_dist(version, fetch=False)  # before any cache lookup or Maven


@pytest.mark.parametrize("version", ["banana", "", "4", "../../x", "3.5.0/x"])
def test_what_is_not_a_version_is_refused_in_one_line_naming_the_oldest(version):
    with pytest.raises(ArtifactError) as exc:
        check_kafka_release(version)
    assert "\n" not in str(exc.value) and "3.5.0" in str(exc.value), exc.value


@pytest.mark.parametrize("version", ["3.5.0", "3.5.2", "3.9.1", "4.0.0", "4.1.2", "4.4.0", "4.0.0-rc1", "4.5.0"])
def test_releases_from_the_oldest_on_pass(version):
    assert check_kafka_release(version) == version == rl.release(version).version


def test_scenario_validation_and_the_command_line_refuse_an_old_release():
    scn = load_scenario(SMOKE)
    with pytest.raises(ScenarioError, match=r"--kafka-version: Kafka 3\.4\.1 is older than 3\.5\.0") as exc:
        with_overrides(scn, kafka_version="3.4.1")
    assert "\n" not in str(exc.value)
    assert with_overrides(scn, kafka_version="3.5.2").cluster.kafka_version == "3.5.2"

    from typer.testing import CliRunner

    from harness.cli.main import app

    for args in (["run", str(SMOKE), "--dry-run", "--kafka-version", "3.3.2"],
                 ["setup", "--minimal", "--kafka-version", "3.3.2"]):
        res = CliRunner().invoke(app, args)
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert res.exit_code == 2, (args, res.output)
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert len(lines) == 1 and "older than 3.5.0" in lines[0] and "Traceback" not in res.output, res.output


def test_logging_follows_the_release_in_the_pom_the_node_config_and_the_jvm_flag(tmp_path):
    assert "slf4j-reload4j" in _pom("3.5.2") and "log4j-slf4j-impl" not in _pom("3.9.2")
    assert "log4j-slf4j-impl" in _pom("4.0.0") and "slf4j-reload4j" not in _pom("4.4.0")
    for version, file, flag in (("3.5.2", "log4j.properties", "-Dlog4j.configuration=file:"),
                                ("3.9.1", "log4j.properties", "-Dlog4j.configuration=file:"),
                                ("4.0.0", "log4j2.properties", "-Dlog4j2.configurationFile="),
                                ("4.4.0", "log4j2.properties", "-Dlog4j2.configurationFile=")):
        cluster = Cluster(KafkaDist(version, tmp_path / version), TestNetwork([1, 2, 3]), tmp_path / version / "w",
                          tmp_path / "l")
        node = cluster.node(1)
        node.write_config(cluster.voters)
        assert sorted(p.name for p in node.workdir.glob("log4j*")) == [file], version
        cmd = node.format_cmd("AbC")
        assert f"{flag}{node.workdir / file}" in cmd, (version, cmd)
        assert cmd[cmd.index("kafka.tools.StorageTool") + 1:] == ["format", "-t", "AbC", "-c", str(node.config_path)]
        # the static quorum on every release (KIP-595), no dynamic-quorum key (KIP-853, 3.9.0 on)
        conf = node.config_path.read_text()
        assert "controller.quorum.voters=" in conf and "controller.quorum.bootstrap.servers" not in conf


def test_the_docker_image_and_container_follow_the_same_table(tmp_path):
    libs = tmp_path / "libs"
    libs.mkdir()
    for version, file in (("3.5.2", "log4j.properties"), ("4.3.1", "log4j2.properties")):
        ctx = tmp_path / version
        ctx.mkdir()
        write_context(ctx, version, libs)
        assert sorted(p.name for p in (ctx / "config").glob("log4j*")) == [file]
        run_class = (ctx / "bin" / "kafka-run-class.sh").read_text()
        assert rl.release(version).log4j_flag(f"$base_dir/config/{file}") in run_class and "@LOG4J_OPTS@" not in run_class
    script = start_script("/etc/kafka/server.properties", None, "AbC", "3.5.2")
    assert "kafka-storage.sh format -t AbC -c /etc/kafka/server.properties --ignore-formatted" in script
    with pytest.raises(rl.UnsupportedRelease):
        start_script("/c", None, "AbC", "3.4.0")


def test_tools_move_with_the_release():
    # KAFKA-14579: DumpLogSegments left the broker jar in 4.3.0 (4.2.2's kafka_2.13 has it)
    assert rl.release("4.2.2").dump_log_main == "kafka.tools.DumpLogSegments"
    assert not rl.release("4.2.2").dump_log_in_tools
    assert rl.release("4.3.0").dump_log_main == "org.apache.kafka.tools.DumpLogSegments"
    assert rl.release("3.9.1").tools_jar is False and rl.release("4.0.0").tools_jar is True


def test_feature_levels_and_the_format_flag_per_release():
    assert rl.release("3.9.1").default_features == {"transaction.version": 0, "group.version": 0,
                                                    "eligible.leader.replicas.version": 0}
    assert rl.release("4.0.0").default_features["transaction.version"] == 2  # KIP-890 part 2
    assert rl.release("4.0.1").default_features["eligible.leader.replicas.version"] == 0
    assert rl.release("4.1.0").default_features["eligible.leader.replicas.version"] == 1  # KIP-966
    assert rl.release("3.8.0").format_args("X", "/c", {"transaction.version": 2})[-2:] == [
        "--feature", "transaction.version=2"]
    with pytest.raises(rl.UnsupportedRelease, match="--feature needs Kafka 3.8.0"):
        rl.release("3.7.0").format_args("X", "/c", {"transaction.version": 2})


def test_a_broker_key_the_release_lacks_is_refused_at_validation():
    scn = load_scenario(SMOKE).model_dump()
    scn["cluster"] = {**scn["cluster"], "broker": {"transaction.partition.verification.enable": "false"}}
    from harness.run.scenario import Scenario

    for version, ok in (("3.5.2", False), ("3.6.0", True), ("4.4.0", True)):
        scn["cluster"]["kafka_version"] = version
        if ok:
            Scenario.model_validate(scn)
        else:
            with pytest.raises(ValueError, match="needs 3.6.0 or newer"):
                Scenario.model_validate(scn)
    assert rl.broker_override_problems("4.0.0", ["log.message.format.version"]) == [
        "cluster.broker log.message.format.version does not exist on Kafka 4.0.0: it was removed in 4.0.0 "
        "(KIP-724 (removed in 4.0.0))"]
    assert rl.broker_override_problems("3.9.1", ["log.message.format.version", "num.partitions"]) == []


def test_every_difference_names_its_source_and_a_release_in_range():
    for d in rl.DIFFERENCES:
        assert re.search(r"KIP-\d+|KAFKA-\d+|harness choice", d.source), d
        assert rl.parse(rl.OLDEST) < rl.parse(d.since) <= rl.parse(rl.NEWEST_TRIED), d
        assert d.reason and d.before != d.after, d


def test_no_other_module_of_the_cluster_compares_kafka_versions():
    """The one place: no version branches left in the backends or the artifacts."""
    pattern = re.compile(r"\.major\b|version\.split\(|major\s*[<>]=?\s*\d|startswith\(\"[34]\.")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "harness" / "cluster").rglob("*.py")
                 if p.name != "releases.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []


def test_what_a_release_supports_is_asked_by_name_at_the_release_that_brought_it():
    questions = {  # question -> the first release that answers yes (its docstring cites the KIP)
        "supports_consumer_group_protocol": "4.0.0", "supports_streams_protocol": "4.2.0",
        "supports_share_groups": "4.2.0", "supports_share_dlq": "4.4.0",
        "supports_transaction_version_2": "4.0.0", "has_kip890_verification": "3.6.0", "supports_elr": "4.1.0"}
    previous = {"4.0.0": "3.9.1", "4.2.0": "4.1.2", "4.4.0": "4.3.1", "3.6.0": "3.5.2", "4.1.0": "4.0.1"}
    for name, since in questions.items():
        ask = getattr(rl.Release, name)
        assert re.search(rf"{re.escape(since)} on", ask.__doc__) and re.search(r"KIP-\d+", ask.__doc__), name
        assert ask(rl.release(since)) and ask(rl.release(rl.NEWEST_TRIED)), name
        assert not ask(rl.release(previous[since])) and not ask(rl.release(rl.OLDEST)), name
    assert rl.release("4.0.0").consumer_group_protocol and not rl.release("3.9.1").consumer_group_protocol
    assert rl.first_release("consumer_group_protocol") == "4.0.0" and rl.first_release("share_dlq") == "4.4.0"
    # a kafka-clients version is asked without the brokers' OLDEST check
    assert not rl.Release("3.4.0").supports_consumer_group_protocol()


def test_one_version_parser_for_checkers_and_the_harness():
    from checkers.known_bugs.facts import release
    from checkers.version_numbers import between, older_than, version_tuple

    assert release is not None and release("4.0.0-rc1") == version_tuple("4.0.0-rc1") == (4, 0, 0)
    assert rl.parse("3.5.2") == version_tuple("3.5.2", whole=True) == (3, 5, 2)
    assert version_tuple(" 4.1x") == (4, 1, 0) and version_tuple(" 4.1x", whole=True) is None
    assert version_tuple("4.0.0.1+b", whole=True) == (4, 0, 0) and version_tuple(400, whole=True) is None
    assert older_than("2.9.1", "2.10.0") and not older_than("2.10.0", "2.10.0") and not older_than(None, "2.10.0")
    assert between("4.0.0", "4.0.0", "4.0.1") and not between("4.0.1", "4.0.0", "4.0.1")
    assert between("3.5.0", None, "3.6.0") and between("9.0.0", "4.0.0", None) and between("trunk", None, None) is None
