"""Seeded fault schedules: pure data, so a failing run can be replayed and shrunk."""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from nemesis.process import FAULTS


@dataclass(frozen=True)
class Step:
    """One nemesis op at ``at`` seconds after the load started."""

    at: float
    f: str
    node: int

    def op(self) -> dict:
        return {"f": self.f, "value": {"node": self.node}}

    def to_dict(self) -> dict:
        return asdict(self)


def node_fault_schedule(seed: int, faults: list[str], nodes: list[int], duration: float,
                        interval_s: tuple[float, float], fault_duration_s: tuple[float, float],
                        first_fault_s: float = 5.0) -> list[Step]:
    """Faults on one random node at a time: a fault starts every ``interval_s`` (uniform, s),
    lasts ``fault_duration_s`` (uniform, s, cut so it ends before the next starts and before
    ``duration``; none starts that could not last its minimum), and is healed by its end op. Returns steps sorted by time.

    Raises ValueError for an unknown fault name. Same arguments, same schedule.
    """
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise ValueError(f"unknown node faults {unknown}; known: {sorted(FAULTS)}")
    rng = random.Random(seed)
    steps: list[Step] = []
    t = first_fault_s
    # a fault that could not last its minimum before the end of the load is not started
    while faults and t + fault_duration_s[0] <= duration:
        fault = rng.choice(faults)
        node = rng.choice(nodes)
        gap = rng.uniform(*interval_s)
        length = min(rng.uniform(*fault_duration_s), gap - 0.5, duration - t)
        if length <= 0:
            break
        _, start_f, end_f = FAULTS[fault]
        steps.append(Step(round(t, 3), start_f, node))
        steps.append(Step(round(t + length, 3), end_f, node))
        t += gap
    return steps
