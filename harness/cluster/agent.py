"""The admin agent: a long-lived process in the client namespace that talks Kafka's admin API.

The controller lives in the root namespace, which has no route to the test network on purpose
(see harness.cluster.namespaces). It asks the agent instead, one JSON request per line on the agent's stdin,
one JSON reply per line on its stdout::

    -> {"cmd": "describe"}
    <- {"ok": true, "result": {"brokers": [1, 2, 3], "controller": 2, "topics": {...}}}
    <- {"ok": false, "error": "KafkaException: ..."}

Commands: ``describe`` (brokers, controller id, per-partition leader/replicas/ISR of the
non-internal topics, or of ``topics`` when given), ``create_topics`` (names, partitions,
replication factor, configs; waits for the result), ``delete_topics`` (names; {name: "deleted" |
"absent"}), ``delete_groups`` (every consumer group whose id starts with ``prefix``; {group:
"deleted" | error}), ``watermarks`` (high watermarks of keys), ``offsets`` (each key's last stable
offset and high watermark, ListOffsets read_committed and read_uncommitted: a key whose last
stable offset is below its high watermark is held by an open transaction, KIP-98;
harness.cluster.open_txns). ``python -m harness.cluster.agent --warm BOOTSTRAP`` is a one-shot
process instead (``warm``: a FindCoordinator for a group and for a transactional.id, WARMUP_ID;
harness.cluster.service.ClusterService.warm_coordinators).

``config`` (a JSON object, second argument) holds librdkafka settings every client of the
cluster needs, such as an external cluster's ``security.protocol`` / ``sasl.*`` / ``ssl.*``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

from harness.cluster.namespaces import Host
from harness.util import CONFIG_ENV, ErrorFacts, config_from


def _describe(admin, topics: list[str] | None, timeout: float) -> dict:
    md = admin.list_topics(timeout=timeout)
    out: dict[str, Any] = {"brokers": sorted(md.brokers), "controller": md.controller_id, "topics": {}}
    for name, tmd in md.topics.items():
        if topics is not None and name not in topics:
            continue
        if topics is None and name.startswith("__"):
            continue
        out["topics"][name] = {
            "error": str(tmd.error) if tmd.error else None,
            "partitions": {
                str(p): {"leader": pm.leader, "replicas": list(pm.replicas), "isr": list(pm.isrs)}
                for p, pm in tmd.partitions.items()
            },
        }
    return out


# Errors after which a CreateTopics request may simply be sent again. _DESTROY_BROKER is what
# librdkafka >= 2.10 reports for a request in flight on a bootstrap connection it retires once
# the cluster's metadata names the real brokers (KIP-899 re-bootstrap); seen right after start.
_TRANSIENT = frozenset({"_DESTROY_BROKER", "_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "NOT_CONTROLLER"})


def transient_admin_error(exc: BaseException) -> bool:
    """True when ``exc`` (a KafkaException from an admin future) is worth retrying: a retriable
    KafkaError or one of the connection-level codes above. False for anything else."""
    facts = ErrorFacts.of(exc)
    return facts.retriable or facts.name in _TRANSIENT


def _create_topics(admin, names: list[str], partitions: int, rf: int, configs: dict, timeout: float) -> dict:
    """Create ``names``; {name: "created" | "exists"}. Transient errors are retried until
    ``timeout`` seconds have passed; a topic that a retried request finds already there (the
    first attempt may have created it) is "exists". Raises the last error otherwise."""
    from confluent_kafka.admin import NewTopic

    deadline = time.monotonic() + timeout
    result: dict[str, str] = {}
    todo = list(names)
    while todo:
        left = max(1.0, deadline - time.monotonic())
        futures = admin.create_topics(
            [NewTopic(n, num_partitions=partitions, replication_factor=rf, config=configs) for n in todo],
            request_timeout=left,
        )
        retry = []
        for name, fut in futures.items():
            try:
                fut.result(timeout=left)
                result[name] = "created"
            except Exception as exc:
                if ErrorFacts.of(exc).name == "TOPIC_ALREADY_EXISTS":
                    result[name] = "exists"
                elif transient_admin_error(exc) and time.monotonic() < deadline:
                    print(f"create_topics {name}: {exc}; retrying", file=sys.stderr, flush=True)
                    retry.append(name)
                else:
                    raise
        todo = retry
        if todo:
            time.sleep(0.5)
    return result


def _delete_topics(admin, names: list[str], timeout: float) -> dict:
    """Delete ``names``; {name: "deleted" | "absent"}. Raises the first other error."""
    out: dict[str, str] = {}
    for name, fut in admin.delete_topics(list(names), operation_timeout=timeout, request_timeout=timeout).items():
        try:
            fut.result(timeout=timeout)
            out[name] = "deleted"
        except Exception as exc:
            if ErrorFacts.of(exc).name == "UNKNOWN_TOPIC_OR_PART":
                out[name] = "absent"
            else:
                raise
    return out


def _delete_groups(admin, prefix: str, timeout: float) -> dict:
    """Delete every consumer group whose id starts with ``prefix`` (an external run's groups,
    harness.cluster.client_access.RunNames); {group: "deleted" | the error}. A group that still has
    members (a static member, KIP-345, stays until its session times out) is retried until
    ``timeout`` seconds have passed."""
    if not prefix:
        raise ValueError("delete_groups needs a non-empty prefix")
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout=timeout)
    todo = sorted(g.group_id for g in listed.valid if g.group_id.startswith(prefix))
    out: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while todo:
        retry = []
        for group, fut in admin.delete_consumer_groups(todo, request_timeout=timeout).items():
            try:
                fut.result(timeout=timeout)
                out[group] = "deleted"
            except Exception as exc:
                out[group] = f"{type(exc).__name__}: {exc}"
                if ErrorFacts.of(exc).name == "NON_EMPTY_GROUP" and time.monotonic() < deadline:
                    retry.append(group)
        todo = retry
        if todo:
            time.sleep(1.0)
    return out


def _watermarks(bootstrap: str, keys: list[str], timeout: float, config: dict | None = None) -> dict:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**(config or {}), "bootstrap.servers": bootstrap, "group.id": "eosc-agent",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        out = {}
        for key in keys:
            topic, part = key.rsplit("/", 1)
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, int(part)), timeout=timeout, cached=False)
            out[key] = [lo, hi]
        return out
    finally:
        c.close()


def _offsets(admin, keys: list[str], timeout: float) -> dict:
    """{key: [last stable offset, high watermark]} (ListOffsets latest, read_committed and
    read_uncommitted). A key whose lookup failed maps to its error text."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    tps = {}
    for key in keys:
        topic, part = key.rsplit("/", 1)
        tps[key] = TopicPartition(topic, int(part))
    out: dict[str, Any] = {k: [None, None] for k in keys}
    for i, level in enumerate((IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED)):
        futs = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps.values()},
                                  isolation_level=level, request_timeout=timeout)
        by_tp = {(tp.topic, tp.partition): f for tp, f in futs.items()}
        for key, tp in tps.items():
            if not isinstance(out[key], list):
                continue
            try:
                out[key][i] = by_tp[(tp.topic, tp.partition)].result().offset
            except Exception as exc:  # one partition without a leader: said, the others answered
                out[key] = f"{type(exc).__name__}: {exc}"
    return out


#: the transactional.id and group id of the coordinator warm-up (``warm``): an Empty
#: transaction state of its own (no partition, no record) and no committed offset
WARMUP_ID = "eosc-coordinator-warmup"


def warm(bootstrap: str, config: dict | None, timeout: float) -> dict:
    """FindCoordinator for WARMUP_ID as a group (DescribeGroups) and as a transactional.id
    (InitProducerId): Kafka creates ``__consumer_offsets`` / ``__transaction_state`` on the
    first such request (KafkaApis getOrCreateInternalTopic) and elects their coordinators.
    {"transactions": "ok" or the error, "groups": "asked"} (the group lookup only has to
    reach a broker: its NOT_COORDINATOR while the topic is made is the expected answer; the
    caller waits for the topic). Run in a process of its own (``python -m
    harness.cluster.agent --warm BOOTSTRAP``), not in the agent: librdkafka 2.16.0 aborted
    the long-lived agent later in the run (rd_kafka_enq_once_del_source_return: Assertion
    ``eonce->refcnt > 0``) once it had made these clients, and list_consumer_group_offsets
    for a group without partitions crashed it at once (SIGSEGV)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    out: dict[str, str] = {}
    admin = AdminClient({**(config or {}), "bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    try:  # only a trigger: it may retry COORDINATOR_LOAD_IN_PROGRESS as long as it is given
        admin.describe_consumer_groups([WARMUP_ID], request_timeout=3)[WARMUP_ID].result()
    except Exception:  # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS while the topic is made
        pass
    out["groups"] = "asked"
    p = Producer({**(config or {}), "bootstrap.servers": bootstrap, "transactional.id": WARMUP_ID,
                  "transaction.timeout.ms": 60000})
    try:
        p.init_transactions(timeout)
        out["transactions"] = "ok"
    except Exception as exc:
        out["transactions"] = f"{type(exc).__name__}: {exc}"[:300]
    return out


def serve(bootstrap: str, config: dict | None = None) -> None:
    """Answer requests from stdin until it closes."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**(config or {}), "bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            cmd, timeout = req["cmd"], float(req.get("timeout", 10))
            if cmd == "describe":
                res = _describe(admin, req.get("topics"), timeout)
            elif cmd == "create_topics":
                res = _create_topics(admin, req["names"], req["partitions"], req["replication_factor"],
                                     req.get("configs", {}), timeout)
            elif cmd == "delete_topics":
                res = _delete_topics(admin, req["names"], timeout)
            elif cmd == "delete_groups":
                res = _delete_groups(admin, req["prefix"], timeout)
            elif cmd == "watermarks":
                res = _watermarks(bootstrap, req["keys"], timeout, config)
            elif cmd == "offsets":
                res = _offsets(admin, req["keys"], timeout)
            else:
                raise ValueError(f"unknown agent command {cmd!r}")
            reply = {"ok": True, "result": res}
        except Exception as exc:
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


class AgentError(RuntimeError):
    """The agent answered with an error, died, or did not answer in time."""


class Agent:
    """Controller-side handle on an agent process started in ``host``'s namespace."""

    def __init__(self, host: Host, bootstrap: str, log_path, config: dict[str, str] | None = None):
        """``config``: librdkafka settings for the agent's clients (security of an external cluster)."""
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(  # config in the environment, not argv (harness.util.CONFIG_ENV)
            host.exec_prefix() + [sys.executable, "-m", "harness.cluster.agent", bootstrap],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1,
            start_new_session=True, env=dict(os.environ, **{CONFIG_ENV: json.dumps(config or {})}),
        )
        self._lock = threading.Lock()

    def request(self, cmd: str, timeout: float = 10.0, **args) -> Any:
        """Send one request and wait for its reply. Raises AgentError."""
        with self._lock:
            if self.proc.poll() is not None:
                raise AgentError(f"admin agent exited with code {self.proc.returncode}")
            self.proc.stdin.write(json.dumps({"cmd": cmd, "timeout": timeout, **args}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise AgentError("admin agent closed its output (crashed?); see logs/agent.log")
        reply = json.loads(line)
        if not reply["ok"]:
            raise AgentError(reply["error"])
        return reply["result"]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
        self._log.close()


if __name__ == "__main__":
    if sys.argv[1] == "--warm":  # one answer line, then exit at once (os._exit: no client teardown)
        sys.stdout.write(json.dumps(warm(sys.argv[2], config_from(sys.argv, 3), 60.0)) + "\n")
        sys.stdout.flush()
        os._exit(0)
    serve(sys.argv[1], config_from(sys.argv, 2))
