"""``eos-chaos run SCENARIO --dry-run``: everything a run checks before it starts a cluster,
without root, without the cluster lock and without starting anything.

The scenario as the run would take it (loaded and validated: bounds, versions, node ids,
client globs, anomaly names; the command line's seed, duration and Kafka version merged in),
the tools its backend and faults need on PATH, the versions it would run (Kafka's jars and the
Java client's cached, or known to Maven: only a pom is fetched to ask), toxiproxy, and the
fault schedule drawn for the seed, exactly as the run draws it (``Scenario.nemesis.steps``
with the backend's node ids and the workload's client names). ``preflight`` returns what it
found or raises PreflightError with one line saying what would stop the run.
"""
from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field
from typing import Callable

from harness.cluster.artifacts import (ArtifactError, cache_dir, check_version, java_client_libs, kafka_dist,
                                       maven_knows, toxiproxy_server)
from harness.run.scenario import Scenario, client_names, node_ids
from nemesis.registry import FAULTS, needs, start_fs
from nemesis.schedule import Step


class PreflightError(ValueError):
    """What would stop the run before its cluster starts, in one line."""


@dataclass
class Fault:
    """One fault of the drawn schedule: when it begins and ends (s after the load started),
    its kind, its target and its own parameters."""

    begins: float
    ends: float | None
    fault: str
    target: str
    params: str


@dataclass
class Preflight:
    scenario: Scenario
    seed: int
    seed_drawn: bool  # the scenario names no seed: the run draws one, this is one such draw
    nodes: list[int]
    clients: list[str] | None
    checks: list[tuple[str, str]] = field(default_factory=list)  # (what, how it is met)
    steps: list[Step] = field(default_factory=list)

    def faults(self) -> list[Fault]:
        return pair_steps(self.steps)


#: (group, artifact, version) -> None when Maven resolves it, else ArtifactError
MavenCheck = Callable[[str, str, str], None]


def preflight(scn: Scenario, *, maven: MavenCheck | None = None,
              which: Callable[[str], str | None] | None = None) -> Preflight:
    """Check ``scn`` as ``eos-chaos run`` would before its cluster starts (module docstring).
    ``maven`` (default maven_knows) and ``which`` (shutil.which) are seams for tests. Raises
    PreflightError in one line."""
    maven = maven or maven_knows
    which = which or shutil.which
    seed_drawn = scn.seed is None
    seed = scn.seed if scn.seed is not None else random.randrange(1, 2**31)  # as prepare_run_dir
    out = Preflight(scn, seed, seed_drawn, node_ids(scn.cluster), client_names(scn))
    out.checks.append(("scenario", f"{scn.name}: {scn.workload.name}, {scn.cluster.nodes} nodes on "
                                   f"{scn.cluster.backend}, {scn.duration:g} s of load"))
    _tools(scn, out, which)
    _versions(scn, out, maven, which)
    try:
        out.steps = scn.nemesis.steps(seed, scn.duration, out.nodes, out.clients or [])
    except (ValueError, KeyError) as exc:
        raise PreflightError(f"the fault schedule for seed {seed} cannot be drawn: {exc}") from None
    n = len(pair_steps(out.steps))
    out.checks.append(("fault schedule", f"{n} fault{'s' if n != 1 else ''} drawn for seed {seed}"))
    return out


def _tools(scn: Scenario, out: Preflight, which: Callable[[str], str | None]) -> None:
    faults = [f.fault for f in scn.nemesis.all_faults()]
    wanted = []
    if scn.cluster.backend == "netns":
        wanted.append(("ip", "iproute2: the netns backend makes its network namespaces with it"))
    if "network" in needs(faults):
        wanted.append(("iptables", "the partition fault drops packets with it"))
    for tool, why in wanted:
        if which(tool) is None:
            raise PreflightError(f"`{tool}` is not on PATH ({why}); install it (Debian: apt-get install -y "
                                 f"{'iproute2' if tool == 'ip' else tool})")
    if wanted:
        out.checks.append(("tools", ", ".join(t for t, _ in wanted) + " on PATH"))


def _versions(scn: Scenario, out: Preflight, maven: MavenCheck, which: Callable[[str], str | None]) -> None:
    c = scn.cluster
    if c.backend == "external":
        out.checks.append(("kafka", f"the external cluster's own (bootstrap {c.external.bootstrap})"))
    elif c.backend == "docker" and c.docker is not None and c.docker.image:
        out.checks.append(("kafka", f"the image {c.docker.image}"))
    else:
        out.checks.append(("kafka " + c.kafka_version, _available(
            lambda: kafka_dist(c.kafka_version, fetch=False).libs, ("org.apache.kafka", "kafka_2.13", c.kafka_version),
            maven)))
    w = scn.workload
    from harness.workloads.share import check_release as check_share_release

    try:  # the share groups' dead-letter queue needs 4.4.0 (KIP-1191)
        check_share_release(w, c.kafka_version, c.broker)
    except ValueError as exc:
        raise PreflightError(str(exc)) from None
    if getattr(w, "client", None) == "java":
        from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION

        v = check_version(w.java_client_version or DEFAULT_JAVA_CLIENT_VERSION, "kafka-clients")
        out.checks.append(("kafka-clients " + v, _available(
            lambda: java_client_libs(v, fetch=False), ("org.apache.kafka", "kafka-clients", v), maven)))
    if "toxiproxy" in needs([f.fault for f in scn.nemesis.all_faults()]):
        try:
            out.checks.append(("toxiproxy", f"cached at {toxiproxy_server(fetch=False)}"))
        except ArtifactError:
            if which("go") is None:
                raise PreflightError("toxiproxy is not cached and Go is not on PATH to build it: run "
                                     "`eos-chaos setup` (link faults need it)") from None
            out.checks.append(("toxiproxy", f"not cached: the run builds it with Go (cache {cache_dir()})"))


def _available(cached: Callable[[], object], gav: tuple[str, str, str], maven: MavenCheck) -> str:
    """How a run would get ``gav``'s jars: from the cache, else from Maven (asked now)."""
    try:
        return f"cached at {cached()}"
    except ArtifactError:
        pass
    try:
        maven(*gav)
    except ArtifactError as exc:
        raise PreflightError(str(exc)) from None
    return f"not cached: on Maven Central ({':'.join(gav)}), fetched when the run starts"


def pair_steps(steps: list[Step]) -> list[Fault]:
    """The schedule's steps as faults: each begin with the first later end of its kind and
    target (an end the load's end cut off: None)."""
    begins = start_fs()
    end_of = {k.start_f: k.end_f for k in FAULTS.values()}
    used: set[int] = set()
    out = []
    for i, s in enumerate(steps):
        if s.f not in begins:
            continue
        end = next((j for j in range(i + 1, len(steps)) if j not in used and steps[j].f == end_of[s.f]
                    and steps[j].value == s.value), None)
        if end is not None:
            used.add(end)
        value = {k: v for k, v in s.value.items() if k != "params"}
        params = s.value.get("params") or {}
        out.append(Fault(s.at, steps[end].at if end is not None else None, s.f, describe_target(value),
                         ", ".join(f"{k}={v}" for k, v in params.items())))
    return out


def describe_target(value: dict) -> str:
    """A schedule value's target in a few words: node 2, client producer-1, the coordinator of
    eosc-txn-0, a grudge as its sides."""
    if "node" in value and len(value) == 1:
        return f"node {value['node']}"
    if "client" in value and len(value) == 1:
        return f"client {value['client']}"
    if value.get("nodes") == "all":
        return "every broker"
    if "role" in value:
        of = value.get("transactional_id") or value.get("key")
        return f"{value['role']}" + (f" of {of}" if of else "") + (f" ({value['kind']})" if "kind" in value else "")
    if isinstance(value.get("grudge"), dict):
        cut = "; ".join(f"{h} cut from {', '.join(v)}" for h, v in value["grudge"].items())
        return f"{value.get('kind', 'partition')}: {cut}"
    return ", ".join(f"{k}={v}" for k, v in value.items())
