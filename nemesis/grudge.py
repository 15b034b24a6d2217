"""Grudges: which hosts must not hear from which, as pure data (Jepsen ``nemesis.clj``).

A *grudge* maps a host to the set of hosts it must not hear from: ``{"n1": {"n2", "n3"}}``
means n1 drops every packet whose source is n2 or n3. Hosts are the test network's short
names: ``"n1"``, ``"n2"``, ... for Kafka nodes and ``"c"`` for the client host (producers,
consumers, the admin agent, the toxiproxy server). Hosts that hold no grudge are absent or map
to an empty set. Applying a grudge (iptables rules) is nemesis.partition's job; everything here
is a pure function of its arguments plus an explicit ``random.Random``, so a schedule that
holds a grudge is replayable data.

A one-way grudge cuts TCP both ways in practice: a connection needs packets in both
directions (SYN and SYN-ACK, data and ACK), so "a does not hear from b" also stops b's
connections to a. The kinds below are symmetric except ``majorities-ring`` on 3 or 6+ nodes.

Kinds (``GRUDGE_KINDS``), after Jepsen ``nemesis.clj``:

- ``isolate-one``: one node cut off from every other node (``split-one`` + ``complete-grudge``);
  the clients still reach it.
- ``halves``: nodes shuffled and cut into two halves, the smaller first (``bisect`` +
  ``complete-grudge``; Jepsen ``partition-random-halves``); with 3 nodes, 1 | 2.
- ``majorities-ring``: every node sees a majority, but no two nodes see the same majority
  (Jepsen ``majorities-ring``: the perfect ring up to 5 nodes, the stochastic one above,
  redrawn here until the views are distinct).
- ``bridge``: two halves that both still reach one node in the middle (Jepsen ``bridge``).
- ``client-broker``: the client host and one node cannot reach each other; the nodes still
  talk among themselves (not in Jepsen's Kafka test, whose clients are never partitioned).
- ``isolate-one-inbound``: one node hears none of the other nodes; they still hear it (the
  one-way half of isolate-one). Dropping by source alone, that cuts TCP both ways as said
  above; with a partition's ``listener`` (nemesis.partition) only connections the others open
  to the node's listener stall (replies to the node's own connections go to its ephemeral
  ports and pass): a leader whose followers cannot fetch from it while it still fetches from
  them and reaches the other transaction coordinators.
"""
from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence

Grudge = dict[str, frozenset[str]]

GRUDGE_KINDS = ("isolate-one", "halves", "majorities-ring", "bridge", "client-broker", "isolate-one-inbound")
#: kinds that cut a single chosen node away, so a role (coordinator, leader...) can pick it
SINGLE_NODE_KINDS = ("isolate-one", "client-broker", "isolate-one-inbound")
CLIENT = "c"


def majority(n: int) -> int:
    """Smallest number of nodes that is more than half of ``n`` (Jepsen ``util/majority``)."""
    return n // 2 + 1


def node_names(node_ids: Iterable[int]) -> list[str]:
    """Host names of Kafka node ids, sorted by id: ``[1, 2, 3] -> ["n1", "n2", "n3"]``."""
    return [f"n{i}" for i in sorted(node_ids)]


def bisect(nodes: Sequence[str]) -> tuple[list[str], list[str]]:
    """Cut ``nodes`` in half, order kept, smaller half first (Jepsen ``bisect``)."""
    half = len(nodes) // 2
    return list(nodes[:half]), list(nodes[half:])


def split_one(nodes: Sequence[str], loner: str) -> tuple[list[str], list[str]]:
    """``([loner], the rest)`` (Jepsen ``split-one``). Raises ValueError if loner is not in nodes."""
    if loner not in nodes:
        raise ValueError(f"{loner!r} is not one of {list(nodes)}")
    return [loner], [n for n in nodes if n != loner]


def complete_grudge(components: Iterable[Iterable[str]]) -> Grudge:
    """Every host hears only the hosts of its own component (Jepsen ``complete-grudge``).

    ``[["n1"], ["n2", "n3"]] -> {"n1": {"n2", "n3"}, "n2": {"n1"}, "n3": {"n1"}}``.
    """
    comps = [frozenset(c) for c in components]
    universe = frozenset().union(*comps) if comps else frozenset()
    return {node: universe - comp for comp in comps for node in comp}


def invert_grudge(nodes: Iterable[str], conns: Mapping[str, Iterable[str]]) -> Grudge:
    """From "who may hear whom" to a grudge: each node hates every node not in its ``conns``
    entry (Jepsen ``invert-grudge``). A node hears itself whether listed or not."""
    universe = frozenset(nodes)
    return {a: universe - frozenset(conns.get(a, ())) - {a} for a in universe}


def isolate_one(nodes: Sequence[str], loner: str) -> Grudge:
    """``loner`` cut off from every other node; Jepsen ``partition-random-node``."""
    return complete_grudge(split_one(nodes, loner))


def isolate_one_inbound(nodes: Sequence[str], loner: str) -> Grudge:
    """``loner`` hears none of the other nodes; they still hear it: ``{loner: the others}``.
    Raises ValueError if loner is not in nodes."""
    alone, rest = split_one(nodes, loner)
    return {alone[0]: frozenset(rest)}


def halves(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Shuffled nodes cut into two halves, smaller first; Jepsen ``partition-random-halves``."""
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    return complete_grudge(bisect(shuffled))


def bridge(nodes: Sequence[str], rng: random.Random | None = None) -> Grudge:
    """Two halves that cannot reach each other, and one node of the larger half (the bridge)
    that both halves reach and that reaches both (Jepsen ``bridge``; Jepsen shuffles first,
    as ``rng`` does here when given). Needs at least 3 nodes to cut anything."""
    order = list(nodes)
    if rng is not None:
        rng.shuffle(order)
    small, large = bisect(order)
    the_bridge = large[0]
    grudge = complete_grudge([small, large])
    del grudge[the_bridge]  # the bridge snubs nobody
    return {n: hates - {the_bridge} for n, hates in grudge.items()}  # and nobody hates it


def majorities_ring(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Every node sees a majority (itself included), no two nodes the same majority (Jepsen
    ``majorities-ring``). Up to 5 nodes the perfect ring: nodes shuffled into a ring, each node
    the middle of a window of ``majority(n)`` consecutive ring positions, hating the rest; above
    5 the stochastic variant (Jepsen ``majorities-ring-stochastic``).

    The perfect ring is symmetric on 4 and 5 nodes. On 3 nodes it is a directed cycle (a
    hates c, b hates a, c hates b), which for TCP cuts every pair: all nodes are isolated from
    each other, whatever the data says. Raises ValueError for fewer than 3 nodes.
    """
    n = len(nodes)
    if n < 3:
        raise ValueError(f"a majorities ring needs at least 3 nodes, got {n}")
    if n > 5:
        return _majorities_ring_stochastic(nodes, rng)
    ring = list(nodes)
    rng.shuffle(ring)
    m = majority(n)
    universe = frozenset(ring)
    grudge: Grudge = {}
    for start in range(n):
        window = [ring[(start + k) % n] for k in range(m)]
        grudge[window[m // 2]] = universe - frozenset(window)
    return grudge


def _majorities_ring_stochastic(nodes: Sequence[str], rng: random.Random, attempts: int = 100) -> Grudge:
    """Jepsen's stochastic ring, retried until no two nodes see the same majority: Jepsen's
    algorithm alone does not promise that (measured: about 3 % of draws on 6 nodes, 10 % on
    7 and 9 nodes repeat a view).
    Raises RuntimeError if ``attempts`` draws all repeat one."""
    for _ in range(attempts):
        grudge = _stochastic_draw(nodes, rng)
        seen = views(grudge, nodes)
        if len(set(seen.values())) == len(nodes):
            return grudge
    raise RuntimeError(f"no majorities ring with distinct views on {len(nodes)} nodes in {attempts} draws")


def _stochastic_draw(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Link least-connected nodes pairwise until every node reaches a majority (Jepsen
    ``majorities-ring-stochastic``)."""
    m = majority(len(nodes))
    conns: dict[str, set[str]] = {a: {a} for a in nodes}
    while True:
        # nodes by current degree (size of the set it hears, itself included), ties shuffled
        order = list(nodes)
        rng.shuffle(order)
        order.sort(key=lambda a: len(conns[a]))
        a = order[0]
        if len(conns[a]) >= m:
            return invert_grudge(nodes, conns)
        b = next(x for x in order if x not in conns[a])
        conns[a].add(b)
        conns[b].add(a)


def client_broker(node: str, client: str = CLIENT) -> Grudge:
    """The client host and ``node`` cannot reach each other; nothing else is cut."""
    return {client: frozenset({node}), node: frozenset({client})}


def make_grudge(kind: str, nodes: Sequence[str], rng: random.Random, *, node: str | None = None,
                client: str = CLIENT) -> Grudge:
    """The grudge of ``kind`` (one of GRUDGE_KINDS) over ``nodes`` (host names of the Kafka
    nodes, not the client). ``node`` fixes the loner of isolate-one / the cut-off broker of
    client-broker; otherwise it is drawn from ``rng``. Raises ValueError for an unknown kind,
    a ``node`` not in ``nodes``, or too few nodes for the kind to cut anything."""
    nodes = sorted(nodes, key=_host_order)
    if kind not in GRUDGE_KINDS:
        raise ValueError(f"unknown grudge {kind!r}; known: {list(GRUDGE_KINDS)}")
    if node is not None and node not in nodes:
        raise ValueError(f"{node!r} is not one of the nodes {nodes}")
    if kind == "client-broker":
        if not nodes:
            raise ValueError("client-broker needs at least one node")
        return client_broker(node or rng.choice(nodes), client)
    if len(nodes) < (3 if kind in ("majorities-ring", "bridge") else 2):
        raise ValueError(f"grudge {kind!r} cuts nothing on {len(nodes)} node(s)")
    if kind == "isolate-one":
        return isolate_one(nodes, node or rng.choice(nodes))
    if kind == "isolate-one-inbound":
        return isolate_one_inbound(nodes, node or rng.choice(nodes))
    if kind == "halves":
        return halves(nodes, rng)
    if kind == "bridge":
        return bridge(nodes, rng)
    return majorities_ring(nodes, rng)


# -- views of a grudge ---------------------------------------------------------------------
def _host_order(host: str) -> tuple[int, str]:
    digits = host.lstrip("n")
    return (int(digits), host) if host.startswith("n") and digits.isdigit() else (1 << 30, host)


def to_json(grudge: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """JSON form: ``{host: sorted hosts}`` in host order, hosts without a grudge left out."""
    return {h: sorted(v, key=_host_order) for h, v in sorted(grudge.items(), key=lambda kv: _host_order(kv[0])) if v}


def from_json(data: Mapping[str, Iterable[str]]) -> Grudge:
    """Inverse of ``to_json``. Raises ValueError if a host hates itself."""
    grudge = {str(h): frozenset(str(x) for x in v) for h, v in data.items()}
    selfish = [h for h, v in grudge.items() if h in v]
    if selfish:
        raise ValueError(f"hosts cannot be partitioned from themselves: {selfish}")
    return grudge


def links(grudge: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """Dropped directions as ``(receiver, sender)`` pairs."""
    return {(dst, src) for dst, srcs in grudge.items() for src in srcs}


def is_symmetric(grudge: Mapping[str, Iterable[str]]) -> bool:
    """True when every dropped direction is dropped the other way too."""
    dropped = links(grudge)
    return all((src, dst) in dropped for dst, src in dropped)


def views(grudge: Mapping[str, Iterable[str]], hosts: Iterable[str]) -> dict[str, frozenset[str]]:
    """What each of ``hosts`` still hears (itself included) under ``grudge``."""
    universe = frozenset(hosts)
    return {h: universe - frozenset(grudge.get(h, ())) for h in universe}


def describe(grudge: Mapping[str, Iterable[str]]) -> str:
    """One line for people: ``n1 hears nothing from n2,n3; n2 hears nothing from n1; ...``."""
    parts = [f"{h} drops {','.join(v)}" for h, v in to_json(grudge).items()]
    return "; ".join(parts) or "nothing cut"
