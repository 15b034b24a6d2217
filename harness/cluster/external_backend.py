"""The ``external`` backend: a Kafka cluster the harness did not start (docs/backends.md).

Clients, the admin agent and the drain run in the controller's own network namespace
(harness.cluster.namespaces.LOCAL): a cluster of one's own is reached the way the machine reaches it, with
the security settings of ``cluster.external.client`` passed to every client. Node faults go
through the scenario's command templates only (``cluster.external.commands``: kill, start,
pause, resume, with ``{id}`` ``{host}`` ``{name}`` filled from ``cluster.external.nodes``), run
with ``sh -c`` on this machine; their output goes to ``logs/commands.log``. Without templates
the scenario may only ask for client faults (checked at load, harness.run.scenario.external_faults).

Nothing else on the cluster is touched: the service creates the run's topics, refuses topics
that exist already, and deletes them when the run ends (ClusterService ``delete_topics``);
nodes this backend killed or paused are started or resumed again before it lets go.
"""
from __future__ import annotations

import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from harness.cluster import namespaces as net
from harness.cluster.service import heal_nodes


class NodeCommandError(RuntimeError):
    """A node-control command failed or timed out; the message holds the command and its output."""


class CommandNode:
    """One external node, controlled through the command templates (a nemesis NodeProcess)."""

    def __init__(self, node_id: int, host: str, name: str, commands: dict[str, str], timeout: float,
                 log_path: Path, lock: threading.Lock):
        self.node_id, self.host, self.name = node_id, host, name
        self.commands, self.timeout, self.log_path, self._lock = commands, timeout, log_path, lock
        self.killed = False
        self.paused = False

    def command(self, what: str) -> str:
        """The ``what`` template with this node's placeholders filled (shell-quoted)."""
        return self.commands[what].format(id=self.node_id, host=shlex.quote(self.host), name=shlex.quote(self.name))

    def _run(self, what: str) -> str:
        if what not in self.commands:
            raise NodeCommandError(f"no {what} command template for the external backend (cluster.external.commands.{what})")
        cmd = self.command(what)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=self.timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            self._log(cmd, None, f"timed out after {self.timeout:.0f} s", 0.0)
            raise NodeCommandError(f"`{cmd}` timed out after {self.timeout:.0f} s") from exc
        out = (proc.stdout + proc.stderr).strip()
        self._log(cmd, proc.returncode, out, time.monotonic() - t0)
        if proc.returncode != 0:
            raise NodeCommandError(f"`{cmd}` exited {proc.returncode}: {out[-500:]}")
        return out

    def _log(self, cmd: str, rc: int | None, out: str, took: float) -> None:
        with self._lock, open(self.log_path, "a") as f:
            f.write(f"[{time.strftime('%H:%M:%S')}] n{self.node_id} $ {cmd}\n  exit {rc} after {took:.2f} s"
                    + (f"\n  {out}" if out else "") + "\n")

    def kill(self) -> bool:
        self._run("kill")
        self.killed, self.paused = True, False
        return True

    def start(self) -> int:
        """Run the start template; returns 0 (an external node has no pid of ours)."""
        self._run("start")
        self.killed = False
        return 0

    def pause(self) -> bool:
        self._run("pause")
        self.paused = True
        return True

    def resume(self) -> bool:
        self._run("resume")
        self.paused = False
        return True

    def running(self) -> bool:
        return not self.killed


class ExternalBackend:
    """A cluster at ``spec.bootstrap`` (harness.run.scenario.ExternalSpec); ``nodes`` is the node
    count to wait for when ``spec.nodes`` does not list them."""

    name = "external"
    network = None  # no grudges, no proxies: see the module docstring

    def __init__(self, spec, logdir: Path, nodes: int = 3):
        self.spec = spec
        self.logdir = Path(logdir)
        self.client_config: dict[str, str] = dict(spec.client)
        lock = threading.Lock()
        listed = spec.nodes or []
        self.nodes: dict[int, CommandNode] = {
            n.id: CommandNode(n.id, n.host, n.name or f"n{n.id}", spec.commands, spec.command_timeout_s,
                              self.logdir / "commands.log", lock)
            for n in listed
        }
        self._count = len(listed) or nodes

    def clean_leftovers(self) -> list[str]:
        return []  # nothing of ours lives on someone else's cluster between runs

    def prepare(self) -> None:
        self.logdir.mkdir(parents=True, exist_ok=True)

    def start(self, client_listeners: dict[int, str] | None) -> None:
        if client_listeners:
            raise ValueError("the external backend cannot advertise proxies (no toxiproxy links)")
        self.logdir.mkdir(parents=True, exist_ok=True)

    @property
    def client_host(self) -> net.Host:
        return net.LOCAL

    @property
    def bootstrap(self) -> str:
        return self.spec.bootstrap

    def node_ids(self) -> list[int]:
        return sorted(self.nodes) or list(range(1, self._count + 1))

    def node(self, node_id: int) -> CommandNode:
        if node_id not in self.nodes:
            raise KeyError(f"node {node_id} is not in cluster.external.nodes ({sorted(self.nodes)})")
        return self.nodes[node_id]

    def addresses(self) -> dict[int, str]:
        if self.nodes:
            return {i: n.host or n.name for i, n in self.nodes.items()}
        return {i + 1: a for i, a in enumerate(self.spec.bootstrap.split(","))}

    def dead_nodes(self) -> list[int]:
        return []

    def heal(self) -> list[str]:
        return heal_nodes(self.nodes)  # running() is "not killed by this run"

    def stop(self) -> list[str]:
        """Leave the cluster as it was found: start or resume what this run killed or paused."""
        problems = []
        for i, n in sorted(self.nodes.items()):
            for flag, what in (("paused", "resume"), ("killed", "start")):
                if getattr(n, flag):
                    try:
                        getattr(n, what)()
                    except Exception as exc:  # report, keep going
                        problems.append(f"could not {what} external node n{i}: {exc}")
        return problems

    def clean(self) -> list[str]:
        return []

    def meta(self) -> dict[str, Any]:
        return {"bootstrap": self.spec.bootstrap,
                "node_commands": sorted(self.spec.commands),
                "client_security": sorted(self.spec.client)}
