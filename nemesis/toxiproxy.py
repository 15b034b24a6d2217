"""Client-link faults: toxics on the toxiproxy proxies between the clients and the brokers.

The harness runs one toxiproxy proxy per broker and makes every client connection go through
it (harness.cluster.toxiproxy_server, docs/toxiproxy.md). A ``toxic`` op puts one toxic on the proxy of one
broker (or of every broker), ``untoxic`` takes it off. The nemesis reaches the proxies only
through ``ctx.extra["toxiproxy"]`` (a LinkControl).

Scenario form (extra fields of a FaultSpec become the op's ``value.params``)::

    - {fault: toxic, type: latency, latency_ms: 800, jitter_ms: 400}        # one random broker
    - {fault: toxic, type: timeout, timeout_ms: 0, brokers: all}            # every broker
    - {fault: toxic, type: reset_peer, timeout_ms: 500, target: coordinator,
       transactional_id: eosc-txn-0, stream: upstream}

Types, with our parameter names, toxiproxy's attribute and unit (toxiproxy README, "Toxics"):

| type | parameters (default) | toxiproxy |
| --- | --- | --- |
| latency | latency_ms (500), jitter_ms (200) | latency, jitter: ms added to every chunk of data |
| bandwidth | rate_kbytes_s (16) | rate: KB/s (1 KB = 1000 bytes) |
| timeout | timeout_ms (0) | timeout: no data passes; the connection is closed after timeout ms, never when 0 |
| reset_peer | timeout_ms (1000) | timeout: the connection is reset (TCP RST) timeout ms after the toxic sees it |
| slicer | average_size (64), size_variation (32), delay_us (200) | bytes, bytes, microseconds between slices |
| slow_close | delay_ms (2000) | delay: ms before a close is passed on |
| limit_data | bytes (4096) | bytes: the connection is closed after that many bytes |
| down | none | the proxy is disabled: its connections are closed and it stops listening |

Common parameters: ``stream`` = downstream (broker -> client, default), upstream (client ->
broker) or both (one toxic per direction); ``toxicity`` = share of connections affected, 0..1
(default 1); ``brokers`` = one (default; the node named by ``target``, random at schedule time
or a role resolved when the toxic is added) or all.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Protocol

from nemesis.core import NemesisContext, Op
from nemesis.targets import SPEC_KEYS, choose_node_target, resolve_target

#: type -> {our parameter: (toxiproxy attribute, default)}
TOXICS: dict[str, dict[str, tuple[str, int]]] = {
    "latency": {"latency_ms": ("latency", 500), "jitter_ms": ("jitter", 200)},
    "bandwidth": {"rate_kbytes_s": ("rate", 16)},
    "timeout": {"timeout_ms": ("timeout", 0)},
    "reset_peer": {"timeout_ms": ("timeout", 1000)},
    "slicer": {"average_size": ("average_size", 64), "size_variation": ("size_variation", 32),
               "delay_us": ("delay", 200)},
    "slow_close": {"delay_ms": ("delay", 2000)},
    "limit_data": {"bytes": ("bytes", 4096)},
    "down": {},
}
STREAMS = ("downstream", "upstream", "both")
COMMON = {"type", "stream", "toxicity", "brokers"}


@dataclass(frozen=True)
class ToxicPlan:
    """What one ``toxic`` op does to each targeted proxy: add ``toxics`` (toxiproxy's JSON
    bodies, names without the proxy), or, for ``down``, disable the proxy (``toxics`` empty)."""

    type: str
    toxics: tuple[dict, ...]
    all_brokers: bool = False

    @property
    def disables(self) -> bool:
        return self.type == "down"


def toxic_plan(params: dict[str, Any]) -> ToxicPlan:
    """Translate a scenario's toxic parameters (module docstring) into toxiproxy toxics.

    ``{"type": "latency", "latency_ms": 800, "stream": "both"}`` ->
    toxics ``({"name": "eosc-latency-downstream", "type": "latency", "stream": "downstream",
    "toxicity": 1.0, "attributes": {"latency": 800, "jitter": 200}}, {... "upstream" ...})``.
    Raises ValueError naming the problem: unknown type, unknown parameter, a negative or
    non-integer value, toxicity outside 0..1, unknown stream or brokers.
    """
    params = dict(params or {})
    kind = params.get("type")
    if not isinstance(kind, str) or kind not in TOXICS:
        raise ValueError(f"toxic type must be one of {sorted(TOXICS)}, got {kind!r}")
    table = TOXICS[kind]
    unknown = sorted(set(params) - COMMON - set(table))
    if unknown:
        raise ValueError(f"toxic {kind} takes {sorted(table) + sorted(COMMON)}; unknown: {unknown}")
    brokers = params.get("brokers", "one")
    if brokers not in ("one", "all"):
        raise ValueError(f"brokers must be one or all, got {brokers!r}")
    stream = params.get("stream", "downstream")
    if not isinstance(stream, str) or stream not in STREAMS:
        raise ValueError(f"stream must be one of {list(STREAMS)}, got {stream!r}")
    toxicity = params.get("toxicity", 1.0)
    if isinstance(toxicity, bool) or not isinstance(toxicity, (int, float)) or not 0 <= toxicity <= 1:
        raise ValueError(f"toxicity must be a number in 0..1, got {toxicity!r}")
    attributes = {}
    for ours, (theirs, default) in table.items():
        value = params.get(ours, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{ours} must be a non-negative integer, got {value!r}")
        attributes[theirs] = value
    if kind == "down":
        return ToxicPlan(kind, (), brokers == "all")
    streams = ("downstream", "upstream") if stream == "both" else (stream,)
    toxics = tuple({"name": f"eosc-{kind}-{s}", "type": kind, "stream": s, "toxicity": float(toxicity),
                    "attributes": dict(attributes)} for s in streams)
    return ToxicPlan(kind, toxics, brokers == "all")


def choose_toxic_target(rng: random.Random, spec: dict, nodes: list[int], clients: list[str]) -> dict:
    """Schedule-time target of a ``toxic`` fault (nemesis.registry Chooser). Validates the
    parameters now, so a typo fails the schedule rather than the fault. Returns ``{"nodes":
    "all"}``, or as a node fault would: ``{"node": n}`` (random) or the role to resolve when
    the toxic is added (``{"role": "coordinator", "transactional_id": ...}``)."""
    plan = toxic_plan({k: v for k, v in spec.items() if k not in SPEC_KEYS})
    if plan.all_brokers:
        return {"nodes": "all"}
    return choose_node_target(rng, spec, nodes, clients)


class LinkControl(Protocol):
    """The proxies as the harness offers them (harness.cluster.toxiproxy_server.ClientProxies)."""

    node_ids: list[int]

    def proxy_for(self, node_id: int) -> str: ...
    def add_toxic(self, proxy: str, toxic: dict) -> dict: ...
    def remove_toxic(self, proxy: str, name: str) -> bool: ...
    def set_enabled(self, proxy: str, enabled: bool) -> dict: ...
    def reset(self) -> None: ...
    def state(self, timeout: float = 10.0) -> dict[str, dict]: ...


class ToxicNemesis:
    """``toxic`` adds the op's toxic to the targeted brokers' proxies (or disables them for
    ``down``); ``untoxic`` removes exactly what the matching ``toxic`` added. The completion
    adds ``brokers`` (node ids hit), ``proxies``, ``toxics`` (each as the server holds it) and
    ``result``; an untoxic's completion adds ``result`` (and ``missing``, toxics already gone). Teardown undoes everything
    still active, resets the server (every proxy enabled, no toxic) and reports any proxy that
    is still disabled or toxic afterwards."""

    start_f, end_f = "toxic", "untoxic"

    def __init__(self, ctx: NemesisContext):
        links = ctx.extra.get("toxiproxy")
        if links is None:
            raise ValueError("the toxic fault needs the harness's toxiproxy proxies (ctx.extra['toxiproxy']); "
                             "the runner starts them when a scenario has a toxic fault")
        self.ctx = ctx
        self.links: LinkControl = links
        #: target (as JSON) -> what the toxic op did: [(proxy, toxic name or None for down)]
        self.active: dict[str, list[tuple[str, str | None]]] = {}

    def fs(self) -> set[str]:
        return {self.start_f, self.end_f}

    def setup(self) -> None:
        pass

    def _nodes(self, target: dict) -> list[int]:
        if target.get("nodes") == "all":
            return list(self.links.node_ids)
        return [resolve_target(self.ctx.admin, target)]

    def invoke(self, op: Op) -> Op:
        value = op["value"]
        target = {k: v for k, v in value.items() if k != "params"}
        key = json.dumps(target, sort_keys=True)
        if op["f"] == self.start_f:
            return {"f": op["f"], "value": dict(value, **self._begin(key, target, value.get("params", {})))}
        done = self._end(self.active.pop(key, None) or self._pop_any())
        return {"f": op["f"], "value": dict(value, **done)}

    def _begin(self, key: str, target: dict, params: dict) -> dict:
        plan = toxic_plan(params)
        nodes = self._nodes(target)
        applied: list[tuple[str, str | None]] = []
        self.active[key] = applied  # partial progress is undone too if a later proxy fails
        held = []
        for node in nodes:
            proxy = self.links.proxy_for(node)
            if plan.disables:
                self.links.set_enabled(proxy, False)
                applied.append((proxy, None))
                continue
            for toxic in plan.toxics:
                held.append(dict(self.links.add_toxic(proxy, toxic), proxy=proxy))
                applied.append((proxy, toxic["name"]))
        proxies = sorted({p for p, _ in applied})
        what = "disabled" if plan.disables else f"{plan.type} ({', '.join(t['stream'] for t in plan.toxics)}) on"
        return {"brokers": nodes, "proxies": proxies, "toxics": held, "result": f"{what} {','.join(proxies)}"}

    def _pop_any(self) -> list[tuple[str, str | None]]:
        # an untoxic whose toxic is not on record (target resolved differently): undo them all
        everything = [a for applied in self.active.values() for a in applied]
        self.active.clear()
        return everything

    def _end(self, applied: list[tuple[str, str | None]]) -> dict:
        undone, missing = [], []
        for proxy, name in applied:
            if name is None:
                self.links.set_enabled(proxy, True)
                undone.append(f"enabled {proxy}")
            elif self.links.remove_toxic(proxy, name):
                undone.append(f"removed {name} from {proxy}")
            else:
                missing.append(f"{name} was not on {proxy}")
        out: dict[str, Any] = {"result": "; ".join(undone) or "nothing to undo"}
        if missing:
            out["missing"] = missing
        return out

    def teardown(self) -> list[str]:
        problems = []
        for key, applied in list(self.active.items()):
            try:
                self._end(applied)
            except Exception as exc:  # reset below is the second line; still say what failed
                problems.append(f"could not undo toxic {key}: {type(exc).__name__}: {exc}")
        self.active.clear()
        try:
            self.links.reset()
            state = self.links.state()
        except Exception as exc:
            return problems + [f"could not reset toxiproxy: {type(exc).__name__}: {exc}"]
        for name, proxy in sorted(state.items()):
            if not proxy["enabled"]:
                problems.append(f"toxiproxy proxy {name} is still disabled after reset")
            if proxy["toxics"]:
                problems.append(f"toxiproxy proxy {name} still has toxics {[t['name'] for t in proxy['toxics']]}")
        return problems
