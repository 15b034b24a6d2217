"""The shipped example applications (harness/examples) without a broker: they compile, the copy
service parses its arguments and its --client-properties file, the Streams source offers both
guarantees and the exits the harness relies on. Their behaviour under faults is checked by the
app workload's runs (tests/integration/test_app_workload.py, the zoo's app mutants)."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.examples import EXAMPLES

COPY = EXAMPLES / "copy_service.py"
JAVA = EXAMPLES / "streams" / "CopyStreams.java"


def _copy_service():
    """copy_service.py as a module (importing it runs nothing: main() is behind __main__)."""
    spec = importlib.util.spec_from_file_location("copy_service_under_test", COPY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_examples_folder_holds_what_its_docstring_lists():
    import harness.examples as ex

    for name in ("copy_service.py", "spark_jobs.py", "streams/CopyStreams.java"):
        assert (EXAMPLES / name).is_file(), name
        assert name.split("/")[-1] in ex.__doc__, name


@pytest.mark.parametrize("name", ["copy_service.py", "spark_jobs.py"])
def test_python_examples_compile(name):
    src = (EXAMPLES / name).read_text()
    compile(src, str(EXAMPLES / name), "exec")


def test_copy_service_help_lists_its_options():
    r = subprocess.run([sys.executable, str(COPY), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    for opt in ("--bootstrap", "--input", "--output", "--group", "--transactional-id",
                "--client-properties", "--commit-offsets-outside-txn"):
        assert opt in r.stdout, opt


def test_copy_service_refuses_missing_arguments_with_exit_2():
    r = subprocess.run([sys.executable, str(COPY), "--bootstrap", "127.0.0.1:1", "--input", "in"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "--output" in r.stderr and "--transactional-id" in r.stderr


def test_copy_service_reads_java_style_properties(tmp_path):
    p = tmp_path / "client.properties"
    p.write_text("# written by the harness\n"
                 "bootstrap.servers = 127.0.0.1:39092\n"
                 "\n"
                 "security.protocol=SASL_PLAINTEXT\n"
                 "sasl.mechanism=PLAIN\n"
                 "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                 'username="u" password="p=q";\n'
                 "sasl.username=u\n")
    conf = _copy_service().read_properties(p)
    assert conf["bootstrap.servers"] == "127.0.0.1:39092"
    assert conf["security.protocol"] == "SASL_PLAINTEXT" and conf["sasl.username"] == "u"
    # only the first '=' splits: values keep theirs
    assert conf["sasl.jaas.config"].endswith('password="p=q";')
    assert not any(k.startswith("#") for k in conf)


def test_copy_service_reads_committed_and_commits_offsets_in_the_transaction():
    src = COPY.read_text()
    assert '"isolation.level": "read_committed"' in src
    assert "send_offsets_to_transaction" in src and "consumer_group_metadata()" in src
    assert "enable.auto.commit" in src  # off unless --commit-offsets-outside-txn


def test_streams_source_offers_both_guarantees_and_exits_the_harness_relies_on():
    src = JAVA.read_text()
    assert "exactly_once_v2" in src and "at_least_once" in src
    assert "COMMIT_INTERVAL_MS_CONFIG, 100" in src
    assert "addShutdownHook" in src and "streams.close(" in src          # SIGTERM: a clean close
    assert re.search(r"State\.ERROR", src) and "System.exit(code.get())" in src  # ERROR: exit 1
    assert "public class CopyStreams" in src


def test_streams_example_compiles_when_its_libraries_are_cached():
    """javac over the cached kafka-streams classpath (eos-chaos setup fetches it); skipped when
    nothing is cached or there is no JDK."""
    from harness.cluster.artifacts import ArtifactError
    from harness.examples.streams_app import classpath

    if shutil.which("javac") is None:
        pytest.skip("no javac")
    try:
        cp = classpath(fetch=False)
    except ArtifactError as exc:
        pytest.skip(str(exc))
    classes = cp.split(":", 1)[0]
    assert Path(classes, "CopyStreams.class").is_file()
