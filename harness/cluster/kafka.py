"""A real Apache Kafka cluster in KRaft mode, one JVM per node, each in its own namespace.

Every node is both broker and controller (``process.roles=broker,controller``) with a static
quorum (``controller.quorum.voters``), so the same configuration runs on every release from 3.5.0
to 4.4.0; what does differ between releases (logging, the storage tool) comes from
harness.cluster.releases.
Broker defaults follow Kafka's exactly-once design, KIP-98/KIP-447: transaction state log RF 3 / min ISR 2 / 50 partitions,
data topics RF 3 with ``min.insync.replicas=2``, no unclean leader election.

Process control per node: ``kill`` (SIGKILL), ``stop`` (SIGTERM, controlled shutdown),
``start``, ``pause`` (SIGSTOP), ``resume`` (SIGCONT). Logs go to ``<run>/logs/n<id>.log``.
Readiness is judged through the admin API (see harness.cluster.agent), never by sleeping.

Two optional layers for the faults of issue 24: ``lazyfs`` puts each node's log dir on a FUSE
layer that can lose what the broker wrote and did not fsync (harness.cluster.unsynced_fs; the
data stays in ``n<i>/data``, the broker writes through the mount ``n<i>/lazyfs``), and
``faketime`` starts each JVM under libfaketime with a per-node control file, so the node's wall
clock can be moved while it runs (``set_clock_offset``; the monotonic clock is left alone).
"""
from __future__ import annotations

import base64
import os
import signal
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster.artifacts import TOOL_JVM, KafkaDist
from harness.cluster.namespaces import Host, TestNetwork

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
#: the CLIENT listener (only when a run proxies client links, see harness.cluster.toxiproxy_server): clients
#: connect through a proxy, and the broker advertises that proxy's address on this listener
CLIENT_PORT = 9094

#: Debian's libfaketime (package libfaketime); FAKETIME_CACHE_DURATION=1: the control file is
#: read again at most once a second (FAKETIME_NO_CACHE=1 reads it on every clock call: 132 us
#: a currentTimeMillis on Java 17 here, against 0.8 us cached; docs/faults.md "clock-skew")
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def libfaketime_path() -> str | None:
    """Where Debian's libfaketime.so.1 is on this machine, or None."""
    import glob

    for p in [LIBFAKETIME, *glob.glob("/usr/lib/*/faketime/libfaketime.so.1")]:
        if os.path.exists(p):
            return p
    return None

#: broker settings of Kafka's exactly-once design, KIP-98/KIP-447 ("the normal production shape") plus what a test needs.
BROKER_DEFAULTS: dict[str, str] = {
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "50",
    "transaction.max.timeout.ms": "900000",
    "transactional.id.expiration.ms": "604800000",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "unclean.leader.election.enable": "false",
    "auto.create.topics.enable": "false",
    # a test cluster should not wait 3 s before the first group rebalance
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "4",
}

class ClusterError(RuntimeError):
    """A node failed to format or start; the message points at its log."""


#: environment variable: extra JVM options for every broker the harness starts (netns and
#: docker), split as a shell would (shlex); unset or empty: the JVM's defaults. `make test`
#: sets ``-XX:TieredStopAtLevel=1`` (C1 only: a 3-node cluster ready in 13.0 s instead of
#: 21.7 s on 2 cores, `eos-chaos bench cluster-ready`, docs/benchmarks.md); runs, suites
#: and the zoo leave it unset. A run records it (meta.json ``versions`` ``broker-jvm-opts``).
BROKER_JVM_OPTS_ENV = "EOS_CHAOS_BROKER_JVM_OPTS"


def broker_jvm_opts() -> list[str]:
    """The extra broker JVM options of BROKER_JVM_OPTS_ENV ([] when unset). Raises ValueError
    on text shlex cannot split (an unclosed quote)."""
    import shlex

    return shlex.split(os.environ.get(BROKER_JVM_OPTS_ENV, ""))


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as `random-uuid`)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if cid[0].isalnum():  # the storage tool's argument parser reads "-..." as an option
            return cid


@dataclass
class KafkaNode:
    """One KRaft node (broker + controller) running in ``host``'s namespace."""

    node_id: int
    host: Host
    dist: KafkaDist
    workdir: Path
    log_path: Path
    heap_mb: int = 512
    overrides: dict[str, str] = field(default_factory=dict)
    #: "host:port" of the proxy in front of this node's CLIENT listener; None: no CLIENT listener
    client_advertised: str | None = None
    proc: subprocess.Popen | None = None
    paused: bool = False
    #: the FUSE layer under the log dir (harness.cluster.fuse_mounts.LazyMount), or None
    storage: object | None = None
    #: libfaketime's control file for this JVM (the clock offset, "+300s"), or None
    clock_file: Path | None = None
    clock_offset_s: float = 0.0
    #: feature levels set when the log dir is formatted (a scenario's cluster.features), e.g.
    #: {"transaction.version": 1}; empty: the release's defaults
    features: dict[str, int] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        """What the broker's ``log.dirs`` names: the FUSE mount when there is one."""
        return self.workdir / ("lazyfs" if self.storage is not None else "data")

    @property
    def address(self) -> str:
        return self.host.address

    @property
    def bootstrap(self) -> str:
        return f"{self.address}:{BROKER_PORT}"

    @property
    def config_path(self) -> Path:
        return self.workdir / "server.properties"

    def listener_config(self) -> dict[str, str]:
        """Listeners: PLAINTEXT (inter-broker traffic, the admin agent, clients of runs without
        proxies), CONTROLLER (KRaft quorum) and, with ``client_advertised``, CLIENT on port
        9094 advertised at the proxy, so that clients which bootstrap through the proxies are
        told to reconnect through them too (a client learns the addresses of the listener it
        connected to)."""
        listeners = [f"PLAINTEXT://{self.address}:{BROKER_PORT}", f"CONTROLLER://{self.address}:{CONTROLLER_PORT}"]
        advertised = [f"PLAINTEXT://{self.address}:{BROKER_PORT}"]
        protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
        if self.client_advertised:
            listeners.append(f"CLIENT://{self.address}:{CLIENT_PORT}")
            advertised.append(f"CLIENT://{self.client_advertised}")
            protocols.append("CLIENT:PLAINTEXT")
        return {
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(protocols),
        }

    def write_config(self, voters: str) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            **self.listener_config(),
            "log.dirs": str(self.data_dir),
            **BROKER_DEFAULTS,
            **self.dist.release.broker_defaults,  # per release (harness.cluster.releases): KIP-848's group.consumer.*
            **self.overrides,
        }
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        rel = self.dist.release
        (self.workdir / rel.log4j_file).write_text(rel.log4j_text)

    def _java(self, main: str, *args: str, tool: bool = False) -> list[str]:
        """``java ... MAIN ARGS``: the broker (``kafka.Kafka``) with broker_jvm_opts(); a
        short-lived ``tool`` (the storage format) with C1 only (artifacts.TOOL_JVM: its whole
        life is start-up, and it is not the system under test)."""
        rel = self.dist.release
        logging = rel.log4j_flag(str(self.workdir / rel.log4j_file))
        return [
            "java", f"-Xms{self.heap_mb}m", f"-Xmx{self.heap_mb}m", "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
            *(TOOL_JVM if tool else broker_jvm_opts()), logging,
            "-cp", self.dist.classpath, main, *args,
        ]

    def format_cmd(self, cluster_id: str) -> list[str]:
        """The ``kafka-storage format`` command that prepares this node's KRaft log dir, with
        ``--feature NAME=LEVEL`` for each of ``features`` (harness.cluster.releases.Release.format_args)."""
        return self._java("kafka.tools.StorageTool",
                          *self.dist.release.format_args(cluster_id, str(self.config_path), self.features or None),
                          tool=True)

    def start(self) -> int:
        """Start the JVM in the node's namespace; return its pid. A running node is left alone."""
        if self.running():
            return self.proc.pid
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        log.write(b"\n===== eos-chaos: starting node =====\n")
        log.flush()
        self.proc = subprocess.Popen(
            self.host.exec_prefix() + self.clock_env() + self._java("kafka.Kafka", str(self.config_path)),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C on the controller must not reach the brokers
        )
        log.close()
        self.paused = False
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- clock (libfaketime) ---------------------------------------------------------------
    def clock_env(self) -> list[str]:
        """``env VAR=... `` before the JVM's argv when the node runs under libfaketime: the wall
        clock (CLOCK_REALTIME: currentTimeMillis) offset by the control file, the monotonic
        clock (nanoTime, sleeps, waits) untouched. FAKETIME_FORCE_MONOTONIC_FIX=0: libfaketime
        0.9.10 turns its pthread_cond_timedwait "monotonic fix" on by itself with this glibc,
        and then every timed wait of the JVM (Object.wait, parkNanos) returns at once: 200
        wait(1 ms) took 0.2 ms instead of 220 ms, and a cluster's KRaft elections never settled
        (docs/faults.md "clock-skew")."""
        if self.clock_file is None:
            return []
        lib = libfaketime_path()
        if lib is None:
            raise ClusterError("libfaketime is not installed (Debian: apt-get install -y libfaketime)")
        if not self.clock_file.exists():
            self._write_clock(self.clock_offset_s)
        return ["env", f"LD_PRELOAD={lib}", f"FAKETIME_TIMESTAMP_FILE={self.clock_file}",
                "FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_FORCE_MONOTONIC_FIX=0"]

    def _write_clock(self, offset_s: float) -> None:
        tmp = self.clock_file.with_suffix(".tmp")
        tmp.write_text(f"{offset_s:+g}s\n")
        os.replace(tmp, self.clock_file)  # atomic: libfaketime never reads a half-written file

    def set_clock_offset(self, offset_s: float) -> float:
        """Move this node's wall clock to real time + ``offset_s`` seconds while it runs (in
        effect within a second: FAKETIME_CACHE_DURATION). Returns the previous offset."""
        if self.clock_file is None:
            raise ClusterError(f"node {self.node_id} does not run under libfaketime (no clock fault in the scenario)")
        before, self.clock_offset_s = self.clock_offset_s, float(offset_s)
        self._write_clock(self.clock_offset_s)
        return before

    # -- storage (the FUSE layer) ------------------------------------------------------------
    def lose_unsynced(self) -> dict:
        """Lose what this (dead) node wrote and did not fsync: harness.cluster.fuse_mounts.
        LazyMount.lose_unsynced. Refused while the JVM runs (its page cache would be written
        back after the drop)."""
        if self.storage is None:
            raise ClusterError(f"node {self.node_id} has no FUSE layer under its log dir")
        if self.running():
            raise ClusterError(f"node {self.node_id} is running: kill it before losing its unsynced writes")
        return self.storage.lose_unsynced()

    def signal(self, sig: int) -> bool:
        """Send ``sig`` to the JVM; False when it is not running."""
        if not self.running():
            return False
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> bool:
        """SIGKILL: a crash with no controlled shutdown. True when a running node was killed."""
        was = self.signal(signal.SIGKILL)
        if was:
            self.proc.wait(timeout=30)
        self.paused = False
        return was

    def stop(self, timeout: float = 30.0) -> bool:
        """SIGTERM and wait for a controlled shutdown; SIGKILL after ``timeout`` seconds."""
        if self.paused:
            self.resume()
        if not self.signal(signal.SIGTERM):
            return False
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        return True

    def pause(self) -> bool:
        """SIGSTOP: the JVM freezes, like a long GC pause; its sockets stay open."""
        ok = self.signal(signal.SIGSTOP)
        self.paused = self.paused or ok
        return ok

    def resume(self) -> bool:
        ok = self.signal(signal.SIGCONT)
        self.paused = False
        return ok


class Cluster:
    """N KRaft nodes on a TestNetwork. Node ids are 1..N."""

    def __init__(self, dist: KafkaDist, network: TestNetwork, workdir: Path, logdir: Path,
                 nodes: int = 3, heap_mb: int = 512, overrides: dict[str, str] | None = None,
                 client_listeners: dict[int, str] | None = None, lazyfs: bool = False,
                 faketime: bool = False, features: dict[str, int] | None = None):
        """``client_listeners`` (node id -> "host:port" of its proxy) adds the CLIENT listener
        (KafkaNode.listener_config); without it the nodes have PLAINTEXT and CONTROLLER only.
        ``lazyfs``: each log dir on the FUSE layer (module docstring); ``faketime``: each JVM
        under libfaketime; ``features``: feature levels every node's log dir is formatted with
        (``kafka-storage format --feature NAME=LEVEL``)."""
        self.dist = dist
        self.network = network
        self.cluster_id = random_cluster_id()
        self.nodes: dict[int, KafkaNode] = {
            i: KafkaNode(i, network.node(i), dist, workdir / f"n{i}", logdir / f"n{i}.log",
                         heap_mb=heap_mb, overrides=dict(overrides or {}),
                         client_advertised=(client_listeners or {}).get(i), features=dict(features or {}))
            for i in range(1, nodes + 1)
        }
        self.lazyfs = lazyfs
        for i, node in self.nodes.items():
            if faketime:
                node.clock_file = node.workdir / "faketime.rc"
            if lazyfs:
                from harness.cluster.fuse_mounts import LazyMount

                node.storage = LazyMount(node.workdir / "data", node.workdir / "lazyfs",
                                         logdir / f"lazyfs-n{i}.log", f"n{i}")

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes.values())

    @property
    def voters(self) -> str:
        return ",".join(f"{i}@{n.address}:{CONTROLLER_PORT}" for i, n in self.nodes.items())

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def node_ids(self) -> list[int]:
        return sorted(self.nodes)

    def format_and_start(self) -> None:
        """Write configs, format every log dir, start every node (readiness is checked elsewhere)."""
        for node in self.nodes.values():
            if node.storage is not None:
                node.storage.mount()
            node.write_config(self.voters)
        # formatting is a JVM start each: do it in parallel, 2 cores or not, it overlaps I/O
        procs = []
        for node in self.nodes.values():
            procs.append((node, subprocess.Popen(node.format_cmd(self.cluster_id), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for node, proc in procs:
            out, _ = proc.communicate()
            if proc.returncode != 0:
                raise ClusterError(f"formatting node {node.node_id} failed:\n{out[-2000:]}")
        for node in self.nodes.values():
            if node.storage is not None:  # the formatted log dir is the disk's starting state
                node.storage.sync_all()
            node.start()

    def dead_nodes(self) -> list[int]:
        """Nodes whose JVM exited on its own (not paused, not killed by us): a crash to report."""
        return [i for i, n in self.nodes.items() if n.proc is not None and n.proc.poll() is not None]

    def heal(self) -> list[str]:
        """Resume paused nodes and start stopped ones; return what was done."""
        from harness.cluster.service import heal_nodes  # lazy: kept out of the package import

        return heal_nodes(self.nodes)

    def shutdown(self) -> list[str]:
        """Stop every node (SIGKILL: the data is thrown away anyway); return problems."""
        problems = []
        for i, node in self.nodes.items():
            try:
                if node.running():
                    node.signal(signal.SIGCONT)
                    node.kill()
            except Exception as exc:  # report, don't swallow: teardown must say what it left
                problems.append(f"could not stop node n{i}: {exc}")
        return problems + self.unmount()

    def unmount(self) -> list[str]:
        """Unmount every node's FUSE layer (its data stays in ``n<i>/data``); what could not be."""
        problems = []
        for node in self.nodes.values():
            if node.storage is not None:
                try:
                    problems += node.storage.unmount()
                except Exception as exc:
                    problems.append(f"could not unmount the FUSE layer of n{node.node_id}: {exc}")
        return problems
