"""Fault kinds by name, as a scenario names them (Jepsen ``nemesis/combined.clj`` packages).

A FaultKind says which ops begin and end the fault, how its target is chosen when the
schedule is made (pure, seeded), and how to build the nemesis that applies it. Modules that
add faults call ``register``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from nemesis.client_faults import ClientKillNemesis, ClientPauseNemesis, ClientStopNemesis
from nemesis.clock import ClockNemesis, choose_clock_target, clock_params
from nemesis.core import Composite, NemesisContext
from nemesis.partition import LISTENER_PORTS, PartitionNemesis, choose_partition
from nemesis.power import LoseUnsyncedNemesis, choose_power_target, power_params
from nemesis.process import KillNemesis, PauseNemesis
from nemesis.targets import choose_client
from nemesis.zombie import ZombieNemesis
from nemesis.grudge import GRUDGE_KINDS
from nemesis.targets import SPEC_KEYS, choose_node_target, only_params  # noqa: F401 (re-exported: the spec keys belong to the registry's callers too)
from nemesis.toxiproxy import ToxicNemesis, choose_toxic_target, toxic_plan

#: (rng, fault spec as a dict, node ids, client names) -> the op value naming the target
Chooser = Callable[[random.Random, dict[str, Any], list[int], list[str]], dict[str, Any]]

def choose_client_target(rng: random.Random, spec: dict, nodes: list[int], clients: list[str]) -> dict:
    return {"client": choose_client(rng, clients, spec.get("clients") or ["*"])}


def partition_params(name: str, params: dict[str, Any]) -> None:
    """``grudge``: one of nemesis.grudge.GRUDGE_KINDS; ``listener``: which of the brokers'
    listeners the rules cut, one of nemesis.partition.LISTENER_PORTS (default ``all``)."""
    only_params(name, params, frozenset({"grudge", "listener"}))
    kind = params.get("grudge", "isolate-one")
    if kind not in GRUDGE_KINDS:
        raise ValueError(f"unknown grudge {kind!r}; known: {list(GRUDGE_KINDS)}")
    listener = params.get("listener", "all")
    if listener not in LISTENER_PORTS:
        raise ValueError(f"unknown listener {listener!r}; known: {list(LISTENER_PORTS)}")


def zombie_params(name: str, params: dict[str, Any]) -> None:
    """``fresh_id`` (bool): the replacement takes a fresh transactional.id (a negative
    control, nemesis.zombie)."""
    only_params(name, params, frozenset({"fresh_id"}))
    if not isinstance(params.get("fresh_id", False), bool):
        raise ValueError(f"fresh_id must be true or false, got {params['fresh_id']!r}")


def kill_client_params(name: str, params: dict[str, Any]) -> None:
    """``after_ok_s``: seconds after the client's next ok op (nemesis.client_faults), 0 <= s < 60."""
    only_params(name, params, frozenset({"after_ok_s"}))
    v = params.get("after_ok_s", 0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 60:
        raise ValueError(f"after_ok_s must be a number of seconds from 0 to 60, got {v!r}")


def toxic_params(name: str, params: dict[str, Any]) -> None:
    """The toxic's type and attributes, as nemesis.toxiproxy.toxic_plan reads them."""
    toxic_plan(params)


@dataclass(frozen=True)
class FaultKind:
    name: str
    start_f: str
    end_f: str
    make: Callable[[NemesisContext], Any]  # the nemesis class (or factory); one instance per run
    choose: Chooser = choose_node_target
    #: what the runner must put in NemesisContext.extra for this kind: "network" (the
    #: TestNetwork), "toxiproxy" (client links through toxiproxy, harness.cluster.toxiproxy_server);
    #: or what the brokers must be started with: "lazyfs" (log dirs on the FUSE layer,
    #: harness.cluster.unsynced_fs), "faketime" (JVMs under libfaketime)
    needs: tuple[str, ...] = ()
    #: (kind name, the spec's own parameters: every key but SPEC_KEYS) -> None; raises
    #: ValueError saying what is wrong, so that a scenario fails when it is loaded
    check_params: Callable[[str, dict[str, Any]], None] = only_params

    def validate(self, spec: dict[str, Any]) -> None:
        """Check a scenario's fault spec against this kind's parameters (ValueError)."""
        self.check_params(self.name, {k: v for k, v in spec.items() if k not in SPEC_KEYS})


FAULTS: dict[str, FaultKind] = {}


def register(kind: FaultKind) -> None:
    FAULTS[kind.name] = kind


for _kind in (
    FaultKind("kill", "kill", "start", KillNemesis),
    FaultKind("pause", "pause", "resume", PauseNemesis),
    FaultKind("kill-client", "kill-client", "restart-client", ClientKillNemesis, choose_client_target,
              check_params=kill_client_params),
    FaultKind("pause-client", "pause-client", "resume-client", ClientPauseNemesis, choose_client_target),
    # a rolling deploy: SIGTERM, then start again (the app workload's instances, issue 22)
    FaultKind("stop-client", "stop-client", "start-client", ClientStopNemesis, choose_client_target),
    # issue 4 part 8: pause a transactional client, start a replacement with its id (nemesis.zombie)
    FaultKind("zombie", "zombie", "resume-zombie", ZombieNemesis, choose_client_target,
              check_params=zombie_params),
    # issue 4: partitions (iptables in the namespaces) and client-link toxics (toxiproxy)
    FaultKind("partition", "partition", "heal-partition", PartitionNemesis, choose_partition, ("network",),
              partition_params),
    FaultKind("toxic", "toxic", "untoxic", ToxicNemesis, choose_toxic_target, ("toxiproxy",),
              toxic_params),
    # issue 24: power loss (unsynced writes lost under a FUSE layer) and per-broker clock skew
    FaultKind("lose-unsynced", "lose-unsynced", "power-on", LoseUnsyncedNemesis, choose_power_target, ("lazyfs",),
              power_params),
    FaultKind("clock-skew", "clock-skew", "clock-reset", ClockNemesis, choose_clock_target, ("faketime",),
              clock_params),
):
    register(_kind)


def needs(fault_names: list[str]) -> set[str]:
    """What the named fault kinds need from the runner (FaultKind.needs). KeyError if unknown."""
    return {n for name in fault_names for n in FAULTS[name].needs}


def start_fs() -> set[str]:
    return {k.start_f for k in FAULTS.values()}


def nemesis_fs() -> set[str]:
    return {f for k in FAULTS.values() for f in (k.start_f, k.end_f)} | {"heal"}


def build_nemesis(fault_names: list[str], ctx: NemesisContext) -> Composite:
    """One nemesis per distinct fault class named. Raises KeyError for an unknown name."""
    makers = []
    for name in dict.fromkeys(fault_names):
        make = FAULTS[name].make
        if make not in makers:
            makers.append(make)
    return Composite([make(ctx) for make in makers])
