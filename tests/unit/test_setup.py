"""Set-up: `make demo` installs only what the demo needs; an old Go fetches the toolchain
toxiproxy needs; a Kafka version Maven Central lacks is one line."""
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.cluster import artifacts
ROOT = Path(__file__).resolve().parents[2]


def _make_n(target: str) -> str:
    """What `make TARGET` would run, every prerequisite forced (-B), nothing run (-n)."""
    proc = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), target], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_demo_installs_only_what_the_demo_needs():
    demo = _make_n("demo")
    assert "eos-chaos run scenarios/smoke.yaml" in demo
    assert "setup --minimal" in demo  # Kafka 4.3.1's jars only: no toxiproxy, no kafka-tools
    for not_needed in ("chromium", "golang-go", "jdk-headless", "[test", "spark", "3.9.1"):
        assert not_needed not in demo, not_needed
    assert "python3-venv" in demo  # installed when `python3 -m venv` cannot work


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_test_installs_the_rest():
    test = _make_n("test")
    for needed in ("chromium", "golang-go", "'.[test,spark]'", "--kafka-version 3.9.1", "--spark",
                   "pytest tests"):
        assert needed in test, needed


def test_pyproject_pins_the_tested_set():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"confluent-kafka==2.16.1"' in text and "docs/scenarios.md" in text
    # declared exactly when the code imports it (it was declared and unused before issue 14)
    uses = any("import psutil" in f.read_text() for d in ("harness", "checkers", "nemesis")
               for f in (ROOT / d).rglob("*.py"))
    assert ('"psutil==' in text) == uses
    deps = text[text.index("dependencies = ["):text.index("]", text.index("dependencies = ["))]
    assert "pyarrow" not in deps  # only the spark extra reads parquet
    assert '"pyarrow==' in text[text.index("spark = ["):]


def _fake_go(tmp_path: Path, version_line: str) -> str:
    go = tmp_path / "go"
    go.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    go.chmod(0o755)
    return str(go)


@pytest.mark.parametrize("line,version", [
    ("go version go1.19.8 linux/amd64", (1, 19)),
    ("go version go1.23.0 linux/arm64", (1, 23)),
    ("go version devel go1.26-abcdef linux/amd64", (1, 26)),
    ("something else", None),
])
def test_go_version(tmp_path, line, version):
    assert artifacts.go_version(_fake_go(tmp_path, line)) == version


def test_old_go_is_older_than_toxiproxy_needs():
    assert (1, 19) < artifacts.TOXIPROXY_GO <= (1, 23)
    major, minor = (int(x) for x in artifacts.GO_TOOLCHAIN.removeprefix("go").split(".")[:2])
    assert (major, minor) >= artifacts.TOXIPROXY_GO


# Maven's output for a version Central does not have (mvn 3.8, 2026-11), as kafka_dist saw it
MAVEN_NOT_FOUND = """\x1b[0m[ERROR] Failed to execute goal on project kafka-classpath: Could not resolve dependencies for project kafka-eos-chaos:kafka-classpath:jar:9.9.9: Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central (https://repo.maven.apache.org/maven2) -> [Help 1]
[ERROR]
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
[ERROR] Re-run Maven using the -X switch to enable full debug logging.
"""
MAVEN_OFFLINE = """[ERROR] Failed to execute goal on project kafka-classpath: Could not resolve dependencies for project x: Failed to collect dependencies at org.apache.kafka:kafka_2.13:jar:4.3.1: Failed to read artifact descriptor: Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.3.1 from/to central (https://repo.maven.apache.org/maven2): Connect to repo.maven.apache.org:443 failed: Connection refused -> [Help 1]
[ERROR]
"""


def test_unknown_kafka_version_is_one_line_with_the_releases_the_harness_runs():
    msg = artifacts.maven_failure("9.9.9", MAVEN_NOT_FOUND)
    assert "\n" not in msg
    assert msg.startswith("Kafka 9.9.9 is not on Maven Central")
    assert "3.5.0 to 4.4.0" in msg


def test_unreachable_maven_central_is_one_line_quoting_maven():
    msg = artifacts.maven_failure("4.3.1", MAVEN_OFFLINE)
    assert "\n" not in msg and "not on Maven Central" not in msg
    assert "Connection refused" in msg and "Maven Central reachable" in msg


DEBIAN_GO = Path("/usr/lib/go-1.19/bin")


@pytest.mark.skipif(not (DEBIAN_GO / "go").exists(), reason="Debian's golang-go 1.19 is not installed")
def test_toxiproxy_builds_with_debians_go_first_on_path(tmp_path, monkeypatch):
    """Debian 12's golang-go (1.19) first on PATH: setup fetches Go GO_TOOLCHAIN through the Go
    module proxy and builds toxiproxy with it. The Go module and build caches are the user's
    (a first run downloads ~70 MB and takes minutes; later runs reuse them)."""
    monkeypatch.setenv("PATH", f"{DEBIAN_GO}:{os.environ['PATH']}")
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path / "cache"))
    assert artifacts.go_version(shutil.which("go")) == (1, 19)
    t0 = time.monotonic()
    server = artifacts.toxiproxy_server()
    assert server.is_file() and os.access(server, os.X_OK)
    # the binary's build info names the toolchain that built it and toxiproxy's module version
    proc = subprocess.run(["go", "version", "-m", str(server)], capture_output=True, text=True, timeout=30)
    assert f"{server}: {artifacts.GO_TOOLCHAIN}" in proc.stdout, proc.stdout + proc.stderr
    assert artifacts.TOXIPROXY_VERSION in proc.stdout
    print(f"toxiproxy built with Debian's Go 1.19 first on PATH in {time.monotonic() - t0:.1f} s")
