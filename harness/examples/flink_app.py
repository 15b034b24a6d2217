"""Deploy the example PyFlink job (harness/examples/flink_job.py) as a Flink deployment would.

``python -m harness.examples.flink_app --work-dir DIR [--job FILE] -- JOB ARGS...`` replaces
itself with PyFlink's interpreter running the job (``FILE``, default the shipped
``flink_job.py``) with ``JOB ARGS`` plus what a deployment supplies:

* ``--connector-jar``: Flink's Kafka connector, ``org.apache.flink:flink-sql-connector-kafka``
  (CONNECTOR_VERSION, which shades kafka-clients CONNECTOR_KAFKA_CLIENTS), fetched from Maven
  Central once and cached under ``cache_dir()/flink/<FLINK_VERSION>/connector``;
* ``--checkpoint-dir DIR/checkpoints`` and, when a completed checkpoint is there,
  ``--restore`` with the newest one: a killed instance resumes from its latest retained
  checkpoint, as a Flink job restarted by its operator or ``flink run -s`` does.

PyFlink (``apache-flink`` FLINK_VERSION from PyPI) pins numpy, pyarrow and apache-beam at
versions that clash with the harness's own (pyarrow 26 for pyspark), so it lives in a venv of
its own, ``cache_dir()/flink/<FLINK_VERSION>/venv``, made by ``eos-chaos setup --flink``
(``flink_python``). The JVM PyFlink starts (the local mini-cluster: job manager and task
manager in one process, the job's operators, the Python ``map`` in it through pemja) is this
process's child, in its process group, so the harness's SIGKILL and SIGSTOP of the instance
reach it; it exits when its parent does. Its log (Flink's WARN and above, the Kafka sink's
and the checkpoint coordinator's INFO) goes to stdout, the instance's log in the run folder.

The process the harness kills is PyFlink's interpreter; the job's state survives only in the
retained checkpoints, and its Kafka transactions are recovered from them (committed if their
checkpoint completed, aborted otherwise) by the KafkaSink on restore.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from harness.cluster.artifacts import ArtifactError, cache_dir, maven_libs

#: apache-flink on PyPI and the Kafka connector built for its minor (flink-connector-kafka
#: 5.0.0 for Flink 2.2; Flink 2.3 has none yet); the connector's jar shades kafka-clients
FLINK_VERSION = "2.2.1"
CONNECTOR_VERSION = "5.0.0-2.2"
CONNECTOR_KAFKA_CLIENTS = "4.2.0"
JOB = Path(__file__).resolve().parent / "flink_job.py"
#: the mini-cluster's JVM: a small heap, one GC thread (2-core machines run several instances)
JVM_ARGS = "-Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
LOG4J = """\
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = ConsoleAppender
appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %-60c %x - %m%n
logger.sink.name = org.apache.flink.connector.kafka.sink
logger.sink.level = INFO
logger.ckpt.name = org.apache.flink.runtime.checkpoint.CheckpointCoordinator
logger.ckpt.level = INFO
logger.kafka.name = org.apache.flink.kafka.shaded.org.apache.kafka
logger.kafka.level = WARN
logger.net.name = org.apache.flink.kafka.shaded.org.apache.kafka.clients.NetworkClient
logger.net.level = ERROR
logger.info.name = org.apache.flink.kafka.shaded.org.apache.kafka.common.utils.AppInfoParser
logger.info.level = ERROR
logger.metrics.name = org.apache.flink.metrics
logger.metrics.level = ERROR
logger.tokens.name = org.apache.flink.runtime.security.token
logger.tokens.level = ERROR
"""


def home() -> Path:
    return cache_dir() / "flink" / FLINK_VERSION


def flink_python(*, fetch: bool = True) -> Path:
    """The interpreter of the PyFlink venv (``home()/venv/bin/python``), made once with this
    interpreter's ``venv`` and ``pip install apache-flink==FLINK_VERSION`` (about 800 MB with
    apache-beam, pyarrow, numpy and pandas at PyFlink's pins). Raises ArtifactError when it is
    missing and ``fetch`` is false, or when pip fails (its last words quoted)."""
    venv = home() / "venv"
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    if not fetch:
        raise ArtifactError(f"PyFlink {FLINK_VERSION} is not installed at {venv}: run `eos-chaos setup --flink`")
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    for cmd in ([sys.executable, "-m", "venv", str(venv)],
                [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"apache-flink=={FLINK_VERSION}"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            why = " ".join((proc.stdout + proc.stderr).split())[-400:]
            raise ArtifactError(f"could not install apache-flink {FLINK_VERSION} into {venv}: {why}")
    (venv / ".complete").write_text(FLINK_VERSION + "\n")
    return python


def connector_jar(*, fetch: bool = True) -> Path:
    """``flink-sql-connector-kafka-<CONNECTOR_VERSION>.jar`` (one shaded jar: the connector with
    kafka-clients in it), resolved through Maven once and cached. Raises ArtifactError as
    ``maven_libs`` does."""
    libs = maven_libs(home() / "connector", "flink-kafka-connector", CONNECTOR_VERSION,
                      [("org.apache.flink", "flink-sql-connector-kafka", CONNECTOR_VERSION)],
                      f"org.apache.flink:flink-sql-connector-kafka:{CONNECTOR_VERSION}", fetch=fetch)
    jar = libs / f"flink-sql-connector-kafka-{CONNECTOR_VERSION}.jar"
    if not jar.exists():
        raise ArtifactError(f"{jar} is missing from the cached connector: remove {libs.parent} and run "
                            "`eos-chaos setup --flink`")
    return jar


def setup() -> dict[str, str]:
    """Install what the example needs (``eos-chaos setup --flink``): PyFlink's venv and the
    connector's jar. Returns what was installed, name -> path."""
    return {"pyflink": str(flink_python()), "flink-sql-connector-kafka": str(connector_jar())}


def versions() -> dict[str, str]:
    """The versions a Flink app run records (harness.run.versions): ``flink``, the connector,
    the kafka-clients it shades."""
    return {"flink": FLINK_VERSION, "flink-connector-kafka": CONNECTOR_VERSION,
            "flink-kafka-clients": CONNECTOR_KAFKA_CLIENTS}


def newest_checkpoint(folder: Path) -> Path | None:
    """The newest completed checkpoint under ``folder`` (``<job id>/chk-<n>`` with its
    ``_metadata`` written; a new job id per process start, so the newest by the metadata's
    modification time), or None. A checkpoint without ``_metadata`` (or with an empty one) was
    cut short and is skipped."""
    done = [m for m in folder.glob("*/chk-*/_metadata") if m.is_file() and m.stat().st_size > 0]
    if not done:
        return None
    return max(done, key=lambda m: (m.stat().st_mtime_ns, int(m.parent.name.split("-")[-1]))).parent


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="flink_app", description="deploy the example PyFlink job (module docstring)")
    ap.add_argument("--work-dir", required=True, help="the instance's own folder, kept across restarts")
    ap.add_argument("--job", default=str(JOB), help="the PyFlink job file (default: the shipped flink_job.py)")
    ap.add_argument("job_args", nargs=argparse.REMAINDER, help="-- then the job's arguments")
    a = ap.parse_args(argv)
    job_args = a.job_args[1:] if a.job_args[:1] == ["--"] else a.job_args
    try:
        python, jar = flink_python(fetch=False), connector_jar(fetch=False)
    except ArtifactError as exc:
        print(f"flink_app: {exc}", file=sys.stderr)
        sys.exit(2)
    work = Path(a.work_dir)
    checkpoints = work / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    (work / "log").mkdir(exist_ok=True)
    log4j = work / "log4j.properties"
    log4j.write_text(LOG4J)
    restore = newest_checkpoint(checkpoints)
    print(f"flink_app: PyFlink {FLINK_VERSION}, {jar.name}; "
          + (f"resuming from {restore}" if restore else "no retained checkpoint: starting afresh"), flush=True)
    # the Python map runs in the JVM (pemja): that embedded interpreter does not know it belongs to
    # the venv, so it gets the venv's site-packages (pemja, pyflink) on its path
    site = [str(p) for p in sorted(python.parent.parent.glob("lib/python*/site-packages"))]
    env = dict(os.environ, JVM_ARGS=JVM_ARGS, FLINK_LOG_DIR=str(work / "log"), LOG4J_PROPERTIES=str(log4j),
               PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join([*site, *filter(None, [os.environ.get("PYTHONPATH")])]))
    args = [str(python), a.job, *job_args, "--connector-jar", str(jar), "--checkpoint-dir", str(checkpoints),
            *(["--restore", str(restore)] if restore else [])]
    os.execve(str(python), args, env)


if __name__ == "__main__":
    main(sys.argv[1:])
