"""Network partitions: a grudge (nemesis.grudge) applied as iptables rules in the namespaces.

``partition`` applies the grudge in its op value: for every host h and every host s that h
must not hear from, ``ip netns exec eosc-<h> iptables -A EOSC -s <address of s> -j DROP``
(Jepsen ``net.clj`` iptables ``drop!``: DROP on INPUT by source, so packets vanish without
an answer and connections hang until they time out). ``heal-partition`` flushes the chain in
every namespace (Jepsen ``heal!``). The name ``heal`` stays the runner's final heal event.

The parameter ``listener`` narrows every rule to one of the brokers' listeners (``-p tcp
--dport <port>``, LISTENER_PORTS): ``broker`` drops only what is sent to the PLAINTEXT listener
(the inter-broker listener: the replica fetchers' Fetch requests, transaction markers, and
clients when a run has no proxy), so a node cut off from the other nodes' brokers stays in
the KRaft quorum (the CONTROLLER listener: votes, metadata fetches, broker heartbeats,
AlterPartition); its followers fall out of the ISR after ``replica.lag.time.max.ms`` and it
leads alone (Kafka docs, "Replication"). ``controller`` drops only KRaft traffic. Default
``all``: every packet from the grudge's sources. Replies are not matched (their destination
port is the sender's ephemeral port): cutting the requests stops the connection.

The rules live in a chain of ours, ``EOSC``, created in each host's namespace at setup and
jumped to first from INPUT, so healing removes exactly our rules and teardown removes the
chain and the jump too. iptables inside a namespace changes only that namespace; nothing here
ever runs iptables in the root namespace (every command goes through Host.run, which is
``ip netns exec eosc-<host>``). Needs ``ctx.extra["network"]``: the run's test network,
whose ``hosts`` map a host name to an object with ``address`` and ``run(*argv)``.

Op values: the schedule holds ``{"kind": "halves", "grudge": {"n1": ["n2", "n3"], ...},
"params": {"grudge": "halves"}}`` (nemesis.grudge.to_json form), or for a single-node kind
(``isolate-one``, ``client-broker``, ``isolate-one-inbound``) aimed at a role, ``{"kind": ..., "role": "coordinator", "transactional_id":
...}`` and the grudge is computed when the fault begins. The completion adds the grudge
applied, the node resolved (role targets), ``rules`` (our rules the namespaces hold afterwards,
read back with ``iptables -S``), ``listener``, ``symmetric`` and ``result``.
"""
from __future__ import annotations

import random
from typing import Any, Protocol

from nemesis import grudge as g
from nemesis.core import NemesisContext, Op
from nemesis.targets import resolve_target

CHAIN = "EOSC"

#: the brokers' listener ports a ``listener`` parameter cuts (harness.cluster.kafka BROKER_PORT
#: and CONTROLLER_PORT, the docker image's listeners; tests/unit/test_partition_listener.py holds them
#: equal: a nemesis does not import the harness); ``all``: no port match, every packet
LISTENER_PORTS: dict[str, int | None] = {"all": None, "broker": 9092, "controller": 9093}


def drop_rules(grudge: g.Grudge, addresses: dict[str, str], listener: str = "all") -> list[tuple[str, list[str]]]:
    """The iptables rules that apply ``grudge``, as ``(host, argv after "iptables -w 5")`` in
    host order: for each host and each source it must not hear from, ``-A EOSC -s <source's
    address> [-p tcp --dport <port>] -j DROP``, the port that of ``listener`` (LISTENER_PORTS).
    ``addresses`` maps a host name to its IPv4 address. Raises ValueError for an unknown
    listener, KeyError for a host without an address."""
    if listener not in LISTENER_PORTS:
        raise ValueError(f"unknown listener {listener!r}; known: {list(LISTENER_PORTS)}")
    port = LISTENER_PORTS[listener]
    match = [] if port is None else ["-p", "tcp", "--dport", str(port)]
    return [(host, ["-A", CHAIN, "-s", addresses[src], *match, "-j", "DROP"])
            for host, srcs in g.to_json(grudge).items() for src in srcs]


class HostView(Protocol):
    """One host of the test network (harness.cluster.namespaces.Host)."""

    name: str
    address: str

    def run(self, *argv: str, check: bool = True, timeout: float = 30.0) -> Any: ...


class NetworkView(Protocol):
    """The test network (harness.cluster.namespaces.TestNetwork): host name -> host, and the client host."""

    hosts: dict[str, HostView]

    @property
    def client(self) -> HostView: ...


def choose_partition(rng: random.Random, spec: dict, nodes: list[int], clients: list[str]) -> dict:
    """Schedule-time value of a ``partition`` fault (nemesis.registry Chooser): the grudge of
    ``spec["grudge"]`` (default isolate-one) over the nodes, as data. For a single-node kind
    (nemesis.grudge.SINGLE_NODE_KINDS) with ``target`` coordinator/leader/controller, the role instead (resolved
    when applied). Raises ValueError for an unknown grudge kind or a role on another kind."""
    kind = spec.get("grudge", "isolate-one")
    role = spec.get("target", "random")
    if kind not in g.GRUDGE_KINDS:
        raise ValueError(f"unknown grudge {kind!r}; known: {list(g.GRUDGE_KINDS)}")
    if role != "random":
        if kind not in g.SINGLE_NODE_KINDS:
            raise ValueError(f"target {role} needs a single-node grudge {list(g.SINGLE_NODE_KINDS)}, not {kind}")
        value = {"kind": kind, "role": role}
        for k in ("transactional_id", "key"):
            if spec.get(k):
                value[k] = spec[k]
        return value
    return {"kind": kind, "grudge": g.to_json(g.make_grudge(kind, g.node_names(nodes), rng))}


class PartitionNemesis:
    """Applies grudges with iptables in the hosts' namespaces; see the module docstring."""

    start_f, end_f = "partition", "heal-partition"

    def __init__(self, ctx: NemesisContext):
        network = ctx.extra.get("network")
        if network is None:
            raise ValueError("the partition fault needs the test network (ctx.extra['network'])")
        self.ctx = ctx
        self.network: NetworkView = network
        self.prepared: list[str] = []  # hosts whose namespace has our chain and jump

    def fs(self) -> set[str]:
        return {self.start_f, self.end_f}

    def _iptables(self, host: str, *args: str, check: bool = True):
        return self.network.hosts[host].run("iptables", "-w", "5", *args, check=check, timeout=15)

    def setup(self) -> None:
        """Create chain EOSC and the jump INPUT -> EOSC in every host's namespace. Raises
        NetError (from Host.run) when iptables fails; what was made is undone by teardown."""
        for host in sorted(self.network.hosts):
            self._prepare(host)

    def _prepare(self, host: str) -> None:
        # idempotent, and called again before each partition: a restarted docker container
        # comes back in a fresh network namespace, without our chain
        if self._iptables(host, "-S", CHAIN, check=False).returncode != 0:
            self._iptables(host, "-N", CHAIN)
        if host not in self.prepared:
            self.prepared.append(host)
        if self._iptables(host, "-C", "INPUT", "-j", CHAIN, check=False).returncode != 0:
            self._iptables(host, "-I", "INPUT", "1", "-j", CHAIN)

    def invoke(self, op: Op) -> Op:
        if op["f"] == self.start_f:
            return {"f": op["f"], "value": dict(op["value"], **self._partition(op["value"]))}
        removed = self.heal()
        return {"f": op["f"], "value": dict(op["value"], rules=removed, result=f"removed {removed} rules")}

    def _grudge(self, value: dict) -> tuple[g.Grudge, int | None]:
        if "grudge" in value:
            return g.from_json(value["grudge"]), None
        node = resolve_target(self.ctx.admin, value)
        nodes = [h for h in self.network.hosts if h != self.network.client.name]
        grudge = g.make_grudge(value["kind"], nodes, random.Random(0), node=f"n{node}",
                               client=self.network.client.name)
        return grudge, node

    def _partition(self, value: dict) -> dict:
        grudge, node = self._grudge(value)
        unknown = sorted(({h for h in grudge} | {s for v in grudge.values() for s in v}) - set(self.network.hosts))
        if unknown:
            raise ValueError(f"grudge names hosts that are not on the test network: {unknown}")
        listener = (value.get("params") or {}).get("listener", "all")
        plan = drop_rules(grudge, {h: v.address for h, v in self.network.hosts.items()}, listener)
        for host in g.to_json(grudge):
            self._prepare(host)
        for host, argv in plan:
            self._iptables(host, *argv)
        rules = sum(self._count(h) for h in grudge)  # read back: what the namespaces now hold
        port = LISTENER_PORTS[listener]
        result = g.describe(grudge) + ("" if port is None else f" (tcp port {port}, the {listener} listener, only)")
        out: dict[str, Any] = {"grudge": g.to_json(grudge), "rules": rules, "listener": listener,
                               "symmetric": g.is_symmetric(grudge), "result": result}
        if node is not None:
            out["node"] = node
        return out

    def _count(self, host: str) -> int:
        """Our rules in ``host``'s namespace; 0 when the chain is gone with its namespace (a
        restarted or stopped docker container)."""
        proc = self._iptables(host, "-S", CHAIN, check=False)
        return sum(1 for line in proc.stdout.splitlines() if line.startswith(f"-A {CHAIN} "))

    def heal(self) -> int:
        """Flush our chain in every prepared namespace; return how many rules were removed.
        Raises NetError when a flush fails."""
        removed = 0
        for host in self.prepared:
            n = self._count(host)
            if n:
                self._iptables(host, "-F", CHAIN)
            removed += n
        return removed

    def teardown(self) -> list[str]:
        """Flush and delete chain EOSC and its jump in every namespace we prepared; return
        what could not be removed (a namespace already gone takes its rules with it)."""
        problems = []
        for host in list(self.prepared):
            if self._iptables(host, "-S", CHAIN, check=False).returncode != 0:
                self.prepared.remove(host)  # the chain went with its namespace (a restarted container)
                continue
            for args in (("-F", CHAIN), ("-D", "INPUT", "-j", CHAIN), ("-X", CHAIN)):
                proc = self._iptables(host, *args, check=False)
                if proc.returncode != 0:
                    problems.append(f"iptables {' '.join(args)} in {host}'s namespace failed: {proc.stderr.strip()}")
                    break
            else:
                self.prepared.remove(host)
        return problems
