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

``dlq`` (Kafka 4.4.0 on: ``share.version=2``, KIP-1191): the group names a dead-letter queue
topic (group config ``errors.deadletterqueue.topic.name``, with
``errors.deadletterqueue.copy.record.enable=true`` so that each DLQ record carries the value
it stands for), where the brokers write a record the group archives because a member rejected
it or its delivery count reached ``share.delivery.count.limit``. The harness creates the topic
(``DLQ_PARTITIONS`` partition, topic config ``errors.deadletterqueue.group.enable=true``,
without which the brokers refuse to write to it; they create none themselves unless
``errors.deadletterqueue.auto.create.topics.enable``) named ``dlq.<group id>`` or as given:
its name must start with the brokers' ``errors.deadletterqueue.topic.name.prefix`` (``dlq.``
by default) and not with ``__``. ``check_release`` refuses it before 4.4.0.

After the load, ``settle`` stops the producers and waits until no consumer acquired anything
for ``quiet_s()`` (at most ``settle_bound_s``): records released, or whose lock expired, are
delivered again meanwhile, and a killed member's session (``session_timeout_ms``) expires so
that its partitions go to a live member (until then the group hands their records to nobody). The final drain is txn-queue's: a plain consumer reads every
key to its end at the same isolation level, which gives the checkers the committed log. With
``dlq`` the settle step then stops the share consumers (closing releases what they hold;
every record archived, the brokers' DLQ writes are asynchronous: ``dlq_wait_s``) and reads
the DLQ topic to its end (role ``share-dlq-reader``, one ``dlq-read`` op,
harness/workers/share_dlq_reader.py). Ops, and what the checkers find: docs/history.md "Share
groups", checkers/finders/share_group.py and checkers/finders/share_dlq.py.
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from checkers.run import DEFAULT_ISOLATION_LEVEL, IsolationLevel
from checkers.version_numbers import older_than

from harness.workloads.base import MAX_TIME_S, ClientSpec, Setting, Strict, TopicSpec, WorkerSpec
from harness.workloads.txn_queue import VALUE_STRIDE, TxnQueue
from harness.workers.java import SHARE_MIN_CLIENT
from harness.workers.share_dlq_reader import DLQ_ROLE

#: the broker's errors.deadletterqueue.topic.name.prefix by default (GroupCoordinatorConfig, 4.4.0)
DLQ_PREFIX = "dlq."
#: group configs the workload sets itself when ``dlq`` is on (KIP-1191)
DLQ_TOPIC_CONFIG = "errors.deadletterqueue.topic.name"
DLQ_COPY_CONFIG = "errors.deadletterqueue.copy.record.enable"
#: the topic config without which the brokers refuse to write DLQ records to a topic
DLQ_ENABLE_TOPIC_CONFIG = "errors.deadletterqueue.group.enable"
DLQ_PARTITIONS = 1
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


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
    #: other group configs to set
    group_configs: dict[str, str] = Field(default_factory=dict)
    #: the group's dead-letter queue (KIP-1191, Kafka 4.4.0 on): true (topic dlq.<group id>) or
    #: the DLQ topic's name; false: none (module docstring)
    dlq: bool | str = False
    #: after the share consumers stopped, how long the brokers get to write the last DLQ
    #: records before the DLQ is read, seconds
    dlq_wait_s: float = Field(5.0, ge=0, le=MAX_TIME_S)
    producer: dict[str, Setting] = Field(default_factory=dict, description="extra producer settings")
    consumer: dict[str, Setting] = Field(default_factory=dict, description="extra share consumer settings")
    #: after the load: no acquisition for this long ends the settle step, seconds
    settle_quiet_s: float = Field(8.0, gt=0, le=MAX_TIME_S)
    #: the settle step's longest wait, seconds
    settle_bound_s: float = Field(120.0, gt=0, le=MAX_TIME_S)
    # what txn-queue's producers read (not offered here)
    flush_timeout_s: float | None = Field(None, gt=0, le=MAX_TIME_S)
    inflight_abort: Literal["replace"] = "replace"

    @field_validator("dlq")
    @classmethod
    def _dlq_topic_name(cls, v: bool | str) -> bool | str:
        if isinstance(v, str):
            if not _TOPIC.fullmatch(v) or v in (".", ".."):
                raise ValueError(f"dlq: {v!r} is not a topic name (1-249 of A-Z a-z 0-9 . _ -)")
            if v.startswith("__"):
                raise ValueError(f"dlq: {v!r} starts with '__': the brokers refuse such a DLQ topic (KIP-1191)")
        return v

    @model_validator(mode="after")
    def _dlq_configs_once(self) -> "ShareSpec":
        mine = sorted(k for k in self.group_configs if k in (DLQ_TOPIC_CONFIG, DLQ_COPY_CONFIG))
        if self.dlq is not False and mine:
            raise ValueError(f"dlq sets {mine[0]} itself: remove it from group_configs")
        return self

    @model_validator(mode="after")
    def _java_client_has_share_consumer(self) -> "ShareSpec":
        jv = self.java_client_version
        if self.client == "java" and jv and older_than(jv, SHARE_MIN_CLIENT):
            raise ValueError(f"java_client_version {jv} has no KafkaShareConsumer (KIP-932): "
                             f"use {SHARE_MIN_CLIENT} or later")
        return self

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

    def dlq_topic(self, group_id: str) -> str | None:
        """The DLQ topic of group ``group_id``: ``dlq.<group_id>`` for ``dlq: true``, the name
        given, or None without a DLQ."""
        if self.dlq is False:
            return None
        return DLQ_PREFIX + group_id if self.dlq is True else self.dlq

    def group_config(self, dlq_topic: str | None = None) -> dict[str, str]:
        """The group configs every consumer sets (module docstring); ``dlq_topic`` names the
        group's DLQ topic (KIP-1191), records copied into it."""
        dlq = {DLQ_TOPIC_CONFIG: dlq_topic, DLQ_COPY_CONFIG: "true"} if dlq_topic else {}
        return {"share.isolation.level": self.isolation_level,
                "share.record.lock.duration.ms": str(self.lock_duration_ms),
                "share.delivery.count.limit": str(self.delivery_count_limit),
                "share.session.timeout.ms": str(self.session_timeout_ms),
                "share.heartbeat.interval.ms": str(self.heartbeat_interval_ms),
                "share.auto.offset.reset": "earliest", **dlq, **self.group_configs}


def check_release(spec, kafka_version: str | None, broker: dict | None = None) -> None:
    """ValueError (one line) when the share workload ``spec`` asks for ``dlq`` on a Kafka
    release without the share groups' dead-letter queue (harness.cluster.releases
    ``Release.supports_share_dlq``: 4.4.0 on, share.version 2, KIP-1191), or names a DLQ topic without the
    brokers' ``errors.deadletterqueue.topic.name.prefix`` (``broker``: the scenario's
    cluster.broker settings; default ``dlq.``). Anything else passes."""
    from harness.cluster.releases import UnsupportedRelease, first_release, release

    if getattr(spec, "name", None) != "share" or spec.dlq is False or not kafka_version:
        return
    try:
        has_dlq = release(kafka_version).supports_share_dlq()
    except UnsupportedRelease:
        return  # the version's own check says so
    if not has_dlq:
        since = first_release("share_dlq")
        raise ValueError(f"workload.dlq needs Kafka {since} or newer (share.version=2, KIP-1191); Kafka "
                         f"{kafka_version} has no share-group dead-letter queue: remove dlq or use {since}")
    prefix = str((broker or {}).get("errors.deadletterqueue.topic.name.prefix", DLQ_PREFIX))
    if isinstance(spec.dlq, str) and not spec.dlq.startswith(prefix):
        raise ValueError(f"dlq: {spec.dlq!r} does not start with the brokers' errors.deadletterqueue.topic."
                         f"name.prefix {prefix!r}: the brokers would write no DLQ record; rename it")


class Share(TxnQueue):
    """The share workload (module docstring); producers and drain are txn-queue's."""

    def __init__(self, spec: ShareSpec, bootstrap: str, seed: int, names=None):
        super().__init__(spec, bootstrap, seed, names)
        self.settled: dict | None = None
        #: the cluster's security settings for a worker this workload starts itself (the DLQ
        #: reader); harness.cluster.client_access.SecureWorkload replaces it
        self.secure = lambda spec: spec

    def group_id(self) -> str:
        return self.names.client_id("eosc-share")

    def dlq_topic(self) -> str | None:
        """The group's DLQ topic, or None: ``dlq.<group id>`` (the run's group id, prefixed on
        an external cluster) or the name given, as given (the brokers' prefix comes first)."""
        return self.spec.dlq_topic(self.group_id())

    def data_topics(self) -> list[TopicSpec]:
        """The topics the producers write and the group reads (txn-queue's)."""
        return super().topics()

    def topics(self) -> list[TopicSpec]:
        """The data topics and, with ``dlq``, the DLQ topic (DLQ_PARTITIONS partitions, DLQ writes
        enabled on it)."""
        dlq = self.dlq_topic()
        extra = [TopicSpec(dlq, DLQ_PARTITIONS, {DLQ_ENABLE_TOPIC_CONFIG: "true"})] if dlq else []
        return self.data_topics() + extra

    def keys(self) -> list[str]:
        return [f"{t.name}/{p}" for t in self.data_topics() for p in range(t.partitions)]

    def readers(self) -> list[WorkerSpec]:
        a = self.spec.ack
        return [WorkerSpec(f"share-consumer-{i}", "share-consumer", {
            "bootstrap": self.bootstrap, "topics": [t.name for t in self.data_topics()], "group_id": self.group_id(),
            "seed": self.seed * 1000 + 500 + i, "group_configs": self.spec.group_config(self.dlq_topic()),
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
        ``quiet_s()`` (at most ``settle_bound_s``; no wait without share consumers); with
        ``dlq``, then ``read_dlq``. Returns problems."""
        problems = pool.stop([n for n in list(pool.workers) if n.startswith("producer-")], timeout=90)
        s = self.spec
        need = s.quiet_s()
        t0 = time.monotonic()
        quiet_since, last_total = t0, -1
        members = any(n.startswith("share-consumer-") for n in list(pool.workers))
        while members and time.monotonic() - t0 < s.settle_bound_s:
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
        quiet = not members or time.monotonic() - quiet_since >= need
        self.settled = {"waited_s": waited, "quiet": quiet, "quiet_needed_s": round(need, 1)}
        if not quiet:
            problems.append(f"the share consumers still acquired records after {waited} s "
                            f"(settle_bound_s); unacknowledged records may show as share-lost")
        if self.dlq_topic():
            problems += self.read_dlq(pool)
        return problems

    def read_dlq(self, pool) -> list[str]:
        """Stop the share consumers, give the brokers ``dlq_wait_s`` to write the last DLQ
        records, then read the DLQ topic to its end (a ``dlq-read`` op). Returns problems."""
        members = [n for n in list(pool.workers) if n.startswith("share-consumer-")]
        problems = pool.stop(members, timeout=60)
        if members:
            time.sleep(self.spec.dlq_wait_s)
        topic = self.dlq_topic()
        spec = self.secure(WorkerSpec("dlq-reader", DLQ_ROLE, {
            "bootstrap": self.bootstrap, "topic": topic, "group_id": self.names.client_id("eosc-dlq-reader"),
            "source_group_id": self.group_id()}))
        h = pool.spawn(spec)
        if not h.wait(timeout=150):
            problems.append("the DLQ reader did not finish in 150 s; killed")
            h.kill()
        done = next((c["dlq"] for c in h.control if isinstance(c, dict) and "dlq" in c), None)
        self.settled = dict(self.settled or {}, dlq=done)
        if not done or not done.get("complete"):
            problems.append(f"the DLQ topic {topic} was not read to its end: share-dlq-missing cases are unknown")
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
                          "ack_order": s.ack.order, "keys": self.keys(),
                          **({"dlq": {"topic": self.dlq_topic(), "partitions": DLQ_PARTITIONS, "copy_record": True}}
                             if self.dlq_topic() else {})}}

    def finish(self, run_dir: Path, history) -> dict:
        return {"share_settle": self.settled} if self.settled else {}
