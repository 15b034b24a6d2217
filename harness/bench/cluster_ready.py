"""``eos-chaos bench cluster-ready``: how long a 3-node cluster takes to come up and go away on
each backend, interleaved in one process under one hold of the machine's lock, so a ratio
compares runs made seconds apart (docs/benchmarks.md)."""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from harness.cluster.backends import make_backend
from harness.cluster.lock import cluster_lock
from harness.cluster.service import ClusterService
from harness.cluster.session import ClusterSession
from harness.run.scenario import ClusterSpec


def one(backend: str, kafka_version: str, workdir: Path) -> dict[str, float]:
    """Start a cluster on ``backend`` until ``cluster_ready`` (every broker registered, an
    active controller), then tear it down. Seconds: ``ready_s`` (prepare + start + ready),
    ``teardown_s``. The caller holds the cluster lock. Raises what the service raises;
    problems left raise RuntimeError."""
    spec = ClusterSpec(backend=backend, kafka_version=kafka_version)
    service = ClusterService(make_backend(spec, workdir / "nodes", workdir / "logs",
                                          run_id=f"bench-{workdir.name}"), workdir / "logs")
    with ClusterSession(service, lock=False) as session:  # run_cluster_ready holds the lock
        ready = time.monotonic() - session.started
    if session.left:
        raise RuntimeError(f"teardown on {backend} left: {session.left}")
    return {"ready_s": round(ready, 2), "teardown_s": session.teardown_s}


def run_cluster_ready(backends: list[str], runs: int, kafka_version: str,
                      log: Callable[[str], None] = print) -> dict:
    """``runs`` rounds, each starting and tearing down one cluster per backend in turn; one
    warm-up round first (not counted: first JVM start, image and page cache). Returns
    ``{"runs": [{backend, round, ready_s, teardown_s}], "median": {backend: {...}},
    "ratio_ready": {backend: median of per-round ready_s / first backend's}}``."""
    rows = []
    with cluster_lock(), tempfile.TemporaryDirectory(prefix="eosc-bench-ready-") as tmp:
        for r in range(runs + 1):
            for b in backends:
                res = one(b, kafka_version, Path(tmp) / f"{b}-{r}")
                log(f"round {r}{' (warm-up)' if r == 0 else ''} {b}: ready {res['ready_s']} s, "
                    f"teardown {res['teardown_s']} s")
                if r:
                    rows.append({"backend": b, "round": r, **res})
    median = {b: {k: statistics.median(x[k] for x in rows if x["backend"] == b)
                  for k in ("ready_s", "teardown_s")} for b in backends}
    base = backends[0]
    ratio = {}
    for b in backends[1:]:
        per = [next(x for x in rows if x["backend"] == b and x["round"] == r)["ready_s"]
               / next(x for x in rows if x["backend"] == base and x["round"] == r)["ready_s"]
               for r in range(1, runs + 1)]
        ratio[b] = round(statistics.median(per), 2)
    return {"kafka_version": kafka_version, "runs": rows, "median": median, "ratio_ready": ratio}
