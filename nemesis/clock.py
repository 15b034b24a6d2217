"""Clock skew of one broker (Jepsen's clock nemesis, bump shape), without touching the host's
clock: every broker JVM runs under libfaketime with a control file of its own
(harness.cluster.kafka.KafkaNode.clock_env), and ``clock-skew`` writes an offset into it; the
JVM picks it up within a second, without a restart. ``clock-reset`` writes +0 again.

Only the wall clock moves (CLOCK_REALTIME: System.currentTimeMillis, which Kafka uses for
record timestamps, transaction start times and timeouts, producer-id expiration, log
retention); the monotonic clock (nanoTime, sleeps, waits, the Raft and session timers built on
it) is left alone (FAKETIME_DONT_FAKE_MONOTONIC=1).

Parameter ``offset_s``: seconds, a number or ``[low, high]`` (drawn when the schedule is made,
so the schedule names it); default ``[-300, 300]``. The op value carries ``offset_s``.
"""
from __future__ import annotations

import random

from nemesis.process import NodeFault
from nemesis.targets import choose_node_target, only_params

DEFAULT_OFFSET_S = (-300.0, 300.0)
#: Kafka rejects records more than an hour ahead (message.timestamp.after.max.ms, 4.0+) and the
#: JVM's timers are not built for days: a skew is kept within a day
MAX_OFFSET_S = 86400.0


def offset_range(params: dict) -> tuple[float, float]:
    """``offset_s`` as (low, high). Raises ValueError."""
    v = params.get("offset_s", list(DEFAULT_OFFSET_S))
    if isinstance(v, bool):
        raise ValueError(f"offset_s must be seconds or [low, high], got {v!r}")
    lo, hi = (v, v) if isinstance(v, (int, float)) else tuple(v) if isinstance(v, (list, tuple)) and len(v) == 2 else (None, None)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (lo, hi)) or lo > hi:
        raise ValueError(f"offset_s must be seconds or [low, high] with low <= high, got {v!r}")
    if max(abs(lo), abs(hi)) > MAX_OFFSET_S:
        raise ValueError(f"offset_s must stay within +-{MAX_OFFSET_S:g} s, got {v!r}")
    return float(lo), float(hi)


def clock_params(name: str, params: dict) -> None:

    only_params(name, params, frozenset({"offset_s"}))
    offset_range(params)


def choose_clock_target(rng: random.Random, spec: dict, nodes: list[int], clients: list[str]) -> dict:
    value = choose_node_target(rng, spec, nodes, clients)
    lo, hi = offset_range(spec)
    value["offset_s"] = round(rng.uniform(lo, hi), 1)
    return value


class ClockNemesis(NodeFault):
    """``clock-skew`` sets a node's wall-clock offset; ``clock-reset`` sets it back to 0.
    Teardown resets every skewed node."""

    start_f, end_f = "clock-skew", "clock-reset"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._offset = 0.0

    def resolve(self, value: dict) -> int:
        self._offset = float(value.get("offset_s", 0.0))
        return super().resolve(value)

    def _node(self, node_id: int):
        node = self.ctx.cluster.node(node_id)
        if not hasattr(node, "set_clock_offset"):
            raise RuntimeError(f"node {node_id} does not run under libfaketime (backend "
                               f"{getattr(self.ctx.cluster, 'name', '?')})")
        return node

    def begin(self, node_id: int) -> str:
        before = self._node(node_id).set_clock_offset(self._offset)
        return f"clock of n{node_id} at {self._offset:+g} s (was {before:+g} s)"

    def end(self, node_id: int) -> str:
        before = self._node(node_id).set_clock_offset(0.0)
        return f"clock of n{node_id} at +0 s (was {before:+g} s)"
