"""Remove what the harness made in Docker, found by its labels alone.

Labels are all it needs: after a SIGKILL of the controller nothing in memory says what was made,
but every container, network and volume of a run carries ``eos-chaos.harness=1`` and
``eos-chaos.run=<run id>``. Images are a cache (``eos-chaos.image``), not removed here.
"""
from __future__ import annotations

import docker
from docker.errors import APIError, NotFound

from harness.cluster.docker.nodes import LABEL_HARNESS, LABEL_RUN


def _filters(run_id: str | None) -> dict:
    wanted = [f"{LABEL_HARNESS}=1"]
    if run_id is not None:
        wanted.append(f"{LABEL_RUN}={run_id}")
    return {"label": wanted}


def leftovers(run_id: str | None = None, client: docker.DockerClient | None = None) -> dict[str, list[str]]:
    """Names of the labelled containers, networks and volumes still there (of ``run_id`` only,
    when given): ``{"containers": [...], "networks": [...], "volumes": [...]}``. No engine
    answering: all empty."""
    if client is None:
        from harness.cluster.docker.engine import engine_client

        client = engine_client()
        if client is None:
            return {"containers": [], "networks": [], "volumes": []}
    f = _filters(run_id)
    return {
        "containers": sorted(c.name for c in client.containers.list(all=True, filters=f)),
        "networks": sorted(n.name for n in client.networks.list(filters=f)),
        "volumes": sorted(v.name for v in client.volumes.list(filters=f)),
    }


def cleanup(run_id: str | None = None, client: docker.DockerClient | None = None) -> list[str]:
    """Remove every labelled container (forced: running and paused ones too), then the networks
    and volumes (of ``run_id`` only, when given). Returns one line per thing that could not be
    removed, and a last line when some are still listed afterwards. No engine answering:
    nothing can be left by a daemon that is not running, so []."""
    if client is None:
        from harness.cluster.docker.engine import engine_client

        client = engine_client()
        if client is None:
            return []
    f = _filters(run_id)
    problems: list[str] = []
    # containers first: a network with endpoints or a volume in use cannot go
    for c in client.containers.list(all=True, filters=f):
        try:
            c.remove(force=True, v=False)
        except NotFound:
            pass
        except APIError as exc:
            problems.append(f"container {c.name}: {exc.explanation or exc}")
    for n in client.networks.list(filters=f):
        try:
            n.remove()
        except NotFound:
            pass
        except APIError as exc:
            problems.append(f"network {n.name}: {exc.explanation or exc}")
    for v in client.volumes.list(filters=f):
        try:
            v.remove(force=True)
        except NotFound:
            pass
        except APIError as exc:
            problems.append(f"volume {v.name}: {exc.explanation or exc}")
    if not problems:
        left = leftovers(run_id, client)
        rest = [f"{kind[:-1]} {name}" for kind, names in left.items() for name in names]
        if rest:
            problems.append(f"still there after cleanup: {', '.join(rest)}")
    return problems
