"""Fetch and cache what a run needs from outside: Kafka broker jars, the toxiproxy server.

Kafka is not shipped as a tarball by any registry reachable here, but Maven Central has every
jar (ENVIRONMENT.md). A generated POM that depends on ``org.apache.kafka:kafka_2.13:<version>``
plus a logging binding, resolved with ``mvn dependency:copy-dependencies``, gives a classpath
on which ``kafka.Kafka`` runs a broker and ``kafka.tools.StorageTool`` formats KRaft log dirs.

Layout of the cache (``$EOS_CHAOS_CACHE``, default ``~/.cache/kafka-eos-chaos``)::

    kafka/<version>/libs/*.jar     the broker classpath
    kafka/<version>/.complete      written last: a classpath without it is re-fetched
    bin/toxiproxy-server           built with ``go install`` (toxiproxy v2.12.0)

Everything here is idempotent and works offline once cached.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_KAFKA_VERSION = "4.3.1"
#: the 3.9 line is kept runnable for the version matrix (ZooKeeper-less KRaft works on both).
SECOND_KAFKA_VERSION = "3.9.1"
TOXIPROXY_VERSION = "v2.12.0"


class ArtifactError(RuntimeError):
    """A prerequisite is missing or a download failed; the message says what to install or fix."""


def cache_dir() -> Path:
    """The cache root: ``$EOS_CHAOS_CACHE`` or ``~/.cache/kafka-eos-chaos``."""
    root = os.environ.get("EOS_CHAOS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka-eos-chaos"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _require(tool: str, hint: str) -> str:
    found = shutil.which(tool)
    if not found:
        raise ArtifactError(f"{tool!r} is not on PATH: {hint}")
    return found


def _pom(version: str) -> str:
    major = int(version.split(".")[0])
    if major >= 4:
        # Kafka 4 logs through log4j2 (KIP-653) but still calls slf4j 1.7: bind it to log4j2.
        logging = [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")]
    else:
        # Kafka 3.x logs through slf4j 1.7 + reload4j.
        logging = [("org.slf4j", "slf4j-reload4j", "1.7.36")]
    deps = [("org.apache.kafka", "kafka_2.13", version), *logging]
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-eos-chaos</groupId>
  <artifactId>kafka-classpath</artifactId>
  <version>{version}</version>
  <dependencies>
{body}
  </dependencies>
</project>
"""


@dataclass(frozen=True)
class KafkaDist:
    """A cached Kafka classpath: ``libs`` holds every jar a broker needs."""

    version: str
    home: Path

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


def kafka_dist(version: str = DEFAULT_KAFKA_VERSION, *, fetch: bool = True) -> KafkaDist:
    """Return the cached classpath of Kafka ``version``, fetching it through Maven if needed.

    Raises ArtifactError when Java or Maven is missing, or when Maven cannot resolve the
    version (a typo, or no route to Maven Central); the message quotes Maven's last lines.
    """
    home = cache_dir() / "kafka" / version
    dist = KafkaDist(version, home)
    if (home / ".complete").exists():
        return dist
    if not fetch:
        raise ArtifactError(f"Kafka {version} is not cached at {home}: run `eos-chaos setup`")
    _require("java", "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jre-headless)")
    mvn = _require("mvn", "install Maven (Debian: apt-get install -y maven)")
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="eosc-pom-") as tmp:
        Path(tmp, "pom.xml").write_text(_pom(version))
        staging = home / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        proc = subprocess.run(
            [mvn, "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
             f"-DoutputDirectory={staging}"],
            cwd=tmp, capture_output=True, text=True,
        )
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise ArtifactError(
                f"Maven could not resolve org.apache.kafka:kafka_2.13:{version} "
                f"(is the version right, is Maven Central reachable?):\n{tail}"
            )
    shutil.rmtree(dist.libs, ignore_errors=True)
    staging.rename(dist.libs)
    (home / ".complete").write_text(version + "\n")
    return dist


def toxiproxy_server(*, fetch: bool = True) -> Path:
    """Return the path of the toxiproxy server binary, building it with ``go install`` if needed."""
    target = cache_dir() / "bin" / "toxiproxy-server"
    if target.exists():
        return target
    if not fetch:
        raise ArtifactError(f"toxiproxy is not cached at {target}: run `eos-chaos setup`")
    go = _require("go", "install Go 1.22+ (https://go.dev/doc/install) to build toxiproxy")
    gobin = target.parent
    gobin.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="eosc-go-") as tmp:
        env = dict(os.environ, GOBIN=str(gobin), GOFLAGS="-mod=mod")
        proc = subprocess.run(
            [go, "install", f"github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION}"],
            cwd=tmp, env=env, capture_output=True, text=True,
        )
    if proc.returncode != 0:
        raise ArtifactError(f"go install of toxiproxy {TOXIPROXY_VERSION} failed:\n{proc.stderr[-2000:]}")
    (gobin / "server").rename(target)
    return target


def ensure_system_tools() -> list[str]:
    """Check the system tools the harness drives; return the names of the missing ones."""
    return [t for t in ("ip", "iptables", "java") if shutil.which(t) is None]
