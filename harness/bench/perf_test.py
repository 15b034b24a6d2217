"""A real 3-node KRaft cluster for a benchmark, and Kafka's producer perf test on it.

``bench_cluster`` brings the cluster up through a cluster session (harness.cluster.session,
netns backend), holding the machine's cluster lock throughout, and tears everything down on
exit, also after an error. Clients reach the brokers
only from the client namespace: run them with ``BenchCluster.client_cmd(argv)``.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, kafka_tools_command


@dataclass
class BenchCluster:
    service: object  # harness.cluster.service.ClusterService
    workdir: Path
    version: str

    @property
    def bootstrap(self) -> str:
        return self.service.bootstrap

    @property
    def client_host(self):
        """Where clients run (harness.cluster.namespaces.Host on the netns backend): harness.run.pool takes it."""
        return self.service.client_host

    def client_cmd(self, argv: list[str]) -> list[str]:
        """``argv`` run on the client host (the netns backend: its namespace, the only one with
        a route to the brokers)."""
        return self.service.client_host.exec_prefix() + list(argv)

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
        """RF 3, min.insync.replicas 2 (the run's data topics' shape); waits until every
        partition has a leader and 2 in-sync replicas."""
        from harness.workloads.base import TopicSpec

        self.service.create_topics([TopicSpec(name, partitions, dict(configs or {}))], replication_factor=3, min_isr=2)
        self.service.wait_ready([name], min_isr=2, timeout=60, what=f"topic {name} led with an ISR of 2")

    def end_offsets(self, topic: str, partitions: int) -> list[int]:
        """High watermark of each partition of ``topic``."""
        wm = self.service.agent.request("watermarks", timeout=30, keys=[f"{topic}/{p}" for p in range(partitions)])
        return [wm[f"{topic}/{p}"][1] for p in range(partitions)]


@contextmanager
def bench_cluster(version: str = DEFAULT_KAFKA_VERSION, heap_mb: int = 512,
                  overrides: dict[str, str] | None = None) -> Iterator[BenchCluster]:
    """Hold the cluster lock, start 3 KRaft nodes on Kafka ``version`` with the netns backend
    (harness.cluster.session.ClusterSession; broker settings ``overrides`` on top of the
    harness's), yield a BenchCluster.

    Raises what the service raises when the cluster cannot come up; teardown runs in every
    case and raises RuntimeError listing what it could not undo."""
    from harness.cluster.backends import make_backend
    from harness.cluster.service import ClusterService
    from harness.cluster.session import ClusterSession
    from harness.run.scenario import ClusterSpec

    workdir = Path(tempfile.mkdtemp(prefix="eosc-bench-"))
    spec = ClusterSpec(kafka_version=version, heap_mb=heap_mb, broker=dict(overrides or {}))
    try:
        service = ClusterService(make_backend(spec, workdir / "nodes", workdir / "logs",
                                              run_id=f"bench-{workdir.name}"), workdir / "logs")
        with ClusterSession(service) as session:
            yield BenchCluster(service, workdir, version)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if session.left:
        raise RuntimeError("bench cluster teardown could not undo: " + "; ".join(session.left))


# -- kafka-producer-perf-test -------------------------------------------------------------------

def perf_test_command(version: str = DEFAULT_KAFKA_VERSION) -> list[str]:
    """``java ... org.apache.kafka.tools.ProducerPerformance`` (kafka-producer-perf-test.sh) on
    the broker and kafka-tools classpath (harness.cluster.artifacts.kafka_tools_command, Kafka 4.x).
    Raises ArtifactError for a 3.x version (its perf test lives elsewhere and takes other flags)."""
    cmd = kafka_tools_command(version, "org.apache.kafka.tools.ProducerPerformance")
    cp = cmd[cmd.index("-cp") + 1]
    return [cmd[0], "-Xmx512m", "-cp", cp, "org.apache.kafka.tools.ProducerPerformance"]


_SUMMARY = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th")


def parse_perf_test(output: str) -> dict:
    """The last summary line of ProducerPerformance's output (the steady-state one when
    ``--warmup-records`` was given): {"records", "records_per_s", "mb_per_s", "avg_ms",
    "max_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms"}. Raises ValueError when there is none."""
    found = list(_SUMMARY.finditer(output))
    if not found:
        raise ValueError("kafka-producer-perf-test printed no summary line:\n" + output[-1500:])
    m = found[-1]
    return {"records": int(m["records"]), "records_per_s": float(m["rps"]), "mb_per_s": float(m["mbps"]),
            "avg_ms": float(m["avg"]), "max_ms": float(m["max"]), "p50_ms": float(m["p50"]),
            "p95_ms": float(m["p95"]), "p99_ms": float(m["p99"]), "p999_ms": float(m["p999"])}


def run_perf_test(bc: BenchCluster, topic: str, records: int, record_bytes: int, props: dict[str, str],
                  *, warmup_records: int = 0, transactional_id: str | None = None,
                  transaction_ms: int | None = None, timeout: float = 300) -> dict:
    """One kafka-producer-perf-test run at full speed (``--throughput -1``) in the client
    namespace; returns parse_perf_test's dict plus "wall_s". Raises RuntimeError when it fails."""
    import time

    argv = perf_test_command(bc.version) + [
        "--bootstrap-server", bc.bootstrap, "--topic", topic, "--num-records", str(records),
        "--record-size", str(record_bytes), "--throughput", "-1"]
    if warmup_records:
        argv += ["--warmup-records", str(warmup_records)]
    if transactional_id:
        argv += ["--transactional-id", transactional_id]
    if transaction_ms:
        argv += ["--transaction-duration-ms", str(transaction_ms)]
    argv += ["--command-property", *[f"{k}={v}" for k, v in props.items()]]
    t = time.monotonic()
    proc = subprocess.run(bc.client_cmd(argv), capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t
    if proc.returncode != 0:
        raise RuntimeError(f"kafka-producer-perf-test failed ({proc.returncode}):\n{proc.stderr[-1500:]}")
    return dict(parse_perf_test(proc.stdout), wall_s=round(wall, 2))
