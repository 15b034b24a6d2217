"""The ``nemesis:`` section of a scenario file: the fault package (``faults``, drawn with the
run's seed by nemesis.schedule.fault_schedule) or an explicit schedule (written by `eos-chaos
explore`). Models only; harness.run.scenario assembles them into a Scenario."""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.workloads.base import MAX_INT64, MAX_LOAD_S, MAX_TIME_S, Strict
from nemesis.registry import FAULTS
from nemesis.schedule import explicit_schedule, fault_schedule

#: a length of time inside a scenario, in seconds: 0 to a day (harness.workloads.base)
Seconds = Annotated[float, Field(ge=0, le=MAX_TIME_S)]


def finite_numbers(v: Any, where: str) -> None:
    """ValueError when ``v`` (a fault parameter as YAML read it) holds a number that is not
    finite or an integer beyond 64 bits."""
    if isinstance(v, bool):
        return
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{where}: {v} is not a finite number")
    if isinstance(v, int) and not -MAX_INT64 - 1 <= v <= MAX_INT64:
        raise ValueError(f"{where}: {v} does not fit in 64 bits")
    if isinstance(v, dict):
        for k, x in v.items():
            finite_numbers(x, f"{where}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            finite_numbers(x, f"{where}.{i}")


class FaultSpec(BaseModel):
    """One fault of the package: a registered fault kind (nemesis.registry) and its parameters.

    ``target`` picks the node of a node fault: ``random`` (at schedule time) or a role resolved
    through the admin API when the fault begins: ``coordinator`` (of ``transactional_id``),
    ``leader`` (of ``key``, "topic/partition"), ``controller``. ``clients`` are glob patterns of
    client worker names for client faults. ``weight`` is how often the seeded draw picks it
    relative to the others; ``duration_s`` ([low, high] seconds), when given, is this fault's own
    length range in place of ``nemesis.fault_duration_s``: a fault that threatens a guarantee
    only when it outlasts a client timeout (a toxiproxy ``timeout`` held longer than a
    producer's flush timeout, finding F1) can then be long while kills stay short. Other fields
    are the fault's own parameters.
    """

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    fault: str
    target: Literal["random", "coordinator", "leader", "controller"] = "random"
    clients: list[str] | None = None
    transactional_id: str | None = None
    key: str | None = None
    weight: float = Field(1.0, gt=0, le=1e6)
    duration_s: tuple[Seconds, Seconds] | None = None

    @model_validator(mode="after")
    def _known(self) -> "FaultSpec":
        if self.duration_s is not None and not 0 < self.duration_s[0] <= self.duration_s[1]:
            raise ValueError(f"duration_s: expected [low, high] with 0 < low <= high, got {list(self.duration_s)}")
        if self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; known: {sorted(FAULTS)}")
        if self.target == "coordinator" and not self.transactional_id:
            raise ValueError("target coordinator needs transactional_id")
        if self.target == "leader" and not self.key:
            raise ValueError("target leader needs key (topic/partition)")
        for k, v in (self.model_extra or {}).items():  # the fault's own parameters
            finite_numbers(v, k)
        try:
            FAULTS[self.fault].validate(self.as_dict())
        except (TypeError, KeyError, AttributeError) as exc:  # a value of a type the kind does not take
            raise ValueError(f"fault {self.fault}: a parameter of the wrong type ({type(exc).__name__}: "
                             f"{exc})") from None
        return self

    def as_dict(self) -> dict:
        """The spec as plain data, in JSON form (``duration_s`` a list), as YAML reads it back."""
        return self.model_dump(mode="json", exclude_none=True)


class ScheduledFault(Strict):
    """One fault of an explicit schedule (``nemesis.schedule``): ``fault`` begins ``at`` seconds
    after the load started and lasts ``duration`` seconds; ``value`` fixes its target as
    schedule.json names it (``{node: 2}``, ``{client: processor-1}``), omitted the fault kind
    chooses it from the run's seed (nemesis.schedule.explicit_schedule)."""

    at: float = Field(ge=0, le=MAX_LOAD_S)
    duration: float = Field(gt=0, le=MAX_LOAD_S)
    fault: FaultSpec
    value: dict[str, Any] | None = None

    @field_validator("fault", mode="before")
    @classmethod
    def _name(cls, v):
        return {"fault": v} if isinstance(v, str) else v


#: the f of the pair of nemesis info events that record a ``start_after_ok`` wait (not a fault)
START_AFTER_OK = "start-after-ok"


class NemesisSpec(Strict):
    faults: list[FaultSpec] = Field(default_factory=lambda: [FaultSpec(fault="kill"), FaultSpec(fault="pause")])
    interval_s: tuple[Seconds, Seconds] = (10.0, 15.0)
    fault_duration_s: tuple[Seconds, Seconds] = (5.0, 10.0)
    #: seconds of calm load before the first fault
    first_fault_s: float = Field(5.0, ge=0, le=MAX_LOAD_S)
    #: seconds without a fault after each fault ends, so the cluster can recover
    quiet_s: float = Field(0.0, ge=0, le=MAX_TIME_S)
    #: client name globs (as a fault's ``clients``): the fault schedule and the load's
    #: ``duration`` count from the moment each glob has a worker that completed an ok op (a
    #: Spark driver's first committed batch, say), waiting at most ``start_after_ok_wait_s``
    #: for it; a client that starts slowly under load then still meets its faults mid-stream
    start_after_ok: list[str] = Field(default_factory=list)
    #: seconds ``start_after_ok`` waits at most (then the schedule starts anyway, and the
    #: history says so); default: the larger of the run's ``duration`` and 120 s (a Spark
    #: driver's first batch took more than 60 s on a loaded 2-core CI machine)
    start_after_ok_wait_s: float | None = Field(None, gt=0, le=MAX_TIME_S)

    def start_after_ok_bound(self, duration: float) -> float:
        """How long ``start_after_ok`` waits at most, in seconds."""
        return self.start_after_ok_wait_s if self.start_after_ok_wait_s is not None else max(duration, 120.0)
    #: an explicit schedule (written by `eos-chaos explore`): when given it replaces the
    #: seeded draw from ``faults``, and interval_s, fault_duration_s, first_fault_s and
    #: quiet_s are not used
    schedule: list[ScheduledFault] | None = None

    def all_faults(self) -> list[FaultSpec]:
        """``faults`` and the faults of ``schedule``: what the run must be able to apply."""
        return list(self.faults) + [s.fault for s in self.schedule or []]

    def steps(self, seed: int, duration: float, nodes: list[int], clients: list[str]) -> list:
        """The run's fault steps (nemesis.schedule.Step): ``schedule`` when given, else the
        seeded draw. ``duration`` is the load's length in seconds."""
        if self.schedule is not None:
            return explicit_schedule(seed, [s.model_dump(exclude_none=True) | {"fault": s.fault.as_dict()}
                                            for s in self.schedule], nodes, clients, duration)
        return fault_schedule(seed, [f.as_dict() for f in self.faults], nodes, clients, duration,
                              self.interval_s, self.fault_duration_s, self.first_fault_s, self.quiet_s)

    @field_validator("faults", mode="before")
    @classmethod
    def _names(cls, v):
        if isinstance(v, str):  # `faults: kill` would read as the faults k, i, l, l
            raise ValueError(f"faults is a list: write faults: [{v}], not faults: {v}")
        if v is not None and not isinstance(v, list):
            return v  # pydantic says what a list needs
        # a bare name is a fault with default parameters: `faults: [kill, pause]`
        return [{"fault": f} if isinstance(f, str) else f for f in v or []]

    @field_validator("interval_s", "fault_duration_s")
    @classmethod
    def _ordered(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not 0 <= v[0] <= v[1]:
            raise ValueError(f"expected [low, high] with 0 <= low <= high, got {list(v)}")
        return v
