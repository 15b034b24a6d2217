"""Broker containers on a user-defined network on the test range, through docker-py.

One KRaft node per container, fixed IP on the run's network, its log dir in a named volume (a
kill and a start keep the data), its config mounted read-only, its output appended to a host
file (``log_path``, the run's ``logs/n<i>.log``) so that the log is live and survives restarts,
as the netns backend's is. Node control: kill = ``docker kill`` (SIGKILL) then ``start`` of the
same container; pause = ``docker pause`` (cgroup freezer: the whole container freezes, its
sockets stay open). Every container, network and volume carries ``labels(run_id)``.
"""
from __future__ import annotations

import ipaddress
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import APIError, NotFound

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
from harness.cluster.docker.engine import DockerError
from harness.cluster.releases import release
from harness.cluster.docker.engine import ADDRESS_POOL

LABEL_HARNESS = "eos-chaos.harness"
LABEL_RUN = "eos-chaos.run"
LABEL_NODE = "eos-chaos.node"
#: where the caller's config dir is mounted (read-only)
CONFIG_DIR = "/mnt/eos-chaos"
#: where the node's named volume is mounted: the caller writes ``log.dirs=DATA_DIR``. The
#: official apache/kafka image has this directory too (owned by its user), so a fresh volume
#: takes its ownership there.
DATA_DIR = "/var/lib/kafka/data"
#: where the directory of ``log_path`` is mounted
LOG_DIR = "/mnt/eos-chaos-logs"
#: where a clock-skew run's control file directory is mounted (BrokerContainer.clock_dir)
CLOCK_DIR = "/mnt/eos-chaos-clock"
PREFIX = "eosc"


def labels(run_id: str, **extra: str) -> dict[str, str]:
    """The labels of everything a run makes: ``eos-chaos.harness=1``, ``eos-chaos.run=<run_id>``,
    plus ``extra`` (keys get the ``eos-chaos.`` prefix, e.g. node="1")."""
    return {LABEL_HARNESS: "1", LABEL_RUN: run_id, **{f"eos-chaos.{k}": str(v) for k, v in extra.items()}}


def resource_name(run_id: str, what: str = "") -> str:
    """``eosc-<run_id>[-what]``, the name of a run's network / container / volume. Docker names
    allow [a-zA-Z0-9_.-]: anything else in ``run_id`` becomes '-'."""
    safe = "".join(c if c.isalnum() or c in "_.-" else "-" for c in run_id)
    return f"{PREFIX}-{safe}" + (f"-{what}" if what else "")


def nsenter_prefix(pid: int) -> list[str]:
    """argv prefix that runs a host binary (iptables) in the network namespace of process ``pid``
    (a container's init, BrokerContainer.pid()): works for any image, with or without iptables."""
    return ["nsenter", "-t", str(pid), "-n"]


@dataclass(frozen=True)
class DockerNet:
    """A run's user-defined bridge network: ``subnet`` (198.19.<n>.0/24), ``gateway`` (.1, the
    host's own address on the bridge), node i at .10+i (as harness.cluster.namespaces: 11, 12, 13)."""

    name: str
    id: str
    subnet: str
    gateway: str

    def address(self, node_id: int) -> str:
        return str(ipaddress.ip_network(self.subnet).network_address + 10 + node_id)


def free_subnet(used: list[str], pool: str = ADDRESS_POOL, prefix: int = 24) -> str:
    """The first /``prefix`` of ``pool`` (skipping the pool's first one) that overlaps none of
    ``used`` (CIDR strings). Raises DockerError when the pool is full."""
    taken = [ipaddress.ip_network(u, strict=False) for u in used]
    for i, net in enumerate(ipaddress.ip_network(pool).subnets(new_prefix=prefix)):
        if i == 0:
            continue  # dockerd hands out the pool's first /24 itself to networks made without a subnet
        if not any(net.overlaps(t) for t in taken):
            return str(net)
    raise DockerError(f"no free /{prefix} left in {pool}: run `eos-chaos cleanup` to remove old networks")


def create_network(client: docker.DockerClient, run_id: str, subnet: str | None = None) -> DockerNet:
    """Create the run's bridge network ``eosc-<run_id>`` on ``subnet`` (default: free_subnet of
    the networks dockerd has). The host gets the gateway address on the bridge, so the host
    reaches the containers directly; there is no NAT and no route anywhere else. Raises
    DockerError (name taken: an earlier run with this id was not cleaned up)."""
    if subnet is None:
        used = []
        for net in client.networks.list():
            for cfg in (net.attrs.get("IPAM") or {}).get("Config") or []:
                if cfg.get("Subnet"):
                    used.append(cfg["Subnet"])
        subnet = free_subnet(used)
    network = ipaddress.ip_network(subnet)
    if not network.subnet_of(ipaddress.ip_network("198.18.0.0/15")):
        raise DockerError(f"subnet {subnet} is outside the test range 198.18.0.0/15: pick one inside")
    gateway = str(network.network_address + 1)
    name = resource_name(run_id)
    ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=subnet, gateway=gateway)])
    try:
        net = client.networks.create(
            name, driver="bridge", ipam=ipam, labels=labels(run_id), check_duplicate=True,
            options={"com.docker.network.bridge.enable_ip_masquerade": "false"},
        )
    except APIError as exc:
        raise DockerError(f"creating network {name} on {subnet} failed: {exc.explanation or exc} "
                          "(leftovers of an earlier run? `eos-chaos cleanup`)") from exc
    return DockerNet(name=name, id=net.id, subnet=subnet, gateway=gateway)


def start_script(config: str, log_file: str | None, cluster_id: str,
                 kafka_version: str = DEFAULT_KAFKA_VERSION, features: dict[str, int] | None = None) -> str:
    """The container's ``sh -c`` script: format the log dir on the first start (``kafka-storage
    format`` with the release's arguments, harness.cluster.releases; meta.properties marks a
    formatted dir, so restarts skip the JVM), then exec the broker. A start marker first; output
    appended to ``log_file`` (a path inside the container) when given, else left on the
    container's stdout (docker logs). ``features``: feature levels set at format time
    (``--feature NAME=LEVEL``, a scenario's cluster.features)."""
    q = shlex.quote
    fmt = " ".join(q(a) for a in release(kafka_version).format_args(cluster_id, config, features or None))
    return (
        (f"exec >>{q(log_file)} 2>&1; " if log_file else "exec 2>&1; ")
        + "echo \"===== eos-chaos: starting node $(date -u +%FT%TZ) =====\"; "
        + f"if [ ! -f {DATA_DIR}/meta.properties ]; then "
        + f"/opt/kafka/bin/kafka-storage.sh {fmt} --ignore-formatted || exit 3; fi; "
        + f"exec /opt/kafka/bin/kafka-server-start.sh {q(config)}"
    )


def log4j_opts(config_dir: Path) -> str:
    """KAFKA_LOG4J_OPTS for the logging config the caller wrote into ``config_dir``:
    log4j2.properties (Kafka 4.x, KIP-653) or log4j.properties (3.x); '' when there is none."""
    if (config_dir / "log4j2.properties").exists():
        return f"-Dlog4j2.configurationFile={CONFIG_DIR}/log4j2.properties"
    if (config_dir / "log4j.properties").exists():
        return f"-Dlog4j.configuration=file:{CONFIG_DIR}/log4j.properties"
    return ""


class BrokerContainer:
    """One KRaft node in a container (see the module docstring).

    ``config_dir``: host directory holding server.properties (with ``log.dirs=DATA_DIR`` and
    listeners on ``net.address(node_id)``) and the logging config. ``log_path``: host file the
    node's output is appended to, live (its directory is mounted); None: the output stays in
    ``docker logs`` (json-file, every start) until save_log copies it. ``heap_mb``: -Xms/-Xmx of
    the broker JVM (MiB). ``kafka_version``: the release in the image, for its storage tool's
    arguments (harness.cluster.releases); ``features``: feature levels its log dir is formatted
    with (a scenario's cluster.features).
    """

    def __init__(self, client: docker.DockerClient, run_id: str, node_id: int, image: str, net: DockerNet,
                 config_dir: Path, cluster_id: str, log_path: Path | None = None, heap_mb: int = 512,
                 data_bind: Path | None = None, clock_dir: Path | None = None,
                 kafka_version: str = DEFAULT_KAFKA_VERSION, features: dict[str, int] | None = None):
        self.client = client
        self.kafka_version = kafka_version
        self.features = dict(features or {})
        self.run_id = run_id
        self.node_id = node_id
        self.image = image
        self.net = net
        self.config_dir = Path(config_dir).resolve()
        self.cluster_id = cluster_id
        self.log_path = Path(log_path).resolve() if log_path is not None else None
        self.heap_mb = heap_mb
        #: a host directory mounted at DATA_DIR in place of the named volume (the lose-unsynced
        #: FUSE layer, harness.cluster.fuse_mounts); None: the volume
        self.data_bind = Path(data_bind).resolve() if data_bind is not None else None
        #: a host directory holding libfaketime's control file ``faketime.rc`` (clock-skew),
        #: mounted at CLOCK_DIR with the host's libfaketime; None: the real clock
        self.clock_dir = Path(clock_dir).resolve() if clock_dir is not None else None
        self.name = resource_name(run_id, f"n{node_id}")
        self.volume = resource_name(run_id, f"n{node_id}-data")
        self._container = None

    @property
    def address(self) -> str:
        return self.net.address(self.node_id)

    @property
    def container(self):
        if self._container is None:
            try:
                self._container = self.client.containers.get(self.name)
            except NotFound as exc:
                raise DockerError(f"container {self.name} does not exist: create() it first") from exc
        return self._container

    def create(self) -> None:
        """Make the data volume and the container (not started). Raises DockerError (image
        missing: `eos-chaos setup --docker`; name taken: `eos-chaos cleanup`)."""
        if not (self.config_dir / "server.properties").exists():
            raise DockerError(f"{self.config_dir}/server.properties is missing: write the node's config first")
        volumes = {
            (str(self.data_bind) if self.data_bind else self.volume): {"bind": DATA_DIR, "mode": "rw"},
            str(self.config_dir): {"bind": CONFIG_DIR, "mode": "ro"},
        }
        environment = {"KAFKA_HEAP_OPTS": f"-Xms{self.heap_mb}m -Xmx{self.heap_mb}m",
                       "KAFKA_LOG4J_OPTS": log4j_opts(self.config_dir)}
        from harness.cluster.kafka import broker_jvm_opts

        if broker_jvm_opts():  # EOS_CHAOS_BROKER_JVM_OPTS, as on netns (the start scripts read KAFKA_OPTS)
            environment["KAFKA_OPTS"] = shlex.join(broker_jvm_opts())
        if self.clock_dir is not None:
            from harness.cluster.kafka import libfaketime_path

            lib = libfaketime_path()
            if lib is None:
                raise DockerError("libfaketime is not installed (Debian: apt-get install -y libfaketime)")
            # the host's library (the image is Debian too); the directory, not the file, so that
            # the control file can be replaced atomically (a file bind would keep the old inode)
            volumes[str(Path(lib).parent)] = {"bind": "/opt/eosc-faketime", "mode": "ro"}
            volumes[str(self.clock_dir)] = {"bind": CLOCK_DIR, "mode": "ro"}
            environment.update({"LD_PRELOAD": f"/opt/eosc-faketime/{Path(lib).name}",
                                "FAKETIME_TIMESTAMP_FILE": f"{CLOCK_DIR}/faketime.rc",
                                "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                                "FAKETIME_FORCE_MONOTONIC_FIX": "0"})  # why: KafkaNode.clock_env
        log_file = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.touch()
            volumes[str(self.log_path.parent)] = {"bind": LOG_DIR, "mode": "rw"}
            log_file = f"{LOG_DIR}/{self.log_path.name}"
        lab = labels(self.run_id, node=str(self.node_id))
        try:
            if self.data_bind is None:
                self.client.volumes.create(self.volume, labels=lab)
            self._container = self.client.containers.create(
                self.image,
                entrypoint=["/bin/sh", "-c"],
                command=[start_script(f"{CONFIG_DIR}/server.properties", log_file, self.cluster_id,
                                      self.kafka_version, self.features)],
                name=self.name,
                hostname=f"n{self.node_id}",
                labels=lab,
                user="0:0",  # the official image runs as appuser; the log file on the host is root's
                environment=environment,
                volumes=volumes,
                network=self.net.name,
                networking_config={self.net.name: self.client.api.create_endpoint_config(
                    ipv4_address=self.address)},
                stop_signal="SIGTERM",
                detach=True,
            )
        except docker.errors.ImageNotFound as exc:
            raise DockerError(f"image {self.image} is not there: run `eos-chaos setup --docker` "
                              "(no registry is reachable to pull it)") from exc
        except APIError as exc:
            raise DockerError(f"creating {self.name} failed: {exc.explanation or exc} "
                              "(leftovers of an earlier run? `eos-chaos cleanup`)") from exc

    def _state(self) -> dict:
        c = self.container
        c.reload()
        return c.attrs.get("State") or {}

    def running(self) -> bool:
        """True while the container runs (paused counts as running)."""
        try:
            return bool(self._state().get("Running"))
        except (NotFound, DockerError):
            return False

    @property
    def paused(self) -> bool:
        try:
            return bool(self._state().get("Paused"))
        except (NotFound, DockerError):
            return False

    def exit_code(self) -> int | None:
        """The exit code of a stopped container; None while it runs or before its first start."""
        st = self._state()
        if st.get("Running") or st.get("Status") == "created":
            return None
        return st.get("ExitCode")

    def pid(self) -> int | None:
        """Host pid of the container's init process (the broker JVM after its exec); None when
        it is not running."""
        st = self._state()
        return (st.get("Pid") or None) if st.get("Running") else None

    def start(self) -> None:
        """Start the container (the first start formats the log dir); a running one is left alone,
        a paused one is resumed. Raises DockerError."""
        st = self._state()
        if st.get("Paused"):
            self.resume()
            return
        if st.get("Running"):
            return
        try:
            self.container.start()
        except APIError as exc:
            raise DockerError(f"starting {self.name} failed: {exc.explanation or exc}; read {self.log_path}") from exc

    def kill(self) -> bool:
        """SIGKILL the container (a crash: no controlled shutdown). A paused container is killed
        too (the kernel delivers SIGKILL to frozen tasks once thawed; docker handles it). True when
        it was running."""
        if not self.running():
            return False
        try:
            self.container.kill(signal="SIGKILL")
        except APIError as exc:
            if not self.running():
                return True
            raise DockerError(f"killing {self.name} failed: {exc.explanation or exc}") from exc
        self._wait_stopped(30.0)
        return True

    def stop(self, timeout: float = 30.0) -> bool:
        """SIGTERM (controlled shutdown), SIGKILL after ``timeout`` seconds. True when it was running."""
        if not self.running():
            return False
        if self.paused:
            self.resume()
        try:
            self.container.stop(timeout=int(timeout))
        except APIError as exc:
            raise DockerError(f"stopping {self.name} failed: {exc.explanation or exc}") from exc
        return True

    def _wait_stopped(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.05)

    def pause(self) -> bool:
        """Freeze every process of the container (cgroup freezer). False when not running or
        already paused."""
        st = self._state()
        if not st.get("Running") or st.get("Paused"):
            return False
        self.container.pause()
        return True

    def resume(self) -> bool:
        """Thaw a paused container; False when it was not paused."""
        if not self.paused:
            return False
        self.container.unpause()
        return True

    def save_log(self, path: Path) -> Path:
        """Write the node's whole output (every start) to ``path``: ``docker logs`` when there is
        no ``log_path``; with one, a copy of it (nothing to do when ``path`` is ``log_path``).
        Returns ``path``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.log_path is None:
            path.write_bytes(self.container.logs(stdout=True, stderr=True))
        elif path.resolve() != self.log_path:
            shutil.copyfile(self.log_path, path)
        return path

    def remove(self) -> list[str]:
        """Remove the container (forced) and its volume; return what could not be removed."""
        problems = []
        try:
            self.client.containers.get(self.name).remove(force=True)
        except NotFound:
            pass
        except APIError as exc:
            problems.append(f"container {self.name}: {exc.explanation or exc}")
        self._container = None
        try:
            self.client.volumes.get(self.volume).remove(force=True)
        except NotFound:
            pass
        except APIError as exc:
            problems.append(f"volume {self.volume}: {exc.explanation or exc}")
        return problems
