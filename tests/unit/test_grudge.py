"""Grudges as pure data (nemesis.grudge) and their schedule-time choice (issue 4)."""
import itertools
import random

import pytest

from nemesis import grudge as g
from nemesis.partition import choose_partition
from nemesis.schedule import fault_schedule

N3 = ["n1", "n2", "n3"]
N5 = ["n1", "n2", "n3", "n4", "n5"]


def _no_self(grudge):
    assert all(h not in hated for h, hated in grudge.items()), grudge


def test_empty_and_trivial_cases():
    assert g.complete_grudge([]) == {}
    assert g.complete_grudge([["n1", "n2"]]) == {"n1": frozenset(), "n2": frozenset()}
    assert g.to_json({"n1": frozenset()}) == {}
    assert g.describe({}) == "nothing cut"
    assert g.is_symmetric({})


def test_bisect_puts_the_smaller_half_first():
    assert g.bisect(N3) == (["n1"], ["n2", "n3"])
    assert g.bisect(N5) == (["n1", "n2"], ["n3", "n4", "n5"])
    assert g.bisect(["n1", "n2", "n3", "n4"]) == (["n1", "n2"], ["n3", "n4"])


def test_complete_grudge_cuts_every_link_between_components():
    grudge = g.complete_grudge([["n1"], ["n2", "n3"]])
    assert grudge == {"n1": {"n2", "n3"}, "n2": {"n1"}, "n3": {"n1"}}
    assert g.is_symmetric(grudge)


@pytest.mark.parametrize("nodes", [N3, N5])
def test_isolate_one_cuts_one_node_from_all_others_both_ways(nodes):
    for loner in nodes:
        grudge = g.isolate_one(nodes, loner)
        _no_self(grudge)
        assert g.is_symmetric(grudge)
        assert grudge[loner] == set(nodes) - {loner}
        for other in set(nodes) - {loner}:
            assert grudge[other] == {loner}
    with pytest.raises(ValueError):
        g.isolate_one(nodes, "n9")


@pytest.mark.parametrize("nodes", [N3, N5])
def test_halves_are_a_minority_and_a_majority(nodes):
    for seed in range(20):
        grudge = g.halves(nodes, random.Random(seed))
        _no_self(grudge)
        assert g.is_symmetric(grudge)
        view = g.views(grudge, nodes)
        sides = {frozenset(v) for v in view.values()}
        assert len(sides) == 2
        small, large = sorted(sides, key=len)
        assert small | large == set(nodes) and not small & large
        assert len(small) == len(nodes) // 2 and len(large) == g.majority(len(nodes))


@pytest.mark.parametrize("nodes", [N3, N5])
def test_bridge_keeps_one_node_connected_to_both_halves(nodes):
    for seed in range(20):
        grudge = g.bridge(nodes, random.Random(seed))
        _no_self(grudge)
        assert g.is_symmetric(grudge)
        view = g.views(grudge, nodes)
        bridges = [n for n in nodes if view[n] == set(nodes)]
        assert len(bridges) == 1, (grudge, view)
        rest = [n for n in nodes if n not in bridges]
        # the others fall into two sides that do not hear each other
        sides = {frozenset(view[n] - set(bridges)) for n in rest}
        assert len(sides) == 2 and frozenset().union(*sides) == set(rest)
        assert all(bridges[0] in view[n] for n in rest)


def test_bridge_without_shuffle_follows_jepsen():
    # Jepsen: bisect [n1 n2 n3 n4 n5] -> [n1 n2] [n3 n4 n5], the bridge is n3
    assert g.to_json(g.bridge(N5)) == {"n1": ["n4", "n5"], "n2": ["n4", "n5"], "n4": ["n1", "n2"], "n5": ["n1", "n2"]}


def _ring_property(grudge, nodes):
    view = g.views(grudge, nodes)
    m = g.majority(len(nodes))
    assert all(n in view[n] for n in nodes)
    assert all(len(view[n]) >= m for n in nodes), view  # everyone sees a majority
    assert len({view[n] for n in nodes}) == len(nodes), view  # no two see the same one


@pytest.mark.parametrize("nodes", [N3, ["n1", "n2", "n3", "n4"], N5, [f"n{i}" for i in range(1, 8)]])
def test_majorities_ring_property(nodes):
    for seed in range(30):
        grudge = g.majorities_ring(nodes, random.Random(seed))
        _no_self(grudge)
        assert set(grudge) <= set(nodes)
        _ring_property(grudge, nodes)


def test_majorities_ring_is_a_symmetric_ring_on_five_nodes():
    for seed in range(20):
        grudge = g.majorities_ring(N5, random.Random(seed))
        assert g.is_symmetric(grudge)
        view = g.views(grudge, N5)
        assert all(len(view[n]) == 3 for n in N5)  # itself and its two ring neighbours
        # the "hears" relation is a single 5-cycle
        degree = {n: len(view[n] - {n}) for n in N5}
        assert set(degree.values()) == {2}


def test_majorities_ring_on_three_nodes_is_a_directed_cycle():
    # no symmetric ring exists on 3 nodes; Jepsen's perfect ring drops one direction per pair
    grudge = g.majorities_ring(N3, random.Random(1))
    assert not g.is_symmetric(grudge)
    dropped = g.links(grudge)
    assert len(dropped) == 3
    pairs = {frozenset(p) for p in dropped}
    assert pairs == {frozenset(p) for p in itertools.combinations(N3, 2)}  # every pair cut one way


def test_majorities_ring_needs_three_nodes():
    with pytest.raises(ValueError):
        g.majorities_ring(["n1", "n2"], random.Random(0))


@pytest.mark.parametrize("nodes", [N3, N5])
def test_client_broker_cuts_only_the_client_and_one_node(nodes):
    for node in nodes:
        grudge = g.make_grudge("client-broker", nodes, random.Random(0), node=node)
        assert grudge == {"c": {node}, node: {"c"}}
        assert g.is_symmetric(grudge)
        view = g.views(grudge, nodes + ["c"])
        assert all(view[n] >= set(nodes) for n in nodes)  # the brokers still talk to each other


@pytest.mark.parametrize("kind", g.GRUDGE_KINDS)
@pytest.mark.parametrize("nodes", [N3, N5])
def test_make_grudge_every_kind_is_deterministic_and_round_trips(kind, nodes):
    a = g.make_grudge(kind, nodes, random.Random(7))
    b = g.make_grudge(kind, list(reversed(nodes)), random.Random(7))
    assert a == b  # same seed, same grudge, whatever the order nodes came in
    _no_self(a)
    assert g.links(a), f"{kind} cut nothing"
    assert g.from_json(g.to_json(a)) == {h: v for h, v in a.items() if v}
    symmetric = kind not in ("majorities-ring", "isolate-one-inbound") or (kind == "majorities-ring" and len(nodes) in (4, 5))
    assert g.is_symmetric(a) == symmetric


def test_make_grudge_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown grudge"):
        g.make_grudge("everything", N3, random.Random(0))
    with pytest.raises(ValueError, match="not one of"):
        g.make_grudge("isolate-one", N3, random.Random(0), node="n7")
    with pytest.raises(ValueError, match="cuts nothing"):
        g.make_grudge("bridge", ["n1", "n2"], random.Random(0))
    with pytest.raises(ValueError, match="themselves"):
        g.from_json({"n1": ["n1"]})


def test_json_form_is_sorted_and_drops_empty_entries():
    grudge = {"n10": frozenset({"n2"}), "n2": frozenset({"n10", "c"}), "n3": frozenset()}
    assert list(g.to_json(grudge)) == ["n2", "n10"]
    assert g.to_json(grudge)["n2"] == ["n10", "c"]
    assert g.describe(grudge) == "n2 drops n10,c; n10 drops n2"


def test_invert_grudge_is_the_complement_of_connections():
    assert g.invert_grudge(N3, {"n1": {"n2"}, "n2": {"n1"}}) == {"n1": {"n3"}, "n2": {"n3"}, "n3": {"n1", "n2"}}


# -- schedule-time choice -------------------------------------------------------------------
def test_choose_partition_computes_the_grudge_as_data():
    value = choose_partition(random.Random(3), {"fault": "partition", "grudge": "halves"}, [1, 2, 3], [])
    assert value["kind"] == "halves"
    assert g.is_symmetric(value["grudge"]) and g.links(value["grudge"])
    assert choose_partition(random.Random(3), {"grudge": "halves"}, [1, 2, 3], []) == value
    default = choose_partition(random.Random(0), {}, [1, 2, 3], [])
    assert default["kind"] == "isolate-one"


def test_choose_partition_leaves_roles_for_later():
    spec = {"grudge": "client-broker", "target": "coordinator", "transactional_id": "eosc-txn-0"}
    assert choose_partition(random.Random(0), spec, [1, 2, 3], []) == {
        "kind": "client-broker", "role": "coordinator", "transactional_id": "eosc-txn-0"}
    with pytest.raises(ValueError, match="single-node"):
        choose_partition(random.Random(0), dict(spec, grudge="halves"), [1, 2, 3], [])
    with pytest.raises(ValueError, match="unknown grudge"):
        choose_partition(random.Random(0), {"grudge": "moat"}, [1, 2, 3], [])


def test_partition_schedule_is_replayable_and_pairs_start_with_end():
    faults = [{"fault": "partition", "grudge": k, "target": "random"} for k in g.GRUDGE_KINDS]
    args = (faults, [1, 2, 3], [], 120.0, (10.0, 15.0), (5.0, 10.0))
    steps = fault_schedule(11, *args)
    assert steps == fault_schedule(11, *args)
    starts = [s for s in steps if s.f == "partition"]
    ends = [s for s in steps if s.f == "heal-partition"]
    assert len(starts) == len(ends) >= 5
    for start, end in zip(starts, ends):
        assert start.value == end.value and start.at < end.at
        assert start.value["params"] == {"grudge": start.value["kind"]}
        _no_self(g.from_json(start.value["grudge"]))
