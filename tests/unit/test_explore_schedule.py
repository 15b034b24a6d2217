"""nemesis.schedule: an explicit schedule (a scenario's nemesis.schedule) as run steps."""
import pytest

from harness.run.scenario import Scenario, ScenarioError  # noqa: F401
from nemesis.schedule import explicit_schedule


def test_explicit_schedule_keeps_times_targets_and_params_and_cuts_at_the_load_end():
    entries = [
        {"at": 12.0, "duration": 4.0, "fault": {"fault": "kill", "target": "coordinator",
                                               "transactional_id": "eosc-txn-0"}},
        {"at": 3.0, "duration": 2.5, "fault": {"fault": "pause"}, "value": {"node": 2}},
        {"at": 28.0, "duration": 9.0, "fault": {"fault": "kill-client", "clients": ["producer-*"]}},
        {"at": 31.0, "duration": 1.0, "fault": {"fault": "kill"}},  # begins after the load: dropped
    ]
    steps = explicit_schedule(1, entries, [1, 2, 3], ["consumer-0", "producer-0"], 30.0)
    assert [(s.at, s.f) for s in steps] == [(3.0, "pause"), (5.5, "resume"), (12.0, "kill"), (16.0, "start"),
                                            (28.0, "kill-client"), (30.0, "restart-client")]
    assert steps[0].value == {"node": 2} == steps[1].value
    assert steps[2].value == {"role": "coordinator", "transactional_id": "eosc-txn-0"}
    assert steps[4].value == {"client": "producer-0"}
    assert explicit_schedule(1, entries, [1, 2, 3], ["producer-0"], 30.0) == \
        explicit_schedule(1, entries, [1, 2, 3], ["producer-0"], 30.0)
    with pytest.raises(ValueError, match="unknown fault"):
        explicit_schedule(1, [{"at": 1, "duration": 1, "fault": {"fault": "meteor"}}], [1], [], 9.0)


def test_a_scenario_schedule_replaces_the_seeded_draw_and_its_faults_count_for_the_run():
    scn = Scenario.model_validate({
        "name": "x", "duration": 20,
        "nemesis": {"faults": ["pause"], "schedule": [
            {"at": 5, "duration": 3, "fault": "kill", "value": {"node": 3}},
            {"at": 9, "duration": 3, "fault": {"fault": "toxic", "type": "timeout", "timeout_ms": 0}}]}})
    steps = scn.nemesis.steps(7, scn.duration, [1, 2, 3], [])
    assert [(s.at, s.f, s.value.get("node")) for s in steps[:2]] == [(5.0, "kill", 3), (8.0, "start", 3)]
    assert steps[2].value["params"] == {"type": "timeout", "timeout_ms": 0}
    assert [f.fault for f in scn.nemesis.all_faults()] == ["pause", "kill", "toxic"]
    seeded = Scenario.model_validate({"name": "y", "duration": 60, "nemesis": {"faults": ["pause"]}})
    assert seeded.nemesis.steps(7, 60, [1, 2, 3], []) and \
        {s.f for s in seeded.nemesis.steps(7, 60, [1, 2, 3], [])} == {"pause", "resume"}
    with pytest.raises(ValueError, match="unknown fault"):
        Scenario.model_validate({"name": "z", "nemesis": {"schedule": [{"at": 1, "duration": 1, "fault": "meteor"}]}})
