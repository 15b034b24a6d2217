"""One instance of the user's application under test (role ``app``; harness.workloads.app).

This worker is a thin supervisor: it starts the user's command as its child, in its own
process group, so that the nemesis's SIGKILL and SIGSTOP of the worker (harness.run.pool signals
the whole group) hit the application too; a killed instance is restarted by the pool as a new
worker (``kill-client`` / ``restart-client``). The application writes nothing to the history:
this worker records its lifecycle as ops (invoke, then ok):

* ``app-start``: value ``{"instance": i, "pid": pid, "start": n}`` (n counts starts of this worker);
* ``app-exit``: value ``{"instance": i, "pid": pid, "code": exit code (negative: signal),
  "by": "self" | "stop" | "restart"}``.

The child's stdout and stderr go to this worker's log (``logs/<name>.log``). On its own exit
the child is restarted per ``restart`` (always | on-failure | never) after one second; with
``done: exit`` an exit with code 0 means the batch app finished and it is not restarted. Each
start also sends ``{"ctl": {"app_started": n}}`` and each exit ``{"ctl": {"app_exit": {"code":
c, "by": ...}}}``: the batch wait names an unfinished instance's last exit code and whether it
runs. An instance whose first start fails (the command cannot be started, or it exits within
``startup_s`` of the run's first start of it) sends
``{"ctl": {"app_failed": ...}}`` with the reason and its log's last lines, and the run stops with
that error; one that is still running ``startup_s`` after its first start sends
``{"ctl": {"app_up": true}}`` (so the run waits on each instance's own start, however long the
worker itself took to start).

Any later start is a restart: this worker's own, a ``restart`` command, or a worker the pool
started again (``restarted`` in the config: kill-client's restart, a zombie's replacement). An
exit within ``startup_s`` of a restart is a crash like any other, restarted per ``restart``,
but after a backoff that doubles with each such exit in a row (1, 2, 4, 8 s, then every
``BACKOFF_MAX_S``): an application that can never start again does not spin, and one that
fails for a while after a restart (a static member whose previous instance the group has not
released yet: UNRELEASED_INSTANCE_ID under group.protocol=consumer) is back once it can be.

Stdin: ``stop`` (SIGTERM the app, SIGKILL after ``stop_grace_s``, exit), ``restart`` (SIGTERM,
wait, start again: a rolling deploy, nemesis ``stop-client``), ``retire`` (a zombie fault: the
application cannot be told, so this is acknowledged at once; the pool then pauses the group).
A retired instance is never restarted: once resumed, a zombie that exits (fenced by its
replacement, as it should be) stays down, as a replaced instance does under an orchestrator;
restarting it would set two live instances with the same ids fencing each other in turn.

Config: ``argv`` (placeholders already filled), ``env``, ``cwd``, ``work_dir``, ``instance``,
``restart``, ``done``, ``log`` (this worker's log path), ``client_properties`` (a path to write
bootstrap.servers and the cluster's security settings to), ``bootstrap``, ``security``; for a
container (docker backend): ``image`` (``argv`` is then the container's command, may be
empty), ``network``, ``labels``, ``run_id``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.util import CONFIG_ENV
from harness.workers.base import Worker
from harness.workers.configs import AppInstanceConfig


#: the longest wait (s) before starting again an application that keeps exiting within
#: ``startup_s`` of its restarts (module docstring)
BACKOFF_MAX_S = 10.0


def restart_delay(fast_exits: int) -> float:
    """Seconds to wait before the next start after ``fast_exits`` exits in a row, each within
    ``startup_s`` of its start (0: the last run lasted longer): 1, 1, 2, 4, 8, then ``BACKOFF_MAX_S``."""
    return min(BACKOFF_MAX_S, 2.0 ** max(0, fast_exits - 1))


def write_client_properties(path: str | Path, bootstrap: str, security: dict | None) -> Path:
    """A Java-style .properties file: ``bootstrap.servers`` and the cluster's client security
    settings (an external cluster's SASL/TLS); librdkafka reads the same keys."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"bootstrap.servers={bootstrap}"] + [f"{k}={v}" for k, v in sorted((security or {}).items())]
    p.write_text("\n".join(lines) + "\n")
    p.chmod(0o600)  # it may hold a sasl.password
    return p


def log_tail(path: str | None, n: int = 8) -> str:
    try:
        lines = Path(path).read_text(errors="replace").splitlines() if path else []
    except OSError:
        return ""
    return " | ".join(line.strip() for line in lines[-n:] if line.strip())[-800:]


class ChildError(RuntimeError):
    """The application could not be started; the message says why, in one line."""


class ProcessChild:
    """The application as a child process in this worker's process group (the pool's SIGKILL
    and SIGSTOP of the group reach it)."""

    def __init__(self, cfg: AppInstanceConfig, env: dict[str, str]):
        full = {k: v for k, v in os.environ.items() if k != CONFIG_ENV}  # it may hold a sasl.password
        full.update(env)
        try:
            self.proc = subprocess.Popen(cfg.argv or [], cwd=cfg.cwd or None, env=full,
                                         stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
                                         stderr=sys.stderr.fileno())
        except OSError as exc:
            what = "command not found" if isinstance(exc, FileNotFoundError) else "could not start"
            raise ChildError(f"{what}: {(cfg.argv or ['(no command)'])[0]} ({exc.strerror or exc})") from None
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def stop(self, grace_s: float, log) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log("app did not exit within the grace period after SIGTERM; SIGKILL")
            self.proc.kill()
            return self.proc.wait()


class ContainerChild:
    """The application as a container of ``cfg.image`` on the run's docker network (docker
    backend), labelled with the run so that teardown and ``eos-chaos cleanup`` remove it; its
    output is copied to this worker's log. The pool kills, pauses and resumes it with the
    worker (harness.run.pool.WorkerHandle.signal reads the ``container`` control message)."""

    def __init__(self, cfg: AppInstanceConfig, env: dict[str, str], n: int):
        import docker
        from docker.errors import DockerException, ImageNotFound

        try:
            self.client = docker.from_env(timeout=30)
            name = f"eosc-app-{cfg.run_id or 'run'}-{cfg.instance}-{os.getpid()}-{n}"
            self.c = self.client.containers.run(
                cfg.image, command=cfg.argv or None, environment=env, network=cfg.network,
                labels=cfg.labels or {}, name=name, detach=True,
                volumes={cfg.work_dir: {"bind": cfg.work_dir, "mode": "rw"}})
        except ImageNotFound:
            raise ChildError(f"image {cfg.image} not found: build or pull it first (no registry is reached)") from None
        except DockerException as exc:
            raise ChildError(f"could not start a container of {cfg.image}: {str(exc).splitlines()[0][:300]}") from None
        self.id, self.pid = self.c.id, self.c.short_id
        threading.Thread(target=self._copy_logs, daemon=True).start()

    def _copy_logs(self) -> None:
        try:
            for chunk in self.c.logs(stream=True, follow=True):
                sys.stderr.buffer.write(chunk)
                sys.stderr.flush()
        except Exception as exc:  # the container is gone (removed at teardown): its log ends here
            sys.stderr.write(f"(container log ended: {type(exc).__name__})\n")

    def poll(self) -> int | None:
        self.c.reload()
        if self.c.status in ("exited", "dead"):
            return int(self.c.attrs["State"]["ExitCode"])
        return None

    def stop(self, grace_s: float, log) -> int:
        self.c.stop(timeout=int(grace_s))  # SIGTERM, SIGKILL after the grace period
        return int(self.c.wait(timeout=grace_s + 30)["StatusCode"])


class AppInstanceWorker(Worker):
    Config = AppInstanceConfig

    def __init__(self, cfg: dict):
        self.commands: list[str] = []
        self._cmd_lock = threading.Lock()
        #: replaced by a zombie fault's replacement: never restarted (module docstring); set
        #: before the base class starts the stdin reader, which may read ``retire`` at once
        self.retired = False
        super().__init__(cfg)
        self.child: ProcessChild | ContainerChild | None = None
        self.starts = 0

    def _watch_stdin(self) -> None:
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "retire":
                self.retired = True
                self.control(retired=True)
            elif cmd in ("stop", "restart"):
                with self._cmd_lock:
                    self.commands.append(cmd)
                if cmd == "stop":
                    self.stopping.set()
        self.stopping.set()  # stdin closed: the controller is gone

    def _next_command(self) -> str | None:
        with self._cmd_lock:
            return self.commands.pop(0) if self.commands else None

    def start(self) -> bool:
        cfg = self.cfg
        Path(self.cfg.work_dir).mkdir(parents=True, exist_ok=True)
        env = {k: str(v) for k, v in (self.cfg.env or {}).items()}
        self.emit("invoke", "app-start", {"instance": self.cfg.instance})
        try:
            self.child = (ContainerChild(cfg, env, self.starts) if self.cfg.image else ProcessChild(cfg, env))
        except ChildError as exc:
            self.emit("fail", "app-start", {"instance": self.cfg.instance}, error=["ChildError", str(exc)])
            self.control(app_failed={"reason": str(exc), "log": log_tail(self.cfg.log)})
            return False
        if isinstance(self.child, ContainerChild):  # the pool signals the container too (kill, pause)
            self.control(container=self.child.id)
        self.starts += 1
        self.started_at = time.monotonic()
        self.emit("ok", "app-start", {"instance": self.cfg.instance, "pid": self.child.pid, "start": self.starts})
        self.control(app_started=self.starts)
        return True

    def _exited(self, code: int, by: str) -> None:
        self.emit("invoke", "app-exit", {"instance": self.cfg.instance})
        self.emit("ok", "app-exit", {"instance": self.cfg.instance, "pid": self.child.pid, "code": code, "by": by})
        self.control(app_exit={"code": code, "by": by})
        self.log(f"app exited with code {code} ({by})")

    def terminate(self, by: str) -> None:
        """SIGTERM the application, SIGKILL it after the grace period; record its exit."""
        if self.child is None or self.child.poll() is not None:
            return
        code = self.child.stop(float(self.cfg.stop_grace_s), self.log)
        self._exited(code, by)

    def run(self) -> None:
        write_client_properties(self.cfg.client_properties, self.cfg.bootstrap, self.cfg.security)
        if not self.start():
            return
        # only the run's first start of this instance can end the run (check_started); a
        # worker the pool started again is a restart (module docstring)
        first_run, up = not self.cfg.restarted, False
        fast_exits = 0  # exits in a row within startup_s of a restart: the backoff's count
        restart, done = self.cfg.restart, self.cfg.done
        try:
            while not self.stopping.is_set():
                cmd = self._next_command()
                if cmd == "restart":
                    self.terminate("restart")
                    first_run = False
                    if not self.start():
                        return
                    continue
                code = self.child.poll() if self.child is not None else None
                if code is None:
                    if first_run and not up and time.monotonic() - self.started_at >= float(self.cfg.startup_s):
                        up = True  # past the startup window: the run need not wait on this instance
                        self.control(app_up=True)
                    time.sleep(0.1)
                    continue
                self._exited(code, "self")
                ran_s = time.monotonic() - self.started_at
                if first_run and ran_s < float(self.cfg.startup_s) and (code != 0 or done != "exit"):
                    self.control(app_failed={"reason": f"the application exited with code {code} "
                                                       f"{ran_s:.1f} s after it started",
                                             "log": log_tail(self.cfg.log)})
                    return
                if done == "exit" and code == 0:
                    self.control(app_done=True)
                    self.child = None
                    self.stopping.wait()
                    break
                if not self.retired and (restart == "always" or (restart == "on-failure" and code != 0)):
                    first_run = False
                    fast_exits = fast_exits + 1 if ran_s < float(self.cfg.startup_s) else 0
                    delay = restart_delay(fast_exits) if fast_exits else 1.0
                    if fast_exits:
                        self.log(f"app exited {ran_s:.1f} s after its start (within startup_s, {fast_exits} in a "
                                 f"row): starting it again in {delay:g} s")
                    if self.stopping.wait(delay):  # stopped during the backoff: nothing to start
                        break
                    if not self.start():
                        return
                else:
                    if self.retired:
                        self.log("retired (a zombie fault replaced this instance): not restarted")
                    self.child = None
                    self.stopping.wait()
                    break
        finally:
            self.terminate("stop")
        self.control(done=True)
