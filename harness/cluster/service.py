"""One cluster service for every backend, with a ducktape-style lifecycle.

The runner, the pytest fixture ``eos_cluster``, the findings' reproducers, the benches and the
integration tests bring a cluster up and down only through ClusterService, and all but some
integration tests through harness.cluster.session.ClusterSession (the machine's lock,
leftovers, start and teardown as one context manager)::

    service = ClusterService(backend, logdir, proxies=True, seed=7)
    service.clean_leftovers()   # what a crashed earlier run left: [descriptions]
    service.start()             # nodes, admin agent, brokers registered, toxiproxy in front
    service.create_topics(topics, replication_factor=3, min_isr=2)
    service.wait_ready([t.name for t in topics], min_isr=2)
    ctx = service.nemesis_context(pool)          # what the nemesis may touch
    service.heal()              # every node resumed and running again
    problems = service.teardown()                # stop() then clean(): what could not be undone

The service owns the admin agent (harness.cluster.agent), the toxiproxy server in front of the
brokers (harness.cluster.toxiproxy_server.ClientProxies) and readiness (``cluster_ready``, judged through the
admin API, never by sleeping). Everything a backend differs in is behind ``Backend``: how
nodes start, die, freeze and thaw (node control), the hosts a grudge is applied on (network
faults), where clients run and which addresses they use. Ducktape's Service has the same
verbs (start, wait, stop, clean); ``heal`` is Jepsen's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Protocol, runtime_checkable

from harness.cluster.agent import Agent
from harness.cluster.toxiproxy_server import ClientProxies
from harness.util import CONFIG_ENV, wait_until
from nemesis.core import NemesisContext, NodeProcess


class ServiceError(RuntimeError):
    """The service was asked for something its backend does not offer (e.g. toxiproxy links
    on a backend without a test network); the message says what to change."""


class ClientHost(Protocol):
    """Where the admin agent, the client workers and toxiproxy run (harness.cluster.namespaces.Host)."""

    name: str
    address: str

    def exec_prefix(self) -> list[str]: ...


@runtime_checkable
class Backend(Protocol):
    """What a cluster backend implements (netns, docker, external).

    ``network`` is the test network for grudges and proxies, shaped like
    harness.cluster.namespaces.TestNetwork: ``hosts`` (host name "n<i>" / "c" -> object with ``address`` and
    ``run(*argv, check, timeout)`` that runs a command, iptables in practice, in that host's
    network namespace), ``client`` (the client host) and ``node(i)``. None when the backend
    cannot cut links (external): partition and toxic faults are then refused at load.
    """

    name: str
    network: Any | None
    #: librdkafka settings every client needs on this cluster (SASL/TLS of an external cluster)
    client_config: dict[str, str]

    def clean_leftovers(self) -> list[str]:
        """Remove what a crashed earlier run of this backend left; return descriptions of it."""
        ...

    def prepare(self) -> None:
        """Make the network (and whatever else must exist before the nodes, e.g. a Docker
        engine and image); afterwards ``network`` and the node addresses are final."""
        ...

    def start(self, client_listeners: dict[int, str] | None) -> None:
        """Start every node on the prepared network. ``client_listeners``: node id -> "host:port"
        of the proxy the node advertises on its CLIENT listener (None: no CLIENT listener).
        Raises ClusterError / NetError / a backend error naming the log to read."""
        ...

    @property
    def client_host(self) -> ClientHost: ...

    @property
    def bootstrap(self) -> str:
        """host:port,... of the brokers as the client host reaches them directly."""
        ...

    def node_ids(self) -> list[int]: ...
    def node(self, node_id: int) -> NodeProcess: ...

    def addresses(self) -> dict[int, str]:
        """Node id -> "host:port" of the node's broker listener (meta.json ``nodes``)."""
        ...

    def dead_nodes(self) -> list[int]:
        """Nodes that exited on their own (a crash to report)."""
        ...

    def heal(self) -> list[str]:
        """Resume paused nodes and start stopped ones; return what was done."""
        ...

    def stop(self) -> list[str]:
        """Stop every node; return what could not be stopped."""
        ...

    def clean(self) -> list[str]:
        """Remove everything ``start`` made (network, containers, volumes); return what could
        not be removed."""
        ...

    def meta(self) -> dict[str, Any]:
        """Backend facts for meta.json (e.g. ``image``)."""
        ...


def heal_nodes(nodes: dict[int, NodeProcess]) -> list[str]:
    """Resume every paused node and start every node that is not running, in node-id order;
    return what was done ("resumed n2", "started n3"). ``nodes``: node id -> a node with
    ``paused``, ``resume``, ``running`` and ``start`` (every backend's heal)."""
    done = []
    for i, n in sorted(nodes.items()):
        if n.paused:
            n.resume()
            done.append(f"resumed n{i}")
        if not n.running():
            n.start()
            done.append(f"started n{i}")
    return done


def cluster_ready(agent: Agent, nodes: int, topics: list[str] | None = None, min_isr: int = 2) -> bool:
    """All ``nodes`` brokers registered, a controller elected, and every partition of ``topics``
    led with at least ``min_isr`` replicas in sync (admin API metadata)."""
    d = agent.request("describe", timeout=5, topics=topics)
    if len(d["brokers"]) < nodes or d["controller"] in (-1, None):
        return False
    for name in topics or []:
        t = d["topics"].get(name)
        if t is None or t["error"] or not t["partitions"]:
            return False
        if any(p["leader"] < 0 or len(p["isr"]) < min_isr for p in t["partitions"].values()):
            return False
    return True


class ClusterService:
    """The cluster of one run (or one pytest session) on ``backend``; see the module docstring.

    ``proxies``: put a toxiproxy proxy in front of every broker and make clients bootstrap
    through them (link faults, harness.cluster.toxiproxy_server). ``logdir``: agent.log, toxiproxy.log and
    the backend's node logs. ``delete_topics``: delete the topics this service created when
    it stops (the external backend: a cluster that is not ours keeps nothing of the run).
    ``group_prefix``: also delete, when it stops, every consumer group whose id starts with it
    (the run's, harness.cluster.client_access.RunNames; "" deletes none).
    """

    def __init__(self, backend: Backend, logdir: Path, *, proxies: bool = False, seed: int = 0,
                 delete_topics: bool = False, group_prefix: str = ""):
        self.backend = backend
        self.logdir = Path(logdir)
        self.want_proxies = proxies
        self.seed = seed
        self.delete_topics = delete_topics
        self.group_prefix = group_prefix
        self.proxies: ClientProxies | None = None
        self.agent: Agent | None = None
        self.created_topics: list[str] = []
        self.timings: dict[str, float] = {}

    # -- lifecycle -----------------------------------------------------------------------
    def clean_leftovers(self) -> list[str]:
        """What a crashed earlier run left, removed; one description each."""
        return self.backend.clean_leftovers()

    def start(self, timeout: float = 180.0) -> None:
        """Start the nodes and the admin agent, wait until every broker is registered with an
        active controller (``timeout`` s), then start toxiproxy when asked. Raises what the
        backend raises, WaitTimeout, ServiceError, ToxiproxyError."""
        self.logdir.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        self.backend.prepare()
        if self.want_proxies:
            if self.backend.network is None:
                raise ServiceError(f"toxiproxy links need a test network; the {self.backend.name} "
                                   "backend has none")
            self.proxies = ClientProxies(self.backend.network, self.backend.node_ids(), self.logdir,
                                         seed=self.seed)
        self.backend.start(self.proxies.advertised if self.proxies else None)
        self.agent = Agent(self.backend.client_host, self.backend.bootstrap, self.logdir / "agent.log",
                           config=self.backend.client_config)
        self.wait_ready(timeout=timeout, what=f"{len(self.node_ids())} brokers registered with an "
                        f"active controller (see {self.logdir}/n*.log)")
        if self.proxies:  # clients then bootstrap through the proxies; the admin agent stays direct
            self.proxies.start()
        self.timings["start_s"] = round(time.monotonic() - t0, 2)

    def wait_ready(self, topics: list[str] | None = None, min_isr: int = 2, timeout: float = 180.0,
                   what: str | None = None) -> None:
        """Wait (``timeout`` s) until ``cluster_ready``; raises WaitTimeout naming ``what``."""
        nodes = len(self.node_ids())
        wait_until(lambda: cluster_ready(self.agent, nodes, topics, min_isr), timeout,
                   what or "every partition of the workload's topics to have a leader and an ISR")

    def warm_coordinators(self, broker: dict[str, str], timeout: float = 60.0) -> list[str]:
        """Before the load: have the brokers create ``__transaction_state`` and
        ``__consumer_offsets`` and elect their coordinators (the agent's ``warm``), then wait
        until every partition of both has a leader and enough replicas in sync to write
        (``transaction.state.log.min.isr`` / 2, at most the topic's replication factor).
        Kafka creates them on the first FindCoordinator, and a fresh 3-node cluster on 2
        cores then answered NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for 10-30 s into
        the load: faults landed before producers had registered (CI, 2026-11-29). ``broker``:
        the scenario's ``cluster.broker`` overrides. Returns problems (never raises): the run
        goes on with cold coordinators. Not for a cluster that is not ours (external). The lookups
        run in a one-shot process (``_warm``), then the agent's describe is polled."""
        nodes = len(self.node_ids())

        def need(rf_key: str, isr_key: str) -> int:
            return max(1, min(int(broker.get(isr_key, 2)), int(broker.get(rf_key, 3)), nodes))

        try:
            res = self._warm(timeout)
            bad = [f"{k}: {v}" for k, v in res.items() if v not in ("ok", "asked")]
            if bad:
                return [f"coordinator warm-up: {'; '.join(bad)}"]
            want = {"__transaction_state": need("transaction.state.log.replication.factor",
                                                "transaction.state.log.min.isr"),
                    "__consumer_offsets": need("offsets.topic.replication.factor", "min.insync.replicas")}
            wait_until(lambda: all(cluster_ready(self.agent, nodes, [t], n) for t, n in want.items()), timeout,
                       "every partition of __transaction_state and __consumer_offsets to have a leader")
        except Exception as exc:  # the load still runs; its first inits wait for the coordinators
            return [f"coordinator warm-up: {type(exc).__name__}: {exc}"[:300]]
        return []

    def _warm(self, timeout: float) -> dict:
        """harness.cluster.agent's ``--warm`` in a process of its own in the client namespace
        (librdkafka aborted the long-lived agent after it made these clients); its one JSON line.
        Raises RuntimeError when it gives none."""
        proc = subprocess.run(
            self.backend.client_host.exec_prefix() + [sys.executable, "-m", "harness.cluster.agent", "--warm",
                                                      self.backend.bootstrap],
            capture_output=True, text=True, timeout=timeout + 30,
            env=dict(os.environ, **{CONFIG_ENV: json.dumps(self.backend.client_config or {})}))
        lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
        if not lines:
            raise RuntimeError(f"the warm-up process exited {proc.returncode} without an answer: "
                               f"{(proc.stderr.strip().splitlines() or [''])[-1][:200]}")
        return json.loads(lines[-1])

    def create_topics(self, topics: Iterable[Any], replication_factor: int, min_isr: int,
                      timeout: float = 30.0) -> dict[str, str]:
        """Create ``topics`` (objects with ``name``, ``partitions``, ``configs``); {name:
        "created" | "exists"}. With ``delete_topics`` (a cluster not ours) a topic that exists
        already is refused (ServiceError). Raises AgentError."""
        topics = list(topics)
        if self.delete_topics:  # a cluster that is not ours: never write into a topic it had
            there = self.agent.request("describe", timeout=10, topics=[t.name for t in topics])["topics"]
            clash = sorted(n for n, d in there.items() if not d["error"] and d["partitions"])
            if clash:
                raise ServiceError(f"topics {clash} exist on the {self.backend.name} cluster already; this run "
                                   "would write into them: delete them or use another cluster")
        by_shape: dict[tuple, list[str]] = {}
        for t in topics:
            configs = {"min.insync.replicas": str(min_isr), **(getattr(t, "configs", None) or {})}
            by_shape.setdefault((t.partitions, tuple(sorted(configs.items()))), []).append(t.name)
        out: dict[str, str] = {}
        for (partitions, configs), names in by_shape.items():
            self.created_topics += [n for n in names if n not in self.created_topics]
            out.update(self.agent.request("create_topics", timeout=timeout, names=names,
                                          partitions=partitions, replication_factor=replication_factor,
                                          configs=dict(configs)))
        return out

    def heal(self) -> list[str]:
        """Every node resumed and running again (also one that died on its own)."""
        return self.backend.heal()

    def stop(self) -> list[str]:
        """Delete the run's topics (when asked), stop the agent, toxiproxy and the nodes; return
        what could not be undone."""
        problems: list[str] = []
        steps = []
        if self.delete_topics and self.created_topics:
            steps.append(("the run's topics", self._delete_topics))
        if self.group_prefix and self.agent:
            steps.append(("the run's consumer groups", self._delete_groups))
        steps += [("admin agent", lambda: self.agent.close() if self.agent else None),
                  ("toxiproxy", lambda: self.proxies.stop() if self.proxies else []),
                  ("nodes", self.backend.stop)]
        for what, step in steps:
            try:
                problems += step() or []
            except Exception as exc:  # keep tearing down; report what was left
                problems.append(f"teardown of {what} failed: {type(exc).__name__}: {exc}")
        self.agent = None
        return problems

    def _delete_topics(self) -> list[str]:
        res = self.agent.request("delete_topics", timeout=60, names=self.created_topics)
        left = [f"topic {n} could not be deleted: {r}" for n, r in sorted(res.items())
                if r not in ("deleted", "absent")]
        return left

    def _delete_groups(self) -> list[str]:
        # a static member (KIP-345) stays in its group until its session (10 s) times out
        res = self.agent.request("delete_groups", timeout=30, prefix=self.group_prefix)
        return [f"consumer group {g} could not be deleted: {r}" for g, r in sorted(res.items()) if r != "deleted"]

    def clean(self) -> list[str]:
        """Remove what ``start`` made; return what could not be removed."""
        return self.backend.clean()

    def teardown(self) -> list[str]:
        """``stop`` then ``clean``; what could not be undone (empty when clean)."""
        problems = self.stop()
        try:
            problems += self.clean() or []
        except Exception as exc:  # report, don't swallow
            problems.append(f"teardown of the {self.backend.name} cluster failed: {type(exc).__name__}: {exc}")
        return problems

    # -- what the run uses -------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """Bootstrap servers for clients: the proxies when there are, else the brokers."""
        return self.proxies.bootstrap if self.proxies else self.backend.bootstrap

    @property
    def client_host(self) -> ClientHost:
        return self.backend.client_host

    @property
    def client_config(self) -> dict[str, str]:
        return dict(self.backend.client_config)

    def node_ids(self) -> list[int]:
        return self.backend.node_ids()

    def node(self, node_id: int) -> NodeProcess:
        return self.backend.node(node_id)

    def dead_nodes(self) -> list[int]:
        return self.backend.dead_nodes()

    def nemesis_context(self, clients=None) -> NemesisContext:
        """The nemesis's view: node control (the backend), the client pool, the admin agent,
        the network (grudges) and toxiproxy (links)."""
        return NemesisContext(cluster=self.backend, clients=clients, admin=self.agent,
                              extra={"network": self.backend.network, "toxiproxy": self.proxies})

    def meta(self) -> dict[str, Any]:
        """meta.json keys: ``backend``, ``nodes`` (node id -> address), the backend's own
        (``image`` on docker) and ``toxiproxy`` (its proxies) when there is one."""
        out: dict[str, Any] = {"backend": self.backend.name,
                               "nodes": {str(i): a for i, a in sorted(self.backend.addresses().items())}}
        out.update(self.backend.meta() or {})
        if self.proxies:
            out["toxiproxy"] = self.proxies.config()
        return out
