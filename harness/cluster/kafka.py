"""A real Apache Kafka cluster in KRaft mode, one JVM per node, each in its own namespace.

Every node is both broker and controller (``process.roles=broker,controller``) with a static
quorum (``controller.quorum.voters``), so the same configuration runs on Kafka 3.9 and 4.x.
Broker defaults follow KAFKA-EOS.md: transaction state log RF 3 / min ISR 2 / 50 partitions,
data topics RF 3 with ``min.insync.replicas=2``, no unclean leader election.

Process control per node: ``kill`` (SIGKILL), ``stop`` (SIGTERM, controlled shutdown),
``start``, ``pause`` (SIGSTOP), ``resume`` (SIGCONT). Logs go to ``<run>/logs/n<id>.log``.
Readiness is judged through the admin API (see harness.cluster.agent), never by sleeping.
"""
from __future__ import annotations

import base64
import os
import signal
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster.artifacts import KafkaDist
from harness.cluster.namespaces import Host, TestNetwork

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
#: the CLIENT listener (only when a run proxies client links, see harness.cluster.toxiproxy_server): clients
#: connect through a proxy, and the broker advertises that proxy's address on this listener
CLIENT_PORT = 9094

#: broker settings of KAFKA-EOS.md ("the normal production shape") plus what a test needs.
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

LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""

LOG4J1 = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=WARN
"""


class ClusterError(RuntimeError):
    """A node failed to format or start; the message points at its log."""


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
            "log.dirs": str(self.workdir / "data"),
            **BROKER_DEFAULTS,
            **self.overrides,
        }
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        if self.dist.major >= 4:
            (self.workdir / "log4j2.properties").write_text(LOG4J2)
        else:
            (self.workdir / "log4j.properties").write_text(LOG4J1)

    def _java(self, main: str, *args: str) -> list[str]:
        if self.dist.major >= 4:
            logging = f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}"
        else:
            logging = f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}"
        return [
            "java", f"-Xms{self.heap_mb}m", f"-Xmx{self.heap_mb}m", "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true", logging,
            "-cp", self.dist.classpath, main, *args,
        ]

    def format_cmd(self, cluster_id: str) -> list[str]:
        """The ``kafka-storage format`` command that prepares this node's KRaft log dir."""
        return self._java("kafka.tools.StorageTool", "format", "-t", cluster_id,
                          "-c", str(self.config_path))

    def start(self) -> int:
        """Start the JVM in the node's namespace; return its pid. A running node is left alone."""
        if self.running():
            return self.proc.pid
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        log.write(b"\n===== eos-chaos: starting node =====\n")
        log.flush()
        self.proc = subprocess.Popen(
            self.host.exec_prefix() + self._java("kafka.Kafka", str(self.config_path)),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C on the controller must not reach the brokers
        )
        log.close()
        self.paused = False
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

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
                 client_listeners: dict[int, str] | None = None):
        """``client_listeners`` (node id -> "host:port" of its proxy) adds the CLIENT listener
        (KafkaNode.listener_config); without it the nodes have PLAINTEXT and CONTROLLER only."""
        self.dist = dist
        self.network = network
        self.cluster_id = random_cluster_id()
        self.nodes: dict[int, KafkaNode] = {
            i: KafkaNode(i, network.node(i), dist, workdir / f"n{i}", logdir / f"n{i}.log",
                         heap_mb=heap_mb, overrides=dict(overrides or {}),
                         client_advertised=(client_listeners or {}).get(i))
            for i in range(1, nodes + 1)
        }

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
        return problems
