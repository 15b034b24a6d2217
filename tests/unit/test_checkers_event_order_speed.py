"""The impossible-cycle finder made O(n log n) (issue 20) finds exactly what it found before.

The cases of ``impossible_cycle_cases`` on simulated histories with swapped log records (both
shapes of ``checkers.synthetic.simulate``: short transactions, and long ones with the G0-realtime
cycles of correct smoke runs) are compared with those recorded from the quadratic finder of
commit f4642cd (tests/data/event_order/recorded.json: per history the anomaly names, the ops
of each case and a sha256 of the whole output), and so are those of ``cycle_cases``, whose
component search changed with it (recorded_cycles.json). The O(E) certificate ``time_order`` must hold
on correct histories, simulated and real, and never on one with an impossible cycle.
"""

import hashlib
import json
import random
from pathlib import Path

import pytest

from checkers import load_history
from checkers.finders.cycles import cycle_cases
from checkers.finders.event_order import INTRA, RT, event_graph, event_times, impossible_cycle_cases, time_order
from checkers.synthetic.simulate import simulate

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDED = DATA / "event_order" / "recorded.json"
RECORDED_CYCLES = DATA / "event_order" / "recorded_cycles.json"  # cycle_cases, same histories
LONG = {"long_txn_rate": 0.3, "crash_rate": 0.01}
# (ops, seed, record pairs swapped, simulate shape)
HISTORIES = [(3000, 0, 3, {}), (3000, 1, 40, {}), (3000, 2, 120, {}),
             (3000, 3, 5, {"long_txn_rate": 0.2, "crash_rate": 0.01}),
             (3000, 4, 60, LONG), (3000, 5, 0, {"long_txn_rate": 0.3})]


def swapped_history(n_ops: int, seed: int, n_swaps: int, **shape) -> list[dict]:
    """``simulate(n_ops, seed, **shape)`` with up to ``n_swaps`` pairs of adjacent committed
    records of different ops exchanged, consistently in the sends' acknowledged offsets and
    in every poll: a later send may now sit before an earlier one (impossible cycles)."""
    ev = simulate(n_ops, seed=seed, **shape)
    rnd = random.Random(seed)
    by_key: dict[str, list] = {}
    for i, e in enumerate(ev):
        if e["type"] == "ok" and e["f"] in ("send", "txn"):
            for m in e["value"]:
                if m[0] == "send":
                    by_key.setdefault(m[1], []).append((m[2][0], m[2][1], i))
    send_map, poll_map = {}, {}
    keys = sorted(by_key)
    for _ in range(n_swaps):
        k = rnd.choice(keys)
        es = sorted(by_key[k])
        j = rnd.randrange(len(es) - 1)
        (o1, v1, i1), (o2, v2, i2) = es[j], es[j + 1]
        if i1 == i2:
            continue
        send_map[(k, v1)], send_map[(k, v2)] = o2, o1
        poll_map[(k, o1)], poll_map[(k, o2)] = v2, v1
    for e in ev:
        if e["type"] != "ok":
            continue
        if e["f"] in ("send", "txn"):
            for m in e["value"]:
                if m[0] == "send" and (m[1], m[2][1]) in send_map:
                    m[2] = [send_map[(m[1], m[2][1])], m[2][1]]
        elif e["f"] == "poll":
            for m in e["value"]:
                for k, recs in m[1].items():
                    for r in recs:
                        if (k, r[0]) in poll_map:
                            r[1] = poll_map[(k, r[0])]
    return ev


def certifies(h) -> bool:
    """Whether ``event_times(h)`` rises along every edge of ``event_graph(h)`` (the one
    source of the edges): strictly but on I -> C -> K, K(A) -> T(A), T_j -> T_j+1."""
    p = event_times(h)
    if p is None:
        return False
    g = event_graph(h)
    n = g["n"]
    ps, pd = p[g["src"]], p[g["dst"]]
    weak = (g["kind"] == INTRA) | ((g["kind"] == RT) & (g["dst"] >= 3 * n))
    assert ((ps < pd) | (weak & (ps == pd))).all()
    return True


def digest(cases: list[dict]) -> dict:
    return {"names": [c["anomaly"] for c in cases], "ops": [c.get("ops") for c in cases],
            "sha256": hashlib.sha256(json.dumps(cases, sort_keys=True, default=str).encode()).hexdigest()}


@pytest.mark.parametrize("i", range(len(HISTORIES)))
def test_cases_are_those_of_the_quadratic_finder(i):
    n, seed, swaps, shape = HISTORIES[i]
    h = load_history(swapped_history(n, seed, swaps, **shape))
    cases = impossible_cycle_cases(h)
    got, want = digest(cases), json.loads(RECORDED.read_text())[i]
    assert got["names"] == want["names"]
    assert got["ops"] == want["ops"]
    assert got["sha256"] == want["sha256"]
    if cases:  # the certificate never holds on a history with a cycle of events
        assert time_order(h) is False
    # cycles.sccs and the per-component edges (cycles._within) changed with it: cycle_cases too
    got, want = digest(cycle_cases(h)), json.loads(RECORDED_CYCLES.read_text())[i]
    assert (got["names"], got["sha256"]) == (want["names"], want["sha256"])


def test_recorded_histories_hold_impossible_cycles_of_every_name():
    rec = json.loads(RECORDED.read_text())
    assert {name for r in rec for name in r["names"]} >= {"G0-realtime", "G1c-realtime", "G0-process"}
    assert max(len(r["names"]) for r in rec) == 50  # MAX_CASES reached once


@pytest.mark.parametrize("shape", [{}, LONG])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_certificate_holds_on_correct_simulated_histories(seed, shape):
    h = load_history(simulate(4000, seed=seed, **shape))
    assert time_order(h) is True and certifies(h)


@pytest.mark.parametrize("name", ["real-smoke-s1", "real-read-uncommitted-s2", "real-inflight-abort-s2"])
def test_the_certificate_on_real_runs(name):
    """Holds on the correct real runs; fails on the one with two impossible cycles."""
    h = load_history(DATA / name / "history.jsonl")
    assert time_order(h) is (not impossible_cycle_cases(h))
    assert certifies(h) is time_order(h)


def test_equal_times_leave_it_to_the_search():
    """Two sends of one process in the same ns: no certificate (K(A) < I(B) fails), yet no
    cycle: the search decides, and finds none."""
    ev = simulate(200, seed=3)
    plain = [e for e in ev if e["f"] == "send"]  # the idempotent producer's process
    plain[2]["time"] = plain[1]["time"]  # its second send invoked in the ns the first completed
    h = load_history(ev)
    assert h.n_problems == 0
    assert time_order(h) is False
    assert impossible_cycle_cases(h) == []


def test_long_transaction_shape_holds_possible_realtime_cycles():
    """simulate(long_txn_rate=...): valid with smoke's expected names, G0-realtime found,
    no case impossible."""
    from checkers import check
    v = check(simulate(3000, seed=2, **LONG), allowed=["G0", "G0-process", "G0-realtime", "G1c-realtime"])
    assert v.valid is True, (v.anomaly_counts, v.unknown_reasons)
    assert v.anomaly_counts.get("G0-realtime", 0) > 0 and v.impossible == []


def test_read_committed_lookup_by_process_id_takes_negative_ids():
    """The read_committed processes are looked up in a table by process id: a negative id
    (a history's processes are any integers) must still find its level."""
    from checkers.synthetic.build import HistoryBuilder
    b = HistoryBuilder()
    b.assign(-3, ["x/0"], isolation="read_committed")
    b.invoke(0, "txn", [["send", "x/0", 5]], {"transactional_id": "t"})
    b.poll(-3, {"x/0": [(0, 5)]})
    b.complete(0, "ok", [["send", "x/0", [0, 5]]], {"transactional_id": "t", "commit_ns": b.time + 1_000_000})
    assert [c["anomaly"] for c in impossible_cycle_cases(load_history(b.events))] == ["G1c-realtime"]
