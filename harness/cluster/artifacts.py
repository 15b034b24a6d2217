"""Fetch and cache what a run needs from outside: Kafka broker jars, the toxiproxy server.

Kafka is not shipped as a tarball by any registry reachable here, but Maven Central has every
jar (no container registry is reachable from the machines this runs on). A generated POM that depends on ``org.apache.kafka:kafka_2.13:<version>``
plus a logging binding, resolved with ``mvn dependency:copy-dependencies``, gives a classpath
on which ``kafka.Kafka`` runs a broker and ``kafka.tools.StorageTool`` formats KRaft log dirs.

Layout of the cache (``$EOS_CHAOS_CACHE``, default ``~/.cache/kafka-eos-chaos``)::

    kafka/<version>/libs/*.jar     the broker classpath
    kafka/<version>/.complete      written last: a classpath without it is re-fetched
    bin/toxiproxy-server           built with ``go install`` (toxiproxy v2.12.0)
    bin/actionlint                 built with ``go install`` (actionlint v1.7.12; ``make test``
                                   lints the GitHub workflows with it: tests/unit/test_workflows.py)

Everything here is idempotent and works offline once cached.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.releases import NEWEST_TRIED, OLDEST, Release, UnsupportedRelease, check_release, release

DEFAULT_KAFKA_VERSION = "4.3.1"
#: the 3.9 line is kept runnable for the version matrix (ZooKeeper-less KRaft works on both).
SECOND_KAFKA_VERSION = "3.9.1"
#: the newest release (2026-11), in the nightly suite's matrix (scenarios/nightly.yaml) but not in
#: `make test`'s: `eos-chaos setup --kafka-version 4.4.0` fetches it
NEWEST_KAFKA_VERSION = NEWEST_TRIED
TOXIPROXY_VERSION = "v2.12.0"


#: what a Kafka or kafka-clients version looks like (4.3.1, 3.9.1, 4.0.0-rc1): it names a cache
#: folder and a Maven artifact, so nothing else (``../../etc``, ``4.3.1/x``) may pass
VERSION = re.compile(r"[0-9]{1,4}(\.[0-9]{1,4}){1,3}([-+][0-9A-Za-z]{1,32}(\.[0-9A-Za-z]{1,32})*)?")


class ArtifactError(RuntimeError):
    """A prerequisite is missing or a download failed; the message says what to install or fix."""


def check_version(version: str, what: str = "Kafka") -> str:
    """``version`` when it looks like a release version (VERSION); else ArtifactError saying so."""
    if not isinstance(version, str) or not VERSION.fullmatch(version):
        raise ArtifactError(f"{what} version {version!r} is not a version like {DEFAULT_KAFKA_VERSION} "
                            "(digits and dots, maybe a -suffix)")
    return version


def check_kafka_release(version: str) -> str:
    """``version`` when it is a Kafka release the harness runs (harness.cluster.releases); else
    ArtifactError in one line naming the oldest it runs."""
    try:
        check_version(version)
    except ArtifactError as exc:
        raise ArtifactError(f"{exc}; the harness runs Kafka {OLDEST} to {NEWEST_TRIED}") from None
    try:
        return check_release(version)
    except UnsupportedRelease as exc:
        raise ArtifactError(str(exc)) from None


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
    """The POM of Kafka ``version``'s broker classpath: kafka_2.13 plus the release's slf4j
    binding (harness.cluster.releases: reload4j on 3.x, log4j2 on 4.x)."""
    return _classpath_pom("kafka-classpath", version,
                          [("org.apache.kafka", "kafka_2.13", version), *release(version).pom_logging])


def _classpath_pom(artifact_id: str, version: str, deps: list[tuple[str, str, str]]) -> str:
    """A POM whose dependencies (groupId, artifactId, version) ``mvn dependency:copy-dependencies``
    turns into a folder of jars (Kafka's, or the Java workers' kafka-clients)."""
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-eos-chaos</groupId>
  <artifactId>{artifact_id}</artifactId>
  <version>{version}</version>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def maven_failure(version: str, output: str) -> str:
    """One line for a failed ``mvn dependency:copy-dependencies`` of Kafka ``version``: the
    version is not on Maven Central (Maven's "Could not find artifact"), or Maven's own first
    error line (no route to Maven Central, a broken local repository ...)."""
    if "Could not find artifact" in output or "was not found in" in output:
        return (f"Kafka {version} is not on Maven Central (no org.apache.kafka:kafka_2.13:{version}); "
                f"the harness runs the releases {OLDEST} to {NEWEST_TRIED}")
    errors = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", output).splitlines()
              if ln.strip().startswith("[ERROR]") and ln.strip() != "[ERROR]"]
    first = errors[0].removeprefix("[ERROR]").strip() if errors else " ".join(output.split())[-300:]
    return (f"Maven could not fetch Kafka {version} (org.apache.kafka:kafka_2.13:{version}): {first[:400]} "
            "-- is Maven Central reachable (proxy settings in ~/.m2/settings.xml)?")


def maven_knows(group: str, artifact: str, version: str, timeout: float = 180.0) -> None:
    """Ask Maven (its settings and proxy, as a run's fetch would) whether
    ``group:artifact:version`` resolves, fetching only its pom: what ``eos-chaos run --dry-run``
    does for a version that is not cached. Raises ArtifactError in one line when Maven is
    missing, times out or cannot resolve it."""
    mvn = _require("mvn", "install Maven (Debian: apt-get install -y maven)")
    gav = f"{group}:{artifact}:{check_version(version)}"
    with tempfile.TemporaryDirectory(prefix="eosc-mvn-") as tmp:
        try:
            proc = subprocess.run([mvn, "-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get",
                                   f"-Dartifact={gav}:pom", "-Dtransitive=false"],
                                  cwd=tmp, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ArtifactError(f"Maven did not answer within {timeout:g} s whether {gav} exists "
                                "(is Maven Central reachable?)") from None
    if proc.returncode != 0:
        if artifact == "kafka_2.13":
            raise ArtifactError(maven_failure(version, proc.stdout + proc.stderr))
        out = proc.stdout + proc.stderr
        if "Could not find artifact" in out or "was not found in" in out:
            raise ArtifactError(f"{gav} is not on Maven Central")
        raise ArtifactError(f"Maven could not resolve {gav} -- is Maven Central reachable (proxy settings "
                            "in ~/.m2/settings.xml)?")


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
    def release(self) -> Release:
        """What differs on this release (harness.cluster.releases.Release)."""
        return Release(self.version)


def kafka_dist(version: str = DEFAULT_KAFKA_VERSION, *, fetch: bool = True) -> KafkaDist:
    """Return the cached classpath of Kafka ``version``, fetching it through Maven if needed.

    Raises ArtifactError when Java or Maven is missing, when the harness cannot run the release
    (older than harness.cluster.releases.OLDEST), or when Maven cannot resolve the version (a
    typo, or no route to Maven Central); the message is one line (maven_failure).
    """
    check_kafka_release(version)
    home = cache_dir() / "kafka" / check_version(version)
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
            raise ArtifactError(maven_failure(version, proc.stdout + proc.stderr))
    shutil.rmtree(dist.libs, ignore_errors=True)
    staging.rename(dist.libs)
    (home / ".complete").write_text(version + "\n")
    return dist


def dump_log_command(version: str = DEFAULT_KAFKA_VERSION, *, fetch: bool = True) -> list[str]:
    """The java command line of Kafka's DumpLogSegments for ``version``, to which the caller
    appends ``--files SEGMENT ...`` (Kafka docs, "kafka-dump-log.sh"). Up to 4.2.x it is in the
    broker jar (``kafka.tools.DumpLogSegments``); 4.3.0 moved it to ``kafka-tools``
    (``org.apache.kafka.tools.DumpLogSegments``, KAFKA-14579; harness.cluster.releases). On 4.x
    the classpath holds kafka-tools too (kafka_tools_command). Raises ArtifactError as
    kafka_dist does."""
    main = kafka_dist(version, fetch=fetch).release.dump_log_main
    return kafka_tools_command(version, main, fetch=fetch, need_tools=False)


#: a short-lived tool JVM's whole life is start-up: C1 only (harness.cluster.kafka.TOOL_JVM_OPTS)
TOOL_JVM = ("-XX:TieredStopAtLevel=1",)


def kafka_tools_command(version: str, main: str, *, fetch: bool = True, need_tools: bool = True) -> list[str]:
    """``java -cp BROKER_JARS[:KAFKA_TOOLS] MAIN`` for Kafka ``version``: kafka-tools
    (``org.apache.kafka:kafka-tools``) is fetched on first use with Maven into the version's
    cache, next to ``libs``, on the releases whose Release.tools_jar is set (4.x). With
    ``need_tools``, a release without it raises ArtifactError in one line; else the broker
    classpath alone is returned. Raises ArtifactError as kafka_dist does."""
    dist = kafka_dist(version, fetch=fetch)
    java = _require("java", "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jre-headless)")
    if not dist.release.tools_jar:
        if need_tools:
            raise ArtifactError(f"{main} needs Kafka's kafka-tools jar, which the harness fetches for Kafka 4.x "
                                f"only, not {version}")
        return [java, *TOOL_JVM, "-cp", dist.classpath, main]
    tools = dist.home / "tools"
    jar = tools / f"kafka-tools-{version}.jar"
    if not jar.exists():
        if not fetch:
            raise ArtifactError(f"kafka-tools {version} is not cached at {tools}: run `eos-chaos setup`")
        mvn = _require("mvn", "install Maven (Debian: apt-get install -y maven)")
        # the broker classpath already holds every dependency of kafka-tools but itself
        proc = subprocess.run(
            [mvn, "-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy",
             f"-Dartifact=org.apache.kafka:kafka-tools:{version}", f"-DoutputDirectory={tools}"],
            capture_output=True, text=True)
        if proc.returncode != 0 or not jar.exists():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise ArtifactError(f"Maven could not fetch org.apache.kafka:kafka-tools:{version}:\n{tail}")
    return [java, *TOOL_JVM, "-cp", f"{dist.classpath}:{tools / '*'}", main]


#: toxiproxy v2.12.0's go.mod asks for Go 1.23 (``go 1.23.0``)
TOXIPROXY_GO = (1, 23)
#: the Go toolchain fetched when the ``go`` on PATH is older than TOXIPROXY_GO (Debian 12's
#: golang-go is 1.19): module ``golang.org/toolchain`` version ``v0.0.1-<this>.<goos>-<goarch>``
#: from the Go module proxy, as Go 1.21+ does itself for ``GOTOOLCHAIN``
GO_TOOLCHAIN = "go1.24.13"


def go_version(go: str) -> tuple[int, int] | None:
    """(major, minor) of ``go version``'s output (``go version go1.19.8 linux/amd64``), None
    when it cannot be read."""
    proc = subprocess.run([go, "version"], capture_output=True, text=True)
    m = re.search(r"\bgo(\d+)\.(\d+)", proc.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _go_env(go: str, *names: str) -> list[str]:
    proc = subprocess.run([go, "env", *names], capture_output=True, text=True)
    return proc.stdout.split()


def go_toolchain(go: str, toolchain: str = GO_TOOLCHAIN) -> Path:
    """The ``go`` binary of Go ``toolchain`` (e.g. ``go1.24.13``), downloaded with the old
    ``go`` (``go mod download golang.org/toolchain@v0.0.1-<toolchain>.<goos>-<goarch>``)
    through ``$GOPROXY`` (default https://proxy.golang.org) into the module cache, checksums
    checked against the Go checksum database (Go docs, "Go Toolchains"). Module zips carry no
    execute bits, so they are set here as Go's own toolchain switch does. Raises ArtifactError
    when the download fails."""
    goos, goarch = (_go_env(go, "GOOS", "GOARCH") + ["linux", "amd64"])[:2]
    module = f"golang.org/toolchain@v0.0.1-{toolchain}.{goos}-{goarch}"
    env = {k: v for k, v in os.environ.items() if k not in ("GOROOT", "GOFLAGS", "GOTOOLCHAIN")}
    with tempfile.TemporaryDirectory(prefix="eosc-go-") as tmp:
        proc = subprocess.run([go, "mod", "download", "-json", module], cwd=tmp, env=dict(env, GO111MODULE="on"),
                              capture_output=True, text=True)
    try:
        root = Path(json.loads(proc.stdout)["Dir"])
    except (ValueError, KeyError, TypeError):
        root = None
    if proc.returncode != 0 or root is None or not (root / "bin" / "go").is_file():
        why = " ".join((proc.stdout + proc.stderr).split())[-300:]
        raise ArtifactError(f"could not fetch Go {toolchain} ({module}) through the Go module proxy: {why}; "
                            f"install Go {TOXIPROXY_GO[0]}.{TOXIPROXY_GO[1]}+ yourself (https://go.dev/doc/install)")
    for d in [root / "bin", *(root / "pkg" / "tool").glob("*")]:
        for f in d.iterdir() if d.is_dir() else []:
            if f.is_file():
                f.chmod(f.stat().st_mode | 0o111)
    return root / "bin" / "go"


def go_install(package: str, binary: str, target: Path, min_go: tuple[int, int], toolchain: str) -> Path:
    """Build ``package`` (``module/path@version``) with ``go install`` and move its ``binary`` to
    ``target``. A ``go`` on PATH older than ``min_go`` builds nothing itself: it fetches Go
    ``toolchain`` through the Go module proxy (``go_toolchain``), which then builds. Built into a
    folder of its own, then moved: a half-built binary never sits at ``target``. Raises
    ArtifactError when there is no ``go`` or the build fails."""
    go = _require("go", f"install Go (Debian: apt-get install -y golang-go; an older Go fetches the newer "
                  f"toolchain {binary} needs through the Go module proxy)")
    version = go_version(go)
    env = dict(os.environ)
    if version is None or version < min_go:
        go = str(go_toolchain(go, toolchain))
        env.pop("GOROOT", None)  # the old Go's; the fetched go finds its own
        env["GOTOOLCHAIN"] = "local"  # the fetched toolchain builds; it must not switch again
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="eosc-go-") as tmp:
        env.update(GOBIN=tmp, GOFLAGS="-mod=mod")
        proc = subprocess.run([go, "install", package], cwd=tmp, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not (Path(tmp) / binary).is_file():
            raise ArtifactError(f"go install of {package} failed:\n{proc.stderr[-2000:]}")
        shutil.move(str(Path(tmp) / binary), target)
    return target


def toxiproxy_server(*, fetch: bool = True) -> Path:
    """Return the path of the toxiproxy server binary, building it with ``go install`` if needed
    (``go_install``: a ``go`` older than TOXIPROXY_GO first fetches Go GO_TOOLCHAIN). Raises
    ArtifactError when there is no ``go`` or the build fails."""
    target = cache_dir() / "bin" / "toxiproxy-server"
    if target.exists():
        return target
    if not fetch:
        raise ArtifactError(f"toxiproxy is not cached at {target}: run `eos-chaos setup`")
    return go_install(f"github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION}", "server", target,
                      TOXIPROXY_GO, GO_TOOLCHAIN)


#: the GitHub Actions workflow linter ``make test`` runs on .github/workflows/*.yml and on the
#: workflow ``eos-chaos init`` writes (tests/unit/test_workflows.py); its go.mod asks for Go 1.25
ACTIONLINT_VERSION = "v1.7.12"
ACTIONLINT_GO = (1, 25)
#: fetched as GO_TOOLCHAIN is when the ``go`` on PATH is older than ACTIONLINT_GO
ACTIONLINT_TOOLCHAIN = "go1.25.14"


def actionlint(*, fetch: bool = True) -> Path:
    """The path of the actionlint binary (``<cache>/bin/actionlint``, beside toxiproxy-server),
    built with ``go_install`` when it is not there yet: a ``go`` older than ACTIONLINT_GO
    (Debian 12's 1.19) first fetches Go ACTIONLINT_TOOLCHAIN through the Go module proxy.
    Raises ArtifactError when there is no ``go`` or the build fails."""
    target = cache_dir() / "bin" / "actionlint"
    if target.exists():
        return target
    if not fetch:
        raise ArtifactError(f"actionlint is not cached at {target}: run `make setup-test` (or `make actionlint`)")
    return go_install(f"github.com/rhysd/actionlint/cmd/actionlint@{ACTIONLINT_VERSION}", "actionlint", target,
                      ACTIONLINT_GO, ACTIONLINT_TOOLCHAIN)


def ensure_system_tools() -> list[str]:
    """Check the system tools the harness drives; return the names of the missing ones."""
    return [t for t in ("ip", "iptables", "java") if shutil.which(t) is None]


# -- Spark's Kafka connector -------------------------------------------------------------------

#: Spark version -> (spark-sql-kafka-0-10, spark-token-provider-kafka-0-10) versions to try, in
#: order. Maven Central as this project reaches it (checked 2026-11) has neither artifact at
#: 4.3.0, spark-sql-kafka-0-10 up to 4.2.0, and spark-token-provider-kafka-0-10 only up to
#: 4.0.0 (4.1.0-preview1 aside): the second pair is the newest that resolves. The connector's
#: use of Spark's APIs is checked by the Spark integration tests against the real cluster.
SPARK_CONNECTOR_CANDIDATES: dict[str, list[tuple[str, str]]] = {
    "4.3.0": [("4.3.0", "4.3.0"), ("4.2.0", "4.0.0")],
}
SPARK_SCALA = "2.13"


def _spark_pom(sql_kafka: str, token_provider: str) -> str:
    g, s = "org.apache.spark", SPARK_SCALA
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-eos-chaos</groupId>
  <artifactId>spark-kafka-connector</artifactId>
  <version>{sql_kafka}</version>
  <dependencies>
    <dependency><groupId>{g}</groupId><artifactId>spark-sql-kafka-0-10_{s}</artifactId><version>{sql_kafka}</version>
      <exclusions><exclusion><groupId>{g}</groupId><artifactId>spark-token-provider-kafka-0-10_{s}</artifactId></exclusion></exclusions>
    </dependency>
    <dependency><groupId>{g}</groupId><artifactId>spark-token-provider-kafka-0-10_{s}</artifactId><version>{token_provider}</version></dependency>
  </dependencies>
</project>
"""


def _artifact_name(jar: str) -> str:
    """``spark-sql-kafka-0-10_2.13-4.2.0.jar`` -> ``spark-sql-kafka-0-10_2.13``: the file name
    without its version (the first ``-<digits>.<digits>...`` part) and ``.jar``."""
    m = re.match(r"^(.*?)-\d+(?:\.\d+)+", jar)
    return m.group(1) if m else jar.removesuffix(".jar")


def _pyspark_jar_names() -> set[str]:
    """Artifact names of the jars the installed pyspark ships (empty when it is not installed)."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return set()
    jars = Path(list(spec.submodule_search_locations)[0]) / "jars"
    return {_artifact_name(p.name) for p in jars.glob("*.jar")}


def spark_connector_jars(version: str = "4.3.0", *, fetch: bool = True) -> list[Path]:
    """Local jar paths of Spark's Kafka connector for Spark ``version``, for ``spark.jars``.

    Resolves ``org.apache.spark:spark-sql-kafka-0-10_2.13`` and
    ``spark-token-provider-kafka-0-10_2.13`` with their runtime dependencies through Maven
    (as ``kafka_dist`` does), trying the pairs of ``SPARK_CONNECTOR_CANDIDATES[version]`` in
    order (just ``(version, version)`` for other versions); the pair used is written to
    ``spark/<version>/.complete``. Cached under ``cache_dir()/spark/<version>/jars/``. Returns
    the sorted paths of the jars that pyspark does not already ship (by artifact name, e.g.
    ``spark-sql-kafka-0-10_2.13``, ``spark-token-provider-kafka-0-10_2.13``,
    ``kafka-clients``, ``commons-pool2``), so that Spark's own scala-library, slf4j and
    hadoop-client stay the only ones on its classpath.

    Raises ArtifactError when Java or Maven is missing, when nothing is cached and ``fetch``
    is false, or when no candidate pair resolves (the message quotes Maven's last lines).
    """
    home = cache_dir() / "spark" / version
    jars = home / "jars"
    if not (home / ".complete").exists():
        if not fetch:
            raise ArtifactError(f"Spark's Kafka connector {version} is not cached at {home}: "
                                "run `eos-chaos setup --spark`")
        _require("java", "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jre-headless)")
        mvn = _require("mvn", "install Maven (Debian: apt-get install -y maven)")
        home.mkdir(parents=True, exist_ok=True)
        staging = home / "jars.partial"
        tails = []
        for sql_kafka, token in SPARK_CONNECTOR_CANDIDATES.get(version, [(version, version)]):
            shutil.rmtree(staging, ignore_errors=True)
            with tempfile.TemporaryDirectory(prefix="eosc-spark-pom-") as tmp:
                Path(tmp, "pom.xml").write_text(_spark_pom(sql_kafka, token))
                proc = subprocess.run(
                    [mvn, "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
                     f"-DoutputDirectory={staging}"],
                    cwd=tmp, capture_output=True, text=True,
                )
            if proc.returncode == 0:
                break
            tails.append(f"spark-sql-kafka-0-10 {sql_kafka} + spark-token-provider-kafka-0-10 {token}:\n"
                         + "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:]))
        else:
            raise ArtifactError(f"Maven could not resolve Spark's Kafka connector for Spark {version} "
                                "(is Maven Central reachable?):\n" + "\n\n".join(tails))
        shutil.rmtree(jars, ignore_errors=True)
        staging.rename(jars)
        (home / ".complete").write_text(
            f"spark-sql-kafka-0-10_{SPARK_SCALA} {sql_kafka}\nspark-token-provider-kafka-0-10_{SPARK_SCALA} {token}\n")
    shipped = _pyspark_jar_names()
    return sorted(p for p in jars.glob("*.jar") if _artifact_name(p.name) not in shipped)


# -- the Java client under test (harness/java) ------------------------------------------------

#: what the Java workers need besides kafka-clients: JSON for the worker protocol, an slf4j
#: binding so the client's warnings reach the worker's log (stderr)
JAVA_CLIENT_EXTRAS = [("com.fasterxml.jackson.core", "jackson-databind", "2.21.2"),
                      ("org.slf4j", "slf4j-simple", "1.7.36")]


def java_client_libs(version: str, *, fetch: bool = True) -> Path:
    """The folder of jars the Java workers run on: ``org.apache.kafka:kafka-clients:<version>``
    with its runtime dependencies, jackson-databind and slf4j-simple, resolved through Maven
    like ``kafka_dist`` and cached at ``cache_dir()/java-client/<version>/libs``. Raises
    ArtifactError when Java or Maven is missing, when nothing is cached and ``fetch`` is false,
    or when Maven cannot resolve the version (its last lines quoted)."""
    return maven_libs(cache_dir() / "java-client" / version, "java-client-classpath", version,
                      [("org.apache.kafka", "kafka-clients", version), *JAVA_CLIENT_EXTRAS],
                      f"org.apache.kafka:kafka-clients:{version}", fetch=fetch)


@contextlib.contextmanager
def build_lock(home: Path):
    """Hold an exclusive lock on ``home/.build.lock`` while a cached artifact under ``home`` is
    built: several processes that need it at once (an app's instances starting together) build
    it once, the others wait and then find it complete."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".build.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def maven_libs(home: Path, artifact_id: str, version: str, deps: list[tuple[str, str, str]], what: str,
               *, fetch: bool = True) -> Path:
    """``home/libs``: the jars of ``deps`` (groupId, artifactId, version) with their runtime
    dependencies, resolved by ``mvn dependency:copy-dependencies`` once and cached (``home/.complete``).
    Raises ArtifactError when Java or Maven is missing, when nothing is cached and ``fetch`` is
    false, or when Maven cannot resolve ``what`` (its last lines quoted)."""
    libs = home / "libs"
    if (home / ".complete").exists():
        return libs
    if not fetch:
        raise ArtifactError(f"{what} is not cached at {home}: run `eos-chaos setup`")
    _require("java", "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jdk-headless)")
    mvn = _require("mvn", "install Maven (Debian: apt-get install -y maven)")
    with build_lock(home):
        if (home / ".complete").exists():  # built by another process while this one waited
            return libs
        return _maven_copy(mvn, home, libs, artifact_id, version, deps, what)


def _maven_copy(mvn: str, home: Path, libs: Path, artifact_id: str, version: str,
                deps: list[tuple[str, str, str]], what: str) -> Path:
    staging = home / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="eosc-java-pom-") as tmp:
        Path(tmp, "pom.xml").write_text(_classpath_pom(artifact_id, version, deps))
        proc = subprocess.run(
            [mvn, "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
             f"-DoutputDirectory={staging}"],
            cwd=tmp, capture_output=True, text=True,
        )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise ArtifactError(
            f"Maven could not resolve {what} "
            f"(is the version right, is Maven Central reachable?):\n{tail}"
        )
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    (home / ".complete").write_text(version + "\n")
    return libs


def install_extra(extra: str, module: str) -> None:
    """Install the requirements of this package's optional extra ``extra`` (pyproject.toml, e.g.
    ``spark``: pyspark and pyarrow at the tested versions) with this interpreter's pip, unless
    ``module`` already imports. Raises ArtifactError when pip fails."""
    import importlib.metadata
    import importlib.util
    import sys

    if importlib.util.find_spec(module) is not None:
        return
    reqs = [r.split(";")[0].strip() for r in importlib.metadata.requires("kafka-eos-chaos") or []
            if re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", r)]
    if not reqs:
        raise ArtifactError(f"no extra {extra!r} in kafka-eos-chaos's metadata: reinstall it (pip install -e .)")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *reqs], capture_output=True, text=True)
    if proc.returncode != 0:
        why = " ".join(proc.stderr.split())[-300:]
        raise ArtifactError(f"pip could not install {' '.join(reqs)}: {why}")
