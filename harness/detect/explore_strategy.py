"""Fault schedules as data, and the Hypothesis strategy ``eos-chaos explore`` searches them with.

A *schedule* is ``{"duration": s, "faults": [{"at": s, "duration": s, "fault": {fault spec},
"value": {target}}, ...]}``: a load time (seconds) and faults drawn from a scenario's own
``nemesis.faults`` (which fault, its target: a node, a client, a grudge or a role; when it
begins; how long it lasts). ``schedules`` is the strategy; ``seeded_schedule`` and
``schedule_choices`` turn the scenario's own seeded draw into one of its examples;
``normalized`` is a schedule as it runs (and folds entries that are one physical fault);
``to_scenario`` makes it a runnable scenario whose ``nemesis.schedule``
(harness.run.scenario.ScheduledFault) replaces the seeded draw. The search itself is
harness.detect.explore.
"""
from __future__ import annotations

import math
import random
from typing import Any

import yaml

from harness.run.scenario import Scenario
from nemesis.registry import FAULTS, SPEC_KEYS, choose_client_target, choose_node_target

#: shortest load an example may have (s): the workers need a few seconds to start
MIN_LOAD_S = 10
#: version of the schedule encoding (``schedules``); part of the example database's key, so a
#: database written by another version is not read as this one's
STRATEGY_VERSION = 3


class ExploreError(ValueError):
    """The scenario cannot be explored (no faults, a load too short); says what to fix."""


# ---------------------------------------------------------------- schedules as data

def client_names(scn: Scenario) -> list[str]:
    """The client worker names a run of ``scn`` starts (readers, then writers), from its
    workload without a cluster; [] when the workload cannot be built here."""
    from harness.workloads import WORKLOADS

    try:
        w = WORKLOADS[scn.workload.name](scn.workload, "127.0.0.1:9", scn.seed or 1)
        return [s.name for s in w.readers()] + [s.name for s in w.writers()]
    except Exception:  # e.g. spark fetches jars when built: client faults then pick at run time
        return []


def fault_choices(scn: Scenario) -> list[dict]:
    """The scenario's faults as spec dicts (weight dropped: the search picks by index)."""
    return [{k: v for k, v in f.as_dict().items() if k != "weight"} for f in scn.nemesis.faults]


def fault_slots(scn: Scenario) -> list[int]:
    """Indices into ``fault_choices(scn)``, each repeated by its weight relative to the
    lightest fault (rounded, 1..8 times): the search draws a fault about as often as the
    seeded draw does, and shrinks toward the first-listed one."""
    ws = [float(f.weight) for f in scn.nemesis.faults]
    return [i for i, w in enumerate(ws) for _ in range(max(1, min(8, round(w / min(ws)))))] if ws else []


def bounds(scn: Scenario, max_faults: int | None = None, min_load_s: int = MIN_LOAD_S) -> dict:
    """The integer ranges ``schedules`` draws from (all in seconds): ``load`` (min_load_s ..
    duration), ``at`` (the scenario's first_fault_s .. load - 1: a fault in the first seconds
    hits workers and a ``__transaction_state`` that do not exist yet), ``length`` (the
    scenario's fault_duration_s, rounded out; a fault with its own ``duration_s`` has its own,
    ``fault_lengths``) and ``long`` (its high end + 1 .. duration / 2, or
    None when that is empty: outages longer than the seeded draw's, which timeout-driven bugs
    need, e.g. F1 needs a link held longer than the producers' flush timeout; a fault is long
    or not by a drawn coin that shrinks to "not"), and ``faults`` (1..max_faults; default as
    many as the seeded draw could fit, at most 8). Raises ExploreError as ``schedules`` does."""
    if not scn.nemesis.faults:
        raise ExploreError(f"scenario {scn.name} has no nemesis.faults to draw from")
    top = int(scn.duration)
    if top < min_load_s:
        raise ExploreError(f"scenario {scn.name} lasts {scn.duration} s; explore needs at least {min_load_s} s of load")
    n = scn.nemesis
    if max_faults is None:
        max_faults = max(1, min(8, math.ceil((top - n.first_fault_s) / max(1.0, n.interval_s[0]))))
    length, long = _length_ranges(n.fault_duration_s, top)
    return {"load": (min(min_load_s, top), top), "at": (min(math.floor(n.first_fault_s), top - 1), top - 1),
            "length": length, "long": long, "faults": (1, max_faults)}


def _length_ranges(lengths, top: int) -> tuple[tuple[int, int], tuple[int, int] | None]:
    lo, hi = max(1, math.floor(lengths[0])), max(1, math.ceil(lengths[1]))
    return (lo, hi), ((hi + 1, top // 2) if hi + 1 <= top // 2 else None)


def fault_lengths(b: dict, spec: dict) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """(length, long) ranges in seconds a fault of ``spec`` is drawn from: ``b``'s, or the
    spec's own ``duration_s`` rounded out with its long range above it (harness.run.scenario.FaultSpec)."""
    own = spec.get("duration_s")
    return (b["length"], b["long"]) if own is None else _length_ranges(own, b["load"][1])


def at_range(b: dict, load: int) -> tuple[int, int]:
    """Start times a fault of a ``load``-second schedule is drawn from (within ``b["at"]``)."""
    return b["at"][0], max(b["at"][0], min(b["at"][1], load - 1))


def _node_choice(kind, spec: dict, nodes: list[int], clients: list[str]) -> bool:
    """True when the fault kind's own chooser would pick one random node ({"node": n}): the
    search then draws the node itself (shrinking toward node 1)."""
    if kind.choose is choose_node_target:
        return spec.get("target", "random") == "random"
    try:
        return set(kind.choose(random.Random(0), spec, nodes, clients)) == {"node"} and \
            spec.get("target", "random") == "random"
    except Exception:
        return False


def schedules(scn: Scenario, *, max_faults: int | None = None, min_load_s: int = MIN_LOAD_S):
    """Hypothesis strategy of schedules for ``scn`` (see the module docstring), within
    ``bounds(scn)``: a load time; 1..max_faults faults, each one of ``scn.nemesis.faults``
    (by ``fault_slots``: weights count), an integer start and length, and a target (node or
    client drawn from the low end; other kinds' targets from a drawn integer through the
    fault kind's own chooser). Raises ExploreError for a scenario without faults or with less
    than ``min_load_s`` of load."""
    from hypothesis import strategies as st

    b = bounds(scn, max_faults, min_load_s)
    faults, slots = fault_choices(scn), fault_slots(scn)
    nodes = list(range(1, scn.cluster.nodes + 1))
    clients = client_names(scn)

    @st.composite
    def one_fault(draw, load):
        spec = faults[slots[draw(st.integers(0, len(slots) - 1))]]
        kind = FAULTS[spec["fault"]]
        at = draw(st.integers(*at_range(b, load)))
        length_r, long_r = fault_lengths(b, spec)
        long = long_r is not None and draw(st.booleans())
        length = draw(st.integers(*(long_r if long else length_r)))
        if _node_choice(kind, spec, nodes, clients):
            value = {"node": draw(st.sampled_from(nodes))}
        elif kind.choose is choose_client_target:
            value = {"client": draw(st.sampled_from(m))} if (m := _clients_of(spec, clients)) else None
        else:  # roles (no choice), grudges and toxics on every broker: the kind's own chooser, seeded by a draw
            t = draw(st.integers(0, 999))
            value = kind.choose(random.Random(t), spec, nodes, clients)
        return {"at": at, "duration": length, "fault": dict(spec), "value": value}

    @st.composite
    def schedule(draw):
        load = draw(st.integers(*b["load"]))
        fs = draw(st.lists(one_fault(load), min_size=1, max_size=b["faults"][1]))
        return {"duration": load, "faults": fs}

    return schedule()


def _clients_of(spec: dict, clients: list[str]) -> list[str]:
    import fnmatch

    pats = spec.get("clients") or ["*"]
    return sorted(c for c in clients if any(fnmatch.fnmatch(c, p) for p in pats))


# ---------------------------------------------------------------- the scenario's own schedules

def seeded_schedule(scn: Scenario, seed: int) -> dict | None:
    """The scenario's own seeded draw (nemesis.schedule.fault_schedule, as ``eos-chaos run
    --seed`` makes it) as a schedule of this module, times rounded to whole seconds; None
    when a drawn fault cannot be told apart from the scenario's fault list."""
    from nemesis.schedule import fault_schedule

    n = scn.nemesis
    nodes = list(range(1, scn.cluster.nodes + 1))
    specs = [f.as_dict() for f in n.faults]
    steps = fault_schedule(seed, specs, nodes, client_names(scn), scn.duration, n.interval_s,
                           n.fault_duration_s, n.first_fault_s, n.quiet_s)
    faults = fault_choices(scn)
    out = []
    for begin, end in zip(steps[0::2], steps[1::2]):
        params = begin.value.get("params", {})
        target = {k: v for k, v in begin.value.items() if k != "params"}
        match = [f for f in faults if FAULTS[f["fault"]].start_f == begin.f
                 and {k: v for k, v in f.items() if k not in SPEC_KEYS} == params
                 and target.get("role", "random") == f.get("target", "random")
                 and all(target.get(k) == f[k] for k in ("transactional_id", "key") if k in f)]
        if not match:
            return None
        out.append({"at": int(round(begin.at)), "duration": max(1, int(round(end.at - begin.at))),
                    "fault": dict(match[0]), "value": target})
    return {"duration": int(scn.duration), "faults": out} if out else None


def schedule_choices(scn: Scenario, sched: dict, *, max_faults: int | None = None,
                     min_load_s: int = MIN_LOAD_S) -> tuple | None:
    """The Hypothesis choice sequence from which ``schedules(scn)`` draws ``sched`` (what its
    example database stores), or None when ``sched`` is outside the strategy's bounds. The
    order is the strategy's: load; then per fault "one more" (True), slot, start, long or not
    (when the scenario allows long faults), length, target; then False."""
    b = bounds(scn, max_faults, min_load_s)
    faults, slots = fault_choices(scn), fault_slots(scn)
    nodes = list(range(1, scn.cluster.nodes + 1))
    clients = client_names(scn)

    def within(v, r):
        return r[0] <= v <= r[1]

    if not within(sched["duration"], b["load"]) or not within(len(sched["faults"]), b["faults"]):
        return None
    out: list = [sched["duration"]]
    for f in sched["faults"]:
        i = faults.index(f["fault"]) if f["fault"] in faults else -1
        if i < 0:
            return None
        length_r, long_r = fault_lengths(b, f["fault"])
        long = long_r is not None and within(f["duration"], long_r)
        if not within(f["at"], at_range(b, sched["duration"])) or not (long or within(f["duration"], length_r)):
            return None
        kind, v = FAULTS[f["fault"]["fault"]], f.get("value")
        out += [True, slots.index(i), f["at"]] + ([long] if long_r is not None else []) + [f["duration"]]
        if _node_choice(kind, f["fault"], nodes, clients):
            if not v or v.get("node") not in nodes:
                return None
            out.append(nodes.index(v["node"]))
        elif kind.choose is choose_client_target:
            m = _clients_of(f["fault"], clients)
            if not m:
                continue  # the strategy draws nothing for the target
            if not v or v.get("client") not in m:
                return None
            out.append(m.index(v["client"]))
        else:
            t = next((t for t in range(1000)
                      if kind.choose(random.Random(t), f["fault"], nodes, clients) == v), None)
            if t is None:
                return None
            out.append(t)
    out.append(False)
    return tuple(out)


def draw_from_choices(strategy, choices: tuple) -> Any:
    """What ``strategy`` draws from ``choices`` (Hypothesis internals; for checking a choice
    sequence before it goes into the example database). Raises on a sequence that does not fit."""
    from hypothesis.control import BuildContext
    from hypothesis.internal.conjecture.data import ConjectureData

    data = ConjectureData.for_choices(choices)
    with BuildContext(data, wrapped_test=None):
        return data.draw(strategy)


#: node faults whose second start on a node already hit is a no-op ("was not running") and
#: whose first end undoes both (nemesis/process.py): equal start and target make one fault,
#: lasting as long as the shortest
FOLD_TO_SHORTEST = frozenset({"kill", "pause"})


def normalized(sched: dict) -> dict:
    """The schedule as it runs: faults that begin before the load ends, sorted by start, each
    cut at the load's end; ``value`` without the ``params`` the fault spec already holds.

    Entries that are physically one fault are folded into one, so that the schedule's size
    counts what ran: equal entries (start, duration, fault spec, target) of any fault, and
    ``kill``/``pause`` entries with equal start, spec and target, which become the shortest of
    them (``FOLD_TO_SHORTEST``). Hypothesis's shrinker makes such copies by shrinking the
    entries of a list towards the same values."""
    load = sched["duration"]
    out: list[dict] = []
    for f in sorted(sched["faults"], key=lambda f: (f["at"], f["fault"]["fault"], f["duration"])):
        if f["at"] >= load:
            continue
        g = {"at": f["at"], "duration": min(f["duration"], load - f["at"]), "fault": dict(f["fault"])}
        if f.get("value"):
            g["value"] = {k: v for k, v in f["value"].items() if k != "params"}
        same = next((h for h in out if h["at"] == g["at"] and h["fault"] == g["fault"]
                     and h.get("value") == g.get("value")
                     and (h["duration"] == g["duration"] or g["fault"]["fault"] in FOLD_TO_SHORTEST)), None)
        if same is None:
            out.append(g)   # sorted by duration within a start, so a folded entry keeps the shortest
    return {"duration": load, "faults": out}


def to_scenario(base: Scenario, sched: dict, *, name: str | None = None) -> Scenario:
    """``base`` with the load time and explicit ``nemesis.schedule`` of ``sched`` (normalized)."""
    s = normalized(sched)
    data = base.model_dump(mode="json", exclude_none=True)
    data["duration"] = float(s["duration"])
    data["nemesis"]["schedule"] = s["faults"]
    if name:
        data["name"] = name
    data.pop("seed", None)
    return Scenario.model_validate(data)


def scenario_yaml(scn: Scenario, header: str = "") -> str:
    """A scenario file's text (comment lines from ``header``), loadable by load_scenario."""
    data = scn.model_dump(mode="json", exclude_none=True)
    data.pop("seed", None)
    head = "".join(f"# {line}\n" for line in header.splitlines())
    return head + yaml.safe_dump(data, sort_keys=False)


def size(sched: dict) -> tuple:
    """How big a schedule is, for reports: (faults, load s, total fault s, sum of starts)."""
    s = normalized(sched)
    return (len(s["faults"]), s["duration"], sum(f["duration"] for f in s["faults"]), sum(f["at"] for f in s["faults"]))
