"""Target selection as pure functions (Jepsen ``nemesis/combined.clj`` db-nodes, targeted).

Static targets (a random node, a client by name pattern) are chosen when the schedule is
made, so a schedule is replayable data. Role targets (the transaction coordinator of a
transactional.id, the leader of a partition, the active controller) depend on the cluster's
state at the moment of the fault: the schedule names the role, and ``resolve_role`` maps it
to a node from admin-API metadata when the fault is applied.
"""
from __future__ import annotations

import fnmatch
import random
import time
from typing import Any, Callable

ROLES = ("random", "coordinator", "leader", "controller")

#: How long ``resolve_target`` waits for a role's topic to appear in the metadata, in seconds.
#: ``__transaction_state`` is created on the first FindCoordinator(TRANSACTION) a producer sends
#: (TransactionCoordinator, auto-created internal topic); Java producers send it 5-10 s into a
#: run on a loaded machine, after a coordinator fault scheduled at 5 s.
ROLE_WAIT_S = 15.0


class RoleTopicAbsent(LookupError):
    """The topic (or partition) a role is read from is not in the metadata yet, e.g.
    ``__transaction_state`` before any producer looked up its transaction coordinator."""


def choose_node(rng: random.Random, nodes: list[int]) -> int:
    return rng.choice(sorted(nodes))


def choose_client(rng: random.Random, names: list[str], patterns: list[str]) -> str:
    """A random client whose name matches one of the glob ``patterns``. Raises ValueError if none."""
    matching = sorted(n for n in names if any(fnmatch.fnmatch(n, p) for p in patterns))
    if not matching:
        raise ValueError(f"no client matches {patterns}; clients are {sorted(names)}")
    return rng.choice(matching)


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (32-bit signed), which Kafka uses to place a transactional.id."""
    data = s.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def transaction_state_partition(transactional_id: str, partitions: int = 50) -> int:
    """Partition of ``__transaction_state`` that owns ``transactional_id``:
    ``Utils.abs(id.hashCode()) % transaction.state.log.num.partitions``
    (TransactionStateManager.partitionFor; Utils.abs maps MIN_VALUE to 0)."""
    h = java_string_hash(transactional_id)
    h = 0 if h == -(1 << 31) else abs(h)
    return h % partitions


def resolve_role(target: dict[str, Any], describe: dict[str, Any]) -> int:
    """Node id that plays ``target["role"]`` in ``describe`` (the agent's describe result with
    ``__transaction_state`` and the data topics). Raises LookupError when nobody does (e.g. a
    partition without a leader during an election)."""
    role = target["role"]
    if role == "controller":
        node = describe.get("controller")
    elif role == "coordinator":
        part = transaction_state_partition(target["transactional_id"], target.get("state_partitions", 50))
        node = _partition_leader(describe, "__transaction_state", str(part))
    elif role == "leader":
        topic, part = target["key"].rsplit("/", 1)
        node = _partition_leader(describe, topic, part)
    else:
        raise ValueError(f"unknown role {role!r}; known: {ROLES}")
    if node is None or node < 0:
        raise LookupError(f"no node is {role} now ({target})")
    return int(node)


def _partition_leader(describe: dict[str, Any], topic: str, part: str) -> Any:
    """Leader of ``topic``/``part`` in ``describe``. Raises RoleTopicAbsent when the metadata
    has no such topic or partition (or reports an error for the topic, e.g.
    UNKNOWN_TOPIC_OR_PART)."""
    tmd = describe.get("topics", {}).get(topic)
    if tmd is None or tmd.get("error") or part not in tmd.get("partitions", {}):
        why = (tmd or {}).get("error") or "not in the metadata"
        raise RoleTopicAbsent(f"{topic}/{part} {why} yet")
    return tmd["partitions"][part]["leader"]


def resolve_target(admin, target: dict[str, Any], wait_s: float = ROLE_WAIT_S, poll_s: float = 1.0,
                   clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> int:
    """Node id of ``target``: ``{"node": n}`` as is, a role through ``admin`` (an AdminView:
    the harness's agent) describing just the topics the role needs. While the role's topic is
    absent (``__transaction_state`` before the first transactional producer), describes again
    every ``poll_s`` seconds for up to ``wait_s`` seconds. Raises RuntimeError without an admin
    view, LookupError when no node plays the role now or the topic did not appear in time."""
    if "node" in target:
        return int(target["node"])
    if admin is None:
        raise RuntimeError(f"role target {target} needs the admin API")
    topics = None
    if target["role"] == "coordinator":
        topics = ["__transaction_state"]
    elif target["role"] == "leader":
        topics = [target["key"].rsplit("/", 1)[0]]
    deadline = clock() + wait_s
    while True:
        try:
            return resolve_role(target, admin.request("describe", timeout=5, topics=topics))
        except RoleTopicAbsent as exc:
            if clock() + poll_s > deadline:
                raise LookupError(f"no {target['role']} for {target}: {exc} after {wait_s:g} s") from None
        sleep(poll_s)


#: keys of a fault spec that say which fault, where, how often and how long; every other key
#: is the fault kind's own parameter (``value.params``)
SPEC_KEYS = {"fault", "target", "clients", "transactional_id", "key", "weight", "duration_s"}


def choose_node_target(rng: random.Random, spec: dict, nodes: list[int], clients: list[str]) -> dict:
    role = spec.get("target", "random")
    if role == "random":
        return {"node": choose_node(rng, nodes)}
    if role == "coordinator":
        return {"role": role, "transactional_id": spec["transactional_id"]}
    if role == "leader":
        return {"role": role, "key": spec["key"]}
    return {"role": role}


def only_params(name: str, params: dict[str, Any], allowed: frozenset[str] = frozenset()) -> None:
    """Parameter check of a fault kind that takes ``allowed`` beyond SPEC_KEYS (none by
    default): any other key is a ValueError naming it."""
    extra = sorted(set(params) - allowed)
    if extra:
        raise ValueError(f"fault {name} takes only {sorted(allowed | (SPEC_KEYS - {'fault'}))}; "
                         f"unknown: {extra}")
