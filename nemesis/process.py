"""Faults on Kafka node processes: crash-and-restart (SIGKILL, then start) and pause-and-resume
(SIGSTOP/SIGCONT: like a long GC pause, sockets stay open and nothing answers).

The start op's value names the node (``{"node": 2}``) or a role resolved now through the
admin API (``{"role": "coordinator", "transactional_id": "eosc-txn-0"}``, ``{"role":
"leader", "key": "t0/1"}``, ``{"role": "controller"}``); the completion records the node
that was hit. The end op undoes it on the same node.
"""
from __future__ import annotations

from nemesis.core import PairedFault
from nemesis.targets import resolve_target


class NodeFault(PairedFault):
    def resolve(self, value: dict) -> int:
        return resolve_target(self.ctx.admin, value)

    def describe(self, node_id: int) -> dict:
        return {"node": node_id}


class KillNemesis(NodeFault):
    """``kill`` SIGKILLs a node; ``start`` starts it again. Teardown starts every killed node."""

    start_f, end_f = "kill", "start"

    def begin(self, node_id: int) -> str:
        return "killed" if self.ctx.cluster.node(node_id).kill() else "was not running"

    def end(self, node_id: int) -> str:
        return f"started pid {self.ctx.cluster.node(node_id).start()}"


class PauseNemesis(NodeFault):
    """``pause`` SIGSTOPs a node; ``resume`` SIGCONTs it. Teardown resumes every paused node."""

    start_f, end_f = "pause", "resume"

    def begin(self, node_id: int) -> str:
        return "paused" if self.ctx.cluster.node(node_id).pause() else "was not running"

    def end(self, node_id: int) -> str:
        return "resumed" if self.ctx.cluster.node(node_id).resume() else "was not running"
