"""A cluster for the findings' reproducers: the harness's own KRaft nodes in network namespaces
(harness.cluster.netns_backend through harness.cluster.service.ClusterService), optionally with
toxiproxy in front of every broker; no workload and no nemesis schedule.

``findings_cluster(run_dir, ...)`` holds the machine's cluster lock, starts the service, yields a
``FindingsCluster`` and tears everything down on exit, also after an error: a
harness.cluster.session.ClusterSession. The brokers' log dirs (``run_dir/nodes/n*/data``) are
kept for DumpLogSegments (harness.cluster.segments). The leftovers removed before the start and
what teardown could not undo are in ``FindingsCluster.problems``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import yaml

from harness.cluster.artifacts import kafka_dist
from harness.cluster.netns_backend import NetnsBackend
from harness.cluster.service import ClusterService
from harness.cluster.session import ClusterSession
from harness.cluster.toxiproxy_server import API_HOST, API_PORT


@dataclass
class TriesResult:
    """What a tries-based reproducer run returns (harness.findings.f1, f4): its run folder,
    one dict per try as the reproducer printed it, the summary per variant, the evidence lines
    (also in evidence.txt) and what the cluster's teardown could not undo."""

    run_dir: Path
    tries: list[dict]
    summary: dict
    evidence: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class FindingsCluster:
    run_dir: Path
    service: ClusterService
    backend: NetnsBackend
    problems: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        """What clients use: the proxies when there are any, else the brokers' PLAINTEXT."""
        return self.service.bootstrap

    @property
    def toxiproxy_url(self) -> str:
        """toxiproxy's API, reachable from the client namespace only."""
        return f"http://{API_HOST}:{API_PORT}"

    def run_client(self, argv: list[str], timeout: float, log: Path) -> subprocess.CompletedProcess:
        """Run ``python ARGV`` in the client namespace (where the brokers and toxiproxy are
        reachable); stdout is returned, stderr goes to ``log``. Raises TimeoutExpired."""
        with open(log, "ab") as err:
            return subprocess.run(self.service.client_host.exec_prefix() + [sys.executable, *argv],
                                  stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout)


@contextmanager
def findings_cluster(run_dir: Path, *, kafka_version: str, nodes: int = 3, proxies: bool = True,
                     broker: dict[str, str] | None = None, heap_mb: int = 512) -> Iterator[FindingsCluster]:
    """Bring up ``nodes`` KRaft nodes (broker settings ``broker`` on top of the harness's
    defaults) with toxiproxy in front when ``proxies``; logs in ``run_dir/logs``. Raises
    ArtifactError / NetError / ClusterError / WaitTimeout as harness.run.runner does."""
    run_dir = Path(run_dir)
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    # harness.cluster.segments.kafka_version_of reads the version from here
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump({"name": run_dir.parent.name,
                                                          "kafka_version": kafka_version}))
    backend = NetnsBackend(kafka_dist(kafka_version), run_dir / "nodes", logs, nodes=nodes,
                           heap_mb=heap_mb, overrides=broker)
    service = ClusterService(backend, logs, proxies=proxies)
    fc = FindingsCluster(run_dir, service, backend)
    with ClusterSession(service, problems=fc.problems):
        yield fc


def reproducer_tries(proc: subprocess.CompletedProcess, run_dir: Path, err_log: Path) -> tuple[list[dict], dict]:
    """The tries and the summary a standalone reproducer printed with ``--json`` (one object
    per try, then ``{"summary": ...}``), also written to ``run_dir/tries.jsonl``. Raises
    RuntimeError quoting the last lines of ``err_log`` when it exited non-zero or printed no
    summary."""
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    (run_dir / "tries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    summary = next((x["summary"] for x in lines if "summary" in x), None)
    if proc.returncode != 0 or summary is None:
        err = err_log.read_text(errors="replace").strip().splitlines()[-5:] if err_log.is_file() else []
        raise RuntimeError(f"the reproducer exited with {proc.returncode}: " + " / ".join(err))
    return [x for x in lines if "summary" not in x], summary


def repro_run_dir(results: Path, name: str) -> Path:
    """``<results>/<name>-repro/<UTC time>``: the run folder of a reproducer run."""
    return Path(results) / f"{name}-repro" / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def write_evidence(run_dir: Path, lines: list[str]) -> None:
    """``lines`` into the run folder's evidence.txt, one per line."""
    (run_dir / "evidence.txt").write_text("\n".join(lines) + "\n")


def run_tries_reproducer(name: str, script: Path, results: Path, *, tries: int, variants: list[str],
                         evidence: Callable[[TriesResult], list[str]], kafka_version: str,
                         proxies: bool, debug_log: bool, timeout_s: float,
                         extra: list[str] | None = None) -> TriesResult:
    """Bring up a cluster (``findings_cluster``), run the standalone reproducer ``script`` with
    ``--bootstrap``, ``--json``, ``--tries`` and a ``--variant`` per ``variants``
    (``--toxiproxy`` with ``proxies``; ``--debug-log`` into logs/librdkafka-debug.log with
    ``debug_log``) in the client namespace (stderr into logs/<name>-repro.err), tear down, and
    return its tries and summary with ``evidence(result)`` as its evidence, also written to
    evidence.txt; ``extra`` is passed on to the script as it is (its own options). Raises what ``findings_cluster`` raises; RuntimeError as ``reproducer_tries``."""
    run_dir = repro_run_dir(results, name)
    logs, err = run_dir / "logs", run_dir / "logs" / f"{name}-repro.err"
    options = ["--tries", str(tries)] + [a for v in variants for a in ("--variant", v)] + list(extra or [])
    with findings_cluster(run_dir, kafka_version=kafka_version, proxies=proxies) as fc:
        argv = [str(script), "--bootstrap", fc.bootstrap, "--json", *options]
        if proxies:
            argv += ["--toxiproxy", fc.toxiproxy_url]
        if debug_log:
            argv += ["--debug-log", str(logs / "librdkafka-debug.log")]
        proc = fc.run_client(argv, timeout_s, err)
        problems = fc.problems
    done, summary = reproducer_tries(proc, run_dir, err)
    res = TriesResult(run_dir, done, summary, problems=problems)
    res.evidence = evidence(res)
    write_evidence(run_dir, res.evidence)
    return res
