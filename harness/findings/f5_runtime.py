"""Finding F5's deterministic test (docs/findings/F5.md): compile harness/findings/java/F5RuntimeTest.java
against a Kafka release's cached jars and run it; no broker, no root, about a second.

The test drives ``org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime`` (jar
kafka-coordinator-common-<version>.jar) with a hand-completed loader future: load at e1, unload at
e2, load at e3, complete the e1 load (normally, or exceptionally), and checks that the e3 context
is neither made ACTIVE nor FAILED by it; the controls complete the e1 load without the
unload/reload. On 4.3.1 and 4.4.0 the stale completion is accepted: 5 checks fail, the controls
pass (docs/findings/F5-evidence/runtime-test-4.3.1.txt).

``patched=True`` first recompiles CoordinatorRuntime.java from the release's sources jar
(Maven's local repository, ``~/.m2/repository/org/apache/kafka/kafka-coordinator-common/<v>/``)
with the one-line fix F5.md proposes (PATCH: the load completion acts only on its own context)
and puts it ahead of the jar, to show the test passes once the fix is in.

Result: :class:`RuntimeTestResult` (``checks``: name -> (passed, what was seen); ``result``: the
test's last line as a dict, e.g. ``{"controls": "ok", "stale-completion": "accepted",
"failed-checks": "5"}``; ``output``: its stdout). Errors, one line each (:class:`RuntimeTestError`):
no javac/java, the release not cached (``eos-chaos setup --kafka-version V``), no sources jar for
``patched``, the patch not applying, a compile error, the test breaking (exit 1).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

JAVA_DIR = Path(__file__).with_name("java")
TEST_SOURCE = JAVA_DIR / "F5RuntimeTest.java"
LOG_CONFIG = JAVA_DIR / "f5-log4j2.properties"
MAIN = "org.apache.kafka.coordinator.common.runtime.F5RuntimeTest"
RUNTIME_SOURCE = "org/apache/kafka/coordinator/common/runtime/CoordinatorRuntime.java"
#: the fix: in CoordinatorContext.load()'s completion callback (CoordinatorRuntime.java:585 at
#: 4.3.1), look the context up by identity: a completion whose context was unloaded (replaced by
#: a newer one) then takes the "coordinator does not exist" branch and changes nothing
PATCH = ("CoordinatorContext context = coordinators.get(tp);",
         "CoordinatorContext context = coordinators.get(tp) == this ? this : null;")
#: the callback's registration, which PATCH's line follows closely
PATCH_ANCHOR = "loader.load(tp, coordinator).whenComplete("
CHECK_LINE = re.compile(r"^(PASS|FAIL) (\S+): (.*)$")


class RuntimeTestError(RuntimeError):
    """The test could not be built or run; the message says what to install or fix, in one line."""


@dataclass
class RuntimeTestResult:
    version: str
    patched: bool
    checks: dict[str, tuple[bool, str]] = field(default_factory=dict)
    result: dict[str, str] = field(default_factory=dict)
    output: str = ""

    @property
    def failed(self) -> list[str]:
        return [name for name, (ok, _) in self.checks.items() if not ok]


def jars_dir(version: str) -> Path:
    """The release's cached jars (harness.cluster.artifacts' cache); RuntimeTestError when absent."""
    from harness.cluster.artifacts import ArtifactError, cache_dir, check_version

    try:
        libs = cache_dir() / "kafka" / check_version(version) / "libs"
    except ArtifactError as exc:
        raise RuntimeTestError(str(exc)) from None
    if not (libs / f"kafka-coordinator-common-{version}.jar").is_file():
        raise RuntimeTestError(f"Kafka {version}'s jars are not cached at {libs}: "
                               f"run `eos-chaos setup --kafka-version {version}`")
    return libs


def sources_jar(version: str) -> Path:
    """kafka-coordinator-common-<version>-sources.jar in Maven's local repository (fetch it with
    ``mvn dependency:get -Dartifact=org.apache.kafka:kafka-coordinator-common:<v>:jar:sources``)."""
    jar = (Path.home() / ".m2/repository/org/apache/kafka/kafka-coordinator-common" / version
           / f"kafka-coordinator-common-{version}-sources.jar")
    if not jar.is_file():
        raise RuntimeTestError(f"no sources jar at {jar}: mvn dependency:get "
                               f"-Dartifact=org.apache.kafka:kafka-coordinator-common:{version}:jar:sources")
    return jar


def patch_source(text: str) -> str:
    """``text`` (CoordinatorRuntime.java) with PATCH applied to the first lookup after
    PATCH_ANCHOR, within 5 lines; RuntimeTestError when the release's code has another shape."""
    lines = text.splitlines(keepends=True)
    anchor = next((i for i, line in enumerate(lines) if PATCH_ANCHOR in line), None)
    if anchor is not None:
        for i in range(anchor + 1, min(anchor + 6, len(lines))):
            if PATCH[0] in lines[i]:
                lines[i] = lines[i].replace(PATCH[0], PATCH[1])
                return "".join(lines)
    raise RuntimeTestError("the fix does not apply: no `coordinators.get(tp)` lookup right after "
                           f"`{PATCH_ANCHOR}` in {RUNTIME_SOURCE}")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeTestError(f"{name} not found: install a JDK 17+ (Debian: apt-get install -y openjdk-17-jdk-headless)")
    return path


def _javac(javac: str, out: Path, classpath: str, *sources: Path) -> None:
    proc = subprocess.run([javac, "-nowarn", "-d", str(out), "-cp", classpath, *map(str, sources)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])
        raise RuntimeTestError(f"javac failed on {sources[0].name}: {first}")


def parse_output(text: str, result: RuntimeTestResult) -> RuntimeTestResult:
    """Fill ``result.checks`` and ``result.result`` from the test's stdout (format: the header of
    F5RuntimeTest.java)."""
    for line in text.splitlines():
        m = CHECK_LINE.match(line)
        if m:
            result.checks[m.group(2)] = (m.group(1) == "PASS", m.group(3))
        elif line.startswith("RESULT "):
            result.result = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    result.output = text
    return result


def run_runtime_test(version: str = "4.3.1", *, patched: bool = False, timeout_s: float = 300) -> RuntimeTestResult:
    """Compile and run F5RuntimeTest against Kafka ``version``'s cached jars (``patched``: with
    PATCH applied to a copy of CoordinatorRuntime.java). Raises RuntimeTestError (see the module)."""
    javac, java = _tool("javac"), _tool("java")
    libs = jars_dir(version)
    jars = ":".join(str(p) for p in sorted(libs.glob("*.jar")))
    with tempfile.TemporaryDirectory(prefix="eosc-f5-runtime-") as tmp:
        classes = Path(tmp, "classes")
        classes.mkdir()
        front = ""
        if patched:
            with zipfile.ZipFile(sources_jar(version)) as z:
                try:
                    text = z.read(RUNTIME_SOURCE).decode()
                except KeyError:
                    raise RuntimeTestError(f"{RUNTIME_SOURCE} is not in the sources jar of {version}") from None
            src = Path(tmp, "patched", "CoordinatorRuntime.java")
            src.parent.mkdir()
            src.write_text(patch_source(text))
            fixed = Path(tmp, "fixed")
            fixed.mkdir()
            _javac(javac, fixed, jars, src)
            front = f"{fixed}:"  # ahead of the release's jar: its CoordinatorRuntime classes win
        _javac(javac, classes, jars, TEST_SOURCE)
        argv = [java, "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={LOG_CONFIG}",
                "-cp", f"{front}{classes}:{jars}", MAIN]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeTestError(f"F5RuntimeTest did not end within {timeout_s:.0f} s") from None
    if proc.returncode != 0 or "RESULT " not in proc.stdout:
        last = (proc.stdout.strip().splitlines() or proc.stderr.strip().splitlines() or ["no output"])
        err = next((ln for ln in last if ln.startswith("ERROR")), last[-1])
        raise RuntimeTestError(f"F5RuntimeTest exited with {proc.returncode}: {err}")
    return parse_output(proc.stdout, RuntimeTestResult(version, patched))
