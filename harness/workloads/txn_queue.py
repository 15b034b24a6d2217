"""``txn-queue``: Jepsen's queue workload, transactional.

P transactional producers (each its own OS process and transactional.id ``eosc-txn-<i>``)
send 1..max_sends_per_txn records per transaction to random keys, aborting on purpose with
``abort_probability``; C consumers (read_committed) assign every key and poll continuously;
a final drain reads every key from the beginning to its end offset.

Busy variant (scenarios/busy.yaml): with ``producers_per_worker`` > 1 (or ``think_time_ms``)
the producers run as threads of ``ceil(producers / producers_per_worker)`` worker processes
(role ``txn-producers``, harness.workers.txn_producers), so 16 to 64 transactional producers
fit on 2 cores. Worker ``producer-<w>`` then owns transactional.ids ``eosc-txn-<i>`` for its
slice of i; a client fault on it hits all of them. The defaults keep one process per producer.

Epoch-burn variant (``epoch_burn``, scenarios/zoo/kafka-19367.yaml; Java client only): every
producer is an ``epoch-burn`` worker (harness/workers/java/src/eosc/EpochBurn.java) that raises
its transactional.id's producer epoch to ``burn_to_epoch`` with bare InitProducerId requests,
commits transactions (each bumps the epoch by one with transaction version 2, KIP-890 part 2)
until its epoch is ``reinit_at_epoch``, then re-initialises with a transaction open there:
KAFKA-19367's trigger (Kafka 4.0.0). Producer i writes only keys i, i + P, i + 2P, ... of the
workload's keys, so a transaction a broker leaves open holds back the last stable offset of
that producer's partitions only.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from checkers.run import DEFAULT_ISOLATION_LEVEL, IsolationLevel

from harness.workloads.base import MAX_TIME_S, ClientSpec, Setting, Strict, TopicSpec, WorkerSpec

#: values of one worker spawn are value_base, value_base + 1, ...: unique per run
VALUE_STRIDE = 100_000_000


class EpochBurnSpec(Strict):
    """``epoch_burn``: epochs are Kafka's int16 producer epochs. The first producer init after
    the burn lands on ``burn_to_epoch`` + 1 (so at most 32764: from 32766 on the coordinator
    hands out a new producer id instead); ``reinit_at_epoch``: the epoch at which the producer
    re-initialises with a transaction open (32766: KAFKA-19367)."""

    burn_to_epoch: int = Field(32760, ge=0, le=32764)
    reinit_at_epoch: int = Field(32766, ge=1, le=32767)
    #: the longest the burn may take, seconds (then the op is info and the producer goes on)
    burn_timeout_s: float = Field(240.0, gt=0, le=MAX_TIME_S)
    #: ``reinit``: re-initialise with a transaction open at reinit_at_epoch (KAFKA-19367);
    #: ``timeout``: first hold one open there ``timeout_wait_s`` s, past the producer's
    #: transaction.timeout.ms, so the coordinator aborts it, and abort it late, then
    #: re-initialise with the next one open (KAFKA-20090, Kafka 4.0.0-4.2.x)
    trigger: Literal["reinit", "timeout"] = "reinit"
    timeout_wait_s: float = Field(8.0, gt=0, le=MAX_TIME_S)
    #: seconds the final drain may take (harness.workers.configs.ConsumerConfig): a partition
    #: whose transaction a broker leaves open for good never reaches its end, and the default
    #: 120 s would only lengthen the run
    drain_timeout_s: float = Field(30.0, gt=0, le=MAX_TIME_S)

    @model_validator(mode="after")
    def _order(self) -> "EpochBurnSpec":
        if self.reinit_at_epoch <= self.burn_to_epoch:
            raise ValueError(f"reinit_at_epoch ({self.reinit_at_epoch}) must be above burn_to_epoch "
                             f"({self.burn_to_epoch}): the producer's first init lands on burn_to_epoch + 1")
        return self


class TxnQueueSpec(ClientSpec):
    name: Literal["txn-queue"] = "txn-queue"
    producers: int = Field(4, ge=1, le=64)
    consumers: int = Field(2, ge=0, le=64)
    topics: int = Field(2, ge=1, le=32)
    partitions: int = Field(4, ge=1, le=64)
    max_sends_per_txn: int = Field(4, ge=1, le=10_000)
    abort_probability: float = Field(0.1, ge=0.0, le=1.0)
    #: read_committed is what the workload tests; read_uncommitted is the negative control.
    isolation_level: IsolationLevel = DEFAULT_ISOLATION_LEVEL
    producer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka producer settings")
    #: seconds to wait for delivery reports before aborting; None waits for every record's
    #: outcome (message.timeout.ms + 2 s). Shorter values abort with records in flight (F1).
    flush_timeout_s: float | None = Field(None, gt=0, le=MAX_TIME_S)
    #: after aborting with records still in flight: replace the producer instance (a new
    #: epoch; avoids F1) or reuse it (what librdkafka allows; reproduces F1)
    inflight_abort: Literal["replace", "reuse"] = "replace"
    consumer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka consumer settings")
    #: producers per worker process (threads, harness.workers.txn_producers); 1 keeps one
    #: process per producer (the ``txn-producer`` role)
    producers_per_worker: int = Field(1, ge=1, le=64)
    #: fewest records per transaction (1..max_sends_per_txn; equal to max for a fixed size);
    #: only with producers_per_worker > 1 or think_time_ms > 0
    min_sends_per_txn: int = Field(1, ge=1, le=10_000)
    #: pause of each producer between its transactions, ms (txn-producers role)
    think_time_ms: float = Field(0.0, ge=0, le=MAX_TIME_S * 1000)
    #: drive each producer's epoch to its end and re-initialise there (module docstring)
    epoch_burn: EpochBurnSpec | None = None

    @model_validator(mode="after")
    def _busy_options(self) -> "TxnQueueSpec":
        if self.epoch_burn is not None and self.client != "java":
            raise ValueError("epoch_burn needs client: java (the epoch-burn worker is on kafka-clients; "
                             "librdkafka does not speak transaction version 2)")
        if self.epoch_burn is not None and self.producers > self.topics * self.partitions:
            raise ValueError(f"epoch_burn gives each producer keys of its own: {self.producers} producers need "
                             f"at least as many keys (topics x partitions = {self.topics * self.partitions})")
        if self.min_sends_per_txn > self.max_sends_per_txn:
            raise ValueError(f"min_sends_per_txn ({self.min_sends_per_txn}) is more than max_sends_per_txn "
                             f"({self.max_sends_per_txn}): lower it or raise max_sends_per_txn")
        if self.min_sends_per_txn > 1 and not self.multi:
            raise ValueError("min_sends_per_txn needs producers_per_worker > 1 or think_time_ms > 0 "
                             "(the txn-producers role; the txn-producer role draws 1..max_sends_per_txn)")
        return self

    @property
    def multi(self) -> bool:
        """True when producers run as threads of txn-producers workers."""
        return self.producers_per_worker > 1 or self.think_time_ms > 0


class TxnQueue:
    def __init__(self, spec: TxnQueueSpec, bootstrap: str, seed: int, names=None):
        from harness.cluster.client_access import RunNames

        self.spec, self.bootstrap, self.seed = spec, bootstrap, seed
        # the run's topics, group ids and transactional.ids (prefixed on an external cluster)
        self.names = names or RunNames()
        self._spawns = itertools.count(1)

    def topics(self) -> list[TopicSpec]:
        return [TopicSpec(self.names.topic(f"t{i}"), self.spec.partitions) for i in range(self.spec.topics)]

    def keys(self) -> list[str]:
        return [f"{t.name}/{p}" for t in self.topics() for p in range(t.partitions)]

    def _reader(self, name: str, role: str, group: str) -> WorkerSpec:
        return WorkerSpec(name, role, {
            "bootstrap": self.bootstrap, "keys": self.keys(), "group_id": group,
            "isolation_level": self.spec.isolation_level, "consumer": self.spec.consumer,
        })

    def readers(self) -> list[WorkerSpec]:
        return [self._reader(f"consumer-{i}", "consumer", self.names.client_id(f"eosc-reader-{i}")) for i in range(self.spec.consumers)]

    def _producer_cfg(self) -> dict:
        return {"bootstrap": self.bootstrap, "keys": self.keys(), "max_sends": self.spec.max_sends_per_txn,
                "abort_probability": self.spec.abort_probability, "producer": self.spec.producer,
                "flush_timeout_s": self.spec.flush_timeout_s, "inflight_abort": self.spec.inflight_abort}

    def writers(self) -> list[WorkerSpec]:
        if self.spec.multi:
            per, n = self.spec.producers_per_worker, self.spec.producers
            return [
                WorkerSpec(f"producer-{w}", "txn-producers", dict(
                    self._producer_cfg(), transactional_ids=[self.names.client_id(f"eosc-txn-{i}") for i in range(lo, min(lo + per, n))],
                    seed=self.seed * 1000 + w, value_base=next(self._spawns) * VALUE_STRIDE,
                    min_sends=self.spec.min_sends_per_txn, think_ms=self.spec.think_time_ms))
                for w, lo in enumerate(range(0, n, per))
            ]
        burn = self.spec.epoch_burn
        keys, n = self.keys(), self.spec.producers
        return [
            WorkerSpec(f"producer-{i}", "epoch-burn" if burn else "txn-producer", {
                "bootstrap": self.bootstrap, "keys": keys[i::n] if burn else keys,
                "transactional_id": self.names.client_id(f"eosc-txn-{i}"),
                "seed": self.seed * 1000 + i, "value_base": next(self._spawns) * VALUE_STRIDE,
                "max_sends": self.spec.max_sends_per_txn,
                "abort_probability": self.spec.abort_probability, "producer": self.spec.producer,
                "flush_timeout_s": self.spec.flush_timeout_s, "inflight_abort": self.spec.inflight_abort,
                **(burn.model_dump(exclude={"drain_timeout_s"}) if burn else {}),
            })
            for i in range(n)
        ]

    def drain(self) -> WorkerSpec:
        # the drain reads as the consumers do (read_uncommitted in the negative control too),
        # so that what it reads is judged by the same rules
        d = self._reader("final-reader", "drain", self.names.client_id("eosc-final"))
        burn = getattr(self.spec, "epoch_burn", None)  # the idempotent workload's spec has none
        if burn is not None:
            d.cfg["drain_timeout_s"] = burn.drain_timeout_s
        return d

    def respawn(self, spec: WorkerSpec) -> WorkerSpec:
        """A restarted worker keeps its transactional.id but takes fresh values."""
        n = next(self._spawns)
        cfg = dict(spec.cfg)
        if "value_base" in cfg:
            cfg["value_base"] = n * VALUE_STRIDE
            cfg["seed"] = cfg.get("seed", 0) + n * 7919
        return WorkerSpec(spec.name, spec.role, cfg)

    def meta(self) -> dict:
        return {"transactional": True, "isolation_level": self.spec.isolation_level}

    def finish(self, run_dir: Path, history) -> dict:
        return {}
