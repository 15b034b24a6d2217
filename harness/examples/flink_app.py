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

The job's state survives only in the retained checkpoints, and its Kafka transactions are
recovered from them (committed if their checkpoint completed, aborted otherwise) by the
KafkaSink on restore.

Watchdog (``--watchdog-s``, ``--watchdog-startup-s``): this process stays up as the job's
deployment, with PyFlink's interpreter as its child (same process group; the child dies with it,
PR_SET_PDEATHSIG; a SIGTERM is passed on to it), and ends the job as a Flink deployment that
health-checks its jobs would (the Flink Kubernetes operator's
``kubernetes.operator.cluster.health-check.checkpoint-progress.enabled``), so that the harness's
supervisor restarts it from its newest retained checkpoint, as after a kill. It logs one line,
``flink_app: watchdog: <why>; ...``, and exits non-zero (WATCHDOG_EXIT) when

* the job's process exited (the job FAILED, was cancelled or finished: ``env.execute()`` raised
  or returned), with that process's exit code;
* the mini-cluster lost its TaskManager (its log's ``TaskManager #N failed``: the job's restarts
  then wait for slots that never come, and its status does not turn FAILED); or
* no checkpoint completed for ``--watchdog-s`` seconds of the job's running time (default
  max(30 s, 10 x the job's ``--checkpoint-interval-ms``); seconds the instance spent paused,
  SIGSTOP, do not count), or none in ``--watchdog-startup-s`` plus that bound since the start.

``--watchdog-s 0`` turns it off: this process then becomes the job's (exec), as before.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
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
appender.watch.name = WatchAppender
appender.watch.type = File
appender.watch.fileName = @WATCH_LOG@
appender.watch.append = false
appender.watch.layout.type = PatternLayout
appender.watch.layout.pattern = %m%n
logger.minicluster.name = org.apache.flink.runtime.minicluster.MiniCluster
logger.minicluster.level = WARN
logger.minicluster.appenderRef.watch.ref = WatchAppender
"""
#: the watchdog (module docstring): the shortest checkpoint-progress bound, in checkpoint
#: intervals otherwise; the extra time the first checkpoint after a start gets (the JVM's start,
#: the job's submission and restore); how often it looks; its exit code
WATCHDOG_MIN_S = 30.0
WATCHDOG_INTERVALS = 10
WATCHDOG_STARTUP_S = 60.0
WATCHDOG_POLL_S = 1.0
WATCHDOG_EXIT = 3
#: flink_job.py's default checkpoint interval, when the job's arguments do not set one
JOB_CHECKPOINT_INTERVAL_MS = 1000
#: the mini-cluster's log line when its TaskManager's fatal-error handler closed it
#: (MiniCluster.TerminatingFatalErrorHandler: "TaskManager #0 failed."), copied by LOG4J's
#: WatchAppender into ``<work dir>/log/watch.log``
TM_FAILED = re.compile(r"TaskManager #\d+ failed")


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


def checkpoint_interval_ms(job_args: list[str]) -> int:
    """The job's ``--checkpoint-interval-ms`` (``X`` or ``=X``), else flink_job.py's default."""
    for i, arg in enumerate(job_args):
        if arg == "--checkpoint-interval-ms" and i + 1 < len(job_args):
            return int(job_args[i + 1])
        if arg.startswith("--checkpoint-interval-ms="):
            return int(arg.split("=", 1)[1])
    return JOB_CHECKPOINT_INTERVAL_MS


def default_watchdog_s(job_args: list[str]) -> float:
    """The checkpoint-progress bound: max(WATCHDOG_MIN_S, WATCHDOG_INTERVALS checkpoint intervals)."""
    return max(WATCHDOG_MIN_S, WATCHDOG_INTERVALS * checkpoint_interval_ms(job_args) / 1000)


def stalled_after(stalled_s: float, elapsed_s: float, *, progressed: bool,
                  poll_s: float = WATCHDOG_POLL_S) -> float:
    """The job's running seconds without a completed checkpoint, after a look ``elapsed_s``
    (monotonic) after the previous one: 0 when a checkpoint completed since; otherwise
    ``elapsed_s`` more, or only ``poll_s`` when the look came more than 3 polls late (this
    process was paused with the job, SIGSTOP: the job could not checkpoint either)."""
    if progressed:
        return 0.0
    return stalled_s + (elapsed_s if elapsed_s <= 3 * poll_s else poll_s)


def watchdog_verdict(*, exit_code: int | None, tm_failure: str | None, stalled_s: float,
                     checkpointed: bool, bound_s: float, startup_s: float) -> str | None:
    """Why the deployment must end the job (one line, no trailing period), or None while it runs:
    its process exited (``exit_code``), the mini-cluster lost its TaskManager (``tm_failure``:
    the log line), or ``stalled_s`` running seconds without a completed checkpoint reached
    ``bound_s`` (``bound_s + startup_s`` before this start's first checkpoint,
    ``checkpointed`` False). ``bound_s`` 0: no progress bound."""
    if exit_code is not None:
        how = f"killed by signal {-exit_code}" if exit_code < 0 else f"exited with code {exit_code}"
        return f"the job's process {how} (the job ended: failed, cancelled or finished)"
    if tm_failure:
        return (f"the mini-cluster lost its TaskManager ('{tm_failure}'): the job's restarts wait for "
                "slots that never come")
    if bound_s > 0:
        limit = bound_s if checkpointed else bound_s + startup_s
        if stalled_s >= limit:
            since = "its last one" if checkpointed else "the job's start"
            return (f"no checkpoint completed for {stalled_s:.0f} s of running time since {since} "
                    f"(bound {limit:.0f} s)")
    return None


def _checkpoint_mark(folder: Path) -> tuple[int, str] | None:
    """The newest completed checkpoint's ``_metadata`` (modification time, path), or None: it
    changes each time a checkpoint completes."""
    newest = newest_checkpoint(folder)
    if newest is None:
        return None
    try:
        return (newest.joinpath("_metadata").stat().st_mtime_ns, str(newest))
    except OSError:  # removed meanwhile (num-retained): the next look sees its successor
        return None


def _descendants(pid: int) -> list[int]:
    """``pid``'s descendants (Linux /proc), children before their own."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when this process dies (prctl PR_SET_PDEATHSIG), so
    that a SIGKILL of the deployment alone leaves no job behind."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def run_watched(args: list[str], env: dict[str, str], *, checkpoints: Path, watch_log: Path,
                bound_s: float, startup_s: float, poll_s: float = WATCHDOG_POLL_S) -> int:
    """Run the job's process (``args``) and watch it (module docstring "Watchdog"); returns the
    exit code for this process.

    What it reads, and why. PyFlink's JobClient (``get_job_status()``, ``cancel()``,
    ``get_job_execution_result()``...) exists only in the job's own process, and only when the
    job calls ``execute_async()``: a job as users write it (flink_job.py) calls ``execute()``,
    which keeps it; its futures' ``result()`` has no timeout; and after the TaskManager is gone
    the job only restarts (the logs' ``Restoring job`` after ``TaskManager #0 failed``: the
    restart strategy has no limit, the scheduler waits for slots), so the status it would report
    does not turn FAILED. So the deployment reads what it can read from
    outside, reliably: the job's process (it exits when the job reaches a terminal status), the
    checkpoint folder (the JobManager writes a checkpoint's ``_metadata`` when it completes it:
    the newest one's modification time moves with every completed checkpoint, whatever job
    file runs) and the mini-cluster's own log line for a lost TaskManager (LOG4J's
    WatchAppender, ``watch_log``), which ends the job at once instead of after the bound."""
    watch_log.unlink(missing_ok=True)  # a previous start's line must not end this one
    proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    signalled: list[int] = []

    def pass_on(signum, _frame):  # the supervisor's stop (SIGTERM) is the job's
        signalled.append(signum)
        proc.send_signal(signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, pass_on)
    mark = _checkpoint_mark(checkpoints)  # the checkpoint restored, if any: not this start's
    stalled, checkpointed, tm_failure, pos = 0.0, False, None, 0
    last = time.monotonic()
    while True:
        try:
            code = proc.wait(timeout=poll_s)
        except subprocess.TimeoutExpired:
            code = None
        now = time.monotonic()
        if code is not None and signalled:
            print(f"flink_app: stopped ({signal.Signals(signalled[0]).name}): the job's process exited "
                  f"with code {code}", flush=True)
            return code
        if code is None:
            new = _checkpoint_mark(checkpoints)
            progressed = new is not None and new != mark
            if progressed:
                mark, checkpointed = new, True
            stalled = stalled_after(stalled, now - last, progressed=progressed, poll_s=poll_s)
            try:
                with watch_log.open(errors="replace") as f:
                    if f.seek(0, 2) < pos:  # a new file (log4j's append = false)
                        pos = 0
                    f.seek(pos)
                    for line in f:
                        if not tm_failure and TM_FAILED.search(line):
                            tm_failure = line.strip()[:120]
                    pos = f.tell()
            except OSError:
                pass
        last = now
        why = watchdog_verdict(exit_code=code, tm_failure=tm_failure, stalled_s=stalled,
                               checkpointed=checkpointed, bound_s=bound_s, startup_s=startup_s)
        if why is None:
            continue
        if code is not None:
            print(f"flink_app: watchdog: {why}; exiting with it so the deployment restarts the job "
                  "from its newest retained checkpoint", flush=True)
            return code
        print(f"flink_app: watchdog: {why}; killing the job (pid {proc.pid} and its JVM) and exiting "
              f"{WATCHDOG_EXIT} so the deployment restarts it from its newest retained checkpoint "
              f"({mark[1] if mark else 'none yet'})", flush=True)
        for pid in [*reversed(_descendants(proc.pid)), proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        return WATCHDOG_EXIT


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="flink_app", description="deploy the example PyFlink job (module docstring)")
    ap.add_argument("--work-dir", required=True, help="the instance's own folder, kept across restarts")
    ap.add_argument("--job", default=str(JOB), help="the PyFlink job file (default: the shipped flink_job.py)")
    ap.add_argument("--watchdog-s", type=float, default=None,
                    help="end the job when no checkpoint completed for this many seconds of running time "
                         "(default: max(30, 10 x the job's --checkpoint-interval-ms); 0: no watchdog, "
                         "this process becomes the job's)")
    ap.add_argument("--watchdog-startup-s", type=float, default=WATCHDOG_STARTUP_S,
                    help="the extra time the first checkpoint after a start gets (default %(default)s)")
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
    watch_log = work / "log" / "watch.log"
    log4j.write_text(LOG4J.replace("@WATCH_LOG@", str(watch_log)))
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
    bound = default_watchdog_s(job_args) if a.watchdog_s is None else a.watchdog_s
    if bound <= 0:
        os.execve(str(python), args, env)
    print(f"flink_app: watchdog on: the job ends when its process exits, its TaskManager is lost, or no "
          f"checkpoint completes for {bound:.0f} s ({bound + a.watchdog_startup_s:.0f} s after a start)", flush=True)
    code = run_watched(args, env, checkpoints=checkpoints, watch_log=watch_log, bound_s=bound,
                       startup_s=a.watchdog_startup_s)
    if code < 0:  # the job's process died of a signal (the supervisor's SIGTERM): so does this one
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
