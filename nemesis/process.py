"""Faults on Kafka node processes: crash-and-restart (SIGKILL/start), pause-and-resume
(SIGSTOP/SIGCONT, which looks like a long GC pause: sockets stay open, nothing answers)."""
from __future__ import annotations

from nemesis.core import NodeControl, Op


class KillNemesis:
    """``kill`` SIGKILLs ``value.node``; ``start`` starts it again. Teardown starts every dead node."""

    def __init__(self, cluster: NodeControl):
        self.cluster = cluster
        self.killed: set[int] = set()

    def fs(self) -> set[str]:
        return {"kill", "start"}

    def setup(self) -> None:
        pass

    def invoke(self, op: Op) -> Op:
        node_id = op["value"]["node"]
        node = self.cluster.node(node_id)
        if op["f"] == "kill":
            result = "killed" if node.kill() else "was not running"
            self.killed.add(node_id)
        else:
            result = f"started pid {node.start()}"
            self.killed.discard(node_id)
        return {"f": op["f"], "value": dict(op["value"], result=result)}

    def teardown(self) -> list[str]:
        problems = []
        for node_id in sorted(self.killed):
            try:
                self.cluster.node(node_id).start()
            except Exception as exc:
                problems.append(f"could not restart n{node_id}: {exc}")
        self.killed.clear()
        return problems


class PauseNemesis:
    """``pause`` SIGSTOPs ``value.node``; ``resume`` SIGCONTs it. Teardown resumes every paused node."""

    def __init__(self, cluster: NodeControl):
        self.cluster = cluster
        self.paused: set[int] = set()

    def fs(self) -> set[str]:
        return {"pause", "resume"}

    def setup(self) -> None:
        pass

    def invoke(self, op: Op) -> Op:
        node_id = op["value"]["node"]
        node = self.cluster.node(node_id)
        if op["f"] == "pause":
            ok = node.pause()
            self.paused.add(node_id)
            result = "paused" if ok else "was not running"
        else:
            result = "resumed" if node.resume() else "was not running"
            self.paused.discard(node_id)
        return {"f": op["f"], "value": dict(op["value"], result=result)}

    def teardown(self) -> list[str]:
        problems = []
        for node_id in sorted(self.paused):
            try:
                self.cluster.node(node_id).resume()
            except Exception as exc:
                problems.append(f"could not resume n{node_id}: {exc}")
        self.paused.clear()
        return problems


#: fault name in a scenario -> (nemesis class, start f, end f)
FAULTS = {"kill": (KillNemesis, "kill", "start"), "pause": (PauseNemesis, "pause", "resume")}
