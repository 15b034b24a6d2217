"""The consumer group protocol axis (issue 33 part 1): client settings, scenario checks, the
app placeholder, the suite axis, the brokers' KIP-848 settings and the rebalance figures."""
from __future__ import annotations

from pathlib import Path

import pytest

from checkers.synthetic.build import HistoryBuilder
from checkers.history import load_history
from checkers.history.rebalances import rebalance_stats
from harness.cluster.releases import CONSUMER_GROUP_BROKER, release
from harness.detect import suite as st
from harness.run.scenario import ScenarioError, load_scenario, with_overrides
from harness.run.versions import collect_versions
from harness.workers.configs import ProcessorConfig
from harness.workers.group_protocol import REFUSED_UNDER_CONSUMER, check_assignor, consumer_settings
from harness.workers.processor import ProcessorWorker
from harness.workloads.app import App
from harness.workloads.eos_pipeline import EosPipelineSpec

ROOT = Path(__file__).resolve().parents[2]
CLASSIC = {"group.id": "g", "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000, "isolation.level": "read_committed"}


# ---------------------------------------------------------------- client settings

@pytest.mark.parametrize("client", ["librdkafka", "java"])
def test_consumer_protocol_drops_what_the_client_refuses(client):
    conf = consumer_settings({**CLASSIC, "partition.assignment.strategy": "range"}, "consumer", None, client)
    assert not set(conf) & set(REFUSED_UNDER_CONSUMER[client])
    assert conf["group.protocol"] == "consumer" and "group.remote.assignor" not in conf
    assert conf["isolation.level"] == "read_committed"  # the rest is kept
    assert consumer_settings(CLASSIC, "consumer", "range", client)["group.remote.assignor"] == "range"


def test_classic_keeps_the_session_and_names_the_assignor():
    assert consumer_settings(CLASSIC, "classic", None) == CLASSIC
    assert consumer_settings(CLASSIC, "classic", "cooperative-sticky")["partition.assignment.strategy"] == "cooperative-sticky"
    java = consumer_settings(CLASSIC, "classic", "range", "java")
    assert java["partition.assignment.strategy"] == "org.apache.kafka.clients.consumer.RangeAssignor"


def test_bad_protocol_or_assignor_is_one_line():
    for protocol, assignor, words in [("eager", None, "use one of classic, consumer"),
                                      ("consumer", "cooperative-sticky", "is a classic assignor"),
                                      ("classic", "uniform", "is a consumer assignor")]:
        with pytest.raises(ValueError) as e:
            check_assignor(protocol, assignor)
        assert words in str(e.value) and "\n" not in str(e.value)


def test_the_processor_builds_a_config_librdkafka_accepts():
    from confluent_kafka import Consumer  # creating a consumer checks its settings, no broker needed

    for protocol, assignor in [("consumer", None), ("consumer", "range"), ("classic", "cooperative-sticky")]:
        w = ProcessorWorker.__new__(ProcessorWorker)
        w.cfg = ProcessorConfig(bootstrap="127.0.0.1:9", input_topic="in", output_topic="out", group_id="g",
                                transactional_id="t", group_protocol=protocol, assignor=assignor)
        w.group = "g"
        conf = w.consumer_conf()
        assert ("session.timeout.ms" in conf) == (protocol == "classic")
        Consumer(conf).close()


# ---------------------------------------------------------------- scenarios

def test_scenario_refuses_consumer_on_an_old_release_and_refused_settings():
    scn = load_scenario(ROOT / "scenarios" / "eos-pipeline.yaml")
    data = scn.model_dump(mode="json", exclude_unset=True)
    data["workload"]["group_protocol"] = "consumer"
    from harness.run.scenario import Scenario

    ok = Scenario.model_validate(data)
    assert ok.workload.group_protocol == "consumer"
    with pytest.raises(ScenarioError) as e:
        with_overrides(ok, kafka_version="3.9.1")
    assert "needs Kafka 4.0.0 or newer" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="session.timeout.ms is refused"):
        EosPipelineSpec(group_protocol="consumer", consumer={"session.timeout.ms": 10000})
    spec = EosPipelineSpec(group_protocol="consumer", assignor="range")
    assert spec.group_cfg() == {"group_protocol": "consumer", "assignor": "range"}


def test_app_passes_the_protocol_through_its_placeholders():
    scn = load_scenario(ROOT / "scenarios" / "app-copy-service.yaml")
    data = scn.model_dump(mode="json", exclude_unset=True)
    data["workload"].update(group_protocol="consumer", assignor="uniform")
    from harness.run.scenario import Scenario

    spec = Scenario.model_validate(data).workload
    values = App(spec, "b:9092", 1).placeholder_values(0)
    assert values["group_protocol"] == "consumer" and values["assignor"] == "uniform"
    data["workload"]["app"]["command"] = [a for a in data["workload"]["app"]["command"]
                                          if "group_protocol" not in a]
    with pytest.raises(ValueError, match=r"never pass \{group_protocol\} on"):
        Scenario.model_validate(data)


def test_versions_name_the_protocol():
    scn = load_scenario(ROOT / "scenarios" / "eos-pipeline.yaml")
    assert collect_versions(scn, {})["group-protocol"] == "classic (client default)"
    assert "group-protocol" not in collect_versions(load_scenario(ROOT / "scenarios" / "smoke.yaml"), {})


# ---------------------------------------------------------------- the suite axis

def test_suite_axis_expands_group_workloads_only(tmp_path):
    d = tmp_path / "scenarios"
    d.mkdir()
    for name in ("eos-pipeline", "smoke"):
        (d / f"{name}.yaml").write_text((ROOT / "scenarios" / f"{name}.yaml").read_text())
    (d / "s.yaml").write_text("suite: s\nscenarios: [eos-pipeline.yaml, smoke.yaml]\nseeds: 1\n"
                              "kafka_versions: [4.3.1]\ngroup_protocols: [classic, consumer/range]\n")
    cells = st.expand(st.load_suite(d / "s.yaml"), d)
    assert [c.id for c in cells] == ["eos-pipeline/s1/kafka-4.3.1", "eos-pipeline/s1/kafka-4.3.1/group-consumer-range",
                                     "smoke/s1/kafka-4.3.1"]
    assert cells[1].scenario.workload.assignor == "range" and cells[1].group_protocol == "consumer (range)"
    assert cells[2].group_protocol is None
    shipped = st.expand(st.load_suite(ROOT / "scenarios" / "group-protocols.yaml"), ROOT / "scenarios")
    assert len(shipped) == 36


def test_suite_axis_bad_values_say_what_to_fix(tmp_path):
    d = tmp_path / "scenarios"
    d.mkdir()
    (d / "eos-pipeline.yaml").write_text((ROOT / "scenarios" / "eos-pipeline.yaml").read_text())
    (d / "bad.yaml").write_text("suite: b\nscenarios: [eos-pipeline.yaml]\ngroup_protocols: [eager]\n")
    with pytest.raises(st.SuiteError) as e:
        st.load_suite(d / "bad.yaml")
    assert "use one of classic, consumer" in str(e.value)
    (d / "old.yaml").write_text("suite: o\nscenarios: [eos-pipeline.yaml]\nkafka_versions: [3.9.1]\n"
                                "group_protocols: [consumer]\n")
    with pytest.raises(st.SuiteError) as e:
        st.expand(st.load_suite(d / "old.yaml"), d)
    assert "needs Kafka 4.0.0 or newer" in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------- brokers

def test_brokers_get_the_consumer_group_session_where_the_protocol_exists():
    assert release("4.3.1").broker_defaults == CONSUMER_GROUP_BROKER
    assert CONSUMER_GROUP_BROKER["group.consumer.session.timeout.ms"] == "10000"
    assert int(CONSUMER_GROUP_BROKER["group.consumer.min.session.timeout.ms"]) <= 10000
    assert release("3.9.1").broker_defaults == {}


# ---------------------------------------------------------------- rebalance figures

def test_rebalance_figures_from_a_tiny_history(tmp_path):
    """Process 1 reads in/0 and is killed; process 2 gets in/0 2 s after that last read; process
    2 then revokes in/1 (cooperative) and gets it back 300 ms later."""
    b = HistoryBuilder()
    g = {"group_id": "g", "transactional_id": "t1"}

    def assign(p, keys, added, at, **extra):
        meta = {"group_id": "g", "via": "rebalance", "added": added, **extra}
        b.invoke(p, "assign", keys, meta, time=at)
        b.complete(p, "ok", keys, meta, time=at + 1_000_000)

    assign(1, ["in/0"], ["in/0"], 1_000_000_000)
    assign(2, ["in/1"], ["in/1"], 1_000_000_000)
    b.invoke(1, "txn", [["poll"], ["send", "out/0", 5]], g, time=2_000_000_000)
    b.complete(1, "ok", [["poll", {"in/0": [[0, 5]]}], ["send", "out/0", [0, 5]]], g, time=2_010_000_000)
    b.invoke(2, "txn", [["poll"], ["send", "out/1", 6]], dict(g, transactional_id="t2"), time=2_100_000_000)
    b.complete(2, "fail", [["poll", {"in/1": [[0, 6]]}], ["send", "out/1", [0, 6]]], dict(g, transactional_id="t2"),
               error=["UNKNOWN_MEMBER_ID", "fenced"], time=2_110_000_000)
    assign(2, ["in/0", "in/1"], ["in/0"], 3_999_000_000)  # done at 4.000 s: 2 s after p1's last read
    # p2's txn whose consume() ran that callback and read in/0: recorded after the assign, its
    # invoke time (taken before consume()) earlier than the assign's
    b.invoke(2, "txn", [["poll"], ["send", "out/0", 7]], dict(g, transactional_id="t2"), time=3_900_000_000)
    b.complete(2, "ok", [["poll", {"in/0": [[1, 7]]}], ["send", "out/0", [1, 7]]], dict(g, transactional_id="t2"),
               time=4_100_000_000)
    assign(2, ["in/0", "in/1"], ["in/1"], 4_499_000_000, revoked=["in/1"], revoke_ns=4_200_000_000)
    h = load_history(b.write(tmp_path / "h.jsonl"))
    s = rebalance_stats(h)
    assert s["rebalances"] == 4 and s["members"] == 2
    assert s["handover_ms"] == {"n": 1, "median": 2000.0, "p95": 2000.0, "max": 2000.0}
    assert s["pause_ms"]["n"] == 1 and s["pause_ms"]["median"] == 300.0
    assert s["fencing_errors"] == {"UNKNOWN_MEMBER_ID": 1} and s["member_crashes"] == {}
    # a history without group members has no rebalance figures
    b2 = HistoryBuilder()
    b2.assign(3, ["in/0"])
    assert rebalance_stats(load_history(b2.write(tmp_path / "h2.jsonl"))) is None


def test_run_command_takes_the_protocol_and_refuses_it_in_one_line():
    from typer.testing import CliRunner

    from harness.cli.main import app

    runner = CliRunner()
    ok = runner.invoke(app, ["run", str(ROOT / "scenarios" / "eos-pipeline.yaml"), "--group-protocol", "consumer/range",
                             "--dry-run"])
    assert ok.exit_code == 0, ok.output
    for args, words in [(["smoke.yaml", "consumer"], "has no consumer group"),
                        (["eos-pipeline.yaml", "consumer", "--kafka-version", "3.9.1"], "needs Kafka 4.0.0"),
                        (["eos-pipeline.yaml", "consumer/cooperative-sticky"], "is a classic assignor")]:
        bad = runner.invoke(app, ["run", str(ROOT / "scenarios" / args[0]), "--group-protocol", *args[1:], "--dry-run"])
        assert bad.exit_code == 2 and words in " ".join(bad.output.split()), bad.output
        assert "Traceback" not in bad.output
