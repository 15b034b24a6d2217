"""The ``listener`` parameter of the partition fault (nemesis.partition): the iptables rules a
grudge limited to one of the brokers' listeners makes, applied by PartitionNemesis on a fake
network (no namespace, no iptables), and the scenario check of the parameter."""
from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from harness.cluster.kafka import BROKER_PORT, CONTROLLER_PORT
from harness.detect.zoo import load_entry
from harness.run.scenario import ScenarioError, load_scenario
from nemesis import grudge as g
from nemesis.core import NemesisContext
from nemesis.partition import CHAIN, LISTENER_PORTS, PartitionNemesis, drop_rules
from nemesis.schedule import explicit_schedule

ROOT = Path(__file__).resolve().parents[2]
ADDR = {"n1": "198.18.0.11", "n2": "198.18.0.12", "n3": "198.18.0.13", "c": "198.18.0.100"}


def test_listener_ports_are_the_brokers_listeners():
    # nemesis does not import the harness: the ports are repeated there and must stay equal
    assert LISTENER_PORTS == {"all": None, "broker": BROKER_PORT, "controller": CONTROLLER_PORT}
    image = (ROOT / "harness" / "cluster" / "docker" / "image.py").read_text()
    assert f"listeners=PLAINTEXT://:{BROKER_PORT},CONTROLLER://:{CONTROLLER_PORT}" in image


def test_drop_rules_all_drops_by_source_only():
    rules = drop_rules(g.isolate_one(["n1", "n2", "n3"], "n1"), ADDR)
    assert rules == [
        ("n1", ["-A", CHAIN, "-s", ADDR["n2"], "-j", "DROP"]),
        ("n1", ["-A", CHAIN, "-s", ADDR["n3"], "-j", "DROP"]),
        ("n2", ["-A", CHAIN, "-s", ADDR["n1"], "-j", "DROP"]),
        ("n3", ["-A", CHAIN, "-s", ADDR["n1"], "-j", "DROP"]),
    ]


@pytest.mark.parametrize("listener,port", [("broker", "9092"), ("controller", "9093")])
def test_drop_rules_of_one_listener_match_its_port_and_node_sources_only(listener, port):
    grudge = g.isolate_one(["n1", "n2", "n3"], "n2")
    rules = drop_rules(grudge, ADDR, listener)
    assert len(rules) == len(g.links(grudge)) == 4
    for host, argv in rules:
        assert argv[:2] == ["-A", CHAIN] and argv[-2:] == ["-j", "DROP"]
        assert argv[4:8] == ["-p", "tcp", "--dport", port]
        assert host != "c" and argv[3] != ADDR["c"]  # the client host keeps its path to every broker
    assert {(h, argv[3]) for h, argv in rules} == {
        ("n2", ADDR["n1"]), ("n2", ADDR["n3"]), ("n1", ADDR["n2"]), ("n3", ADDR["n2"])}


def test_isolate_one_inbound_cuts_only_what_the_others_send_the_loner():
    grudge = g.make_grudge("isolate-one-inbound", ["n3", "n1", "n2"], random.Random(0), node="n2")
    assert grudge == g.isolate_one_inbound(["n1", "n2", "n3"], "n2") == {"n2": {"n1", "n3"}}
    assert not g.is_symmetric(grudge) and g.links(grudge) == {("n2", "n1"), ("n2", "n3")}
    with pytest.raises(ValueError, match="not one of"):
        g.isolate_one_inbound(["n1", "n2"], "n3")
    # only the loner's namespace holds rules: its followers' fetches (to its port 9092) stall,
    # its own connections to the others' listeners (replies to its ephemeral ports) pass
    assert drop_rules(grudge, ADDR, "broker") == [
        ("n2", ["-A", CHAIN, "-s", ADDR["n1"], "-p", "tcp", "--dport", "9092", "-j", "DROP"]),
        ("n2", ["-A", CHAIN, "-s", ADDR["n3"], "-p", "tcp", "--dport", "9092", "-j", "DROP"])]


def test_drop_rules_reject_an_unknown_listener_and_a_host_without_address():
    with pytest.raises(ValueError, match="unknown listener 'client'"):
        drop_rules(g.isolate_one(["n1", "n2"], "n1"), ADDR, "client")
    with pytest.raises(KeyError):
        drop_rules({"n1": frozenset({"n9"})}, ADDR, "broker")
    assert drop_rules({}, ADDR, "broker") == []


class FakeHost:
    """A namespace's iptables as a list of rules in chain EOSC (enough for PartitionNemesis)."""

    def __init__(self, name: str, address: str):
        self.name, self.address = name, address
        self.chain: list[str] | None = None
        self.jump = False
        self.calls: list[tuple[str, ...]] = []

    def run(self, *argv: str, check: bool = True, timeout: float = 30.0):
        assert argv[:3] == ("iptables", "-w", "5")
        args = argv[3:]
        self.calls.append(args)
        rc, out = 0, ""
        if args[0] == "-S":
            if self.chain is None:
                rc = 1
            else:
                out = f"-N {CHAIN}\n" + "".join(f"-A {CHAIN} {r}\n" for r in self.chain)
        elif args[0] == "-N":
            self.chain = []
        elif args[0] == "-C":
            rc = 0 if self.jump else 1
        elif args[:2] == ("-I", "INPUT"):
            self.jump = True
        elif args[0] == "-A":
            self.chain.append(" ".join(args[2:]))
        elif args[0] == "-F":
            self.chain = []
        elif args[:2] == ("-D", "INPUT"):
            self.jump = False
        elif args[0] == "-X":
            self.chain = None
        return subprocess.CompletedProcess(argv, rc, out, "")


class FakeNetwork:
    def __init__(self):
        self.hosts = {h: FakeHost(h, a) for h, a in ADDR.items()}

    @property
    def client(self):
        return self.hosts["c"]


def test_partition_nemesis_cuts_only_the_broker_listener_and_heals_everything():
    net = FakeNetwork()
    nem = PartitionNemesis(NemesisContext(cluster=None, extra={"network": net}))
    nem.setup()
    # a leader role resolved to node 1 (as resolve_target returns it), the listener as a param
    value = {"kind": "isolate-one", "node": 1, "params": {"grudge": "isolate-one", "listener": "broker"}}
    done = nem.invoke({"f": "partition", "value": value})["value"]
    assert done["rules"] == 4 and done["listener"] == "broker" and done["node"] == 1
    assert "tcp port 9092, the broker listener, only" in done["result"]
    assert net.hosts["n1"].chain == [f"-s {ADDR['n2']} -p tcp --dport 9092 -j DROP",
                                     f"-s {ADDR['n3']} -p tcp --dport 9092 -j DROP"]
    assert net.hosts["n2"].chain == net.hosts["n3"].chain == [f"-s {ADDR['n1']} -p tcp --dport 9092 -j DROP"]
    assert net.hosts["c"].chain == []  # prepared, never a rule
    healed = nem.invoke({"f": "heal-partition", "value": value})["value"]
    assert healed["rules"] == 4 and all(h.chain == [] for h in net.hosts.values())
    assert nem.teardown() == []
    assert all(h.chain is None and not h.jump for h in net.hosts.values())


def test_partition_nemesis_inbound_grudge_on_a_leader_role_resolved_to_node_3():
    net = FakeNetwork()
    nem = PartitionNemesis(NemesisContext(cluster=None, extra={"network": net}))
    value = {"kind": "isolate-one-inbound", "node": 3,
             "params": {"grudge": "isolate-one-inbound", "listener": "broker"}}
    done = nem.invoke({"f": "partition", "value": value})["value"]
    assert done["grudge"] == {"n3": ["n1", "n2"]} and done["rules"] == 2 and done["symmetric"] is False
    assert net.hosts["n3"].chain == [f"-s {ADDR['n1']} -p tcp --dport 9092 -j DROP",
                                     f"-s {ADDR['n2']} -p tcp --dport 9092 -j DROP"]
    assert net.hosts["n1"].chain is None and net.hosts["n2"].chain is None  # never touched
    assert nem.invoke({"f": "heal-partition", "value": value})["value"]["rules"] == 2
    assert nem.teardown() == [] and net.hosts["n3"].chain is None and not net.hosts["n3"].jump


def test_partition_nemesis_without_listener_drops_every_packet_of_the_grudge():
    net = FakeNetwork()
    nem = PartitionNemesis(NemesisContext(cluster=None, extra={"network": net}))
    nem.setup()
    value = {"kind": "halves", "grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}, "params": {"grudge": "halves"}}
    done = nem.invoke({"f": "partition", "value": value})["value"]
    assert done["listener"] == "all" and done["result"] == g.describe(g.from_json(value["grudge"]))
    assert net.hosts["n1"].chain == [f"-s {ADDR['n2']} -j DROP", f"-s {ADDR['n3']} -j DROP"]
    assert nem.teardown() == []


def test_the_listener_parameter_is_checked_when_the_scenario_loads(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("name: x\nnemesis:\n  faults:\n    - {fault: partition, listener: client}\n")
    with pytest.raises(ScenarioError, match="unknown listener 'client'"):
        load_scenario(p)
    p.write_text("name: x\nnemesis:\n  faults:\n    - {fault: partition, target: leader, key: t0/0, listener: broker}\n")
    assert load_scenario(p).nemesis.faults[0].as_dict()["listener"] == "broker"


def test_the_unclean_leader_mutant_and_its_control_share_one_schedule():
    mutant = load_entry(ROOT / "scenarios" / "zoo" / "unclean-leader-lose-unsynced.yaml")
    control = load_entry(ROOT / "scenarios" / "zoo" / "control-unclean-leader.yaml")
    assert (mutant.kind, control.kind) == ("mutant", "control")
    m, c = mutant.scenario.nemesis, control.scenario.nemesis
    assert m.model_dump() == c.model_dump()
    steps = m.steps(1, mutant.scenario.duration, [1, 2, 3], [])
    assert [(s.at, s.f) for s in steps] == [(3, "partition"), (14, "lose-unsynced"), (19, "heal-partition"),
                                           (22, "power-on")]
    assert steps[0].value == {"kind": "isolate-one-inbound", "role": "leader", "key": "t0/0",
                              "params": {"grudge": "isolate-one-inbound", "listener": "broker"}}
    assert steps == explicit_schedule(1, [s.model_dump(exclude_none=True) | {"fault": s.fault.as_dict()}
                                          for s in m.schedule], [1, 2, 3], [], mutant.scenario.duration)
    # the mutant differs from its control in the brokers' configuration only
    mb, cb = mutant.scenario.cluster.broker, control.scenario.cluster.broker
    assert {k: v for k, v in mb.items() if cb.get(k) != v} == {
        "unclean.leader.election.enable": "true", "min.insync.replicas": "1", "transaction.state.log.min.isr": "1"}
    assert mb["replica.lag.time.max.ms"] == cb["replica.lag.time.max.ms"] == "3000"
