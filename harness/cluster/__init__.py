"""Everything that brings a cluster up and down: the cluster service (harness.cluster.service),
its backends, network namespaces, the Docker engine and images (harness.cluster.docker), the admin
agent, the toxiproxy server, the machine's cluster lock, Kafka's artifacts, broker logs and segments.

Backends (harness.cluster.service.Backend) say how nodes are started, killed, paused and cut
off from each other: ``netns`` (harness.cluster.netns_backend, JVMs in network namespaces, the
default), ``docker`` (harness.cluster.docker_backend, containers through the docker SDK) and
``external`` (harness.cluster.external_backend, a cluster the harness did not start). The KRaft node
configuration shared by the backends that start Kafka themselves is harness.cluster.kafka; what
differs between Kafka releases, harness.cluster.releases.
"""
from harness.cluster.kafka import (BROKER_DEFAULTS, BROKER_PORT, CLIENT_PORT, CONTROLLER_PORT, Cluster,
                                   ClusterError, KafkaNode, random_cluster_id)
from harness.cluster.releases import LOG4J1, LOG4J2

__all__ = ["BROKER_DEFAULTS", "BROKER_PORT", "CLIENT_PORT", "CONTROLLER_PORT", "LOG4J1", "LOG4J2",
           "Cluster", "ClusterError", "KafkaNode", "random_cluster_id"]
