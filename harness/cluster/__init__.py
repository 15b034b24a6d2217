"""The cluster under test, behind one service (harness.cluster.service.ClusterService).

Backends (harness.cluster.service.Backend) say how nodes are started, killed, paused and cut
off from each other: ``netns`` (harness.cluster.netns, JVMs in network namespaces, the
default), ``docker`` (harness.cluster.docker, containers through the docker SDK) and
``external`` (harness.cluster.external, a cluster the harness did not start). The KRaft node
configuration shared by the backends that start Kafka themselves is harness.cluster.kafka.
"""
from harness.cluster.kafka import (BROKER_DEFAULTS, BROKER_PORT, CLIENT_PORT, CONTROLLER_PORT, LOG4J1,
                                   LOG4J2, Cluster, ClusterError, KafkaNode, random_cluster_id)

__all__ = ["BROKER_DEFAULTS", "BROKER_PORT", "CLIENT_PORT", "CONTROLLER_PORT", "LOG4J1", "LOG4J2",
           "Cluster", "ClusterError", "KafkaNode", "random_cluster_id"]
