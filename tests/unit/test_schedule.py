import pytest

from nemesis.schedule import fault_schedule

KILL_PAUSE = [{"fault": "kill"}, {"fault": "pause"}]
ENDS = {"kill": "start", "pause": "resume", "kill-client": "restart-client"}


def sched(seed=1, faults=KILL_PAUSE, duration=120.0, clients=(), quiet=0.0):
    return fault_schedule(seed, list(faults), [1, 2, 3], list(clients), duration, (10, 15), (5, 10),
                          quiet_s=quiet)


def test_same_seed_same_schedule_other_seed_other_schedule():
    assert sched(7) == sched(7)
    assert sched(7) != sched(8)


def test_faults_pair_up_do_not_overlap_and_stay_inside_the_load():
    steps = sched(3)
    assert len(steps) % 2 == 0 and steps
    for begin, end in zip(steps[::2], steps[1::2]):
        assert ENDS[begin.f] == end.f and begin.value == end.value
        assert 5 - 1e-6 <= end.at - begin.at <= 10 + 1e-6
        assert end.at <= 120
    starts = [s.at for s in steps[::2]]
    assert all(b - a >= 10 - 1e-6 for a, b in zip(starts, starts[1:]))
    assert all(a.at <= b.at for a, b in zip(steps, steps[1:]))


def test_quiet_period_separates_faults():
    steps = sched(5, quiet=4.0)
    for end, nxt in zip(steps[1::2], steps[2::2]):
        assert nxt.at - end.at >= 4.0 - 1e-6


def test_no_fault_when_nothing_fits_and_unknown_fault_rejected():
    assert fault_schedule(1, [{"fault": "kill"}], [1], [], 7.0, (10, 15), (5, 10), first_fault_s=5) == []
    assert fault_schedule(1, [], [1], [], 100.0, (10, 15), (5, 10)) == []
    with pytest.raises(ValueError, match="unknown faults"):
        fault_schedule(1, [{"fault": "meteor"}], [1], [], 60.0, (10, 15), (5, 10))


def test_client_faults_pick_matching_clients_and_params_travel_in_the_op():
    steps = sched(2, faults=[{"fault": "kill-client", "clients": ["producer-*"], "grace": 3}],
                  clients=["consumer-0", "producer-0", "producer-1"])
    assert steps and all(s.value["client"].startswith("producer-") for s in steps)
    assert steps[0].value["params"] == {"grace": 3}
    with pytest.raises(ValueError, match="no client matches"):
        sched(2, faults=[{"fault": "kill-client", "clients": ["spark-*"]}], clients=["producer-0"])


def test_role_targets_are_left_for_the_moment_of_the_fault():
    steps = sched(1, faults=[{"fault": "kill", "target": "coordinator", "transactional_id": "eosc-txn-0"}])
    assert steps[0].value == {"role": "coordinator", "transactional_id": "eosc-txn-0"}


def test_a_fault_with_its_own_duration_lasts_that_long_and_the_next_waits_for_it():
    toxic = {"fault": "toxic", "type": "timeout", "timeout_ms": 0, "duration_s": [13, 18], "weight": 3}
    faults = [toxic, {"fault": "kill"}]
    steps = fault_schedule(3, faults, [1, 2, 3], [], 120.0, (8, 11), (3, 6), first_fault_s=8)
    pairs = list(zip(steps[::2], steps[1::2]))
    assert {b.f for b, _ in pairs} == {"toxic", "kill"}
    for begin, end in pairs:
        low, high = (13, 18) if begin.f == "toxic" else (3, 6)
        assert low - 1e-6 <= end.at - begin.at <= high + 1e-6 or end.at == 120.0
        assert "duration_s" not in begin.value.get("params", {})   # a spec key, not the toxic's parameter
    for (_, end), (nxt, _) in zip(pairs, pairs[1:]):
        assert nxt.at >= end.at - 1e-6                               # still one fault at a time
    # faults without their own range draw exactly as before (same rng calls): seed 3 of kill/pause
    assert [(s.at, s.f) for s in sched(3)][:4] == [(5.0, "kill"), (14.58, "start"), (15.652, "kill"), (20.718, "start")]
