"""Seeded fault schedules: pure data, so a failing run can be replayed and shrunk."""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from nemesis.registry import FAULTS, SPEC_KEYS

#: at most this many faults in one seeded draw: more is a scenario mistake (an interval near 0
#: over a long load), refused when the scenario is loaded (harness.run.scenario.check_targets)
#: and, as a last guard against a draw that never ends, here
MAX_FAULTS = 100_000


@dataclass(frozen=True)
class Step:
    """One nemesis op at ``at`` seconds after the load started."""

    at: float
    f: str
    value: dict[str, Any] = field(default_factory=dict)

    def op(self) -> dict:
        return {"f": self.f, "value": dict(self.value)}

    def to_dict(self) -> dict:
        return asdict(self)


def fault_schedule(seed: int, faults: list[dict[str, Any]], nodes: list[int], clients: list[str],
                   duration: float, interval_s: tuple[float, float], fault_duration_s: tuple[float, float],
                   first_fault_s: float = 5.0, quiet_s: float = 0.0) -> list[Step]:
    """One fault at a time: a fault (chosen by ``weight`` among ``faults``, each a dict with
    ``fault`` naming a registered FaultKind plus its own parameters) starts every
    ``interval_s`` seconds (uniform), lasts ``fault_duration_s`` (uniform, s), and is followed
    by at least ``quiet_s`` seconds without a fault so the cluster can recover. A fault whose
    spec has its own ``duration_s`` range lasts a length drawn from that instead, and the next
    fault starts only after it (and ``quiet_s``) are over. No fault starts that could not last
    its minimum before ``duration``. Targets are chosen here (roles are
    resolved when applied). Parameters other than the targeting keys go into the op's
    ``value.params``.

    Returns steps sorted by time. Raises ValueError for an unknown fault name, a client
    pattern that matches no client, or more than MAX_FAULTS faults (gaps near 0). Same
    arguments, same schedule.
    """
    unknown = [f["fault"] for f in faults if f["fault"] not in FAULTS]
    if unknown:
        raise ValueError(f"unknown faults {unknown}; known: {sorted(FAULTS)}")
    rng = random.Random(seed)
    weights = [float(f.get("weight", 1.0)) for f in faults]
    steps: list[Step] = []
    t = first_fault_s
    while faults and t + fault_duration_s[0] <= duration:
        spec = rng.choices(faults, weights)[0]
        kind = FAULTS[spec["fault"]]
        value = kind.choose(rng, spec, nodes, clients)
        params = {k: v for k, v in spec.items() if k not in SPEC_KEYS}
        if params:
            value["params"] = params
        own = spec.get("duration_s")
        if own is not None and t + own[0] > duration:
            break
        lengths = own or fault_duration_s
        gap = max(rng.uniform(*interval_s), lengths[0] + quiet_s)
        want = rng.uniform(*lengths)
        if own is not None:   # one fault at a time: the next waits for this long one
            gap = max(gap, want + quiet_s)
        length = min(want, gap - quiet_s, duration - t)
        if gap <= 0 or len(steps) >= 2 * MAX_FAULTS:
            raise ValueError(f"the fault schedule would hold more than {MAX_FAULTS:,} faults in {duration:g} s "
                             "(interval_s and the faults' lengths near 0): make them longer")
        steps.append(Step(round(t, 3), kind.start_f, value))
        steps.append(Step(round(t + length, 3), kind.end_f, dict(value)))
        t += gap
    return steps


def explicit_schedule(seed: int, entries: list[dict[str, Any]], nodes: list[int], clients: list[str],
                      duration: float) -> list[Step]:
    """Steps of a schedule given as data (a scenario's ``nemesis.schedule``, drawn by
    ``eos-chaos explore``) instead of drawn from a seed. Each entry is ``{"at": s, "duration":
    s, "fault": {fault spec as in fault_schedule}, "value": {...} | None}``: the fault begins
    ``at`` seconds after the load started and ends ``duration`` seconds later, cut at
    ``duration`` of the load; an entry at or after the load's end is dropped. ``value`` fixes
    the target as schedule.json names it (``{"node": 2}``, ``{"client": "processor-1"}``);
    None lets the fault kind choose it, from ``seed`` and the entry's position. Entries may
    overlap (the nemesis applies them as they come). Returns steps sorted by time; raises
    ValueError for an unknown fault name."""
    steps: list[Step] = []
    for i, e in enumerate(entries):
        spec = e["fault"]
        if spec["fault"] not in FAULTS:
            raise ValueError(f"unknown fault {spec['fault']!r}; known: {sorted(FAULTS)}")
        at = float(e["at"])
        if at >= duration:
            continue
        kind = FAULTS[spec["fault"]]
        value = dict(e.get("value") or {}) or kind.choose(random.Random(seed * 1009 + i), spec, nodes, clients)
        params = {k: v for k, v in spec.items() if k not in SPEC_KEYS}
        if params:
            value["params"] = params
        end = min(at + float(e["duration"]), duration)
        steps.append(Step(round(at, 3), kind.start_f, value))
        steps.append(Step(round(end, 3), kind.end_f, dict(value)))
    # stable: a fault's end stays after its begin when another fault begins at the same time
    return sorted(steps, key=lambda s: s.at)
