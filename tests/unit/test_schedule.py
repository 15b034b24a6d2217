import pytest

from nemesis.schedule import node_fault_schedule


def sched(seed=1, faults=("kill", "pause"), duration=120.0):
    return node_fault_schedule(seed, list(faults), [1, 2, 3], duration, (10, 15), (5, 10))


def test_same_seed_same_schedule_other_seed_other_schedule():
    assert sched(7) == sched(7)
    assert sched(7) != sched(8)


def test_faults_pair_up_do_not_overlap_and_stay_inside_the_load():
    steps = sched(3)
    assert len(steps) % 2 == 0 and steps
    ends = {"kill": "start", "pause": "resume"}
    for begin, end in zip(steps[::2], steps[1::2]):
        assert ends[begin.f] == end.f and begin.node == end.node
        assert 5 - 1e-6 <= end.at - begin.at <= 10 + 1e-6
        assert end.at <= 120
    starts = [s.at for s in steps[::2]]
    assert all(b - a >= 10 - 1e-6 for a, b in zip(starts, starts[1:]))
    assert all(a.at <= b.at for a, b in zip(steps, steps[1:]))


def test_no_fault_when_nothing_fits_and_unknown_fault_rejected():
    assert node_fault_schedule(1, ["kill"], [1], 7.0, (10, 15), (5, 10), first_fault_s=5) == []
    assert node_fault_schedule(1, [], [1], 100.0, (10, 15), (5, 10)) == []
    with pytest.raises(ValueError, match="unknown node faults"):
        node_fault_schedule(1, ["meteor"], [1], 60.0, (10, 15), (5, 10))
