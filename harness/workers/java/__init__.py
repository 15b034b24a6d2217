"""The Java client under test: worker programs on kafka-clients (``harness/workers/java/src/eosc``).

They speak the Python workers' protocol (harness.workers.base: history events and
``{"ctl": ...}`` lines on stdout, ``stop``/``retire`` on stdin) and write the same history, so
the pool, the nemesis (kill, pause, zombie) and the checkers treat them alike. A workload with
``client: java`` puts ``"client": "java"`` and ``"java_client_version"`` in every worker's
config; ``harness.run.pool`` then starts ``command(role, cfg)`` instead of the Python worker.

Build: ``build(version)`` resolves ``org.apache.kafka:kafka-clients:<version>`` with Maven
(harness.cluster.artifacts.java_client_libs) and compiles the sources with the JDK's ``javac`` into
``cache_dir()/java-client/<version>/classes-<digest>``, where ``<digest>`` hashes the sources:
an edited source is rebuilt, an unchanged one never; one process at a time builds a version
(``build_lock``: the others wait, then find it complete). docs/java-client.md.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from checkers.version_numbers import older_than
from harness.cluster.artifacts import (DEFAULT_KAFKA_VERSION, ArtifactError, _require, build_lock, cache_dir,
                                       java_client_libs)
from harness.workers.outcomes import TABLE

SRC = Path(__file__).parent / "src"
MAIN = "eosc.Main"
#: kafka-clients version of a workload that names none: the default broker's
DEFAULT_JAVA_CLIENT_VERSION = DEFAULT_KAFKA_VERSION
#: small heaps, the serial collector and C1 only: several worker JVMs share 2 cores with 3
#: brokers; the clients are I/O bound
JVM_FLAGS = ["-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
             "-Djava.awt.headless=true",
             # slf4j-simple: the client's warnings and errors go to stderr, i.e. logs/<worker>.log
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"]


#: the share consumer's KafkaShareConsumer (KIP-932), ConfigResource.Type.GROUP and
#: ConsumerRecord.deliveryCount() arrived in kafka-clients 4.0.0: older clients build without it
SHARE_MIN_CLIENT = "4.0.0"
SHARE_SOURCE = "ShareConsumers.java"


def sources(version: str | None = None) -> list[Path]:
    """The worker sources, sorted; for a kafka-clients ``version`` before ``SHARE_MIN_CLIENT``,
    without the share consumer (Main then refuses the role with what to set)."""
    skip = version is not None and older_than(version, SHARE_MIN_CLIENT)
    return sorted(p for p in SRC.rglob("*.java") if not (skip and p.name == SHARE_SOURCE))


def source_digest(version: str | None = None) -> str:
    """12 hex digits of SHA-256 over the names and contents of ``sources(version)``."""
    h = hashlib.sha256()
    for p in sources(version):
        h.update(p.relative_to(SRC).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


@functools.lru_cache(maxsize=None)
def build(version: str = DEFAULT_JAVA_CLIENT_VERSION, *, fetch: bool = True) -> str:
    """Compile the workers against kafka-clients ``version`` (fetched if needed and ``fetch``:
    ``fetch=False`` never goes to Maven, but still compiles); return the java classpath
    (classes and jars). Cached per version and source digest. Raises ArtifactError when javac
    or Maven is missing, the version does not resolve, its jars are not cached and ``fetch`` is
    false, or the sources do not compile (javac's output quoted)."""
    libs = java_client_libs(version, fetch=fetch)
    out = cache_dir() / "java-client" / version / f"classes-{source_digest(version)}"
    if (out / ".complete").exists():
        return f"{out}:{libs}/*"
    # one build per folder at a time: two processes compiling into one staging folder at once
    # (a run and a test session, 2026-11-27) left a "complete" folder of 4 classes, and the
    # run's workers died with ClassNotFoundException: eosc.Main
    with build_lock(out.parent):
        if not (out / ".complete").exists():
            javac = _require("javac", "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jdk-headless)")
            staging = out.with_name(f"{out.name}.partial-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            proc = subprocess.run(
                [javac, "-nowarn", "-XDsuppressNotes", "--release", "17", "-encoding", "UTF-8",
                 "-d", str(staging), "-cp", f"{libs}/*", *map(str, sources(version))],
                capture_output=True, text=True)
            if proc.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
                raise ArtifactError(f"javac could not compile the Java workers against kafka-clients {version}:\n{tail}")
            shutil.rmtree(out, ignore_errors=True)
            staging.rename(out)
            (out / ".complete").write_text(version + "\n")
    return f"{out}:{libs}/*"


def error_table() -> list[list]:
    """harness.workers.outcomes.TABLE as JSON rows ``[phase, condition, action, replace]``: the Java
    workers classify with the same table as the Python ones."""
    return [[phase, cond, d.action.value, d.replace] for phase, cond, d in TABLE]


def is_java(cfg: dict) -> bool:
    """Whether a worker config asks for the Java client."""
    return cfg.get("client") == "java"


def command(role: str, cfg: dict) -> tuple[list[str], dict]:
    """(argv without the namespace prefix, config as passed) of the Java worker ``role``: the
    config gains ``error_table``. Raises ArtifactError when the workers are not built for
    ``cfg["java_client_version"]`` and cannot be (see ``build``)."""
    version = cfg.get("java_client_version") or DEFAULT_JAVA_CLIENT_VERSION
    cp = build(version)
    java = shutil.which("java") or "java"
    cfg = dict(cfg, error_table=error_table())
    return [java, *JVM_FLAGS, "-cp", cp, MAIN, role], cfg
