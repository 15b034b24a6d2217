"""Faults on Kafka node processes: crash-and-restart (SIGKILL, then start) and pause-and-resume
(SIGSTOP/SIGCONT: like a long GC pause, sockets stay open and nothing answers).

The start op's value names the node (``{"node": 2}``) or a role resolved now through the
admin API (``{"role": "coordinator", "transactional_id": "eosc-txn-0"}``, ``{"role":
"leader", "key": "t0/1"}``, ``{"role": "controller"}``); the completion records the node
that was hit. The end op undoes it on the same node.
"""
from __future__ import annotations

import json

from nemesis.core import NemesisContext, Op
from nemesis.targets import resolve_target


class NodeFault:
    start_f = end_f = ""

    def __init__(self, ctx: NemesisContext):
        self.ctx = ctx
        self.active: dict[str, int] = {}  # target (as JSON) -> node hit by the start op

    def fs(self) -> set[str]:
        return {self.start_f, self.end_f}

    def setup(self) -> None:
        pass

    def _resolve(self, target: dict) -> int:
        return resolve_target(self.ctx.admin, target)

    def invoke(self, op: Op) -> Op:
        target = {k: v for k, v in op["value"].items() if k != "params"}
        key = json.dumps(target, sort_keys=True)
        if op["f"] == self.start_f:
            node_id = self._resolve(target)
            self.active[key] = node_id
            result = self.begin(node_id)
        else:
            node_id = self.active.pop(key, None)
            if node_id is None:
                node_id = self._resolve(target)
            result = self.end(node_id)
        return {"f": op["f"], "value": dict(op["value"], node=node_id, result=result)}

    def begin(self, node_id: int) -> str:
        raise NotImplementedError

    def end(self, node_id: int) -> str:
        raise NotImplementedError

    def teardown(self) -> list[str]:
        problems = []
        for node_id in sorted(set(self.active.values())):
            try:
                self.end(node_id)
            except Exception as exc:
                problems.append(f"could not undo {self.start_f} of n{node_id}: {exc}")
        self.active.clear()
        return problems


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
