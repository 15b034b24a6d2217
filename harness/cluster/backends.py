"""The backend a scenario's ``cluster:`` section names (harness.run.scenario.ClusterSpec)."""
from __future__ import annotations

from pathlib import Path

from harness.cluster.service import Backend


def make_backend(spec, workdir: Path, logdir: Path, run_id: str = "adhoc") -> Backend:
    """The Backend for ``spec`` (a ClusterSpec): ``workdir`` holds node configs and data,
    ``logdir`` node logs; ``run_id`` labels what a docker run makes. Raises ArtifactError when
    the Kafka jars (netns) are not cached, and what the docker backend raises."""
    if spec.backend == "external":
        from harness.cluster.external_backend import ExternalBackend

        return ExternalBackend(spec.external, logdir, nodes=spec.nodes)
    if spec.backend == "docker":
        from harness.cluster.docker_backend import DockerBackend

        return DockerBackend(spec, workdir, logdir, run_id=run_id)
    from harness.cluster.artifacts import kafka_dist
    from harness.cluster.netns_backend import NetnsBackend

    return NetnsBackend(kafka_dist(spec.kafka_version), workdir, logdir, nodes=spec.nodes,
                        heap_mb=spec.heap_mb, overrides=spec.broker, lazyfs=spec.lazyfs,
                        faketime=spec.faketime, features=getattr(spec, "features", None))


def clean_everything() -> list[str]:
    """What ``eos-chaos cleanup`` does: every backend's leftovers, from any run (the netns
    namespaces; the docker backend's labelled containers, networks and volumes when a Docker
    engine answers; every FUSE layer the harness mounted, found in /proc/mounts). Returns what
    could not be removed."""
    from harness.cluster import namespaces as net
    from harness.cluster.fuse_mounts import cleanup_mounts

    problems = net.cleanup() + cleanup_mounts()
    try:
        from harness.cluster.docker_backend import clean_docker_leftovers
    except ImportError:  # the docker backend is not there (or its SDK is missing)
        return problems
    return problems + clean_docker_leftovers()
