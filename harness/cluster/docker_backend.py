"""The ``docker`` backend: every KRaft node a container, through the docker SDK (docker-py).

The primitives (engine, image, containers, labels, cleanup) are harness.cluster.docker's; this module
fits them to the cluster service (harness.cluster.service.Backend):

- the engine is started when no daemon answers (harness.cluster.docker.ensure_engine: host firewall
  left alone, networks on 198.19.0.0/16); the image is ``cluster.docker.image``, else
  ``kafka-eos-chaos/kafka:<kafka_version>`` built locally;
- one user-defined bridge network per run (198.19.<n>.0/24), the node i at 198.19.<n>.<10+i>,
  with the same server.properties as the netns backend (harness.cluster.kafka) but ``log.dirs``
  in a named volume that survives a kill and a start;
- node control: kill = SIGKILL of the container, start = start the same container, pause =
  ``docker pause`` (cgroup freezer), resume = unpause;
- grudges: the same iptables rules as netns (nemesis.partition), applied from the host inside
  each container's network namespace (``nsenter -t PID -n iptables ...``, so any image works,
  with or without iptables in it);
- clients, the admin agent and toxiproxy run in the client namespace ``eosc-c`` as on netns,
  its ``eth0`` plugged into the docker network's bridge at 198.19.<n>.100. Why a namespace and
  not the host: the controller's host namespace does reach the containers (through the
  bridge's gateway address), but processes started there are not found by ``eos-chaos
  cleanup`` after a SIGKILL of the controller (a toxiproxy server would be left running), a
  client-broker grudge needs a client address of its own, and the netns code paths (pool,
  agent, toxiproxy) stay the same;
- each broker writes its output live to ``logs/n<i>.log`` (the run's log dir is mounted), so
  broker events are read as on netns;
- with ``cluster.lazyfs`` (lose-unsynced) each log dir is the FUSE layer mounted on this host
  over ``nodes/n<i>/data`` and bound into the container in place of the volume; with
  ``cluster.faketime`` (clock-skew) the host's libfaketime and a control-file directory are
  bound in and preloaded, as on netns.

Everything the run makes carries the labels ``eos-chaos.harness=1`` and ``eos-chaos.run=<run
id>``; ``clean`` removes this run's, ``clean_leftovers`` (and ``eos-chaos cleanup``) every run's.
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from harness.cluster import namespaces as net
from harness.cluster.artifacts import KafkaDist
from harness.cluster.kafka import BROKER_PORT, CONTROLLER_PORT, KafkaNode, random_cluster_id
from harness.cluster.service import heal_nodes

#: host number of the client namespace on the docker network (nodes are 10 + i)
CLIENT_HOST_NUMBER = 100


class ContainerHost:
    """A node's container as a host of the test network (nemesis.partition.HostView): ``run``
    executes a host binary inside the container's network namespace."""

    def __init__(self, name: str, address: str, container):
        self.name, self.address, self.container = name, address, container

    def run(self, *argv: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run ``argv`` in the container's network namespace. Raises NetError (check) when the
        container is not running or the command fails; without check a stopped container is a
        CompletedProcess with returncode 1."""
        from harness.cluster.docker import nsenter_prefix

        pid = self.container.pid() if self.container.running() else None
        if not pid:
            if check:
                raise net.NetError(f"container of {self.name} is not running: cannot run {' '.join(argv)}")
            return subprocess.CompletedProcess(list(argv), 1, "", f"container of {self.name} is not running")
        cmd = nsenter_prefix(pid) + list(argv)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise net.NetError(f"`{' '.join(cmd)}` timed out after {timeout:.0f} s") from exc
        if check and proc.returncode != 0:
            raise net.NetError(f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc


class DockerNetwork:
    """The run's test network as nemesis.partition and harness.cluster.toxiproxy_server see it (the shape of
    harness.cluster.namespaces.TestNetwork): ``hosts`` n<i> (containers) and ``c`` (the client namespace)."""

    def __init__(self, hosts: dict[str, Any], client: net.Host):
        self.hosts = dict(hosts, **{client.name: client})
        self._client = client

    @property
    def client(self) -> net.Host:
        return self._client

    def node(self, node_id: int):
        return self.hosts[f"n{node_id}"]


class DockerNode:
    """One broker container as a nemesis NodeProcess; ``killed`` tells a kill of ours from a
    crash (``dead_nodes``). ``storage``: the FUSE layer under its log dir (lose-unsynced),
    ``clock_file``: libfaketime's control file (clock-skew), as on netns (harness.cluster.kafka)."""

    def __init__(self, node_id: int, container, storage=None, clock_file: Path | None = None):
        self.node_id, self.container = node_id, container
        self.killed = False
        self.storage, self.clock_file = storage, clock_file
        self.clock_offset_s = 0.0
        if clock_file is not None:
            self._write_clock(0.0)

    def _write_clock(self, offset_s: float) -> None:
        self.clock_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.clock_file.with_suffix(".tmp")
        tmp.write_text(f"{offset_s:+g}s\n")
        tmp.replace(self.clock_file)

    def set_clock_offset(self, offset_s: float) -> float:
        """The container's wall clock at real time + ``offset_s`` (within a second, no restart)."""
        if self.clock_file is None:
            raise RuntimeError(f"node {self.node_id} does not run under libfaketime")
        before, self.clock_offset_s = self.clock_offset_s, float(offset_s)
        self._write_clock(self.clock_offset_s)
        return before

    def lose_unsynced(self) -> dict:
        """Lose what the (killed) container wrote and did not fsync (LazyMount.lose_unsynced)."""
        if self.storage is None:
            raise RuntimeError(f"node {self.node_id} has no FUSE layer under its log dir")
        if self.container.running():
            raise RuntimeError(f"node {self.node_id} is running: kill it before losing its unsynced writes")
        return self.storage.lose_unsynced()

    def kill(self) -> bool:
        was = self.container.kill()
        self.killed = True
        return was

    def start(self) -> int:
        self.container.start()
        self.killed = False
        return self.container.pid() or 0

    def pause(self, tries: int = 10, wait_s: float = 0.3) -> bool:
        """``docker pause``. The cgroup freezer refuses ("unable to freeze") while the container
        is still creating processes, as in the first second after a start (the start scripts
        exec their way to the JVM): retried ``tries`` times ``wait_s`` apart."""
        for attempt in range(tries):
            try:
                return self.container.pause()
            except Exception as exc:  # docker.errors.APIError; anything else is not retried
                if "unable to freeze" not in str(exc) or attempt == tries - 1:
                    raise
                time.sleep(wait_s)
        return False

    def resume(self) -> bool:
        return self.container.resume()

    def running(self) -> bool:
        return self.container.running()

    @property
    def paused(self) -> bool:
        return self.container.paused


class DockerBackend:
    """Nodes 1..``spec.nodes`` as containers; see the module docstring. ``workdir`` holds the
    mounted config dirs (``n<i>/``), ``logdir`` the saved broker logs."""

    name = "docker"
    client_config: dict[str, str] = {}

    def __init__(self, spec, workdir: Path, logdir: Path, run_id: str):
        self.spec, self.workdir, self.logdir, self.run_id = spec, Path(workdir), Path(logdir), run_id
        self.image = (spec.docker.image if spec.docker and spec.docker.image else None)
        self.client = None
        self.tnet = None
        self.network: DockerNetwork | None = None
        self.nodes: dict[int, DockerNode] = {}
        self._containers: dict[int, Any] = {}

    # -- lifecycle -----------------------------------------------------------------------
    def clean_leftovers(self) -> list[str]:
        from harness.cluster.docker import cleanup
        from harness.cluster.fuse_mounts import cleanup_mounts

        problems = net.cleanup() + cleanup()  # containers first: they keep their log dirs busy
        return problems + cleanup_mounts(clusters_only=True)

    def prepare(self) -> None:
        from harness.cluster.docker import BrokerContainer, build_kafka_image, create_network, ensure_engine

        self.client = ensure_engine()
        if self.image is None:
            self.image = build_kafka_image(self.spec.kafka_version, client=self.client)
        self.tnet = create_network(self.client, self.run_id)
        client_host = net.Host(net.CLIENT_HOST, _host_in(self.tnet.subnet))
        _plug_client_namespace(self.client, self.tnet, client_host)
        cluster_id = random_cluster_id()
        for i in self.node_ids():
            storage = None
            if self.spec.lazyfs:  # the log dir on the FUSE layer, mounted here and bound in
                from harness.cluster.fuse_mounts import LazyMount

                storage = LazyMount(self.workdir / f"n{i}" / "data", self.workdir / f"n{i}" / "lazyfs",
                                    self.logdir / f"lazyfs-n{i}.log", f"n{i}")
                storage.mount()
            clock_dir = self.workdir / f"n{i}" / "clock" if self.spec.faketime else None
            c = BrokerContainer(self.client, self.run_id, i, self.image, self.tnet, self.workdir / f"n{i}",
                                cluster_id, log_path=self.logdir / f"n{i}.log", heap_mb=self.spec.heap_mb,
                                data_bind=storage.mountpoint if storage else None, clock_dir=clock_dir,
                                kafka_version=self.spec.kafka_version,
                                features=getattr(self.spec, "features", None))
            self._containers[i] = c
            self.nodes[i] = DockerNode(i, c, storage, clock_dir / "faketime.rc" if clock_dir else None)
        self.network = DockerNetwork({f"n{i}": ContainerHost(f"n{i}", self.tnet.address(i), c)
                                      for i, c in self._containers.items()}, client_host)

    def start(self, client_listeners: dict[int, str] | None) -> None:
        from harness.cluster.docker import DATA_DIR

        voters = ",".join(f"{i}@{self.tnet.address(i)}:{CONTROLLER_PORT}" for i in self.node_ids())
        version = KafkaDist(self.spec.kafka_version, Path("/opt/kafka"))
        for i, c in self._containers.items():
            # the netns backend's configuration, addresses on the docker network, data in the volume
            KafkaNode(i, net.Host(f"n{i}", self.tnet.address(i)), version, self.workdir / f"n{i}",
                      self.logdir / f"n{i}.log",
                      overrides={**self.spec.broker, "log.dirs": DATA_DIR},
                      client_advertised=(client_listeners or {}).get(i)).write_config(voters)
            c.create()
        for c in self._containers.values():
            c.start()
        self._sync_formatted()

    def _sync_formatted(self, timeout: float = 120.0) -> None:
        """With the FUSE layer: once each container has formatted its log dir (meta.properties
        there; the start script formats on the first start), everything so far counts as on
        disk, as on netns (kafka-storage leaves bootstrap.checkpoint unsynced)."""
        pending = {i: n.storage for i, n in self.nodes.items() if n.storage is not None}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for i, st in list(pending.items()):
                if (st.backing / "meta.properties").exists():
                    st.sync_all()
                    del pending[i]
            time.sleep(0.2)
        if pending:
            from harness.cluster.docker import DockerError

            raise DockerError(f"nodes {sorted(pending)} did not format their log dirs in {timeout:g} s "
                              f"(see {self.logdir}/n*.log)")

    @property
    def client_host(self) -> net.Host | None:
        """The client namespace (None before ``prepare``: its address is on the run's network)."""
        return self.network.client if self.network else None

    @property
    def bootstrap(self) -> str:
        return ",".join(self.addresses().values())

    def node_ids(self) -> list[int]:
        return list(range(1, self.spec.nodes + 1))

    def node(self, node_id: int) -> DockerNode:
        return self.nodes[node_id]

    def addresses(self) -> dict[int, str]:
        if self.tnet is None:
            return {}
        return {i: f"{self.tnet.address(i)}:{BROKER_PORT}" for i in self.node_ids()}

    def dead_nodes(self) -> list[int]:
        return [i for i, n in self.nodes.items() if not n.killed and not n.running()]

    def heal(self) -> list[str]:
        return heal_nodes(self.nodes)

    def stop(self) -> list[str]:
        """Kill the containers (their logs are in logs/n<i>.log already: written live)."""
        problems = []
        for i, n in sorted(self.nodes.items()):
            try:
                if n.paused:
                    n.resume()
                n.container.kill()
            except Exception as exc:
                problems.append(f"could not kill container of n{i}: {type(exc).__name__}: {exc}")
        for i, n in sorted(self.nodes.items()):  # the layers, once no container uses them
            if n.storage is not None:
                try:
                    problems += n.storage.unmount()
                except Exception as exc:
                    problems.append(f"could not unmount the FUSE layer of n{i}: {type(exc).__name__}: {exc}")
        return problems

    def clean(self) -> list[str]:
        """Copy each node's log dir out of its volume into ``nodes/n<i>/data`` (the runner keeps
        it for an invalid run, as on netns, and deletes it otherwise), then remove this run's
        containers, volumes and network, and the client namespace."""
        from harness.cluster.docker import cleanup

        problems: list[str] = []
        for i, n in sorted(self.nodes.items()):
            try:
                if n.storage is None:  # on the FUSE layer the data is in nodes/n<i>/data already
                    self._copy_data(n.container)
            except Exception as exc:  # the verdict stands without the segments; say so
                problems.append(f"could not copy n{i}'s log dir out of its volume: {type(exc).__name__}: {exc}")
            try:
                problems += n.container.remove()
            except Exception as exc:
                problems.append(f"could not remove container of n{i}: {type(exc).__name__}: {exc}")
        problems += net.cleanup()  # the client namespace and its veth
        if self.client is not None:
            problems += cleanup(self.run_id, client=self.client)  # the network, anything else labelled
        return problems

    def _copy_data(self, container) -> None:
        """The volume's files, read from its mount point on this host (root; dockerd is local).
        ``cp --sparse=always``: Kafka preallocates its index files (10 MiB each, sparse), and a
        plain copy would write them out in full (2.2 GiB per node measured)."""
        src = Path(self.client.volumes.get(container.volume).attrs["Mountpoint"])
        dst = self.workdir / f"n{container.node_id}" / "data"
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cp", "-a", "--sparse=always", f"{src}/.", str(dst)], check=True,
                           capture_output=True, text=True, timeout=300)

    def meta(self) -> dict[str, Any]:
        out = {"image": self.image, "docker_network": self.tnet.name if self.tnet else None,
               "client_address": self.network.client.address if self.network else None}
        if self.spec.lazyfs:
            out["log_dirs"] = "lazyfs"
        if self.spec.faketime:
            out["clock"] = "libfaketime"
        if getattr(self.spec, "features", None):
            out["cluster_features"] = dict(self.spec.features)  # set at format time (cluster.features)
        return out


def _host_in(subnet) -> str:
    import ipaddress

    return str(ipaddress.ip_network(str(subnet)).network_address + CLIENT_HOST_NUMBER)


def _bridge_of(client, tnet) -> str:
    """The Linux bridge of the docker network (``br-<id[:12]>`` unless named by option)."""
    n = client.networks.get(tnet.id)
    return (n.attrs.get("Options") or {}).get("com.docker.network.bridge.name") or f"br-{n.id[:12]}"


def _plug_client_namespace(client, tnet, host: net.Host) -> None:
    """Namespace ``eosc-c`` with ``eth0`` on the docker network's bridge at ``host.address``.
    Raises NetError. Every container has a fixed address below it, so docker's IPAM never hands
    this one out."""
    import ipaddress

    prefix = ipaddress.ip_network(str(tnet.subnet)).prefixlen
    outer = f"{net.PREFIX}-{host.name}"
    net.ip("netns", "add", host.netns)
    net.ip("link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
    net.ip("link", "set", outer, "master", _bridge_of(client, tnet))
    net.ip("link", "set", outer, "up")
    net.ip("-n", host.netns, "addr", "add", f"{host.address}/{prefix}", "dev", "eth0")
    net.ip("-n", host.netns, "link", "set", "eth0", "up")
    net.ip("-n", host.netns, "link", "set", "lo", "up")


def clean_docker_leftovers() -> list[str]:
    """``eos-chaos cleanup``'s docker part: every labelled container, network and volume, when
    an engine answers (none: nothing to do)."""
    from harness.cluster.docker import cleanup

    return cleanup()
