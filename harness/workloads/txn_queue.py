"""``txn-queue``: Jepsen's queue workload, transactional.

P transactional producers (each its own OS process and transactional.id ``eosc-txn-<i>``)
send 1..max_sends_per_txn records per transaction to random keys, aborting on purpose with
``abort_probability``; C read_committed consumers assign every key and poll continuously;
a final drain reads every key from the beginning to its end offset.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.scenario import WorkloadSpec

#: values of one worker spawn are value_base, value_base + 1, ...: unique per run
VALUE_STRIDE = 100_000_000


@dataclass(frozen=True)
class WorkerSpec:
    name: str
    role: str  # a harness.workers role
    cfg: dict


class TxnQueue:
    def __init__(self, spec: WorkloadSpec, bootstrap: str, seed: int):
        self.spec, self.bootstrap, self.seed = spec, bootstrap, seed
        self._spawns = 0

    def topics(self) -> list[str]:
        return self.spec.topic_names()

    def keys(self) -> list[str]:
        return self.spec.keys()

    def _value_base(self) -> int:
        self._spawns += 1
        return self._spawns * VALUE_STRIDE

    def consumers(self) -> list[WorkerSpec]:
        return [
            WorkerSpec(f"consumer-{i}", "consumer", {
                "bootstrap": self.bootstrap, "keys": self.keys(), "group_id": f"eosc-reader-{i}",
                "isolation_level": self.spec.isolation_level, "consumer": self.spec.consumer,
            })
            for i in range(self.spec.consumers)
        ]

    def producers(self) -> list[WorkerSpec]:
        return [
            WorkerSpec(f"producer-{i}", "txn-producer", {
                "bootstrap": self.bootstrap, "keys": self.keys(), "transactional_id": f"eosc-txn-{i}",
                "seed": self.seed * 1000 + i, "value_base": self._value_base(),
                "max_sends": self.spec.max_sends_per_txn,
                "abort_probability": self.spec.abort_probability, "producer": self.spec.producer,
            })
            for i in range(self.spec.producers)
        ]

    def drain(self) -> WorkerSpec:
        # the drain reads as the consumers do: read_uncommitted in the negative control too,
        # so that the aborted reads it sees are also recorded
        return WorkerSpec("final-reader", "drain", {
            "bootstrap": self.bootstrap, "keys": self.keys(), "group_id": "eosc-final",
            "isolation_level": self.spec.isolation_level, "consumer": self.spec.consumer,
        })
