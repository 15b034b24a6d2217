"""The ``netns`` backend (the default): one JVM per KRaft node, each in its own network
namespace on a private bridge (harness.cluster.namespaces, harness.cluster.kafka). Clients, the admin agent
and toxiproxy run in the client namespace ``eosc-c``; grudges are iptables rules inside the
namespaces (nemesis.partition). Everything lives in namespaces named ``eosc-*``, so
``net.cleanup`` finds and removes it also after a crashed controller; the FUSE layers under the
log dirs (``lazyfs``) are found by their type in /proc/mounts (harness.cluster.fuse_mounts)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cluster import namespaces as net
from harness.cluster.artifacts import KafkaDist
from harness.cluster.kafka import Cluster, KafkaNode


class NetnsBackend:
    """Nodes 1..``nodes`` of Kafka ``dist`` in namespaces; see the module docstring.

    ``workdir`` holds each node's config and data (``n<i>/``), ``logdir`` the node logs
    (``n<i>.log``). ``overrides``: extra server.properties settings."""

    name = "netns"
    client_config: dict[str, str] = {}

    def __init__(self, dist: KafkaDist, workdir: Path, logdir: Path, nodes: int = 3, heap_mb: int = 512,
                 overrides: dict[str, str] | None = None, lazyfs: bool = False, faketime: bool = False,
                 features: dict[str, int] | None = None):
        self.dist, self.workdir, self.logdir = dist, Path(workdir), Path(logdir)
        #: feature levels the log dirs are formatted with (cluster.features); empty: the release's
        self.features = dict(features or {})
        self.nodes, self.heap_mb, self.overrides = nodes, heap_mb, dict(overrides or {})
        #: log dirs on the FUSE layer (lose-unsynced), JVMs under libfaketime (clock-skew)
        self.lazyfs, self.faketime = lazyfs, faketime
        self.network = net.TestNetwork(list(range(1, nodes + 1)))
        self.cluster: Cluster | None = None

    def clean_leftovers(self) -> list[str]:
        from harness.cluster.fuse_mounts import cleanup_mounts

        # processes first (a broker keeps its log dir busy), then the FUSE layers under them
        return net.cleanup() + cleanup_mounts(clusters_only=True)

    def prepare(self) -> None:
        self.network.up()

    def start(self, client_listeners: dict[int, str] | None) -> None:
        self.cluster = Cluster(self.dist, self.network, self.workdir, self.logdir, nodes=self.nodes,
                               heap_mb=self.heap_mb, overrides=self.overrides,
                               client_listeners=client_listeners, lazyfs=self.lazyfs, faketime=self.faketime,
                               features=self.features)
        self.cluster.format_and_start()

    @property
    def client_host(self) -> net.Host:
        return self.network.client

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{net.node_address(i)}:9092" for i in self.node_ids())

    def node_ids(self) -> list[int]:
        return list(range(1, self.nodes + 1))

    def node(self, node_id: int) -> KafkaNode:
        return self.cluster.node(node_id)

    def addresses(self) -> dict[int, str]:
        return {i: f"{net.node_address(i)}:9092" for i in self.node_ids()}

    def dead_nodes(self) -> list[int]:
        return self.cluster.dead_nodes() if self.cluster else []

    def heal(self) -> list[str]:
        return self.cluster.heal() if self.cluster else []

    def stop(self) -> list[str]:
        return self.cluster.shutdown() if self.cluster else []

    def clean(self) -> list[str]:
        return self.network.down()

    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.lazyfs:
            out["log_dirs"] = "lazyfs"  # each on the FUSE layer (harness.cluster.unsynced_fs)
        if self.faketime:
            out["clock"] = "libfaketime"
        if self.features:
            out["cluster_features"] = dict(self.features)  # set at format time (cluster.features)
        return out
