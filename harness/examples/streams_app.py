"""Build and start the example Kafka Streams applications (harness/examples/streams/*.java:
CopyStreams, a copy; WordCount, a word count checked by output.verify).

``python -m harness.examples.streams_app ARGS...`` compiles the source once against
``org.apache.kafka:kafka-streams`` (resolved with Maven, cached under
``cache_dir()/examples/streams/<version>``; ``eos-chaos setup`` builds it ahead of any run), then
replaces itself with ``java -cp <classes>:<libs>/* CopyStreams ARGS...``: the process the harness
kills, pauses and signals is the JVM itself. ``--main WordCount`` (taken by this wrapper) starts
the word count instead. ``--kafka-streams-version V`` (taken by this
wrapper, not passed on) builds it against kafka-streams V instead of the harness's default
release (static membership under the streams rebalance protocol needs a 4.4+ client). A user's own Streams application needs none of
this: its scenario's command is ``["java", "-cp", "app.jar:{kafka_libs}", "com.me.Main", ...]``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from harness.cluster.artifacts import (DEFAULT_KAFKA_VERSION, ArtifactError, _require, build_lock, cache_dir,
                                       maven_libs)

SRC = Path(__file__).resolve().parent / "streams" / "CopyStreams.java"
#: every example's source, compiled together
SOURCES = sorted(SRC.parent.glob("*.java"))
MAIN = "CopyStreams"
JVM_FLAGS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]


def classpath(version: str = DEFAULT_KAFKA_VERSION, *, fetch: bool = True) -> str:
    """The example's Java classpath (its classes, then kafka-streams with its dependencies and
    slf4j-simple); compiled once per source digest. Raises ArtifactError when Maven, javac or
    the compile fails (their last lines quoted)."""
    home = cache_dir() / "examples" / "streams" / version
    libs = maven_libs(home, "streams-example-classpath", version,
                      [("org.apache.kafka", "kafka-streams", version), ("org.slf4j", "slf4j-simple", "1.7.36")],
                      f"org.apache.kafka:kafka-streams:{version}", fetch=fetch)
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in SOURCES)).hexdigest()[:12]
    out = home / f"classes-{digest}"
    if (out / ".complete").exists():
        return f"{out}:{libs}/*"
    javac = _require("javac", "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jdk-headless)")
    with build_lock(home):  # an app's instances start together: one compiles, the others wait
        if (out / ".complete").exists():
            return f"{out}:{libs}/*"
        staging = out.with_name(out.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        proc = subprocess.run([javac, "-nowarn", "--release", "17", "-encoding", "UTF-8", "-d", str(staging),
                               "-cp", f"{libs}/*", *map(str, SOURCES)], capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise ArtifactError(f"javac could not compile the Streams example against kafka-streams {version}:\n{tail}")
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
        (out / ".complete").write_text(version + "\n")
    return f"{out}:{libs}/*"


def main(argv: list[str]) -> None:
    argv = list(argv)
    version = DEFAULT_KAFKA_VERSION
    main_class = MAIN
    if "--main" in argv:
        i = argv.index("--main")
        names = [s.stem for s in SOURCES]
        if i + 1 >= len(argv) or argv[i + 1] not in names:
            print(f"streams_app: --main takes one of {', '.join(names)}", file=sys.stderr)
            sys.exit(2)
        main_class = argv[i + 1]
        del argv[i:i + 2]
    if "--kafka-streams-version" in argv:
        i = argv.index("--kafka-streams-version")
        if i + 1 >= len(argv) or not argv[i + 1][:1].isdigit():
            print("streams_app: --kafka-streams-version needs a release, e.g. 4.4.0", file=sys.stderr)
            sys.exit(2)
        version = argv[i + 1]
        del argv[i:i + 2]
    try:
        cp = classpath(version)
    except ArtifactError as exc:
        print(f"streams_app: {exc}", file=sys.stderr)
        sys.exit(2)
    java = shutil.which("java") or "java"
    os.execv(java, [java, *JVM_FLAGS, "-cp", cp, main_class, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
