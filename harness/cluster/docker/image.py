"""The Kafka image, built locally: the machines this runs on reach package registries only, no container registry.

Two layers of cache:

1. BASE_TAG, Debian bookworm ``minbase`` plus ``openjdk-17-jre-headless`` and ``python3``, made from Debian's
   packages by ``mmdebstrap`` (a faster debootstrap: one apt run, output straight to a tarball)
   and ``docker import``-ed. The tarball is kept under ``<cache>/docker/`` so that a wiped engine
   re-imports it instead of bootstrapping again.
2. ``kafka-eos-chaos/kafka:<version>``: BASE_TAG plus the cached Kafka jars (harness.cluster.artifacts
   ``kafka_dist``) under ``/opt/kafka/libs``, start scripts under ``/opt/kafka/bin`` and default
   configs under ``/opt/kafka/config``: the layout of the official ``apache/kafka`` image, so a
   scenario may name ``apache/kafka:<version>`` wherever a registry is reachable. The
   Dockerfile has no RUN step, so the build starts no container (and needs no network).

Images are labelled ``eos-chaos.image=1``, not with the harness's run labels: they are a cache,
and ``cleanup`` leaves them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, ImageNotFound

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, kafka_dist
from harness.cluster.docker.engine import DockerError
from harness.cluster.releases import LOG4J1, LOG4J2, release  # noqa: F401 (LOG4J*: kept importable here)

#: python3 too: the app workload's example image (harness.examples.docker_image) runs on it
BASE_TAG = "kafka-eos-chaos/debian-base:bookworm-jre17-py3"
IMAGE_REPO = "kafka-eos-chaos/kafka"
IMAGE_LABEL = "eos-chaos.image"
SUITE = "bookworm"
MIRROR = os.environ.get("EOS_CHAOS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY_MIRROR = os.environ.get("EOS_CHAOS_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security")
JRE_PACKAGE = "openjdk-17-jre-headless"
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"

#: dpkg filters: man pages, docs and translations are dead weight in a broker image
_DPKG_FILTERS = ["path-exclude=/usr/share/man/*", "path-exclude=/usr/share/doc/*",
                 "path-include=/usr/share/doc/*/copyright", "path-exclude=/usr/share/locale/*",
                 "path-exclude=/usr/share/info/*",
                 # javac's --release data and the class-data archive for heaps past 32 GiB:
                 # a broker JVM uses neither
                 "path-exclude=/usr/lib/jvm/*/lib/ct.sym",
                 "path-exclude=/usr/lib/jvm/*/lib/server/classes_nocoops.jsa"]


def image_tag(version: str) -> str:
    """``kafka-eos-chaos/kafka:<version>``."""
    return f"{IMAGE_REPO}:{version}"


def sources(mirror: str = MIRROR, security: str = SECURITY_MIRROR) -> list[str]:
    """The apt sources of the base: bookworm, bookworm-updates and bookworm-security (the JRE's
    security fixes arrive through the last one)."""
    return [f"deb {mirror} {SUITE} main", f"deb {mirror} {SUITE}-updates main",
            f"deb {security} {SUITE}-security main"]


def mmdebstrap_argv(output: Path, mirror: str = MIRROR, security: str = SECURITY_MIRROR) -> list[str]:
    """The mmdebstrap command that writes the base rootfs tarball to ``output``."""
    return [
        "mmdebstrap", "--variant=minbase", f"--include={JRE_PACKAGE},python3",
        "--aptopt=APT::Install-Recommends \"false\"",
        # openjdk's postinst registers alternatives with man pages: the dir must exist even
        # though the man pages themselves are filtered out
        "--setup-hook=mkdir -p \"$1/usr/share/man/man1\"",
        # apt lists and caches out of the image
        "--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/* \"$1\"/var/cache/apt/*",
        *(f"--dpkgopt={f}" for f in _DPKG_FILTERS),
        SUITE, str(output), *sources(mirror, security),
    ]


def dockerfile(version: str, base: str = BASE_TAG) -> str:
    """The Dockerfile of ``kafka-eos-chaos/kafka:<version>``: COPY only, no RUN."""
    return f"""FROM {base}
COPY libs/ /opt/kafka/libs/
COPY bin/ /opt/kafka/bin/
COPY config/ /opt/kafka/config/
COPY empty/ /var/lib/kafka/data/
COPY empty/ /mnt/eos-chaos/
ENV KAFKA_HOME=/opt/kafka JAVA_HOME={JAVA_HOME} PATH=/opt/kafka/bin:{JAVA_HOME}/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL {IMAGE_LABEL}="1" org.apache.kafka.version="{version}" org.opencontainers.image.title="kafka-eos-chaos/kafka"
WORKDIR /opt/kafka
CMD ["/opt/kafka/bin/kafka-server-start.sh", "/opt/kafka/config/server.properties"]
"""


# The start scripts honour the environment of Kafka's own (KAFKA_HEAP_OPTS, KAFKA_LOG4J_OPTS,
# KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_OPTS), so a container runs the same way on this image and on
# apache/kafka. POSIX sh: minbase has bash, but an image need not. @LOG4J_OPTS@: the release's
# logging flag and file (harness.cluster.releases), filled in by write_context.
RUN_CLASS = """#!/bin/sh
# kafka-run-class.sh (kafka-eos-chaos): java -cp /opt/kafka/libs/* CLASS ARGS
base_dir=$(dirname "$0")/..
: "${KAFKA_HEAP_OPTS:=-Xmx256M}"
: "${KAFKA_JVM_PERFORMANCE_OPTS:=-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true}"
: "${KAFKA_LOG4J_OPTS:=@LOG4J_OPTS@}"
exec "${JAVA_HOME:-/usr}/bin/java" $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_LOG4J_OPTS $KAFKA_OPTS \\
  -cp "$base_dir/libs/*" "$@"
"""

SERVER_START = """#!/bin/sh
# kafka-server-start.sh (kafka-eos-chaos): kafka.Kafka CONFIG
[ $# -ge 1 ] || { echo "USAGE: $0 server.properties [--override property=value]*" >&2; exit 1; }
: "${KAFKA_HEAP_OPTS:=-Xmx1G -Xms1G}"
export KAFKA_HEAP_OPTS
exec "$(dirname "$0")/kafka-run-class.sh" kafka.Kafka "$@"
"""

STORAGE = """#!/bin/sh
# kafka-storage.sh (kafka-eos-chaos): format / info / random-uuid
exec "$(dirname "$0")/kafka-run-class.sh" kafka.tools.StorageTool "$@"
"""

#: a combined KRaft node on localhost, so ``docker run IMAGE`` alone starts something sensible
SERVER_PROPERTIES = """process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=/var/lib/kafka/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
"""


def write_context(ctx: Path, version: str, libs: Path, base: str = BASE_TAG) -> None:
    """Fill the build context ``ctx``: Dockerfile, libs/ (hard links to the cached jars where the
    file system allows, copies elsewhere), bin/, config/ (server.properties and the release's
    logging config, harness.cluster.releases), empty/. UnsupportedRelease for a release the
    harness cannot run."""
    rel = release(version)
    (ctx / "Dockerfile").write_text(dockerfile(version, base))
    dest = ctx / "libs"
    dest.mkdir()
    for jar in sorted(libs.glob("*.jar")):
        try:
            os.link(jar, dest / jar.name)
        except OSError:
            shutil.copy2(jar, dest / jar.name)
    (ctx / "bin").mkdir()
    run_class = RUN_CLASS.replace("@LOG4J_OPTS@", rel.log4j_flag(f"$base_dir/config/{rel.log4j_file}"))
    for name, text in (("kafka-run-class.sh", run_class), ("kafka-server-start.sh", SERVER_START),
                       ("kafka-storage.sh", STORAGE)):
        path = ctx / "bin" / name
        path.write_text(text)
        path.chmod(0o755)
    (ctx / "config").mkdir()
    for name, text in (("server.properties", SERVER_PROPERTIES), (rel.log4j_file, rel.log4j_text)):
        (ctx / "config" / name).write_text(text)
    (ctx / "empty").mkdir()


def _has(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


def base_tarball() -> Path:
    from harness.cluster.artifacts import cache_dir

    path = cache_dir() / "docker"
    path.mkdir(parents=True, exist_ok=True)
    return path / f"debian-{SUITE}-jre17-py3.tar"


def _clean_path_env() -> dict[str, str]:
    # mmdebstrap runs helpers (mmtarfilter) through "python3": a pyenv shim first on PATH costs
    # seconds per package; Debian's own python3 is what it is written for
    return {**os.environ, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive"}


def build_base_image(client: docker.DockerClient, force: bool = False) -> str:
    """Make BASE_TAG (skipped when it exists and not ``force``): the cached rootfs tarball, or a
    fresh one from mmdebstrap (installed from Debian's packages when missing), imported.
    Returns BASE_TAG. Raises DockerError with the last line of mmdebstrap's output."""
    if not force and _has(client, BASE_TAG):
        return BASE_TAG
    tar = base_tarball()
    if force or not tar.exists():
        if shutil.which("mmdebstrap") is None:
            from harness.cluster.docker.engine import _apt_install

            _apt_install("mmdebstrap")
        partial = tar.with_suffix(".partial.tar")
        partial.unlink(missing_ok=True)
        log = tar.with_suffix(".log")
        with open(log, "w") as out:
            proc = subprocess.run(mmdebstrap_argv(partial), stdout=out, stderr=subprocess.STDOUT,
                                  env=_clean_path_env())
        if proc.returncode != 0:
            partial.unlink(missing_ok=True)
            lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
            raise DockerError(f"mmdebstrap failed ({proc.returncode}): {lines[-1] if lines else '?'} "
                              f"(full output: {log}; is {MIRROR} reachable?)")
        partial.rename(tar)
    repo, tag = BASE_TAG.split(":")
    with open(tar, "rb") as fh:
        try:
            client.api.import_image_from_data(fh, repository=repo, tag=tag,
                                              changes=[f"ENV JAVA_HOME={JAVA_HOME}", "CMD [\"/bin/sh\"]"])
        except APIError as exc:
            raise DockerError(f"docker import of {tar} failed: {exc.explanation or exc}; "
                              f"delete it and run `eos-chaos setup --docker` again") from exc
    if not _has(client, BASE_TAG):
        raise DockerError(f"docker import of {tar} made no {BASE_TAG}: delete the tarball and retry")
    return BASE_TAG


def build_kafka_image(version: str = DEFAULT_KAFKA_VERSION, client: docker.DockerClient | None = None,
                      force: bool = False) -> str:
    """Make ``kafka-eos-chaos/kafka:<version>`` (see the module docstring) and return its tag.

    Skipped when the tag exists and not ``force``. ``client``: default ensure_engine(). Fetches
    the jars through harness.cluster.artifacts.kafka_dist (ArtifactError when Maven cannot). Raises
    DockerError when the base or the build fails (the build log's last line)."""
    if client is None:
        from harness.cluster.docker.engine import ensure_engine

        client = ensure_engine()
    tag = image_tag(version)
    if not force and _has(client, tag):
        return tag
    dist = kafka_dist(version)
    build_base_image(client)
    with tempfile.TemporaryDirectory(prefix="eosc-image-", dir=str(dist.home)) as tmp:
        ctx = Path(tmp)
        write_context(ctx, version, dist.libs)
        try:
            client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True, network_mode="none",
                                labels={IMAGE_LABEL: "1"})
        except BuildError as exc:
            last = next((c.get("error") or c.get("stream", "") for c in reversed(list(exc.build_log))
                         if c.get("error") or c.get("stream", "").strip()), str(exc))
            raise DockerError(f"building {tag} failed: {str(last).strip()}") from exc
        except APIError as exc:
            raise DockerError(f"building {tag} failed: {exc.explanation or exc}") from exc
    return tag


def timed_build(version: str = DEFAULT_KAFKA_VERSION, force: bool = False) -> dict[str, float]:
    """Build and time: engine start, base image, Kafka image (seconds each); for docs/docker.md."""
    from harness.cluster.docker.engine import ensure_engine

    times: dict[str, float] = {}
    t = time.monotonic()
    client = ensure_engine()
    times["engine_s"] = time.monotonic() - t
    t = time.monotonic()
    build_base_image(client, force=force)
    times["base_s"] = time.monotonic() - t
    t = time.monotonic()
    build_kafka_image(version, client=client, force=force)
    times["kafka_image_s"] = time.monotonic() - t
    return times
