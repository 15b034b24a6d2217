"""The nemesis protocol and the narrow view of the cluster a nemesis may use."""
from __future__ import annotations

from typing import Any, Protocol


class NodeProcess(Protocol):
    """What a nemesis may do to one Kafka node's process (harness.cluster.KafkaNode)."""

    def kill(self) -> bool: ...
    def start(self) -> int: ...
    def pause(self) -> bool: ...
    def resume(self) -> bool: ...
    def running(self) -> bool: ...


class NodeControl(Protocol):
    """What a nemesis may see of the cluster (harness.cluster.Cluster)."""

    def node_ids(self) -> list[int]: ...
    def node(self, node_id: int) -> NodeProcess: ...


Op = dict[str, Any]  # {"f": "kill", "value": {...}}


class Nemesis(Protocol):
    def fs(self) -> set[str]: ...
    def setup(self) -> None: ...
    def invoke(self, op: Op) -> Op: ...
    def teardown(self) -> list[str]: ...


class Composite:
    """Routes each op to the nemesis that handles its ``f`` (Jepsen ``nemesis/compose``)."""

    def __init__(self, members: list[Nemesis]):
        self.members = members
        self.route: dict[str, Nemesis] = {}
        for m in members:
            for f in m.fs():
                if f in self.route:
                    raise ValueError(f"two nemeses handle f={f!r}")
                self.route[f] = m

    def fs(self) -> set[str]:
        return set(self.route)

    def setup(self) -> None:
        for m in self.members:
            m.setup()

    def invoke(self, op: Op) -> Op:
        if op["f"] not in self.route:
            raise ValueError(f"no nemesis handles f={op['f']!r}; known: {sorted(self.route)}")
        return self.route[op["f"]].invoke(op)

    def teardown(self) -> list[str]:
        problems: list[str] = []
        for m in self.members:
            try:
                problems += m.teardown()
            except Exception as exc:  # one failed heal must not stop the others; report it
                problems.append(f"{type(m).__name__} teardown failed: {exc}")
        return problems
