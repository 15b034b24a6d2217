"""eos-chaos explore without a cluster: drawn schedules as runnable scenario files, and the
search/shrink/replay logic of harness.detect.explore.Explorer with a fake runner (instant verdicts
chosen from the schedule), Hypothesis's real engine and example database."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings

from harness.detect.explore import Explorer
from harness.detect.explore_strategy import (ExploreError, bounds, draw_from_choices, fault_choices, fault_lengths,
                                      fault_slots, normalized, scenario_yaml, schedule_choices, schedules,
                                      seeded_schedule, size, to_scenario)
from harness.run.scenario import Scenario, load_scenario
from checkers.run import Verdict

ROOT = Path(__file__).resolve().parents[2]
F1 = load_scenario(ROOT / "scenarios" / "coordinator-inflight-abort.yaml")

MIXED = Scenario.model_validate({
    "name": "mixed", "duration": 40,
    "workload": {"name": "eos-pipeline", "processors": 2},
    "nemesis": {"faults": [
        "kill", {"fault": "kill", "target": "coordinator", "transactional_id": "eosc-proc-0"},
        {"fault": "kill-client", "clients": ["processor-*"]},
        {"fault": "partition", "grudge": "halves"},
        {"fault": "toxic", "type": "timeout", "timeout_ms": 0}],
        "fault_duration_s": [2, 5]}})


@settings(max_examples=40, deadline=None)
@given(sched=schedules(MIXED))
def test_a_drawn_schedule_round_trips_through_a_scenario_file(sched, tmp_path_factory):
    p = tmp_path_factory.mktemp("s") / "minimal.yaml"
    p.write_text(scenario_yaml(to_scenario(MIXED, sched, name="mixed-minimal"), "header\nline two"))
    scn = load_scenario(p)
    n = normalized(sched)
    assert scn.name == "mixed-minimal" and scn.duration == n["duration"] and 10 <= n["duration"] <= 40
    assert [s.model_dump(exclude_none=True) | {"fault": s.fault.as_dict()} for s in scn.nemesis.schedule] == \
        [dict(f, fault={**f["fault"], "weight": 1.0}) for f in n["faults"]]
    steps = scn.nemesis.steps(1, scn.duration, [1, 2, 3], ["processor-0", "processor-1"])
    assert len(steps) == 2 * len(n["faults"]) and all(s.at <= scn.duration for s in steps)
    for f in n["faults"]:
        # starts from first_fault_s (5 s by default); lengths up to half the load (20 s)
        assert 5 <= f["at"] < n["duration"] and 1 <= f["duration"] <= 20 and f["at"] + f["duration"] <= n["duration"]
        v = f.get("value") or {}
        if f["fault"]["fault"] == "kill" and "target" not in f["fault"]:
            assert v["node"] in (1, 2, 3)
        if f["fault"]["fault"] == "kill-client":
            assert v["client"] in ("processor-0", "processor-1")
        if f["fault"].get("target") == "coordinator":
            assert v == {"role": "coordinator", "transactional_id": "eosc-proc-0"}


def test_bounds_start_at_first_fault_s_and_allow_faults_longer_than_the_seeded_draw():
    b = bounds(F1)
    assert b["load"] == (10, 60) and b["at"] == (8, 59)
    # fault_duration_s is [3, 6]; F1 needs a link held longer than the 10 s flush timeout
    assert b["length"] == (3, 6) and b["long"] == (7, 30) and b["faults"] == (1, 7)
    # the toxic has its own duration_s, [13, 18], and its own long range above it
    toxic, kill = fault_choices(F1)[0], fault_choices(F1)[1]
    assert fault_lengths(b, toxic) == ((13, 18), (19, 30)) and fault_lengths(b, kill) == ((3, 6), (7, 30))
    assert bounds(MIXED)["long"] == (6, 20)
    assert bounds(Scenario.model_validate({"name": "x", "duration": 12,
                                           "nemesis": {"fault_duration_s": [5, 10]}}))["long"] is None
    # the toxic (weight 3) is drawn three times as often as each kill (weight 1), the pause twice
    assert fault_slots(F1) == [0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 7]


@pytest.mark.parametrize("scn", [F1, MIXED], ids=["f1", "mixed"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_scenarios_own_seeded_draw_is_an_example_of_the_strategy(scn, seed):
    """seeded_schedule + schedule_choices give the choice sequence the example database keeps;
    drawn back through the strategy it is the seeded draw, and it runs the same faults at the
    same (rounded) times on the same targets as `eos-chaos run --seed`."""
    sched = seeded_schedule(scn, seed)
    assert sched is not None and sched["duration"] == int(scn.duration)
    choices = schedule_choices(scn, sched)
    assert choices is not None and choices[0] == sched["duration"] and choices[-1] is False
    assert normalized(draw_from_choices(schedules(scn), choices)) == normalized(sched)
    clients = ["processor-0", "processor-1"]
    ran = to_scenario(scn, sched).nemesis.steps(seed, scn.duration, [1, 2, 3], clients)
    drawn = scn.nemesis.steps(seed, scn.duration, [1, 2, 3], clients)
    assert [(s.f, s.value) for s in ran] == [(s.f, s.value) for s in drawn]
    assert all(abs(a.at - b.at) <= 1.0 for a, b in zip(ran, drawn))


def test_a_long_toxic_is_an_example_and_out_of_bounds_schedules_are_not():
    toxic = fault_choices(F1)[0]
    sched = {"duration": 30, "faults": [{"at": 8, "duration": 14, "fault": toxic, "value": {"node": 2}}]}
    choices = schedule_choices(F1, sched)
    # load, one more, slot of the toxic (index 0), start, long (no: within its own 13-18 s),
    # length, node index, no more
    assert choices == (30, True, 0, 8, False, 14, 1, False)
    assert schedule_choices(F1, {"duration": 30, "faults": [dict(sched["faults"][0], duration=12)]}) is None
    assert normalized(draw_from_choices(schedules(F1), choices)) == normalized(sched)
    assert schedule_choices(F1, dict(sched, duration=61)) is None              # load past the scenario's
    assert schedule_choices(F1, {"duration": 30, "faults": [dict(sched["faults"][0], at=2)]}) is None
    assert schedule_choices(F1, {"duration": 30, "faults": [dict(sched["faults"][0], at=30)]}) is None  # at the load's end
    assert schedule_choices(F1, {"duration": 30, "faults": [dict(sched["faults"][0], duration=31)]}) is None
    assert schedule_choices(F1, {"duration": 30, "faults": [dict(sched["faults"][0], fault={"fault": "pause"})]}) is None


def test_a_scenario_without_faults_cannot_be_explored():
    with pytest.raises(ExploreError, match="no nemesis.faults"):
        schedules(Scenario.model_validate({"name": "x", "nemesis": {"faults": []}}))
    with pytest.raises(ExploreError, match="at least 10 s"):
        schedules(Scenario.model_validate({"name": "x", "duration": 5}))


class FakeRunner:
    """Invalid (lost-write) when the run's explicit schedule kills the coordinator of
    eosc-txn-1 for at least 4 s within a load of at least 20 s (``toxic``: holds a link for at
    least 13 s, F1's own trigger); ``flaky`` drops every other such failure (a real cluster
    does not fail every time). Records what it ran."""

    def __init__(self, flaky: bool = False, other: bool = False, toxic: bool = False):
        self.flaky, self.other, self.toxic, self.calls, self.n = flaky, other, toxic, [], 0

    def guilty(self, f: dict) -> bool:
        if self.toxic:
            return f["fault"]["fault"] == "toxic" and f["duration"] >= 13
        return f["fault"].get("transactional_id") == "eosc-txn-1" and f["fault"]["fault"] == "kill" and f["duration"] >= 4

    def __call__(self, scn, results_root, *, source=None, stop=None, progress=None):
        self.n += 1
        sched = [s.model_dump(exclude_none=True) | {"fault": s.fault.as_dict()} for s in scn.nemesis.schedule]
        self.calls.append((source, scn.duration, sched, scn.seed))
        bad = scn.duration >= 20 and any(self.guilty(f) for f in sched)
        if bad and self.flaky and self.n % 2 == 0:
            bad = False
        failing = ["lost-write", "unseen"] if bad else (["duplicate"] if self.other and len(sched) >= 3 else [])
        verdict = {"valid": not failing, "failing": failing, "anomalies": {}, "anomaly_counts": {}}
        return SimpleNamespace(verdict=verdict, run_dir=Path(results_root) / f"run-{self.n}")


def test_search_finds_shrinks_to_the_single_guilty_fault_and_replays(tmp_path):
    runner = FakeRunner(toxic=True)
    ex = Explorer(F1, tmp_path / "results", tmp_path / "out", runner=runner, k=3, budget_s=10_000, seed=3)
    out = ex.explore()
    assert out.found and out.anomalies == ["lost-write", "unseen"]
    # the search began with the scenario's own seeded draw (seed 1 holds node 1's link from 8 s for 15 s)
    assert runner.calls[0][0] == "eos-chaos explore (search)" and runner.calls[0][1] == 60
    assert [dict(f, fault={k: v for k, v in f["fault"].items() if k != "weight"}) for f in runner.calls[0][2]] == \
        normalized(seeded_schedule(F1, 1))["faults"]
    m = out.minimal
    # the smallest failing schedule: one fault, the guilty toxic, as short and early as it can be
    # (its own duration_s is 13-18 s, first_fault_s 8 s), in the shortest load that holds it
    assert m["duration"] == 21 and len(m["faults"]) == 1
    f = m["faults"][0]
    assert f["fault"]["fault"] == "toxic" and (f["at"], f["duration"]) == (8, 13) and f["value"] == {"node": 1}
    assert out.replays == {"runs": 3, "invalid": 3, "original_kind": 3}
    # the minimal schedule is a runnable scenario file; explore.json holds the outcome and every run
    scn = load_scenario(out.minimal_path)
    assert scn.duration == 21 and scn.nemesis.schedule[0].fault.fault == "toxic"
    assert "eos-chaos run" in out.minimal_path.read_text().splitlines()[2]
    doc = json.loads((tmp_path / "out" / "explore.json").read_text())
    assert doc["found"] and doc["minimal"]["duration"] == 21 and doc["replays"]["invalid"] == 3
    assert doc["runs"] == runner.n == len(doc["attempts"])
    assert [a["phase"] for a in doc["attempts"]][-3:] == ["replay"] * 3
    # every run had its own seed
    assert len({c[3] for c in runner.calls}) == runner.n

    # Hypothesis's example database keeps the failure: the next search starts from it
    again = FakeRunner(toxic=True)
    out2 = Explorer(F1, tmp_path / "results", tmp_path / "out2", runner=again, k=1, budget_s=10_000, seed=9,
                    db_dir=tmp_path / "out" / "hypothesis-db").explore()
    assert out2.found and again.calls[0][0] == "eos-chaos explore (search)"
    assert again.calls[0][1] == 21 and len(again.calls[0][2]) == 1


def test_a_kill_shrinks_into_the_first_listed_toxic_with_the_toxics_own_length():
    """The shrinker lowers a fault's index toward the first-listed fault; the length drawn
    next is then out of the new fault's own duration_s and becomes its shortest (Hypothesis
    replaces a choice that no longer fits by the simplest one): a 3 s kill becomes a 13 s
    toxic, long enough to make F1, not a 3 s one."""
    kill = next(f for f in fault_choices(F1) if f["fault"] == "kill")
    sched = {"duration": 30, "faults": [{"at": 8, "duration": 3, "fault": kill,
                                         "value": {"role": "coordinator", "transactional_id": "eosc-txn-0"}}]}
    choices = schedule_choices(F1, sched)
    assert choices == (30, True, fault_slots(F1).index(1), 8, False, 3, 0, False)
    lowered = (30, True, 0) + choices[3:]
    f = draw_from_choices(schedules(F1), lowered)["faults"][0]
    assert f["fault"]["fault"] == "toxic" and f["duration"] == 13 and f["at"] == 8


def test_a_shrink_step_fails_when_any_of_k_runs_fails_with_an_original_kind(tmp_path):
    ex = Explorer(F1, tmp_path / "r", tmp_path / "o", runner=FakeRunner(flaky=True, other=True), k=3,
                  budget_s=10_000, seed=5)
    ex.original = {"lost-write"}
    guilty = {"duration": 30, "faults": [{"at": 2, "duration": 5, "value": {"role": "coordinator", "transactional_id": "eosc-txn-1"},
                                          "fault": {"fault": "kill", "target": "coordinator", "transactional_id": "eosc-txn-1"}}]}
    ex.runner.n = 1  # the next run is the second: the flaky runner lets it pass, the third fails
    assert ex.predicate(guilty) is True
    assert [a.counted for a in ex.attempts] == [False, True]
    # a schedule that only yields another anomaly (duplicate) is not the original failure
    other = {"duration": 30, "faults": [dict(guilty["faults"][0], fault={"fault": "pause"}, value={"node": 1})] * 3}
    assert ex.predicate(other) is False and len(ex.attempts) == 5
    assert ex.predicate(other) is False and len(ex.attempts) == 5   # the same schedule does not run again


def test_budget_ends_the_search_with_the_best_schedule_so_far(tmp_path):
    now = [0.0]

    def clock():
        return now[0]

    class Slow(FakeRunner):
        def __call__(self, *a, **kw):
            now[0] += 100.0  # each run takes 100 s of the budget
            return super().__call__(*a, **kw)

    runner = Slow()
    out = Explorer(F1, tmp_path / "r", tmp_path / "o", runner=runner, k=2, budget_s=1000, seed=3,
                   clock=clock).explore()
    assert out.stopped == "budget" or out.found
    searched = [c for c in runner.calls if "replay" not in c[0]]
    assert len(searched) <= 11
    if out.found:  # the best so far, replayed k times after the budget
        assert out.replays["runs"] == 2 and out.minimal_path.is_file()
        assert size(out.minimal)[0] >= 1


def test_stop_ends_the_search_but_the_best_schedule_is_still_replayed(tmp_path):
    def on_event(kind, **info):
        if kind == "done" and info["attempt"].counted and info["attempt"].phase == "search":
            ex.stop.set()  # Ctrl-C right after the first failing run

    runner = FakeRunner()
    ex = Explorer(F1, tmp_path / "r", tmp_path / "o", runner=runner, k=2, budget_s=10_000, seed=1,
                  on_event=on_event)
    out = ex.explore()
    assert out.found and out.stopped == "interrupted"
    assert [c[0] for c in runner.calls].count("eos-chaos explore (shrink)") == 0
    assert out.replays["runs"] == 2 and out.minimal_path.is_file()


def test_the_database_key_ignores_fields_left_at_their_defaults(tmp_path):
    """A failure kept by an earlier explore is found again after the scenario model grows a
    field (nemesis.start_after_ok did): the key leaves defaults out; a changed value still
    changes it."""
    scn = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "coordinator-inflight-abort.yaml")

    def key(s):
        return Explorer(s, tmp_path, tmp_path, runner=lambda *a, **k: None).database_key()

    explicit = scn.model_copy(update={"nemesis": scn.nemesis.model_copy(update={"start_after_ok": [], "quiet_s": 0.0})})
    other = scn.model_copy(update={"nemesis": scn.nemesis.model_copy(update={"quiet_s": 1.0})})
    assert key(explicit) == key(scn) != key(other)


def test_a_later_search_shrinks_a_failure_an_earlier_one_was_cut_short_on(tmp_path):
    """A search stopped while shrinking (budget, Ctrl-C) keeps its best failure; the next
    search must shrink it further. Hypothesis takes a failure in its primary corpus for
    already shrunk and stops at once, so kept failures are moved to the secondary corpus."""
    import threading

    stop = threading.Event()

    class CutShort(FakeRunner):
        def __call__(self, *a, **kw):
            res = super().__call__(*a, **kw)
            if self.n >= 2:  # the first failure and one shrink step, then Ctrl-C
                stop.set()
            return res

    first = Explorer(F1, tmp_path / "results", tmp_path / "out", runner=CutShort(), k=1, budget_s=10_000,
                     seed=3, stop=stop).explore()
    assert first.found and first.stopped == "interrupted"
    assert (len(first.minimal["faults"]), first.minimal["duration"]) != (1, 20)   # not yet minimal
    again = FakeRunner()
    out2 = Explorer(F1, tmp_path / "results", tmp_path / "out2", runner=again, k=1, budget_s=10_000, seed=9,
                    db_dir=tmp_path / "out" / "hypothesis-db").explore()
    assert out2.found and again.calls[0][0] == "eos-chaos explore (search)"
    # it went on shrinking from there (before: the kept failure replayed once, then replays)
    assert again.n > 1 + 1 and size(out2.minimal) < size(first.minimal)


COORD0 = {"role": "coordinator", "transactional_id": "eosc-txn-0"}
KILL0 = {"fault": "kill", "target": "coordinator", "transactional_id": "eosc-txn-0"}


def test_entries_that_are_one_physical_fault_fold_into_one():
    """The 2026-11-24 explore shrank to three equal kills of one coordinator at 5 s: one kill
    (the other two found the broker "was not running"), yet counted as 3 faults."""
    kill = {"at": 5, "duration": 3, "fault": KILL0, "value": COORD0}
    assert normalized({"duration": 60, "faults": [kill] * 3})["faults"] == [kill]
    # a kill or pause of the same target at the same time lasts until the first end starts it again
    longer = dict(kill, duration=5)
    assert normalized({"duration": 60, "faults": [longer, kill, longer]})["faults"] == [kill]
    assert size({"duration": 60, "faults": [longer, kill, dict(kill, at=16)]})[0] == 2
    # another start, another target or another fault spec is another fault
    other = [dict(kill, at=6), dict(kill, value={"node": 1}), dict(kill, fault=dict(KILL0, transactional_id="eosc-txn-1"))]
    assert len(normalized({"duration": 60, "faults": [kill, *other]})["faults"]) == 4
    # two toxics of different lengths are two toxics (each is removed at its own end)
    toxic = {"at": 5, "duration": 3, "fault": {"fault": "toxic", "type": "timeout"}, "value": {"node": 1}}
    assert len(normalized({"duration": 60, "faults": [toxic, dict(toxic, duration=12), toxic]})["faults"]) == 2


class ByFaults(FakeRunner):
    """Invalid (lost-write) or valid by ``pattern[n]``, n the run's fault count: the i-th run
    with n faults fails when ``pattern[n][i % len]`` is "x"."""

    def __init__(self, pattern: dict[int, str]):
        super().__init__()
        self.pattern, self.seen = pattern, {}

    def __call__(self, scn, results_root, *, source=None, stop=None, progress=None):
        self.n += 1
        n = len(scn.nemesis.schedule)
        i = self.seen[n] = self.seen.get(n, -1) + 1
        bad = self.pattern[n][i % len(self.pattern[n])] == "x"
        self.calls.append((source, scn.duration, n, scn.seed))
        failing = ["lost-write"] if bad else []
        return SimpleNamespace(verdict=Verdict(valid=not failing, failing=failing), run_dir=Path(results_root) / f"run-{self.n}")


def test_an_unconfirmed_minimal_falls_back_to_the_smallest_schedule_that_replays(tmp_path):
    """The 2026-11-24 explore: a single kill failed 1 run in 3 and was accepted by a shrink
    step (1 of k), then failed 0 of 3 replays; the 4-kill schedule accepted before it failed
    3 of 3. The replays now go back up the accepted schedules until one fails in 2 of 3."""
    kill = {"at": 5, "duration": 3, "fault": KILL0, "value": COORD0}
    one = {"duration": 60, "faults": [kill]}
    two = {"duration": 60, "faults": [kill, dict(kill, at=16)]}
    four = {"duration": 60, "faults": [kill, dict(kill, at=16), dict(kill, at=25), dict(kill, at=35)]}
    runner = ByFaults({1: "-", 2: "x-x", 4: "x"})
    ex = Explorer(F1, tmp_path / "r", tmp_path / "o", runner=runner, k=3, budget_s=10_000)
    ex.original = {"lost-write"}
    ex.chain = [normalized(four), normalized(two), normalized(two), normalized(one)]
    ex.best = normalized(one)
    rep = ex.replay()
    # one kill: 2 valid replays and 2 of 3 can no longer be reached; then two kills: 3 runs
    assert [r["runs"] for r in ex.replayed] == [2, 3]
    assert rep == {"runs": 3, "invalid": 2, "original_kind": 2} and ex.best == normalized(two)
    assert [c[2] for c in runner.calls] == [1, 1, 2, 2, 2]   # the 4-kill schedule was not needed
    # none confirmed: the smallest stays, with its own replays
    ex2 = Explorer(F1, tmp_path / "r2", tmp_path / "o2", runner=ByFaults({1: "x--", 2: "-"}), k=3, budget_s=10_000)
    ex2.original, ex2.chain, ex2.best = {"lost-write"}, [normalized(two), normalized(one)], normalized(one)
    assert ex2.replay() == {"runs": 3, "invalid": 1, "original_kind": 1} and ex2.best == normalized(one)


def test_explore_reports_the_confirmed_schedule_and_what_it_tried(tmp_path):
    runner = FakeRunner(flaky=True)
    out = Explorer(F1, tmp_path / "results", tmp_path / "out", runner=runner, k=3, budget_s=10_000, seed=3).explore()
    doc = json.loads((tmp_path / "out" / "explore.json").read_text())
    assert doc["confirmed"] is out.confirmed
    assert doc["replayed"] and doc["replayed"][-1]["original_kind"] == doc["replays"]["original_kind"]
    assert out.confirmed == (out.replays["original_kind"] >= 2)
    head = out.minimal_path.read_text().splitlines()[3]
    assert head.startswith("# Replays: invalid with an original anomaly in") and "of 3 needed" in head
