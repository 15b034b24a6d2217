"""What exactly was tested: the versions of every part of a run.

Findings depend on exact versions (F1 is librdkafka 2.16.0), so every run names them in
meta.json and verdict.json (key ``versions``), the report, the suite index and its JUnit
properties; ``eos-chaos --version`` prints those of this machine. Keys, each a string, present
when the part took part in the run:

    harness          this package's version, plus the git commit it runs from when known
    kafka            Apache Kafka of the brokers
    backend          cluster backend: netns, docker or external
    kafka-features   feature levels the brokers' storage was formatted with, when the scenario
                     sets them (cluster.features): ``transaction.version=1``
    confluent-kafka  the Python client (confluent_kafka.version())
    librdkafka       the C client under it (confluent_kafka.libversion())
                     (the Python workers' and the admin agent's)
    jdk              the JVM of the brokers (netns) and of the Java workers (``java -version``)
    broker-jvm-opts  extra JVM options the brokers ran with (EOS_CHAOS_BROKER_JVM_OPTS, which
                     `make test` sets to ``-XX:TieredStopAtLevel=1``), when set
    java-client      kafka-clients of the Java workers (workload client: java)
    group-protocol   the consumer group protocol and assignor of a workload with a group
                     (eos-pipeline, app; harness.workloads.group): ``consumer (uniform)``, ...
    spark            pyspark of the spark workload
    flink            PyFlink (apache-flink) of the app workload's Flink example (a command that
                     runs harness.examples.flink_app), with ``flink-connector-kafka`` (the
                     connector's jar) and ``flink-kafka-clients`` (the kafka-clients it shades)
    python           this interpreter
    linux            the kernel (uname -r): network namespaces, iptables and the page cache are its
"""
from __future__ import annotations

import functools
import importlib.metadata
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

PACKAGE = "kafka-eos-chaos"
ORDER = ("harness", "kafka", "kafka-features", "backend", "confluent-kafka", "librdkafka", "jdk", "broker-jvm-opts",
         "java-client", "group-protocol", "spark",
         "python", "linux")


@functools.cache
def harness_version() -> str:
    """``0.1.0`` (the installed package's version), with ``+git <commit>`` (``-dirty`` when the
    work tree has changes) when it runs from a git clone."""
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    root = Path(__file__).resolve().parents[2]
    if (root / ".git").exists() and shutil.which("git"):
        try:
            commit = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=7"],
                                    capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = ""
        if commit:
            version += f" (git {commit})"
    return version


@functools.cache
def jdk_version(java: str | None = None) -> str | None:
    """The ``java`` on PATH's version (``java -version``'s first line: ``openjdk version
    "17.0.13" 2024-10-15`` -> ``17.0.13 (openjdk)``); None without java."""
    java = java or shutil.which("java")
    if not java:
        return None
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
    m = re.match(r'(\S+) version "([^"]+)"', first[0]) if first else None
    return f"{m.group(2)} ({m.group(1)})" if m else (first[0] if first else None)


def client_versions() -> dict[str, str]:
    """confluent-kafka's and librdkafka's versions (empty when confluent-kafka is missing)."""
    try:
        import confluent_kafka
    except ImportError:
        return {}
    v = confluent_kafka.version()  # a string in 2.x, (string, int) in 1.x like libversion()
    return {"confluent-kafka": v if isinstance(v, str) else v[0], "librdkafka": confluent_kafka.libversion()[0]}


def _package(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def ordered(versions: dict[str, Any]) -> dict[str, str]:
    """``versions`` in ORDER (unknown keys last, sorted), values as strings, None dropped."""
    keys = [k for k in ORDER if k in versions] + sorted(k for k in versions if k not in ORDER)
    return {k: str(versions[k]) for k in keys if versions[k] is not None}


def collect_versions(scenario: Any = None, meta: dict | None = None) -> dict[str, str]:
    """The versions of a run (keys in the module docstring), from the scenario as run and the
    run's meta.json so far (``kafka_version``, ``backend``, ``client`` / ``java_client_version``
    as the runner, cluster service and workload wrote them). Without either: this machine's."""
    meta = meta or {}
    cluster = getattr(scenario, "cluster", None)
    workload = getattr(scenario, "workload", None)
    backend = meta.get("backend") or getattr(cluster, "backend", None) or ("netns" if scenario else None)
    client = meta.get("client") or getattr(workload, "client", None)
    client_version = None
    if isinstance(client, dict):  # meta.json's {"name": "java", "version": "4.3.1"} (harness.workloads.client_choice)
        client, client_version = client.get("name"), client.get("version")
    found: dict[str, Any] = {
        "harness": harness_version(),
        "kafka": meta.get("kafka_version") or getattr(cluster, "kafka_version", None),
        "backend": backend,
    }
    features = meta.get("cluster_features") or getattr(cluster, "features", None)
    if features:  # set at format time (cluster.features); else the release's defaults ran
        found["kafka-features"] = ", ".join(f"{k}={v}" for k, v in sorted(features.items()))
    from harness.cluster.kafka import broker_jvm_opts

    if backend in ("netns", "docker") and broker_jvm_opts():  # EOS_CHAOS_BROKER_JVM_OPTS (make test sets it)
        found["broker-jvm-opts"] = " ".join(broker_jvm_opts())
    found.update(client_versions())  # the admin agent is confluent-kafka's, whatever the workers' client
    # the brokers run on this machine's JVM on netns; docker brings its own, external is not ours
    if scenario is None or backend == "netns" or client == "java":
        found["jdk"] = jdk_version()
    if client == "java":
        from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION

        found["java-client"] = (client_version or meta.get("java_client_version")
                                or getattr(workload, "java_client_version", None) or DEFAULT_JAVA_CLIENT_VERSION)
    if getattr(workload, "group_protocol", None) is not None:
        from harness.workloads.group import describe

        found["group-protocol"] = describe(workload.group_protocol, getattr(workload, "assignor", None))
    if getattr(workload, "name", None) == "spark" or meta.get("workload") == "spark":
        found["spark"] = _package("pyspark")
    command = getattr(getattr(workload, "app", None), "command", None) or []
    if any("flink_app" in str(arg) for arg in command):  # the Flink example (harness.examples.flink_app)
        from harness.examples.flink_app import versions as flink_versions

        found.update(flink_versions())
    found["python"] = platform.python_version()
    found["linux"] = platform.release()
    return ordered(found)
