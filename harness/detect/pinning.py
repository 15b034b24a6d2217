"""A failing run's fault schedule with its role targets pinned to the nodes they hit.

A schedule may name a role instead of a node (``target: coordinator`` of a transactional.id,
the leader of a partition, the active controller: nemesis/targets.py). The role resolves when
the fault begins, so a replay of the same schedule may kill other nodes: F9's three replays on
Kafka 4.2.2 killed n3 then n1, n2 then n3, and n3 then n1, where the failing run had killed n3
twice and then n1 (docs/findings/F9.md). ``pin_schedule`` reads the nodes the run's nemesis
recorded (its history's nemesis completions carry ``node``) and writes them into the schedule
as ``value: {"node": N}``, which ``nemesis.schedule.explicit_schedule`` applies as is. The fault
times still drift by the run's own timing, so a pinned replay repeats the sequence of nodes, not
the interleaving with the clients.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from checkers import load_history
from nemesis.registry import FAULTS

#: how much earlier than its entry's ``at`` (s) a nemesis event may be and still be its begin;
#: history times count from the run's start, the schedule's from the load's (a fraction of a
#: second apart)
EARLY_S = 1.0


def resolved_begins(history: Path) -> list[dict[str, Any]]:
    """The nemesis completions that name the node a fault hit: ``{"t": s, "f", "role",
    "transactional_id", "key", "node"}``, in history order, read with the checkers' history
    reader (``checkers.load_history``: its ``nemesis`` events; malformed lines are its
    problems, skipped). A missing or unreadable history gives []."""
    try:
        h = load_history(Path(history))
    except (OSError, ValueError):
        return []
    out: list[dict[str, Any]] = []
    for e in h.nemesis:
        v = e.get("value")
        if not isinstance(v, dict) or "node" not in v or "result" not in v or not isinstance(e.get("time"), int):
            continue
        out.append({"t": e["time"] / 1e9, "f": e.get("f"), "role": v.get("role"),
                    "transactional_id": v.get("transactional_id"), "key": v.get("key"), "node": v["node"]})
    return out


def pin_schedule(sched: dict[str, Any], history: Path) -> tuple[dict[str, Any], int]:
    """(``sched`` with each role-targeted entry's ``value`` replaced by ``{"node": N}``, the
    number pinned). ``sched`` is a schedule as the hunt and explore keep it (``{"duration",
    "faults": [{"at", "duration", "fault", "value"}]}``); an entry is pinned by the first unused
    completion of its fault's begin (``FAULTS[fault].start_f``) for the same role (and
    transactional.id or key) at or after ``at - EARLY_S``. Entries the history does not show
    (a fault that never began) keep their role. ``sched`` itself is not changed."""
    out = copy.deepcopy(sched)
    begins = resolved_begins(history)
    used: set[int] = set()
    pinned = 0
    for entry in sorted(out.get("faults") or [], key=lambda f: f["at"]):
        value = entry.get("value") or {}
        kind = FAULTS.get((entry.get("fault") or {}).get("fault"))
        if "role" not in value or kind is None:
            continue
        for i, b in enumerate(begins):
            if i in used or b["f"] != kind.start_f or b["t"] < entry["at"] - EARLY_S:
                continue
            if (b["role"], b["transactional_id"], b["key"]) != (
                    value.get("role"), value.get("transactional_id"), value.get("key")):
                continue
            used.add(i)
            entry["value"] = {"node": int(b["node"])}
            pinned += 1
            break
    return out, pinned


def write_pinned(path: Path, example: dict, run_dir: str | None, name: str,
                 build: Callable[[dict], Any]) -> Path | None:
    """Beside a finding's scenario file ``path``, ``<stem>.pinned.yaml``: ``example`` (a hunt
    example: ``schedule`` and what ``build`` needs to make its Scenario) with the role targets
    pinned to the nodes its failing run in ``run_dir`` hit. None when the run is unknown or
    nothing was pinned."""
    from harness.detect.explore_strategy import scenario_yaml

    if not run_dir:
        return None
    sched, n = pin_schedule(example["schedule"], Path(run_dir) / "history.jsonl")
    if not n:
        return None
    out = path.with_name(path.stem + ".pinned.yaml")
    out.write_text(scenario_yaml(build({**example, "schedule": sched}),
                                 f"{path.name} with its {n} role target(s) pinned to the nodes the failing run hit "
                                 f"({run_dir}; finding: {name}).\nReplay: sudo .venv/bin/eos-chaos run {out}"))
    return out
