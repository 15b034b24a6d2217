"""The share workload's config (harness/workloads/share.py): the scenario model, the workers'
configs it builds (checked against their roles' models), the group configs, the zoo files."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.detect.zoo import load_entry
from harness.run.scenario import ScenarioError, load_scenario
from harness.workers.configs import check_config
from harness.workloads import WORKLOADS, ShareSpec

ROOT = Path(__file__).resolve().parents[2]


def test_share_yaml_builds_valid_worker_configs():
    scn = load_scenario(ROOT / "scenarios" / "share.yaml")
    assert isinstance(scn.workload, ShareSpec)
    w = WORKLOADS["share"](scn.workload, "10.0.0.1:9092", 3)
    readers, writers, drain = w.readers(), w.writers(), w.drain()
    assert [r.role for r in readers] == ["share-consumer"] * 3 and [x.role for x in writers] == ["txn-producer"] * 2
    for spec in [*readers, *writers, drain]:
        check_config(spec.role, spec.cfg)  # every field fits the role's model
    gc = readers[0].cfg["group_configs"]
    assert gc == {"share.isolation.level": "read_committed", "share.record.lock.duration.ms": "5000",
                  "share.delivery.count.limit": "4", "share.session.timeout.ms": "6000",
                  "share.heartbeat.interval.ms": "1000", "share.auto.offset.reset": "earliest"}
    assert scn.workload.quiet_s() == 14.0  # session 6 s + lock 5 s + 2 heartbeats + 1 s
    assert readers[0].cfg["group_id"] == readers[1].cfg["group_id"] and readers[0].cfg["seed"] != readers[1].cfg["seed"]
    assert drain.cfg["consumer"] == {} and drain.cfg["isolation_level"] == "read_committed"
    m = w.meta()["share"]
    assert m["lock_duration_ms"] == 5000 and m["delivery_count_limit"] == 4 and m["keys"] == w.keys()
    again = w.respawn(readers[0])
    assert again.cfg["seed"] != readers[0].cfg["seed"] and again.cfg["group_id"] == readers[0].cfg["group_id"]


def test_java_client_puts_the_java_role_on_consumers_and_producers():
    spec = ShareSpec(client="java")
    cls = WORKLOADS["share"]
    w = cls.__mro__[1](spec, "b:9092", 1)  # the class under with_client: no javac needed here
    from harness.workloads.client_choice import _with

    assert all(r.cfg["client"] == "java" for r in _with(spec, w.readers()))


@pytest.mark.parametrize("edit, msg", [
    ({"ack": {"order": "sideways"}}, "order"),
    ({"delivery_count_limit": 1}, "delivery_count_limit"),
    ({"lock_duration_ms": 10}, "lock_duration_ms"),
    ({"ack": {"release_probabilty": 0.1}}, "release_probabilty"),
    ({"heartbeat_interval_ms": 6000}, "heartbeat_interval_ms"),
])
def test_bad_share_settings_are_refused(tmp_path, edit, msg):
    import yaml

    data = yaml.safe_load((ROOT / "scenarios" / "share.yaml").read_text())
    data["workload"].update(edit)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match=msg):
        load_scenario(p)


def test_zoo_mutant_and_control_load():
    m = load_entry(ROOT / "scenarios" / "zoo" / "share-accept-before-processing.yaml")
    c = load_entry(ROOT / "scenarios" / "zoo" / "control-share.yaml")
    assert m.must_find == ("share-lost",) and m.scenario.workload.ack.order == "before-processing"
    assert c.kind == "control" and c.scenario.workload.ack.order == "after-processing"
