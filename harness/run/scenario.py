"""Scenario files: a workload plus a fault package, chosen by name (Jepsen ``nemesis/combined.clj``).

A scenario is YAML validated by pydantic; unknown fields are errors, so a typo never silently
falls back to a default. Example (scenarios/smoke.yaml)::

    name: smoke
    duration: 60            # seconds of faults and load, before heal and final reads
    workload: {name: txn-queue, producers: 4, consumers: 2}
    cluster: {nodes: 3, kafka_version: 4.3.1}
    nemesis: {faults: [kill, pause], interval_s: [10, 15], fault_duration_s: [5, 10]}
    expected: []            # anomalies this scenario allows (docs/anomalies.md names)

``load_scenario`` raises ScenarioError with every problem and the fields' paths.
"""
from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from checkers.catalogue import check_names
from checkers.run import Liveness, check_fail_on
from checkers.safe_load import YAMLLimitError, file_problem, read_yaml
from harness.workloads import TxnQueueSpec, WorkloadSpec
from harness.workloads.base import MAX_INT64, MAX_LOAD_S, Strict
from nemesis.registry import FAULTS
from nemesis.schedule import MAX_FAULTS


from harness.run.scenario_cluster import (  # noqa: F401 (re-exported: the scenario's one import)
    BACKENDS, CLIENT_PREFIXES, COMMANDS, EXTERNAL_FAULT_COMMANDS, ClusterSpec, DockerSpec, ExternalNode,
    ExternalSpec, kafka_version, node_ids)
from harness.run.scenario_nemesis import (  # noqa: F401 (re-exported)
    START_AFTER_OK, FaultSpec, NemesisSpec, ScheduledFault, Seconds, finite_numbers)


class ScenarioError(ValueError):
    """The scenario file is missing, not YAML, or not a valid scenario; says what to fix."""


#: the shortest window of a soak's checks: a window check starts a child process (~1 s of imports)
MIN_WINDOW_S = 5.0


class WindowsSpec(Strict):
    """``windows:`` check the history window by window while the load runs (soak runs;
    checkers/engines/windows.py, harness/run/soak.py). ``every_s``: window length in seconds, 0 =
    off; at least MIN_WINDOW_S and at most the run's duration. ``stop_on_invalid``: an invalid
    window ends the load early (the run still heals, drains and checks everything)."""

    every_s: float = Field(0.0, ge=0, le=MAX_LOAD_S)
    stop_on_invalid: bool = True


class Scenario(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    duration: float = Field(60.0, gt=0, le=MAX_LOAD_S, description="seconds of load and faults")
    seed: int | None = Field(None, ge=0, le=MAX_INT64)
    workload: WorkloadSpec = Field(default_factory=lambda: TxnQueueSpec())
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    nemesis: NemesisSpec = Field(default_factory=NemesisSpec)
    expected: list[str] = Field(default_factory=list, description="anomalies this scenario allows")

    def identity(self, *, without: set[str] = frozenset()) -> dict:
        """What makes two scenarios the same run (suite fingerprints, explore's database key):
        the JSON dump without ``description`` and ``without``, fields at their defaults left
        out, so that a field added to the model later (its default keeping the old behaviour)
        does not make finished runs or kept failures look like another scenario's."""
        return self.model_dump(mode="json", exclude={"description", *without}, exclude_defaults=True)
    #: liveness anomalies (stalled-lso, unavailable, realtime-lag) that fail this run when found
    fail_on: list[str] = Field(default_factory=list)
    #: bounds of the liveness reports (checkers.run.Liveness); written to meta.json
    liveness: Liveness = Field(default_factory=Liveness)
    #: window checks while the load runs (off by default)
    windows: WindowsSpec = Field(default_factory=WindowsSpec)

    @model_validator(mode="before")
    @classmethod
    def _liveness_at_top_level(cls, data):
        # scenarios before the liveness section had stalled_lso_bound_s at the top level
        if isinstance(data, dict) and "stalled_lso_bound_s" in data:
            data = dict(data)
            live = dict(data.get("liveness") or {})
            live.setdefault("stalled_lso_bound_s", data.pop("stalled_lso_bound_s"))
            data["liveness"] = live
        return data

    @model_validator(mode="before")
    @classmethod
    def _default_workload(cls, data):
        # the workload's name picks its spec; txn-queue is the default workload
        if isinstance(data, dict) and isinstance(data.get("workload"), dict):
            data = dict(data, workload={"name": "txn-queue", **data["workload"]})
        return data

    @field_validator("expected")
    @classmethod
    def _catalogued(cls, v: list[str]) -> list[str]:
        check_names(v, "")  # a typo would never match: checkers.ANOMALIES
        return v

    @model_validator(mode="after")
    def _sane(self) -> "Scenario":
        check_fail_on(self.fail_on, self.liveness)
        check_targets(self)
        w = self.windows.every_s
        if w and not MIN_WINDOW_S <= w <= self.duration:
            raise ValueError(f"windows.every_s {w:g} must be 0 (off) or between {MIN_WINDOW_S:g} and the "
                             f"duration ({self.duration:g} s): make it {'larger' if w < MIN_WINDOW_S else 'smaller, or the duration longer'}")
        if self.cluster.nodes < 3 and any(f.fault in ("kill", "lose-unsynced") for f in self.nemesis.all_faults()):
            raise ValueError("killing a node needs at least 3 nodes (RF 3, min.insync.replicas 2)")
        if self.cluster.backend == "external":
            external_faults(self.cluster.external, [f.fault for f in self.nemesis.all_faults()])
            external_workload(self.cluster.external, self.workload)
        broker_layers(self)
        from harness.workloads.group import check_release as check_group_protocol

        check_group_protocol(self.workload, self.cluster.kafka_version)  # KIP-848 needs Kafka 4.0.0
        from harness.workloads.share import check_release as check_share_release

        check_share_release(self.workload, self.cluster.kafka_version, self.cluster.broker)  # a DLQ needs 4.4.0
        return self


def client_names(scn: "Scenario") -> list[str] | None:
    """The client worker names a run of ``scn`` starts (readers, then writers), from its
    workload without a cluster and without side effects (no Java build, no Spark jars);
    None when they cannot be known here."""
    from harness.workloads import WORKLOADS
    from harness.workloads.spark import SPARK_WORKER

    spec = scn.workload
    try:
        if spec.name == "spark":  # the driver, then a txn-queue's clients (harness.workloads.spark)
            q = WORKLOADS["txn-queue"].__mro__[1](TxnQueueSpec(
                producers=spec.producers, consumers=spec.consumers, topics=spec.topics,
                partitions=spec.partitions), "127.0.0.1:9", 1)
            return [SPARK_WORKER] + [w.name for w in q.readers() + q.writers()]
        cls = WORKLOADS[spec.name]
        cls = cls.__mro__[1] if cls.__name__ == "WithClient" else cls  # no Java build (client_choice)
        w = cls(spec, "127.0.0.1:9", scn.seed or 1)
        return [s.name for s in w.readers()] + [s.name for s in w.writers()]
    except Exception:  # noqa: BLE001 - a workload that cannot say: its globs are checked at run time
        return None


def check_targets(scn: "Scenario") -> None:
    """What a run would find wrong only with the cluster up, said at load (ValueError, one
    line): a node id of an explicit schedule beyond the cluster; a client glob (a fault's
    ``clients``, ``start_after_ok``) or a schedule's client that matches no client of the
    workload; a seeded draw that would start faults back to back at one instant or more
    than MAX_FAULTS of them."""
    n = scn.nemesis
    nodes = node_ids(scn.cluster)
    for i, e in enumerate(n.schedule or []):
        bad = sorted(x for x in _nodes_named(e.value or {}, f"nemesis.schedule.{i}.value") if x not in nodes)
        if bad:
            raise ValueError(f"nemesis.schedule.{i}.value names node {', '.join(map(str, bad))}, but the "
                             f"cluster's nodes are {', '.join(map(str, nodes))}")
    names = client_names(scn)
    if names is not None:
        globs = [(f"nemesis.faults.{i}.clients", f.clients) for i, f in enumerate(n.faults)]
        globs += [(f"nemesis.schedule.{i}.fault.clients", e.fault.clients) for i, e in enumerate(n.schedule or [])]
        globs.append(("nemesis.start_after_ok", n.start_after_ok))
        for where, patterns in globs:
            for p in patterns or []:
                if not any(fnmatch.fnmatch(c, p) for c in names):
                    raise ValueError(f"{where}: {p!r} matches no client of this workload (clients: "
                                     f"{', '.join(names)})")
        for i, e in enumerate(n.schedule or []):
            c = (e.value or {}).get("client")
            if c is not None and c not in names:
                raise ValueError(f"nemesis.schedule.{i}.value: no client is named {c!r} (clients: "
                                 f"{', '.join(names)})")
    if n.schedule is None and n.faults and scn.duration > n.first_fault_s:
        mean = (n.interval_s[0] + n.interval_s[1]) / 2
        gap = min(max(mean, (f.duration_s or n.fault_duration_s)[0] + n.quiet_s) for f in n.faults)
        if gap <= 0:
            raise ValueError("nemesis: interval_s [0, 0] with faults of length 0 (fault_duration_s or a "
                             "fault's duration_s starting at 0) and quiet_s 0 would start faults back to "
                             "back at one instant, without end")
        if (scn.duration - n.first_fault_s) / gap > MAX_FAULTS:
            raise ValueError(f"nemesis: about {(scn.duration - n.first_fault_s) / gap:,.0f} faults in "
                             f"{scn.duration:g} s (more than {MAX_FAULTS:,}): make interval_s or the "
                             "faults longer, or the duration shorter")


def _nodes_named(value: dict, where: str) -> set[int]:
    """The node ids an explicit schedule entry's ``value`` names: ``node``, ``nodes`` (a list),
    a grudge's hosts ``n<id>``. ValueError for a node that is not an integer."""
    out: set[int] = set()
    named = [value["node"]] if "node" in value else []
    if isinstance(value.get("nodes"), list):
        named += value["nodes"]
    for x in named:
        if isinstance(x, bool) or not isinstance(x, int):
            raise ValueError(f"{where}: node {x!r} is not a node id (an integer)")
        out.add(x)
    grudge = value.get("grudge")
    if isinstance(grudge, dict):
        for host, others in grudge.items():
            for h in [host, *(others if isinstance(others, list) else [])]:
                if isinstance(h, str) and re.fullmatch(r"n[0-9]+", h):
                    out.add(int(h[1:]))
    return out


def with_backend(scn: "Scenario", backend: str | None) -> "Scenario":
    """``scn`` on cluster backend ``backend`` (None or the same: unchanged), validated again so
    that, say, external without ``cluster.external`` or with broker faults is refused. Raises
    ScenarioError in one line saying what to fix."""
    if backend is None or backend == scn.cluster.backend:
        return scn
    data = scn.model_dump(mode="json", exclude_unset=True)
    data.setdefault("cluster", {})["backend"] = backend
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        msg = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise ScenarioError(f"scenario {scn.name} on backend {backend}: {msg}") from None


def with_overrides(scn: "Scenario", *, seed: int | None = None, duration: float | None = None,
                   kafka_version: str | None = None) -> "Scenario":  # noqa: F811 (the re-exported function, shadowed here)
    """``scn`` with a command line's seed, duration (s) and Kafka version (None: unchanged),
    validated again like the file: ``--duration inf``, ``--seed -1`` or a version that is not
    one are refused with a ScenarioError in one line."""
    update: dict[str, Any] = {k: v for k, v in (("seed", seed), ("duration", duration)) if v is not None}
    if kafka_version is not None:
        update["cluster"] = {**scn.cluster.model_dump(), "kafka_version": kafka_version}
    if not update:
        return scn
    try:
        return Scenario.model_validate({**scn.model_dump(), **update})
    except ValidationError as exc:
        flag = {"seed": "--seed", "duration": "--duration", "cluster": "--kafka-version"}
        msg = "; ".join(f"{flag.get(str(e['loc'][0]), '.'.join(map(str, e['loc'])))}: "
                        f"{e['msg'].removeprefix('Value error, ')}" if e["loc"] else e["msg"].removeprefix("Value error, ")
                        for e in exc.errors())
        raise ScenarioError(f"scenario {scn.name}: {msg}") from None


def with_group_protocol(scn: "Scenario", value: str) -> "Scenario":
    """``scn`` with its workload's consumer group protocol set to ``value`` (``classic``,
    ``consumer`` or ``protocol/assignor``; harness.workloads.group), validated again (consumer
    on a release before 4.0.0 is refused). Raises ScenarioError in one line, also for a
    workload without a consumer group."""
    from harness.workloads.group import with_group_protocol as set_protocol

    if getattr(scn.workload, "group_protocol", None) is None:
        raise ScenarioError(f"scenario {scn.name}: its workload ({scn.workload.name}) has no consumer group: "
                            "a group protocol applies to eos-pipeline and app")
    try:
        data = set_protocol(scn.model_dump(mode="json", exclude_unset=True), value)
        return Scenario.model_validate(data)
    except ValidationError as exc:
        msg = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise ScenarioError(f"scenario {scn.name} (Kafka {scn.cluster.kafka_version}) with group protocol "
                            f"{value}: {msg}") from None
    except ValueError as exc:
        raise ScenarioError(f"group protocol {value}: {exc}") from None


def external_faults(ext: ExternalSpec, faults: list[str]) -> None:
    """Refuse the faults an external cluster cannot take: node faults without their command
    templates, and network faults (no iptables inside someone else's brokers, no CLIENT
    listener advertised at our proxies). Raises ValueError in one line naming what is missing."""
    for f in dict.fromkeys(faults):
        if f in EXTERNAL_FAULT_COMMANDS:
            missing = [c for c in EXTERNAL_FAULT_COMMANDS[f] if c not in ext.commands]
            if missing:
                raise ValueError(f"fault {f} on the external backend needs the node-control command "
                                 f"templates cluster.external.commands.{' and .'.join(missing)} (missing: "
                                 f"{', '.join(missing)})")
        elif FAULTS[f].needs and not set(FAULTS[f].needs) <= set(BROKER_LAYERS):  # those: broker_layers
            # docs/backends.md "Why no link faults on external" says what building them would take
            why = ("every broker would have to advertise a listener at a toxiproxy proxy this machine "
                   "runs (advertised.listeners host:port per broker), a broker config change the run may "
                   "not make on a cluster it did not start" if "toxiproxy" in FAULTS[f].needs else
                   "it needs iptables rules inside every broker's network namespace")
            raise ValueError(f"fault {f} is not offered on the external backend: {why}; run it with "
                             "--backend netns or docker. Offered on external: kill and pause (with command "
                             "templates), kill-client, pause-client, zombie")


#: FaultKind.needs that the brokers must be started with, -> the ClusterSpec flag
BROKER_LAYERS = {"lazyfs": "lazyfs", "faketime": "faketime"}


def broker_layers(scn: "Scenario") -> None:
    """Turn on the cluster flags the scenario's faults need (lose-unsynced: ``lazyfs``,
    clock-skew: ``faketime``); refuse them on the external backend, which cannot start
    brokers that way (ValueError in one line)."""
    from nemesis.registry import needs

    wanted = [flag for need, flag in BROKER_LAYERS.items() if need in needs([f.fault for f in scn.nemesis.all_faults()])]
    wanted += [flag for flag in BROKER_LAYERS.values() if getattr(scn.cluster, flag) and flag not in wanted]
    if wanted and scn.cluster.backend == "external":
        raise ValueError(f"{' and '.join(wanted)} (faults lose-unsynced / clock-skew) run on the netns and docker "
                         "backends only, not external: the broker must start on this machine with its log dir "
                         "on the harness's FUSE layer or its JVM under libfaketime; use --backend netns or docker")
    for flag in wanted:
        setattr(scn.cluster, flag, True)


def external_workload(ext: ExternalSpec, workload) -> None:
    """Refuse a workload an external cluster cannot run as the issue asks: spark (its topics and
    checkpoint groups do not take the run prefix), and Java workers whose security settings
    have no Java spelling (harness.cluster.client_access.java_security). Raises ValueError."""
    if workload.name == "spark":
        raise ValueError("the spark workload is not offered on the external backend (its topics and "
                         "groups would not carry the run prefix): use txn-queue, idempotent or eos-pipeline")
    if getattr(workload, "client", None) == "java":
        from harness.cluster.client_access import java_security

        java_security(ext.client, ext.java_client)


def read_yaml_mapping(path: str | Path, what: str, error: type[Exception]) -> tuple[Path, Any]:
    """(path, parsed YAML) of a ``what`` file ("scenario", "suite", "zoo"), read with the limits
    of checkers.safe_load. Raises ``error`` in a line or two when the path is missing or not a
    regular file (a directory, a FIFO), or the file is not UTF-8, not valid YAML or beyond a
    limit (an alias bomb, deep nesting, too large)."""
    p = Path(path)
    why = file_problem(p)
    if why:
        raise error(f"{what} file {p} {why}")
    try:
        return p, read_yaml(p)
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise error(f"{p} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} on line {line}): "
                    "save it as UTF-8") from None
    except YAMLLimitError as exc:  # checkers.safe_load: alias bombs, deep nesting, huge files
        raise error(f"{p} is refused: {exc}") from None
    except yaml.YAMLError as exc:
        raise error(f"{p} is not valid YAML: {exc}") from exc
    except OSError as exc:
        raise error(f"{what} file {p} cannot be read: {exc.strerror or exc}") from None


def validate_model(model: type[BaseModel], data: dict, p: Path, what: str,
                   error: type[Exception]):
    """``model.model_validate(data)``; a ValidationError becomes ``error`` listing each bad
    field by its dotted path."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # pydantic words a validator's ValueError "Value error, <message>": the message is enough
        lines = [f"  {'.'.join(str(x) for x in e['loc']) + ': ' if e['loc'] else ''}"
                 f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors()]
        raise error(f"{p} is not a valid {what}:\n" + "\n".join(lines)) from exc


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file. Raises ScenarioError saying what to fix."""
    p, data = read_yaml_mapping(path, "scenario", ScenarioError)
    if not isinstance(data, dict):
        raise ScenarioError(f"{p} must be a YAML mapping with at least a `name`")
    if "suite" in data:
        raise ScenarioError(f"{p} is a suite, not a scenario: run it with `eos-chaos suite {p}`")
    scn = validate_model(Scenario, data, p, "scenario", ScenarioError)
    if scn.workload.name == "app" and scn.workload.app.cwd is None:
        # the user's command runs from the scenario's folder: relative paths in it mean what
        # they mean beside the scenario file, wherever eos-chaos is started
        wl = scn.workload
        app = wl.app.model_copy(update={"cwd": str(Path(p).resolve().parent)})
        scn = scn.model_copy(update={"workload": wl.model_copy(update={"app": app})})
    return scn
