"""Docker primitives for the docker backend: the engine, the Kafka image, broker containers.

Written with the docker SDK for Python (docker-py, ``import docker``); harness.cluster.docker_backend
adapts them into a cluster backend. Nothing here holds the machine's cluster lock: a caller
that starts containers holds ``harness.cluster.lock.cluster_lock()``. Every error is a DockerError
whose message is one line saying what to do.

Engine (harness.cluster.docker.engine)
    ensure_engine(install=True, timeout=60.0) -> docker.DockerClient
        A client of a running engine: installs Debian's ``docker.io`` when ``dockerd`` is missing
        (apt-get, root), starts ``dockerd`` when no daemon answers, with DOCKERD_FLAGS (host
        firewall left alone, no docker0, every network on 198.19.0.0/16), and waits up to
        ``timeout`` seconds for ``ping()``. Raises DockerError.
    engine_client(timeout=10.0) -> docker.DockerClient | None
        A client when a daemon answers, else None (never installs or starts anything).
    stop_engine() -> bool
        Stop the dockerd that ensure_engine started (its pidfile); False when it did not start one.

Image (harness.cluster.docker.image)
    image_tag(version) -> str                      "kafka-eos-chaos/kafka:<version>"
    build_kafka_image(version=DEFAULT_KAFKA_VERSION, client=None, force=False) -> str
        Build (or find) the Kafka image: Debian bookworm from Debian's packages (mmdebstrap,
        cached as BASE_TAG) with openjdk-17-jre-headless, the cached Kafka jars under
        /opt/kafka/libs and start scripts under /opt/kafka/bin (apache/kafka's layout).
        Skipped when the tag exists. Raises DockerError (and ArtifactError from
        harness.cluster.artifacts when the jars cannot be fetched).

Broker containers (harness.cluster.docker.nodes)
    labels(run_id, **extra) -> dict[str, str]     {"eos-chaos.harness": "1", "eos-chaos.run": run_id, ...}
    create_network(client, run_id, subnet=None) -> DockerNet
        A user-defined bridge network ``eosc-<run_id>`` on a free 198.19.<n>.0/24 (or ``subnet``);
        DockerNet has ``name``, ``subnet``, ``gateway`` (the host's address on it: host <->
        container traffic works directly), ``address(i)`` (198.19.<n>.<10+i>).
    BrokerContainer(client, run_id, node_id, image, net, config_dir, cluster_id, log_path, heap_mb=512)
        One KRaft node, container ``eosc-<run_id>-n<i>``, hostname ``n<i>``, fixed IP
        ``net.address(i)``. ``config_dir`` (host dir, written by the caller) holds
        server.properties and log4j2.properties (4.x) / log4j.properties (3.x); it is mounted
        read-only at CONFIG_DIR (/mnt/eos-chaos). The caller writes ``log.dirs=DATA_DIR``
        (/var/lib/kafka/data), a named volume ``eosc-<run_id>-n<i>-data`` that survives kill and
        start, and listeners on ``net.address(i)``. The first start formats the log dir
        (``kafka-storage format -t cluster_id``), every start runs ``kafka-server-start.sh``
        (works on apache/kafka images too). The broker's output is appended live to the host file
        ``log_path`` (the run's logs/n<i>.log; its directory is mounted), with a start marker.
        .create() -> None       make volume + container (not started)
        .start() -> None        start (also after kill; resumes a paused one); no-op when running
        .kill() -> bool         SIGKILL (docker kill), waits until stopped; True when it was running
        .stop(timeout=30) -> bool   SIGTERM, SIGKILL after ``timeout`` s
        .pause() / .resume() -> bool   cgroup freezer (docker pause / unpause)
        .running() -> bool (paused counts), .paused -> bool, .exit_code() -> int | None
        .pid() -> int | None    host pid of the container's init (the JVM): nsenter -t PID -n
        .address -> str         fixed IP on ``net``
        .save_log(path) -> Path ``docker logs`` (output before the script's redirect) to ``path``
        .remove() -> list[str]  remove container and volume; what could not be removed
    nsenter_prefix(pid) -> list[str]   ["nsenter", "-t", pid, "-n"]: run a host binary (iptables)
        in a container's network namespace.

Setup (harness.cluster.docker.setup)
    setup_docker(versions, say=print, images=()) -> list[str]     engine + base + one image per
        version + the caller's ``(build, what)`` images (what ``eos-chaos setup --docker`` runs,
        with the app example image); the Kafka image tags.

Cleanup (harness.cluster.docker.cleanup)
    cleanup(run_id=None, client=None) -> list[str]
        Remove every container, network and volume labelled ``eos-chaos.harness=1`` (of
        ``run_id`` only, when given); returns what could not be removed. Works after a SIGKILL
        of the controller (labels are all it needs). No engine answering: nothing to do, [].
    leftovers(run_id=None, client=None) -> dict[str, list[str]]
        Names of labelled containers / networks / volumes still there.
"""
from __future__ import annotations


from harness.cluster.docker.cleanup import cleanup, leftovers
from harness.cluster.docker.engine import DOCKERD_FLAGS, DockerError, engine_client, ensure_engine, stop_engine
from harness.cluster.docker.image import BASE_TAG, build_kafka_image, image_tag
from harness.cluster.docker.nodes import (CONFIG_DIR, DATA_DIR, LABEL_HARNESS, LABEL_RUN,
                                  BrokerContainer, DockerNet, create_network, labels, nsenter_prefix)

__all__ = [
    "DockerError", "ensure_engine", "engine_client", "stop_engine", "DOCKERD_FLAGS",
    "BASE_TAG", "image_tag", "build_kafka_image", "LABEL_HARNESS", "LABEL_RUN", "CONFIG_DIR",
    "DATA_DIR", "labels", "create_network", "DockerNet", "BrokerContainer", "nsenter_prefix",
    "cleanup", "leftovers",
]
