"""Scenario files: a workload plus a fault package, chosen by name (Jepsen ``nemesis/combined.clj``).

A scenario is YAML validated by pydantic; unknown fields are errors, so a typo never silently
falls back to a default. Example (scenarios/smoke.yaml)::

    name: smoke
    duration: 60            # seconds of faults and load, before heal and final reads
    workload: {name: txn-queue, producers: 4, consumers: 2}
    cluster: {nodes: 3, kafka_version: 4.3.1}
    nemesis: {faults: [kill, pause], interval_s: [10, 15], fault_duration_s: [5, 10]}
    expected: []            # anomalies this scenario allows (ANOMALIES.md names)

``load_scenario`` raises ScenarioError with every problem and the fields' paths.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.artifacts import DEFAULT_KAFKA_VERSION
from harness.workloads import TxnQueueSpec, WorkloadSpec
from harness.workloads.base import Strict
from nemesis.registry import FAULTS


class ScenarioError(ValueError):
    """The scenario file is missing, not YAML, or not a valid scenario; says what to fix."""


class ClusterSpec(Strict):
    nodes: int = Field(3, ge=1, le=9)
    kafka_version: str = DEFAULT_KAFKA_VERSION
    heap_mb: int = Field(512, ge=128)
    broker: dict[str, str] = Field(default_factory=dict, description="extra server.properties settings")


class FaultSpec(BaseModel):
    """One fault of the package: a registered fault kind (nemesis.registry) and its parameters.

    ``target`` picks the node of a node fault: ``random`` (at schedule time) or a role resolved
    through the admin API when the fault begins: ``coordinator`` (of ``transactional_id``),
    ``leader`` (of ``key``, "topic/partition"), ``controller``. ``clients`` are glob patterns of
    client worker names for client faults. Other fields are the fault's own parameters.
    """

    model_config = ConfigDict(extra="allow")

    fault: str
    target: Literal["random", "coordinator", "leader", "controller"] = "random"
    clients: list[str] | None = None
    transactional_id: str | None = None
    key: str | None = None
    weight: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _known(self) -> "FaultSpec":
        if self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; known: {sorted(FAULTS)}")
        if self.target == "coordinator" and not self.transactional_id:
            raise ValueError("target coordinator needs transactional_id")
        if self.target == "leader" and not self.key:
            raise ValueError("target leader needs key (topic/partition)")
        FAULTS[self.fault].validate(self.as_dict())
        return self

    def as_dict(self) -> dict:
        return self.model_dump(exclude_none=True)


class NemesisSpec(Strict):
    faults: list[FaultSpec] = Field(default_factory=lambda: [FaultSpec(fault="kill"), FaultSpec(fault="pause")])
    interval_s: tuple[float, float] = (10.0, 15.0)
    fault_duration_s: tuple[float, float] = (5.0, 10.0)
    #: seconds of calm load before the first fault
    first_fault_s: float = Field(5.0, ge=0)
    #: seconds without a fault after each fault ends, so the cluster can recover
    quiet_s: float = Field(0.0, ge=0)

    @field_validator("faults", mode="before")
    @classmethod
    def _names(cls, v):
        # a bare name is a fault with default parameters: `faults: [kill, pause]`
        return [{"fault": f} if isinstance(f, str) else f for f in v or []]

    @field_validator("interval_s", "fault_duration_s")
    @classmethod
    def _ordered(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not 0 <= v[0] <= v[1]:
            raise ValueError(f"expected [low, high] with 0 <= low <= high, got {list(v)}")
        return v


class Scenario(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    duration: float = Field(60.0, gt=0, description="seconds of load and faults")
    seed: int | None = None
    workload: WorkloadSpec = Field(default_factory=lambda: TxnQueueSpec())
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    nemesis: NemesisSpec = Field(default_factory=NemesisSpec)
    expected: list[str] = Field(default_factory=list, description="anomalies this scenario allows")
    #: liveness anomalies (stalled-lso, unavailable, realtime-lag) that fail this run when found
    fail_on: list[str] = Field(default_factory=list)
    stalled_lso_bound_s: float = 30.0

    @model_validator(mode="before")
    @classmethod
    def _default_workload(cls, data):
        # the workload's name picks its spec; txn-queue is the default workload
        if isinstance(data, dict) and isinstance(data.get("workload"), dict):
            data = dict(data, workload={"name": "txn-queue", **data["workload"]})
        return data

    @model_validator(mode="after")
    def _sane(self) -> "Scenario":
        if self.cluster.nodes < 3 and any(f.fault == "kill" for f in self.nemesis.faults):
            raise ValueError("killing a node needs at least 3 nodes (RF 3, min.insync.replicas 2)")
        return self


def read_yaml_mapping(path: str | Path, what: str, error: type[Exception]) -> tuple[Path, Any]:
    """(path, parsed YAML) of a ``what`` file ("scenario", "suite"). Raises ``error`` when the
    file is missing or not valid YAML."""
    p = Path(path)
    if not p.is_file():
        raise error(f"{what} file {p} does not exist")
    try:
        return p, yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise error(f"{p} is not valid YAML: {exc}") from exc


def validate_model(model: type[BaseModel], data: dict, p: Path, what: str,
                   error: type[Exception]):
    """``model.model_validate(data)``; a ValidationError becomes ``error`` listing each bad
    field by its dotted path."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [f"  {'.'.join(str(x) for x in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()]
        raise error(f"{p} is not a valid {what}:\n" + "\n".join(lines)) from exc


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file. Raises ScenarioError saying what to fix."""
    p, data = read_yaml_mapping(path, "scenario", ScenarioError)
    if not isinstance(data, dict):
        raise ScenarioError(f"{p} must be a YAML mapping with at least a `name`")
    if "suite" in data:
        raise ScenarioError(f"{p} is a suite, not a scenario: run it with `eos-chaos suite {p}`")
    return validate_model(Scenario, data, p, "scenario", ScenarioError)
