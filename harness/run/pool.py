"""Controller side of the client workers: start them, route their events into the history.

Each worker is an OS process in the client namespace (harness.workers). A reader thread per
worker turns its stdout lines into history events, mapping the worker's local instance number
(``proc``) to a history process number that is never reused: a replaced client instance, or a
restarted worker, is a new process (docs/history.md).
"""
from __future__ import annotations

import fnmatch
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from harness.run.history_writer import HistoryWriter
from harness.workers.configs import check_config
from harness.cluster.namespaces import Host
from harness.util import CONFIG_ENV
from harness.workloads.base import WorkerSpec


_spawns = itertools.count()


class ProcessNumbers:
    """Hands out history process numbers 0, 1, 2, ... to (worker, local instance) pairs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._map: dict[tuple[str, int], int] = {}
        self._next = itertools.count()

    def get(self, worker: str, local: int) -> int:
        with self._lock:
            key = (worker, local)
            if key not in self._map:
                self._map[key] = next(self._next)
            return self._map[key]


def _signal_container(container: str, sig: int) -> None:
    """Kill, pause or unpause a container the harness started (docker-py); a container already
    gone or stopped is left alone."""
    from docker.errors import DockerException

    from harness.cluster.docker.engine import engine_client

    client = engine_client()
    if client is None:
        return
    try:
        c = client.containers.get(container)
        if sig == signal.SIGKILL and c.status in ("running", "paused"):
            if c.status == "paused":
                c.unpause()
            c.kill()
        elif sig == signal.SIGSTOP and c.status == "running":
            c.pause()
        elif sig == signal.SIGCONT and c.status == "paused":
            c.unpause()
    except DockerException:
        pass  # gone already: nothing left to signal


class WorkerHandle:
    """One worker process; ``control`` collects its control messages in arrival order."""

    def __init__(self, name: str, role: str, cfg: dict[str, Any], host: Host, history: HistoryWriter,
                 numbers: ProcessNumbers, logdir: Path, on_ok: Callable[[str], None] | None = None):
        self.name, self.role, self.cfg = name, role, cfg
        self.on_ok = on_ok
        # a restarted worker reuses its name but must never reuse a history process number
        self.key = f"{name}#{next(_spawns)}"
        self.history, self.numbers = history, numbers
        self.control: list[dict] = []
        self.bad_lines = 0
        self._log = open(logdir / f"{name}.log", "ab")
        argv = [sys.executable, "-m", "harness.workers", role]
        if cfg.get("client") == "java":  # the Java client's worker of the role (harness.workers.java)
            from harness.workers.java import command as java_command

            argv, cfg = java_command(role, cfg)
        # the config goes in the environment, not argv: it may hold an external cluster's
        # sasl.password, and a process's command line is readable by every local user
        self.proc = subprocess.Popen(
            host.exec_prefix() + argv,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            start_new_session=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1", **{CONFIG_ENV: json.dumps(cfg)}),
        )
        self._reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                # a torn line from a SIGKILLed worker, or text on stdout (a JVM's thread dump
                # after dump_stacks): kept in the worker's log, never in the history
                self.bad_lines += 1
                try:
                    self._log.write(raw)
                    self._log.flush()
                except (ValueError, OSError):  # log closed
                    pass
                continue
            if "ctl" in msg:
                self.control.append(msg["ctl"])
                # an ok op the workload writes to the history only after the run (a Spark
                # driver's committed batch, harness.workers.spark_driver)
                if self.on_ok is not None and isinstance(msg["ctl"], dict) and "op_ok" in msg["ctl"]:
                    self.on_ok(self.name)
                continue
            local = msg.pop("proc", 0)
            msg["process"] = self.numbers.get(self.key, local)
            meta = msg.setdefault("meta", {})
            meta.setdefault("worker", self.name)
            self.history.append(msg)
            if self.on_ok is not None and msg.get("type") == "ok":
                self.on_ok(self.name)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: int) -> None:
        """Signal the worker's whole process group (it is a session leader), so that a child
        it started, such as a Spark driver JVM, is killed or paused with it; and the container
        it runs, if any (an app instance on the docker backend: ``{"ctl": {"container": id}}``):
        SIGKILL kills it, SIGSTOP pauses it, SIGCONT unpauses it."""
        container = next((c["container"] for c in reversed(self.control) if isinstance(c, dict) and "container" in c), None)
        if container and sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCONT):
            _signal_container(container, sig)
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def retire(self, timeout: float) -> bool:
        """Tell the worker a replacement takes over its transactional.id; True when it
        acknowledged within ``timeout`` s (a worker role without retirement never does)."""
        try:
            self.proc.stdin.write(b"retire\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(c.get("retired") for c in self.control):
                return True
            time.sleep(0.02)
        return False

    def request_stop(self) -> None:
        """Ask the worker to finish its current op and exit."""
        try:
            self.proc.stdin.write(b"stop\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def wait(self, timeout: float) -> bool:
        """Wait for exit and for the reader to drain stdout. False on timeout."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        self._reader.join(timeout=10)
        return True

    def dump_stacks(self, wait_s: float = 1.0) -> None:
        """Ask a stuck worker where it is stuck: SIGQUIT makes a Python worker print every
        thread's traceback (faulthandler, harness/workers/__main__.py) to stderr and a JVM its
        thread dump to stdout; both end up in the worker's log (``_read`` keeps stdout lines
        that are not JSON there); neither exits on it."""
        try:
            os.kill(self.proc.pid, signal.SIGQUIT)
        except ProcessLookupError:
            return
        time.sleep(wait_s)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._reader.join(timeout=10)

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except Exception:  # noqa: BLE001 - stdin of a worker that is gone (BrokenPipeError on
                pass  # flush): nothing is left to deliver, and close must go on to the log
        self._log.close()


class Pool:
    """All workers of a run; also the nemesis's ClientControl (nemesis.core).

    ``respawn(spec) -> spec`` gives the config of a restarted worker (the workload's: same
    transactional.id, fresh values); a restarted worker is a new history process.
    """

    def __init__(self, host: Host, history: HistoryWriter, logdir: Path,
                 respawn: Callable[[WorkerSpec], WorkerSpec] | None = None):
        self.host, self.history, self.logdir = host, history, logdir
        self.respawn = respawn or (lambda spec: spec)
        self.numbers = ProcessNumbers()
        self.workers: dict[str, WorkerHandle] = {}
        self.specs: dict[str, WorkerSpec] = {}
        self.paused: set[str] = set()
        #: zombie faults: a retired worker -> the worker that replaced it
        self.replacements: dict[str, str] = {}
        self._replace_seq = itertools.count(1)
        #: worker name -> time.monotonic() of its first ok op (``wait_first_ok``)
        self.first_ok: dict[str, float] = {}
        #: worker name -> ok ops so far, all its incarnations (``wait_next_ok``)
        self.ok_count: dict[str, int] = {}
        self._ok_seen = threading.Condition()

    def spawn(self, spec: WorkerSpec) -> WorkerHandle:
        """Start the worker ``spec`` describes; a name already used replaces the dead worker.
        Raises WorkerConfigError when ``spec.cfg`` does not fit its role's model
        (harness.workers.configs), before any process starts."""
        cfg = dict(spec.cfg, start_ns=self.history.start_ns)
        check_config(spec.role, cfg)
        old = self.workers.get(spec.name)
        if old is not None and old.alive():
            raise RuntimeError(f"worker {spec.name} is still running")
        if old is not None:
            old.close()
        handle = WorkerHandle(spec.name, spec.role, cfg, self.host, self.history, self.numbers, self.logdir,
                              on_ok=self._saw_ok)
        self.workers[spec.name] = handle
        self.specs[spec.name] = spec
        return handle

    def _saw_ok(self, name: str) -> None:
        with self._ok_seen:
            self.first_ok.setdefault(name, time.monotonic())
            self.ok_count[name] = self.ok_count.get(name, 0) + 1
            self._ok_seen.notify_all()

    def wait_next_ok(self, name: str, timeout: float) -> bool:
        """Block until worker ``name`` (any incarnation: a restarted one counts) completes an
        ok op after this call (in the history, or an ``op_ok`` control message: a Spark
        driver's committed batch); False after ``timeout`` seconds without one."""
        deadline = time.monotonic() + timeout
        with self._ok_seen:
            seen = self.ok_count.get(name, 0)
            while self.ok_count.get(name, 0) == seen:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._ok_seen.wait(remaining)
        return True

    def wait_first_ok(self, patterns: list[str], timeout: float, stop: threading.Event | None = None) -> list[str]:
        """Block until, for every glob in ``patterns`` (fnmatch, as nemesis client targets), a
        worker whose name matches has completed an ok op (in the history, or told by an
        ``op_ok`` control message); at most ``timeout`` s, less if
        ``stop`` is set. Returns the patterns still without an ok op ([] when all have one)."""
        deadline = time.monotonic() + timeout

        def missing() -> list[str]:
            return [p for p in patterns if not any(fnmatch.fnmatch(n, p) for n in list(self.first_ok))]

        with self._ok_seen:
            while missing() and not (stop is not None and stop.is_set()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # woken by each first ok op; the short cap notices ``stop``
                self._ok_seen.wait(min(remaining, 0.5))
        return missing()

    # -- ClientControl -------------------------------------------------------------------
    def client_names(self) -> list[str]:
        return sorted(self.workers)

    def current_client(self, name: str) -> str:
        """The newest incarnation of the client the schedule calls ``name``: ``name`` itself, or
        the last of its zombie replacements (``replace_client``: app-1 -> app-1.z2 -> ...). The
        schedule names the clients that exist when it is drawn; a fault on one of them must hit
        the worker doing its job now, not a retired zombie."""
        seen = {name}
        while name in self.replacements and self.replacements[name] not in seen:
            name = self.replacements[name]
            seen.add(name)
        return name

    def kill_client(self, name: str) -> str:
        w = self.workers[name]
        if not w.alive():
            return "was not running"
        w.kill()
        self.paused.discard(name)
        return f"killed pid {w.pid}"

    def restart_client(self, name: str) -> str:
        if name in self.replacements:  # restarting it would fence its replacement
            return f"retired (replaced by {self.replacements[name]}); not restarted"
        if self.workers[name].alive():
            return "still running"
        return f"restarted as pid {self.spawn(self.respawn(self.specs[name])).pid}"

    def replace_client(self, name: str, fresh_id: bool = False) -> str:
        """Zombie-maker: retire worker ``name`` (a ``retire`` line on its stdin, acknowledged
        within 5 s; see harness.workers.retire), SIGSTOP it, and start a replacement worker
        ``<name>.z<n>`` from the workload's respawn of its spec: the same transactional.id, or
        ``<id>.z<n>`` when ``fresh_id`` (a negative control). Returns the replacement's name.
        The old worker stays paused until ``resume_client(name)``; ``stop`` also stops the
        replacement. Raises KeyError for an unknown name."""
        w = self.workers[name]
        n = next(self._replace_seq)
        if w.alive():
            w.retire(timeout=5.0)
            w.signal(signal.SIGSTOP)
            self.paused.add(name)
        spec = self.respawn(self.specs[name])
        cfg = dict(spec.cfg)
        if fresh_id and "transactional_id" in cfg:
            cfg["transactional_id"] = f"{cfg['transactional_id']}.z{n}"
        new = WorkerSpec(f"{name}.z{n}", spec.role, cfg)
        self.spawn(new)
        self.replacements[name] = new.name
        return new.name

    def stop_client(self, name: str, timeout: float = 40.0) -> str:
        """Stop worker ``name`` gracefully (a ``stop`` line: an app instance SIGTERMs its
        application and waits for it); SIGKILL when it has not exited within ``timeout`` s.
        ``restart_client`` starts it again."""
        w = self.workers[name]
        if not w.alive():
            return "was not running"
        if name in self.paused:
            self.resume_client(name)
        w.request_stop()
        if w.wait(timeout):
            return f"stopped pid {w.pid} (exit {w.proc.returncode})"
        w.kill()
        return f"killed pid {w.pid}: it did not stop within {timeout:.0f} s"

    def pause_client(self, name: str) -> str:
        w = self.workers[name]
        if not w.alive():
            return "was not running"
        w.signal(signal.SIGSTOP)
        self.paused.add(name)
        return f"paused pid {w.pid}"

    def resume_client(self, name: str) -> str:
        w = self.workers[name]
        self.paused.discard(name)
        if not w.alive():
            return "was not running"
        w.signal(signal.SIGCONT)
        return f"resumed pid {w.pid}"

    def stop(self, names: list[str], timeout: float = 60.0) -> list[str]:
        """Stop the named workers and their replacements (``replace_client``) gracefully,
        SIGKILL what does not exit; return problems."""
        problems = []
        names = list(names)
        for n in names:
            if n in self.replacements and self.replacements[n] not in names:
                names.append(self.replacements[n])
        for n in names:
            if n in self.paused:
                self.resume_client(n)
            self.workers[n].request_stop()
        for n in names:
            w = self.workers[n]
            if not w.wait(timeout):
                w.dump_stacks()
                problems.append(f"worker {n} did not stop within {timeout:.0f} s; killed (where it "
                                f"was stuck: the thread stacks at the end of logs/{n}.log)")
                w.kill()
        return problems

    def shutdown(self) -> list[str]:
        problems = self.stop([n for n, w in self.workers.items() if w.alive()], timeout=30)
        for w in self.workers.values():
            w.close()
        return problems
