"""``share``: transactional producers and a share group (KIP-932, queues for Kafka).

P transactional producers (txn-queue's ``txn-producer`` workers, transactional.ids
``eosc-txn-<i>``) write unique values to every partition of the workload's topics, aborting
with ``abort_probability``; C share consumers (role ``share-consumer``: confluent-kafka's
``ShareConsumer``, or the Java client's ``KafkaShareConsumer`` with ``client: java``) are
members of one share group and acknowledge every record explicitly: release it
(``ack.release_probability``), reject it (``ack.reject_probability``) or process it and accept
it. The group's configs are the scenario's: ``share.isolation.level`` (``isolation_level``),
``share.record.lock.duration.ms`` (``lock_duration_ms``, the acquisition lock),
``share.delivery.count.limit`` (``delivery_count_limit``) and ``share.auto.offset.reset=earliest``,
set by each consumer with IncrementalAlterConfigs on the GROUP resource before it subscribes.

The brokers bound the group configs (``group.share.min/max.record.lock.duration.ms``, 15 s /
60 s by default; ``group.share.min/max.delivery.count.limit``, 2 / 10;
``group.share.min.session.timeout.ms`` 45 s, ``group.share.min.heartbeat.interval.ms`` 5 s): a
lock or session shorter than that needs ``cluster.broker`` (scenarios/share.yaml).
Share groups are on by default from Kafka 4.2.0 (``share.version=1``; 4.4.0: ``2``, with the
dead-letter queue; harness.cluster.releases).

After the load, ``settle`` stops the producers and waits until no consumer acquired anything
for ``quiet_s()`` (at most ``settle_bound_s``): records released, or whose lock expired, are
delivered again meanwhile, and a killed member's session (``session_timeout_ms``) expires so
that its partitions go to a live member (until then the group hands their records to nobody). The final drain is txn-queue's: a plain consumer reads every
key to its end at the same isolation level, which gives the checkers the committed log.
Ops, and what the checkers find: docs/history.md "Share groups", checkers/share_group.py.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from checkers.run import DEFAULT_ISOLATION_LEVEL, IsolationLevel

from harness.workloads.base import MAX_TIME_S, ClientSpec, Setting, Strict, WorkerSpec
from harness.workloads.txn_queue import VALUE_STRIDE, TxnQueue


class ShareAck(Strict):
    """``ack``: how each share consumer acknowledges (KIP-932 AcknowledgeType). Per record:
    release with ``release_probability``, reject with ``reject_probability``, else process it
    (``process_ms`` ms per batch) and accept it; ``order``: accept ``after-processing`` (at
    least once) or ``before-processing`` (a consumer killed in between accepted records it
    never processed: the zoo mutant scenarios/zoo/share-accept-before-processing.yaml)."""

    release_probability: float = Field(0.05, ge=0.0, le=1.0)
    reject_probability: float = Field(0.02, ge=0.0, le=1.0)
    process_ms: float = Field(20.0, ge=0.0, le=60_000.0)
    order: Literal["after-processing", "before-processing"] = "after-processing"


class ShareSpec(ClientSpec):
    name: Literal["share"] = "share"
    producers: int = Field(2, ge=1, le=64)
    #: share consumers, each its own OS process, all members of one share group
    consumers: int = Field(3, ge=1, le=64)
    topics: int = Field(1, ge=1, le=32)
    partitions: int = Field(3, ge=1, le=64)
    max_sends_per_txn: int = Field(4, ge=1, le=10_000)
    abort_probability: float = Field(0.1, ge=0.0, le=1.0)
    #: the group's share.isolation.level (read_uncommitted delivers aborted records: a control)
    isolation_level: IsolationLevel = DEFAULT_ISOLATION_LEVEL
    #: the group's share.record.lock.duration.ms: how long an acquired record stays locked
    lock_duration_ms: int = Field(15_000, ge=1_000, le=3_600_000)
    #: the group's share.delivery.count.limit: deliveries before the record is archived
    delivery_count_limit: int = Field(5, ge=2, le=100)
    #: the group's share.session.timeout.ms: a member that stops heartbeating (killed) keeps
    #: its partitions this long, and nobody is handed their records meanwhile
    session_timeout_ms: int = Field(45_000, ge=1_000, le=3_600_000)
    #: the group's share.heartbeat.interval.ms (below session_timeout_ms)
    heartbeat_interval_ms: int = Field(5_000, ge=100, le=3_600_000)
    ack: ShareAck = Field(default_factory=ShareAck)
    #: other group configs to set (e.g. errors.deadletterqueue.topic.name on 4.4.0)
    group_configs: dict[str, str] = Field(default_factory=dict)
    producer: dict[str, Setting] = Field(default_factory=dict, description="extra producer settings")
    consumer: dict[str, Setting] = Field(default_factory=dict, description="extra share consumer settings")
    #: after the load: no acquisition for this long ends the settle step, seconds
    settle_quiet_s: float = Field(8.0, gt=0, le=MAX_TIME_S)
    #: the settle step's longest wait, seconds
    settle_bound_s: float = Field(120.0, gt=0, le=MAX_TIME_S)
    # what txn-queue's producers read (not offered here)
    flush_timeout_s: float | None = Field(None, gt=0, le=MAX_TIME_S)
    inflight_abort: Literal["replace"] = "replace"

    @model_validator(mode="after")
    def _heartbeat_below_session(self) -> "ShareSpec":
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be below "
                             f"session_timeout_ms ({self.session_timeout_ms})")
        return self

    def quiet_s(self) -> float:
        """How long no acquisition must last before the settle step ends: settle_quiet_s, and at
        least long enough for a killed member's session to expire and its partitions' records
        (locked up to the lock duration) to be handed to a live member: session + lock + two
        heartbeats + 1 s."""
        return max(self.settle_quiet_s,
                   (self.session_timeout_ms + self.lock_duration_ms + 2 * self.heartbeat_interval_ms) / 1000 + 1)

    def group_config(self) -> dict[str, str]:
        """The group configs every consumer sets (module docstring)."""
        return {"share.isolation.level": self.isolation_level,
                "share.record.lock.duration.ms": str(self.lock_duration_ms),
                "share.delivery.count.limit": str(self.delivery_count_limit),
                "share.session.timeout.ms": str(self.session_timeout_ms),
                "share.heartbeat.interval.ms": str(self.heartbeat_interval_ms),
                "share.auto.offset.reset": "earliest", **self.group_configs}


class Share(TxnQueue):
    """The share workload (module docstring); producers and drain are txn-queue's."""

    def __init__(self, spec: ShareSpec, bootstrap: str, seed: int, names=None):
        super().__init__(spec, bootstrap, seed, names)
        self.settled: dict | None = None

    def group_id(self) -> str:
        return self.names.client_id("eosc-share")

    def readers(self) -> list[WorkerSpec]:
        a = self.spec.ack
        return [WorkerSpec(f"share-consumer-{i}", "share-consumer", {
            "bootstrap": self.bootstrap, "topics": [t.name for t in self.topics()], "group_id": self.group_id(),
            "seed": self.seed * 1000 + 500 + i, "group_configs": self.spec.group_config(),
            "release_probability": a.release_probability, "reject_probability": a.reject_probability,
            "process_ms": a.process_ms, "ack_order": a.order, "consumer": self.spec.consumer,
        }) for i in range(self.spec.consumers)]

    def respawn(self, spec: WorkerSpec) -> WorkerSpec:
        """Producers take fresh values; a restarted share consumer a fresh draw."""
        out = super().respawn(spec)
        if spec.role == "share-consumer":
            cfg = dict(out.cfg, seed=out.cfg.get("seed", 0) + VALUE_STRIDE)
            out = WorkerSpec(out.name, out.role, cfg)
        return out

    def settle(self, pool) -> list[str]:
        """Stop the producers; wait until no share consumer acquired a record for
        ``settle_quiet_s`` (at most ``settle_bound_s``). Returns problems."""
        problems = pool.stop([n for n in list(pool.workers) if n.startswith("producer-")], timeout=90)
        s = self.spec
        need = s.quiet_s()
        t0 = time.monotonic()
        quiet_since, last_total = t0, -1
        while time.monotonic() - t0 < s.settle_bound_s:
            total = 0
            for name, w in list(pool.workers.items()):
                if name.startswith("share-consumer-"):
                    seen = [c for c in w.control if isinstance(c, dict) and "share_acquired" in c]
                    total += seen[-1]["share_acquired"] if seen else 0
            if total != last_total:
                quiet_since, last_total = time.monotonic(), total
            elif time.monotonic() - quiet_since >= need:
                break
            time.sleep(0.5)
        waited = round(time.monotonic() - t0, 1)
        quiet = time.monotonic() - quiet_since >= need
        self.settled = {"waited_s": waited, "quiet": quiet, "quiet_needed_s": round(need, 1)}
        if not quiet:
            problems.append(f"the share consumers still acquired records after {waited} s "
                            f"(settle_bound_s); unacknowledged records may show as share-lost")
        return problems

    def writers(self) -> list[WorkerSpec]:
        keys, s = self.keys(), self.spec
        return [WorkerSpec(f"producer-{i}", "txn-producer", {
            "bootstrap": self.bootstrap, "keys": keys, "transactional_id": self.names.client_id(f"eosc-txn-{i}"),
            "seed": self.seed * 1000 + i, "value_base": next(self._spawns) * VALUE_STRIDE,
            "max_sends": s.max_sends_per_txn, "abort_probability": s.abort_probability, "producer": s.producer,
            "flush_timeout_s": s.flush_timeout_s, "inflight_abort": s.inflight_abort,
        }) for i in range(s.producers)]

    def drain(self) -> WorkerSpec:
        """txn-queue's drain at the group's isolation level, with the client's default settings
        (the scenario's ``consumer`` settings are the share consumers')."""
        d = super().drain()
        return WorkerSpec(d.name, d.role, dict(d.cfg, consumer={}))

    def meta(self) -> dict:
        s = self.spec
        return {"transactional": True, "isolation_level": s.isolation_level,
                "share": {"group_id": self.group_id(), "isolation_level": s.isolation_level,
                          "lock_duration_ms": s.lock_duration_ms,
                          "delivery_count_limit": s.delivery_count_limit,
                          "ack_order": s.ack.order, "keys": self.keys()}}

    def finish(self, run_dir: Path, history) -> dict:
        return {"share_settle": self.settled} if self.settled else {}
