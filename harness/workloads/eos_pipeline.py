"""``eos-pipeline``: consume-transform-produce processors between two topics (KIP-98, KIP-447).

Topics ``in`` and ``out`` with the same number of partitions; input key ``in/p`` feeds output
key ``out/p``. Writers: ``input_producers`` transactional producers (txn-queue's
``txn-producer`` role, transactional.id ``eosc-in-<i>``) write unique values to the input
keys; ``processors`` processors (role ``processor``, transactional.id ``eosc-proc-<i>``, one
consumer group ``eosc-proc``) copy each input value to its output key, sending the input
offsets with ``send_offsets_to_transaction`` and the consumer's group metadata
(harness.workers.processor). Readers: ``consumers`` read_committed consumers of every key.
Drain: role ``pipeline-drain``, which records the group's committed offsets (a
``committed-offsets`` op) and reads every key to its end.

``meta()["pipeline"]`` is what checkers.finders.pipeline needs: ``{"keys": {"in/p": "out/p"},
"group_id": "eosc-proc", "value_divisor": 1000000}``: an output value ``// value_divisor``
is the input value it came from (harness.workers.processor ``output_value``: each attempt at
an input writes a distinct value, as docs/history.md requires of every send). Checked besides the queue anomalies: eos-duplicate, eos-loss,
offsets-ahead, offsets-behind. A killed processor is restarted under the same
transactional.id (``respawn``); a zombie fault (nemesis.zombie) starts a replacement.

Negative controls: ``offsets: consumer`` (offsets auto-committed by the consumer outside the
transaction; processor kills then show eos-duplicate) and ``group_metadata: group-only``
with zombie faults that give the replacement a fresh transactional.id.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from checkers.run import DEFAULT_ISOLATION_LEVEL

from harness.workloads.base import ClientSpec, Setting, Strict, TopicSpec, WorkerSpec
from harness.workloads.group import GroupSpec
from harness.workers.processor import OUTPUT_FACTOR
from harness.workloads.txn_queue import VALUE_STRIDE, TxnQueue

IN, OUT, GROUP = "in", "out", "eosc-proc"


class EosPipelineSpec(ClientSpec, GroupSpec):
    """``group_protocol`` / ``assignor``: the processors' consumer group protocol
    (harness.workloads.group)."""

    name: Literal["eos-pipeline"] = "eos-pipeline"
    processors: int = Field(3, ge=1, le=32)
    input_producers: int = Field(1, ge=1, le=32)
    consumers: int = Field(1, ge=0, le=32)
    partitions: int = Field(4, ge=1, le=64)
    #: input transactions: 1..max_sends_per_txn records, aborted on purpose with abort_probability
    max_sends_per_txn: int = Field(4, ge=1, le=10_000)
    abort_probability: float = Field(0.1, ge=0.0, le=1.0)
    #: processor transactions: up to max_batch input records each; aborted on purpose (then
    #: reprocessed) with processor_abort_probability
    max_batch: int = Field(50, ge=1, le=100_000)
    processor_abort_probability: float = Field(0.05, ge=0.0, le=1.0)
    #: transaction (KIP-98) or consumer (negative control: the consumer auto-commits its
    #: position every 5 s, outside the transaction: at-least-once)
    #: commit-before (negative control: the consumer commits the batch's offsets synchronously
    #: before the transaction, outside it: at-most-once)
    offsets: Literal["transaction", "consumer", "commit-before"] = "transaction"
    #: static membership (KIP-345, group.instance.id = the processor's name): a restarted
    #: processor takes over its partitions at once; without it every kill stalls the group
    #: until the dead member's session (10 s) expires
    static_membership: bool = True
    #: member (KIP-447 generation fencing) or group-only (negative control, generation -1)
    group_metadata: Literal["member", "group-only"] = "member"
    #: where an assigned partition starts: "fetched" (librdkafka fetches the group's committed
    #: offsets itself, as users' code does; librdkafka 2.16 may reset instead: F4) or
    #: "committed-then-assign" (the F4 workaround of docs/your-pipeline.md: on_assign looks
    #: them up with Consumer.committed() and assigns them)
    assignment_offsets: Literal["fetched", "committed-then-assign"] = "fetched"
    #: the readers' and drain's isolation level (the pipeline itself is always read_committed)
    isolation_level: Literal["read_committed"] = DEFAULT_ISOLATION_LEVEL  # the pipeline reads committed only
    producer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka settings of every producer")
    consumer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka settings of every consumer")

    @model_validator(mode="after")
    def _workaround_is_librdkafkas(self) -> "EosPipelineSpec":
        if self.assignment_offsets != "fetched" and self.client != "librdkafka":
            raise ValueError("assignment_offsets: committed-then-assign is a librdkafka workaround "
                             "(docs/findings/F4.md): drop it or use client: librdkafka")
        return self


class EosPipeline(TxnQueue):
    """txn-queue's readers, drain base and respawn (fresh values for input producers)."""

    spec: EosPipelineSpec

    def topics(self) -> list[TopicSpec]:
        return [TopicSpec(self.names.topic(IN), self.spec.partitions),
                TopicSpec(self.names.topic(OUT), self.spec.partitions)]

    def input_keys(self) -> list[str]:
        return [f"{self.names.topic(IN)}/{p}" for p in range(self.spec.partitions)]

    def key_map(self) -> dict[str, str]:
        i, o = self.names.topic(IN), self.names.topic(OUT)
        return {f"{i}/{p}": f"{o}/{p}" for p in range(self.spec.partitions)}

    def writers(self) -> list[WorkerSpec]:
        s = self.spec
        inputs = [
            WorkerSpec(f"producer-{i}", "txn-producer", {
                "bootstrap": self.bootstrap, "keys": self.input_keys(), "transactional_id": self.names.client_id(f"eosc-in-{i}"),
                "seed": self.seed * 1000 + i, "value_base": next(self._spawns) * VALUE_STRIDE,
                "max_sends": s.max_sends_per_txn, "abort_probability": s.abort_probability,
                "producer": s.producer,
            })
            for i in range(s.input_producers)
        ]
        processors = [
            WorkerSpec(f"processor-{i}", "processor", {
                "bootstrap": self.bootstrap, "input_topic": self.names.topic(IN),
                "output_topic": self.names.topic(OUT), "transactional_id": self.names.client_id(f"eosc-proc-{i}"),
                "group_id": self.names.client_id(GROUP),
                "seed": self.seed * 1000 + 500 + i, "spawn": next(self._spawns), "max_batch": s.max_batch,
                "abort_probability": s.processor_abort_probability,
                "offsets": s.offsets, "group_metadata": s.group_metadata,
                "assignment_offsets": s.assignment_offsets,
                "group_instance_id": f"processor-{i}" if s.static_membership else None,
                "producer": s.producer, "consumer": s.consumer, **s.group_cfg(),
            })
            for i in range(s.processors)
        ]
        return inputs + processors

    def drain(self) -> WorkerSpec:
        base = super().drain()
        return WorkerSpec(base.name, "pipeline-drain",
                          dict(base.cfg, pipeline_group=self.names.client_id(GROUP), input_keys=self.input_keys()))

    def respawn(self, spec: WorkerSpec) -> WorkerSpec:
        """Input producers: txn-queue's (same transactional.id, fresh values). Processors: the
        same transactional.id and group, a fresh ``spawn`` number for their output values."""
        if spec.role != "processor":
            return super().respawn(spec)
        return WorkerSpec(spec.name, spec.role, dict(spec.cfg, spawn=next(self._spawns)))

    def meta(self) -> dict:
        return {"transactional": True, "isolation_level": self.spec.isolation_level,
                "pipeline": {"keys": self.key_map(), "group_id": self.names.client_id(GROUP), "value_divisor": OUTPUT_FACTOR,
                             # how the group's offsets are committed (checkers.finders.reprocessing reads it)
                             "offsets": self.spec.offsets,
                             # the processors' group protocol and assignor (harness.workloads.group)
                             "group_protocol": self.spec.group_protocol, "assignor": self.spec.assignor},
                "pipeline_offsets": self.spec.offsets, "pipeline_group_metadata": self.spec.group_metadata}
