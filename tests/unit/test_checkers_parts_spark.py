"""The Spark engine's start errors (checkers.engines.parts_spark), none of which starts a JVM: each is one
line that says what to fix, and comes fast (an unreachable master is found by a TCP connect,
not by Spark's minute of retries); the package zip it ships; the checker does not need pyspark.
The engine's verdicts: tests/integration/test_check_spark.py."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from checkers.engines.parts_spark import SparkEngine, SparkEngineError, master_kind, package_zip, spark_engine

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


@pytest.mark.parametrize("master", ["spark://127.0.0.1:{port}", "spark://127.0.0.1:{port},127.0.0.1:{port}",
                                    "k8s://https://127.0.0.1:{port}"])
def test_an_unreachable_master_is_one_line_at_once(master):
    master = master.format(port=_free_port())
    t0 = time.monotonic()
    with pytest.raises(SparkEngineError) as e:
        spark_engine(master)
    assert time.monotonic() - t0 < 10
    msg = str(e.value)
    assert "\n" not in msg and "cannot reach" in msg and "Connection refused" in msg, msg


@pytest.mark.parametrize("master, kind", [("local", "local"), ("local[2]", "local"), ("local[*]", "local"),
                                          ("local[4,2]", "local"), ("spark://h:7077", "spark"), ("yarn", "yarn"),
                                          ("k8s://https://h:6443", "k8s")])
def test_the_masters_the_spark_workload_accepts(master, kind):
    assert master_kind(master) == kind


@pytest.mark.parametrize("master", ["", "mesos://h:5050", "local[x]", "spark://", "spark://h", "yarn-client"])
def test_another_master_is_one_line(master):
    with pytest.raises(SparkEngineError, match="Spark master") as e:
        SparkEngine(master).start()
    assert "\n" not in str(e.value)


def test_no_java_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkEngineError, match=f"JAVA_HOME={tmp_path} has no bin/java"):
        spark_engine("local[2]")
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkEngineError, match="no java on PATH: install a JDK 17"):
        spark_engine("local[2]")


def test_the_checker_needs_no_pyspark():
    # pyspark hidden: checkers and this module import, and the engine says what to install
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "import checkers, checkers.engines.parts, checkers.engines.parts_spark as ps\n"
            "try:\n    ps.spark_engine('local[2]')\n"
            "except ps.SparkEngineError as e:\n    print(e)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("pyspark is not installed in ") and "pip install" in res.stdout, res.stdout


def test_the_zip_holds_the_package_and_no_bytecode(tmp_path):
    z = package_zip(tmp_path)
    names = zipfile.ZipFile(z).namelist()
    assert {"checkers/__init__.py", "checkers/engines/parts.py", "checkers/engines/parts_spark.py"} <= set(names)
    assert any(n.startswith("checkers/history/") for n in names)  # subpackages too
    assert not [n for n in names if "__pycache__" in n or not n.endswith(".py")]
    assert package_zip(tmp_path).name != z.name  # Spark refuses a second file of one name


def test_the_cli_says_it_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from harness.cli.main import app

    h = ROOT / "tests" / "data" / "real-smoke-s1" / "history.jsonl"
    t0 = time.monotonic()
    res = CliRunner().invoke(app, ["check", str(h), "--engine", "spark", "--master", f"spark://127.0.0.1:{_free_port()}",
                                   "--workdir", str(tmp_path)])
    assert time.monotonic() - t0 < 10
    assert res.exit_code == 2 and (res.exception is None or isinstance(res.exception, SystemExit))
    assert "error: cannot reach the Spark master" in res.output and "Traceback" not in res.output, res.output
    res = CliRunner().invoke(app, ["check", str(h), "--master", "local[2]"])
    assert res.exit_code == 2 and "--master is for --engine spark" in res.output
    res = CliRunner().invoke(app, ["check", str(h), "--engine", "flink"])
    assert res.exit_code == 2 and "--engine is polars or spark" in res.output
