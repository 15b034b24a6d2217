"""harness/detect/pinning.py: a failing run's role targets pinned to the nodes they hit.

Real data: F9's run (docs/findings/F9-evidence: the hunt's 4.2.2 torn transaction), whose
schedule kills "the coordinator of" eosc-txn-3 and eosc-txn-0; its replays hit other nodes
because the role resolves anew (docs/records/2026-11-29-hunt-blind-java.md)."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.detect.explore_strategy import to_scenario
from harness.detect.pinning import pin_schedule, resolved_begins, write_pinned
from harness.run.scenario import load_scenario
from nemesis.schedule import explicit_schedule

ROOT = Path(__file__).resolve().parents[2]
F9 = ROOT / "docs" / "findings" / "F9-evidence"


def f9_schedule() -> dict:
    d = yaml.safe_load((F9 / "scenario.yaml").read_text())
    return {"duration": d["duration"], "faults": d["nemesis"]["schedule"]}


def test_f9_run_pins_its_coordinator_kills_to_the_nodes_it_hit():
    sched = f9_schedule()
    before = json.dumps(sched, sort_keys=True)
    pinned, n = pin_schedule(sched, F9 / "run" / "history.jsonl")
    # n3 killed at 6 s, n3 again at 14 s (already down) and 19 s, then n1 at 27 s
    assert n == 4
    assert [(f["at"], f["value"]) for f in pinned["faults"]] == [
        (6.0, {"node": 3}), (14.0, {"node": 3}), (19.0, {"node": 3}), (27.0, {"node": 1})]
    assert json.dumps(sched, sort_keys=True) == before  # the input is not changed
    # the nemesis applies a pinned value as is: begin and end on the pinned node
    steps = explicit_schedule(1, pinned["faults"], [1, 2, 3], [], pinned["duration"])
    assert [(s.at, s.f, s.value.get("node")) for s in steps][-2:] == [(32.0, "start", 3), (32.0, "start", 1)]


def test_without_a_history_or_a_matching_event_nothing_is_pinned(tmp_path):
    sched = f9_schedule()
    assert pin_schedule(sched, tmp_path / "absent.jsonl") == (sched, 0)
    h = tmp_path / "history.jsonl"
    h.write_text("\n".join(json.dumps(e) for e in [
        # another transactional.id's coordinator, and a begin long before the entry
        {"index": 0, "process": "nemesis", "time": 6_100_000_000, "type": "info", "f": "kill",
         "value": {"role": "coordinator", "transactional_id": "eosc-txn-9", "node": 2, "result": "killed"}},
        {"index": 1, "process": "nemesis", "time": 1_000_000_000, "type": "info", "f": "kill",
         "value": {"role": "coordinator", "transactional_id": "eosc-txn-0", "node": 2, "result": "killed"}},
        "not json",
    ]) + "\n")
    assert len(resolved_begins(h)) == 2
    pinned, n = pin_schedule(sched, h)
    assert n == 0 and pinned == sched


def test_write_pinned_writes_a_loadable_scenario_beside_the_finding(tmp_path):
    base = load_scenario(ROOT / "scenarios" / "cascading-kills.yaml")
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text((F9 / "run" / "history.jsonl").read_text())
    finding = tmp_path / "new.yaml"
    out = write_pinned(finding, {"schedule": f9_schedule()}, str(run), "new: torn-transaction",
                       lambda ex: to_scenario(base, ex["schedule"]))
    assert out == tmp_path / "new.pinned.yaml"
    scn = load_scenario(out)
    assert [e.value for e in scn.nemesis.schedule] == [{"node": 3}, {"node": 3}, {"node": 3}, {"node": 1}]
    assert write_pinned(finding, {"schedule": f9_schedule()}, None, "x", lambda ex: base) is None
