"""``idempotent``: non-transactional idempotent producers (KIP-98 idempotence, no transactions).

P producers (each its own OS process; ``enable.idempotence=true``, ``acks=all``,
``max.in.flight.requests.per.connection=5``, role ``idempotent-producer``) send ``send`` ops
of 1..max_sends_per_op records to random keys (keys drawn with replacement, so one op may send
several records to one partition); C consumers poll every key; a final drain reads every key.
Topics, keys, readers, drain and respawn are txn-queue's (harness.workloads.txn_queue).

Checked: no ``duplicate`` (a retry written twice), no ``int-nonmonotonic-send`` /
``nonmonotonic-send`` (a retry reordered), no ``lost-write``/``unseen``. Multi-key send ops
are not atomic, so two producers' ops may land in opposite orders on two keys: ``G0`` is
expected. Negative control: ``idempotence: false`` (retries stay on) must show ``duplicate``
under faults that lose acknowledgements.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from checkers.run import DEFAULT_ISOLATION_LEVEL, IsolationLevel

from harness.workloads.base import ClientSpec, Setting, Strict, WorkerSpec
from harness.workloads.txn_queue import VALUE_STRIDE, TxnQueue


class IdempotentSpec(ClientSpec):
    name: Literal["idempotent"] = "idempotent"
    producers: int = Field(4, ge=1, le=64)
    consumers: int = Field(2, ge=0, le=64)
    topics: int = Field(2, ge=1, le=32)
    partitions: int = Field(4, ge=1, le=64)
    max_sends_per_op: int = Field(8, ge=1, le=10_000)
    #: false is the negative control: librdkafka then retries without producer id/sequences
    idempotence: bool = True
    #: consumers and the drain; non-transactional records are visible either way
    isolation_level: IsolationLevel = DEFAULT_ISOLATION_LEVEL
    producer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka producer settings")
    consumer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka consumer settings")


class Idempotent(TxnQueue):
    """txn-queue's topics, keys, readers and drain; idempotent producers as writers."""

    spec: IdempotentSpec

    def writers(self) -> list[WorkerSpec]:
        producer = {"enable.idempotence": self.spec.idempotence, **self.spec.producer}
        return [
            WorkerSpec(f"producer-{i}", "idempotent-producer", {
                "bootstrap": self.bootstrap, "keys": self.keys(),
                "seed": self.seed * 1000 + i, "value_base": next(self._spawns) * VALUE_STRIDE,
                "max_sends": self.spec.max_sends_per_op, "producer": producer,
            })
            for i in range(self.spec.producers)
        ]

    def meta(self) -> dict:
        return {"transactional": False, "idempotence": self.spec.idempotence,
                "isolation_level": self.spec.isolation_level}
