"""The nemesis protocol and the narrow views of the run a nemesis may use.

A nemesis never imports the harness: it gets a NemesisContext whose members follow the
protocols below (every cluster backend of harness.cluster.service is a NodeControl: netns,
docker and external alike; harness.run.pool.Pool is a ClientControl, harness.cluster.agent.Agent an
AdminView). ``extra["network"]`` is the backend's test network for grudges (None on a backend
that cannot cut links) and ``extra["toxiproxy"]`` the proxies (None when the run has none).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol


class NodeProcess(Protocol):
    """What a nemesis may do to one Kafka node (harness.cluster.KafkaNode on netns, a container
    on docker, command templates on external). ``start`` returns the node's pid, or 0 when the
    backend has none of ours (external)."""

    def kill(self) -> bool: ...
    def start(self) -> int: ...
    def pause(self) -> bool: ...
    def resume(self) -> bool: ...
    def running(self) -> bool: ...


class NodeControl(Protocol):
    """What a nemesis may see of the cluster (a harness.cluster.service.Backend)."""

    def node_ids(self) -> list[int]: ...
    def node(self, node_id: int) -> NodeProcess: ...


class ClientControl(Protocol):
    """Client worker processes by name (harness.run.pool.Pool)."""

    def client_names(self) -> list[str]: ...
    def current_client(self, name: str) -> str: ...
    def kill_client(self, name: str) -> str: ...
    def restart_client(self, name: str) -> str: ...
    def pause_client(self, name: str) -> str: ...
    def stop_client(self, name: str) -> str: ...
    def resume_client(self, name: str) -> str: ...
    def replace_client(self, name: str, fresh_id: bool = False) -> str: ...
    def wait_next_ok(self, name: str, timeout: float) -> bool: ...


class AdminView(Protocol):
    """Kafka's admin API as the harness's agent offers it (harness.cluster.agent.Agent)."""

    def request(self, cmd: str, timeout: float = 10.0, **args) -> Any: ...


@dataclass
class NemesisContext:
    cluster: NodeControl
    clients: ClientControl | None = None
    admin: AdminView | None = None
    #: anything else a registered fault kind needs (network, toxiproxy...), by name
    extra: dict[str, Any] = field(default_factory=dict)


Op = dict[str, Any]  # {"f": "kill", "value": {...}}


class Nemesis(Protocol):
    def fs(self) -> set[str]: ...
    def setup(self) -> None: ...
    def invoke(self, op: Op) -> Op: ...
    def teardown(self) -> list[str]: ...


class PairedFault:
    """A fault begun by ``start_f`` and undone by ``end_f`` on the same target.

    Subclasses say how an op value resolves to a target (``resolve``, called when the fault
    begins) and what ``begin``/``end`` do to it; the completion adds ``result`` and the fields
    ``describe`` gives (e.g. the node a role resolved to). The target of each begun fault is
    remembered under its op value, so the end op undoes exactly that one, and ``teardown``
    undoes whatever is still begun.
    """

    start_f = end_f = ""

    def __init__(self, ctx: NemesisContext):
        self.ctx = ctx
        self.active: dict[str, Any] = {}  # op value (as JSON, without params) -> target
        #: the op's ``value.params`` (the fault spec's own parameters) while begin/end run
        self.params: dict[str, Any] = {}

    def fs(self) -> set[str]:
        return {self.start_f, self.end_f}

    def setup(self) -> None:
        pass

    def resolve(self, value: dict) -> Any:
        raise NotImplementedError

    def describe(self, target: Any) -> dict:
        return {}

    def begin(self, target: Any) -> str:
        raise NotImplementedError

    def end(self, target: Any) -> str:
        raise NotImplementedError

    def invoke(self, op: Op) -> Op:
        key = json.dumps({k: v for k, v in op["value"].items() if k != "params"}, sort_keys=True)
        self.params = dict(op["value"].get("params") or {})
        if op["f"] == self.start_f:
            target = self.resolve(op["value"])
            self.active[key] = target
            result = self.begin(target)
        else:
            target = self.active.pop(key, None)
            if target is None:
                target = self.resolve(op["value"])
            result = self.end(target)
        return {"f": op["f"], "value": dict(op["value"], **self.describe(target), result=result)}

    def teardown(self) -> list[str]:
        problems = []
        for key, target in list(self.active.items()):
            try:
                self.end(target)
            except Exception as exc:  # keep undoing the others; report this one
                problems.append(f"could not undo {self.start_f} of {key}: {exc}")
        self.active.clear()
        return problems


class Composite:
    """Routes each op to the nemesis that handles its ``f`` (Jepsen ``nemesis/combined.clj``)."""

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
