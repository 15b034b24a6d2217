"""A Spark engine for ``checkers.engines.parts``: the per-key checks of each part in a Spark executor.

``check_parts(history, engine=spark_engine(master))`` (or ``check_spark`` /
``check_run_spark`` here, which also close the engine) checks a history as the polars
(``run_local``) engine does, with the same verdict: the history is cut into Parquet parts on the
driver (``checkers.engines.parts.write_parts``), and each part's per-key finders (``check_part``) run as
one Spark task (``sc.parallelize(items, len(items)).map(fn).collect()``: results in item
order). The cross-key finders stay on the driver (``cross``, as in ``check_parts``).

Masters: ``local[N]`` (here), ``spark://host:port[,host2:port2]`` (standalone), ``yarn``
(HADOOP_CONF_DIR or YARN_CONF_DIR says where), ``k8s://https://host:port``; the driver runs in
this process (client mode).

What the cluster needs (docs/checkers.md "The parts path on Spark"):

* the ``checkers`` package is zipped at start and shipped with ``sc.addPyFile``: the project
  need not be installed on the executors, but the executors' Python must have the same
  minor version as the driver's and the libraries checkers imports: polars, numpy, scipy,
  pydantic, pyyaml (orjson optional) and pyspark's own. Which Python the executors run: the
  engine's ``python``, else PYSPARK_PYTHON (a path valid on the executors' hosts), else this
  process's interpreter for a ``local`` master and ``python3`` for another (pyspark reads
  PYSPARK_PYTHON when the session starts; ``spark.pyspark.python`` counts only for
  spark-submit of a .py file). The engine starts with a probe task that imports
  ``checkers.engines.parts`` on the executors, so a missing library is one error line at start.
* the parts folder (``check_parts(workdir=...)``; a temporary folder by default) must be on
  storage every executor reads at the same path: a shared filesystem (NFS, a cluster
  filesystem mounted alike everywhere) for a real cluster. The probe checks that an executor
  sees a file the driver wrote there (``workdir`` of ``spark_engine``), because an executor
  that cannot see its part would check nothing and say nothing.

Errors: every failure to start (pyspark not installed, no Java, an unknown or unreachable
master, a start that does not finish within ``start_timeout_s``, executors that cannot import
checkers or cannot see ``workdir``) raises ``SparkEngineError``, a RuntimeError whose message is
one line saying what to fix. An exception a task raises (OSError when a part cannot be read)
is raised again on the driver as itself, as the local engine would.

pyspark is imported only inside this module's functions: the checker does not need Spark
otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
import uuid
import weakref
import zipfile
from pathlib import Path
from typing import Callable

from .parts import check_parts, check_run_parts
from ..run import Verdict

#: Spark settings every session gets (``conf`` overrides them)
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # one task per part: a part that fails is a defect or a bad workdir, not a lost executor
    # to retry at length
    "spark.task.maxFailures": "2",
}
#: added for local masters: the host name may not resolve (a network namespace); the driver
#: JVM only moves pickled parts and results, so C1 and the serial GC start it sooner (as the
#: spark workload's driver, harness/workers/spark_driver.py)
LOCAL_CONF = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
              "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
#: seconds a TCP connection to a spark:// or k8s:// master may take before it counts as unreachable
CONNECT_TIMEOUT_S = 5.0
#: the driver JVM's log4j2 settings: errors only, on stderr (Spark's default profile prints
#: INFO and WARN lines a check's output does not need; an executor's own logs stay with its
#: cluster manager)
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
# pyspark's driver counts as a shell, whose root level Spark sets to its gateway's logger level
# (WARN when unset, with a line saying so)
logger.repl.name = org.apache.spark.api.python.PythonGatewayServer
logger.repl.level = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""
_INSTALL = "pip install 'pyspark==4.3.0' (or `make venv-test` / pip install -e '.[spark]')"
_JAVA = "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME"


class SparkEngineError(RuntimeError):
    """The Spark engine cannot start or run; the message is one line saying what to fix."""


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _python_error(exc: BaseException) -> str:
    """The Python exception line inside a Spark job failure (a Py4JJavaError carries the
    worker's traceback in its Java message), else the exception's first line."""
    text = str(exc)
    lines = re.findall(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit)\b:?.*)$", text, re.M)
    py = [ln for ln in lines if not ln.startswith(("org.", "java.", "scala.", "py4j."))]
    return _one_line((py or lines or [text.splitlines()[0] if text else type(exc).__name__])[-1])


def master_kind(master: str) -> str:
    """"local", "spark", "yarn" or "k8s" for a master URL; SparkEngineError for another."""
    if re.fullmatch(r"local(\[(\*|\d+)(,\s*\d+)?\])?", master):
        return "local"
    if master.startswith("spark://") and len(master) > len("spark://"):
        return "spark"
    if master == "yarn":
        return "yarn"
    if master.startswith("k8s://") and len(master) > len("k8s://"):
        return "k8s"
    raise SparkEngineError(f"unknown Spark master {master!r}: give local[N], spark://host:port, yarn or "
                           "k8s://https://host:port")


def _endpoints(master: str) -> list[tuple[str, int]]:
    """(host, port) to connect to for a spark:// (every host of an HA list) or k8s:// master."""
    kind = master_kind(master)
    if kind == "spark":
        out = []
        for hp in master[len("spark://"):].split(","):
            host, _, port = hp.strip().rpartition(":")
            if not host or not port.isdigit():
                raise SparkEngineError(f"bad Spark master {master!r}: give spark://host:port")
            out.append((host.strip("[]"), int(port)))
        return out
    if kind == "k8s":
        rest = master[len("k8s://"):]
        scheme, _, rest = rest.rpartition("://")
        hostport = rest.split("/")[0]
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            host, port = hostport, ("80" if scheme == "http" else "443")
        return [(host.strip("[]"), int(port))]
    return []


def check_reachable(master: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise SparkEngineError when no endpoint of a spark:// or k8s:// master accepts a TCP
    connection within ``timeout_s`` seconds (Spark itself would retry for a minute or more
    before it gave up). Other masters are not checked here."""
    ends = _endpoints(master)
    why = []
    for host, port in ends:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            return
        except OSError as e:
            why.append(f"{host}:{port} ({e.strerror or type(e).__name__})")
    if ends:
        if master.startswith("spark://"):
            what, fix = "Spark master", "start it or fix the master URL (the spark:// URL its web UI shows)"
        else:
            what, fix = "Kubernetes API server", "fix the master URL (k8s://https://<kubectl cluster-info's address>)"
        raise SparkEngineError(f"cannot reach the {what} of {master}: {', '.join(why)}; {fix}")


def java_problem() -> str | None:
    """Why Spark cannot start a JVM here (None when a java is found: JAVA_HOME's, else PATH's)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        if os.access(os.path.join(home, "bin", "java"), os.X_OK):
            return None
        return f"JAVA_HOME={home} has no bin/java: unset it or point it at a JDK 17+"
    return None if shutil.which("java") else f"no java on PATH: {_JAVA}"


def package_zip(dest: str | Path) -> Path:
    """Zip the ``checkers`` package this module belongs to (its .py files, subpackages
    included) into ``dest`` (a folder) for ``sc.addPyFile``; returns the zip's path, whose name
    is unique (Spark refuses a second file of the same name with other content)."""
    pkg = Path(__file__).resolve().parents[1]  # checkers/, this module being in checkers/engines/
    out = Path(dest) / f"eosc-checkers-{uuid.uuid4().hex[:12]}.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(pkg.rglob("*.py")):
            if "__pycache__" not in p.parts:
                zf.write(p, Path(pkg.name) / p.relative_to(pkg))
    return out


def _make_probe() -> Callable[[str], dict]:
    """The start probe, run in an executor: can it import checkers.engines.parts, and see ``marker``?
    Nested so that cloudpickle ships it by value: a function of this module would be pickled
    by reference, and its import would fail before the probe could say why."""
    def probe(marker: str) -> dict:
        import os as _os
        import platform
        import sys as _sys

        out = {"python": list(_sys.version_info[:2]), "host": platform.node(),
               "marker": _os.path.exists(marker), "executable": _sys.executable}
        try:
            import checkers.engines.parts  # noqa: F401 - the import is the probe

            out["checkers"] = checkers.engines.parts.__file__
        except Exception as e:  # noqa: BLE001 - reported to the driver as one line
            out["error"] = f"{type(e).__name__}: {e}"
        return out
    return probe


class _Guarded:
    """``fn`` run in an executor, its exception returned rather than raised: the driver raises
    it again as itself (a Spark job failure would wrap it in Java)."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __call__(self, x):
        try:
            return True, self.fn(x)
        except Exception as e:  # noqa: BLE001
            try:
                import pickle

                pickle.dumps(e)
                return False, (e, traceback.format_exc())
            except Exception:  # noqa: BLE001 - an exception that does not pickle: its text
                return False, (RuntimeError(f"{type(e).__name__}: {e}"), traceback.format_exc())


class SparkEngine:
    """An engine for ``checkers.engines.parts`` (``engine(fn, items) -> [fn(x) for x in items]``) that
    runs each item as one Spark task. ``start()`` (``spark_engine`` calls it) starts the
    session, ships the package and runs the probe; ``close()`` stops the session. Usable as a
    context manager. See the module docstring for masters, ``conf`` (Spark settings, over
    ``BASE_CONF`` and, for local masters, ``LOCAL_CONF``), ``workdir``, ``python`` (the
    executors' interpreter) and errors; ``start_timeout_s``: seconds the session start plus the
    probe job may take. After ``start``: ``start_s`` (seconds it took) and ``probe`` (what the
    first probe task saw: python, host, executable, checkers' file)."""

    def __init__(self, master: str = "local[2]", conf: dict | None = None, workdir: str | Path | None = None,
                 start_timeout_s: float = 180.0, python: str | None = None, app_name: str = "eosc-check"):
        self.master, self.kind = master, master_kind(master)
        # the executors' Python: pyspark takes it from PYSPARK_PYTHON when the context starts
        # (spark.pyspark.python only counts for spark-submit of a .py file)
        self.python = python or os.environ.get("PYSPARK_PYTHON") or (
            sys.executable if self.kind == "local" else "python3")
        self.conf = {k: str(v) for k, v in (conf or {}).items()}
        self.workdir = Path(workdir) if workdir else Path(tempfile.gettempdir())
        self.start_timeout_s, self.app_name = start_timeout_s, app_name
        self.spark = None
        self.start_s: float | None = None
        self._owns = False
        self.probe: dict = {}
        self._tmp: Path | None = None
        self._rm_tmp: weakref.finalize | None = None

    # -- start and stop --------------------------------------------------------------------
    def session_conf(self) -> dict[str, str]:
        """The session's settings: BASE_CONF, LOCAL_CONF (local masters), ``conf``; the driver
        JVM's log4j settings (``_LOG4J``: errors only, on stderr) added to its Java options."""
        conf = dict(BASE_CONF)
        if self.kind == "local":
            conf.update(LOCAL_CONF)
        conf.update(self.conf)
        if self._tmp is not None and "log4j2.configurationFile" not in conf.get("spark.driver.extraJavaOptions", ""):
            log4j = self._tmp / "log4j2.properties"
            log4j.write_text(_LOG4J)
            conf["spark.driver.extraJavaOptions"] = (
                conf.get("spark.driver.extraJavaOptions", "") + f" -Dlog4j2.configurationFile=file:{log4j}").strip()
        return conf

    def start(self) -> "SparkEngine":
        """Start the session (once). Raises SparkEngineError (see the module docstring)."""
        if self.spark is not None:
            return self
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise SparkEngineError(f"pyspark is not installed in {sys.executable}: {_INSTALL}") from None
        why = java_problem()
        if why:
            raise SparkEngineError(f"Spark needs Java: {why}")
        check_reachable(self.master)
        self._tmp = Path(tempfile.mkdtemp(prefix="eosc-spark-check-"))
        # removed by close(), else when the engine is collected or the interpreter exits (a
        # caller whose exception skipped close)
        self._rm_tmp = weakref.finalize(self, shutil.rmtree, str(self._tmp), True)
        box: dict = {}
        t = threading.Thread(target=self._start, args=(box,), name="eosc-spark-start", daemon=True)
        t0 = time.monotonic()
        t.start()
        t.join(self.start_timeout_s)
        if t.is_alive():
            self._abandon()
            raise SparkEngineError(f"the Spark session on {self.master} did not start within "
                                   f"{self.start_timeout_s:g} s: {self._hint()}")
        self.spark = box.get("spark")
        if "error" in box:
            self.close()
            raise box["error"]
        self.start_s = round(time.monotonic() - t0, 2)
        return self

    def _hint(self) -> str:
        return {"local": "the machine may be overloaded (raise start_timeout_s)",
                "spark": "is it a Spark master's spark:// URL (not its web UI's port), with workers of free cores "
                         "and memory registered (its web UI)?",
                "yarn": "is HADOOP_CONF_DIR or YARN_CONF_DIR set and the ResourceManager up with free capacity?",
                "k8s": "can executor pods start (image, namespace, service account: spark.kubernetes.*)?",
                }[self.kind]

    def _start(self, box: dict) -> None:
        """In a thread (``start`` waits for it with a timeout): the session in box["spark"], or
        a SparkEngineError in box["error"]."""
        try:
            box["error"] = self._session(box) or self._check_executors(box["spark"])
            if box["error"] is None:
                del box["error"]
        except Exception as e:  # noqa: BLE001 - a start error of another kind: still one line
            box["error"] = SparkEngineError(f"Spark did not start on {self.master}: {_python_error(e)}")

    def _session(self, box: dict) -> SparkEngineError | None:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        active = SparkContext._active_spark_context
        if active is not None and active.master != self.master:
            # getOrCreate would hand back that session, whatever master this one names
            return SparkEngineError(f"a Spark session on {active.master} already runs in this process: "
                                    f"close it before starting one on {self.master}")
        self._owns = active is None  # a session someone else started is theirs to stop
        builder = SparkSession.builder.master(self.master).appName(self.app_name)
        for k, v in self.session_conf().items():
            builder = builder.config(k, v)
        before = os.environ.get("PYSPARK_PYTHON")
        os.environ["PYSPARK_PYTHON"] = self.python
        try:
            box["spark"] = builder.getOrCreate()
        except Exception as e:  # noqa: BLE001 - pyspark's errors carry Java's text
            return SparkEngineError(f"Spark did not start on {self.master}: {_python_error(e)}")
        finally:
            if before is None:
                os.environ.pop("PYSPARK_PYTHON", None)
            else:
                os.environ["PYSPARK_PYTHON"] = before
        return None

    def _check_executors(self, spark) -> SparkEngineError | None:
        """Ship the package, then the probe: one task per default slot (at most 64)."""
        sc = spark.sparkContext
        sc.addPyFile(str(package_zip(self._tmp)))
        self.workdir.mkdir(parents=True, exist_ok=True)
        marker = self.workdir / f".eosc-spark-probe-{uuid.uuid4().hex[:12]}"
        marker.write_text("probe\n")
        try:
            n = max(1, min(int(sc.defaultParallelism), 64))
            probes = sc.parallelize([str(marker)] * n, n).map(_make_probe()).collect()
        except Exception as e:  # noqa: BLE001
            return SparkEngineError(f"the probe task failed on {self.master}: {_python_error(e)}")
        finally:
            marker.unlink(missing_ok=True)
        self.probe = probes[0]
        for p in probes:
            py = f"Python {p['python'][0]}.{p['python'][1]} ({p['executable']}) on {p['host']}"
            if tuple(p["python"]) != sys.version_info[:2]:
                return SparkEngineError(f"executors run {py}, the driver Python {sys.version_info[0]}."
                                        f"{sys.version_info[1]}: give the executors the same minor version "
                                        "(PYSPARK_PYTHON or the engine's python)")
            if p.get("error"):
                return SparkEngineError(f"executors cannot import checkers ({p['error']}; {py}): install polars, "
                                        "numpy, scipy, pydantic and pyyaml in the executors' Python (or point "
                                        "PYSPARK_PYTHON at one that has them)")
            if not p["marker"]:
                return SparkEngineError(f"an executor on {p['host']} cannot see {self.workdir}: give a workdir on "
                                        "storage every executor mounts at the same path (--workdir)")
        return None

    def _abandon(self) -> None:
        """A start that timed out: kill the JVM this engine started (a stop could hang as the
        start did). The process cannot start another Spark session afterwards."""
        try:
            from pyspark import SparkContext

            gw = SparkContext._gateway
            proc = getattr(gw, "proc", None) if gw is not None else None
            if self._owns and proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        except Exception:  # noqa: BLE001 - best effort: the error that follows says what failed
            pass
        self._cleanup()

    def _cleanup(self) -> None:
        if self._rm_tmp is not None:
            self._rm_tmp()
        self._rm_tmp, self._tmp = None, None

    def close(self) -> None:
        """Stop the session (its JVM exits) unless it was running before ``start``, and remove
        the package zip. Idempotent."""
        spark, self.spark = self.spark, None
        if spark is not None and self._owns:
            try:
                spark.stop()
            except Exception:  # noqa: BLE001 - stopping a broken session: nothing more to do
                pass
        self._cleanup()

    def __enter__(self) -> "SparkEngine":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the engine ------------------------------------------------------------------------
    def __call__(self, fn: Callable, items: list) -> list:
        """``[fn(x) for x in items]``, each in its own Spark task, in item order. An exception
        ``fn`` raises is raised here as itself (first item's first); SparkEngineError when the
        job itself fails (an executor lost, say)."""
        items = list(items)
        if not items:
            return []
        self.start()
        sc = self.spark.sparkContext  # type: ignore[union-attr]
        try:
            out = sc.parallelize(items, len(items)).map(_Guarded(fn)).collect()
        except Exception as e:  # noqa: BLE001
            raise SparkEngineError(f"a Spark job of the check failed on {self.master}: {_python_error(e)}") from None
        for ok, res in out:
            if not ok:
                exc, tb = res
                exc.add_note(f"in a Spark executor:\n{tb}")
                raise exc
        return [res for _, res in out]


def spark_engine(master: str = "local[2]", conf: dict | None = None, workdir: str | Path | None = None,
                 start_timeout_s: float = 180.0, python: str | None = None) -> SparkEngine:
    """A started ``SparkEngine`` on ``master`` (see the class). ``workdir``: the folder the
    check's parts go in (the same as ``check_parts``'s; default the system's temporary folder),
    which the probe checks every executor sees. Raises SparkEngineError."""
    return SparkEngine(master, conf, workdir, start_timeout_s, python).start()


def check_spark(history: str | Path, master: str = "local[2]", conf: dict | None = None, n_parts: int = 8,
                cross: str = "whole", workdir: str | Path | None = None, engine: SparkEngine | None = None,
                **kw) -> Verdict:
    """``check_parts`` with a Spark engine: ``engine`` when given (left open), else one on
    ``master`` started and stopped here. ``kw``: ``check_parts``'s (meta, allowed, max_examples).
    Raises SparkEngineError, and what ``check_parts`` raises."""
    own = engine is None
    eng = engine or spark_engine(master, conf, workdir)
    try:
        return check_parts(history, n_parts=n_parts, cross=cross, workdir=workdir, engine=eng, **kw)
    finally:
        if own:
            eng.close()


def check_run_spark(run_dir: str | Path, master: str = "local[2]", conf: dict | None = None, n_parts: int = 8,
                    cross: str = "whole", workdir: str | Path | None = None, max_examples: int = 10,
                    engine: SparkEngine | None = None) -> Verdict:
    """``check_run_parts`` (a run folder) with a Spark engine, as ``check_spark``."""
    own = engine is None
    eng = engine or spark_engine(master, conf, workdir)
    try:
        return check_run_parts(run_dir, n_parts, cross, max_examples=max_examples, engine=eng, workdir=workdir)
    finally:
        if own:
            eng.close()
