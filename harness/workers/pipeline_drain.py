"""The final drain of a consume-transform-produce pipeline.

Config: ``harness.workers.configs.PipelineDrainConfig`` (its fields, defaults and units).

Before draining every key (inputs and outputs, as DrainWorker does), it records the group's
committed offsets as one ``committed-offsets`` op: invoke value = the input keys, completion
``ok`` with ``{key: next offset to consume}`` (``null`` for a key the group never committed),
meta ``group_id`` and ``final``. checkers.finders.pipeline reads it for offsets-ahead/offsets-behind
(docstring of ``checkers.finders.pipeline``). The offsets are fetched the way a restarting processor
would: a read_committed consumer asks for *stable* offsets (KIP-447 ``require_stable``), so
the answer waits for pending transactional offset commits to be resolved. Runs after the
processors stopped, so nothing moves while it reads.
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException

from harness.workers.outcomes import error_pair
from harness.workers.consumer import DrainWorker, _tp
from harness.workers.configs import PipelineDrainConfig


class PipelineDrainWorker(DrainWorker):
    Config = PipelineDrainConfig

    def committed_offsets(self) -> None:
        keys = self.cfg.input_keys
        meta = {"group_id": self.cfg.pipeline_group, "final": True}
        self.emit("invoke", "committed-offsets", keys, meta=meta)
        c = Consumer(self.kafka_conf({"bootstrap.servers": self.cfg.bootstrap, "group.id": self.cfg.pipeline_group,
                                      "isolation.level": "read_committed", "enable.auto.commit": False}))
        deadline = time.monotonic() + 60
        try:
            while True:
                try:
                    tps = c.committed([_tp(k) for k in keys], timeout=10)
                    bad = [tp for tp in tps if tp.error is not None]
                    if not bad:
                        break
                    raise KafkaException(bad[0].error)
                except KafkaException as exc:  # e.g. UNSTABLE_OFFSET_COMMIT, coordinator moving
                    if time.monotonic() > deadline:
                        self.emit("info", "committed-offsets", None, error=error_pair(exc),
                                  meta=meta)
                        return
                    self.log(f"committed offsets: {exc}; retrying")
                    time.sleep(0.5)
        finally:
            c.close()
        value = {f"{tp.topic}/{tp.partition}": (tp.offset if tp.offset >= 0 else None) for tp in tps}
        self.emit("ok", "committed-offsets", value, meta=meta)

    def run(self) -> None:
        self.committed_offsets()
        super().run()
