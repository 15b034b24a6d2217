"""Translation of a scenario's toxic into toxiproxy toxics, and its schedule-time target (issue 4)."""
import random

import pytest

from harness.cluster.namespaces import TestNetwork
from harness.cluster.toxiproxy_server import ClientProxies, proxy_addresses
from nemesis.registry import FAULTS, needs
from nemesis.schedule import fault_schedule
from nemesis.toxiproxy import TOXICS, choose_toxic_target, toxic_plan


def test_latency_with_jitter_downstream_by_default():
    plan = toxic_plan({"type": "latency", "latency_ms": 800, "jitter_ms": 300})
    assert not plan.disables and not plan.all_brokers
    assert plan.toxics == ({"name": "eosc-latency-downstream", "type": "latency", "stream": "downstream",
                            "toxicity": 1.0, "attributes": {"latency": 800, "jitter": 300}},)


def test_defaults_fill_missing_attributes():
    assert toxic_plan({"type": "latency"}).toxics[0]["attributes"] == {"latency": 500, "jitter": 200}
    assert toxic_plan({"type": "timeout"}).toxics[0]["attributes"] == {"timeout": 0}
    assert toxic_plan({"type": "slicer"}).toxics[0]["attributes"] == {
        "average_size": 64, "size_variation": 32, "delay": 200}


@pytest.mark.parametrize("params, attributes", [
    ({"type": "bandwidth", "rate_kbytes_s": 4}, {"rate": 4}),
    ({"type": "timeout", "timeout_ms": 1500}, {"timeout": 1500}),
    ({"type": "reset_peer", "timeout_ms": 0}, {"timeout": 0}),
    ({"type": "slicer", "average_size": 16, "size_variation": 8, "delay_us": 2000},
     {"average_size": 16, "size_variation": 8, "delay": 2000}),
    ({"type": "slow_close", "delay_ms": 100}, {"delay": 100}),
    ({"type": "limit_data", "bytes": 1}, {"bytes": 1}),
])
def test_every_type_maps_our_units_to_toxiproxy_attributes(params, attributes):
    (toxic,) = toxic_plan(params).toxics
    assert toxic["type"] == params["type"] and toxic["attributes"] == attributes


def test_both_streams_make_two_toxics_with_distinct_names():
    plan = toxic_plan({"type": "reset_peer", "stream": "both", "toxicity": 0.5})
    assert [t["stream"] for t in plan.toxics] == ["downstream", "upstream"]
    assert len({t["name"] for t in plan.toxics}) == 2
    assert all(t["toxicity"] == 0.5 for t in plan.toxics)


def test_down_disables_the_proxy_and_adds_no_toxic():
    plan = toxic_plan({"type": "down", "brokers": "all"})
    assert plan.disables and plan.all_brokers and plan.toxics == ()


@pytest.mark.parametrize("params, message", [
    ({}, "type must be one of"),
    ({"type": "jitter"}, "type must be one of"),
    ({"type": "latency", "rate_kbytes_s": 3}, "unknown: \\['rate_kbytes_s'\\]"),
    ({"type": "latency", "latency": 3}, "unknown"),
    ({"type": "latency", "latency_ms": -1}, "non-negative integer"),
    ({"type": "latency", "latency_ms": 1.5}, "non-negative integer"),
    ({"type": "latency", "latency_ms": True}, "non-negative integer"),
    ({"type": "latency", "stream": "sideways"}, "stream must be"),
    ({"type": "latency", "toxicity": 2}, "toxicity"),
    ({"type": "down", "brokers": "some"}, "brokers must be"),
    ({"type": "down", "timeout_ms": 5}, "unknown"),
])
def test_bad_parameters_are_refused_with_the_reason(params, message):
    with pytest.raises(ValueError, match=message):
        toxic_plan(params)


def test_every_documented_type_translates():
    for kind in TOXICS:
        plan = toxic_plan({"type": kind})
        assert plan.type == kind and (plan.disables or plan.toxics)


def test_target_is_chosen_at_schedule_time():
    spec = {"fault": "toxic", "type": "latency", "target": "random", "weight": 1.0}
    assert choose_toxic_target(random.Random(1), spec, [1, 2, 3], []) == {"node": random.Random(1).choice([1, 2, 3])}
    assert choose_toxic_target(random.Random(1), dict(spec, brokers="all"), [1, 2, 3], []) == {"nodes": "all"}
    role = dict(spec, target="coordinator", transactional_id="eosc-txn-0")
    assert choose_toxic_target(random.Random(1), role, [1, 2, 3], []) == {
        "role": "coordinator", "transactional_id": "eosc-txn-0"}
    with pytest.raises(ValueError):
        choose_toxic_target(random.Random(1), dict(spec, latency_sec=1), [1, 2, 3], [])


def test_toxic_schedule_carries_params_and_pairs_toxic_with_untoxic():
    faults = [{"fault": "toxic", "type": "latency", "latency_ms": 700, "target": "random"},
              {"fault": "toxic", "type": "down", "brokers": "all", "target": "random"}]
    steps = fault_schedule(5, faults, [1, 2, 3], [], 90.0, (10.0, 12.0), (4.0, 6.0))
    assert {s.f for s in steps} == {"toxic", "untoxic"}
    for start, end in zip(steps[::2], steps[1::2]):
        assert (start.f, end.f) == ("toxic", "untoxic") and start.value == end.value
        toxic_plan(start.value["params"])  # what the nemesis will translate


def test_registry_knows_what_the_network_faults_need():
    assert (FAULTS["partition"].start_f, FAULTS["partition"].end_f) == ("partition", "heal-partition")
    assert (FAULTS["toxic"].start_f, FAULTS["toxic"].end_f) == ("toxic", "untoxic")
    assert needs(["kill", "pause"]) == set()
    assert needs(["partition", "toxic"]) == {"network", "toxiproxy"}


def test_proxy_layout_one_port_per_broker_on_the_client_host():
    net = TestNetwork([1, 2, 3])
    assert proxy_addresses(net, [1, 2, 3]) == {1: "198.18.0.100:19091", 2: "198.18.0.100:19092",
                                               3: "198.18.0.100:19093"}
    proxies = ClientProxies(net, [3, 1, 2], "/tmp/unused")
    assert proxies.bootstrap == "198.18.0.100:19091,198.18.0.100:19092,198.18.0.100:19093"
    assert proxies.config()[0] == {"name": "n1", "listen": "198.18.0.100:19091",
                                   "upstream": "198.18.0.11:9094", "enabled": True}
    assert proxies.proxy_for(2) == "n2"
    with pytest.raises(KeyError):
        proxies.proxy_for(4)
