"""Idempotent (non-transactional) producer worker: Jepsen's queue workload without transactions.

Config: ``harness.workers.configs.IdempotentProducerConfig`` (its fields, defaults and units).

Each op is one ``send`` op (docs/history.md): invoke ``[["send", key, value], ...]``, then every
record is produced asynchronously and ``flush()`` waits for all delivery reports. The
completion lists ``["send", key, [offset, value]]`` in send order (offset ``null`` for a
record whose delivery failed). Outcome: ``ok`` when every record was acknowledged; ``info``
when any delivery failed (a non-transactional record that timed out or hit an error may or
may not be in the log: librdkafka's ``PossiblyPersisted``), using harness.workers.outcomes' ``produce``
rows; a fatal error (e.g. an idempotence sequence error) replaces the producer instance, which
is a new logical process with a new producer id.

What this exercises (KIP-98 idempotent producer; librdkafka INTRODUCTION.md "Idempotent
Producer"): with ``enable.idempotence=true`` (librdkafka default false; the workload turns it
on) internal retries after leader failover, request timeouts or connection resets must never
duplicate (``duplicate``) or reorder (``int-nonmonotonic-send``/``nonmonotonic-send``) a
partition's records, up to ``max.in.flight.requests.per.connection`` = 5.
``message.timeout.ms`` is long (60 s) and the flush waits longer still, so every record gets
a delivery report before its op completes.
"""
from __future__ import annotations

import random
from typing import Any

from confluent_kafka import KafkaException, Producer

from harness.workers.outcomes import classify, error_pair
from harness.workers.base import Worker
from harness.workers.configs import IdempotentProducerConfig


class IdempotentProducerWorker(Worker):
    Config = IdempotentProducerConfig

    def __init__(self, cfg: dict[str, Any]):
        super().__init__(cfg)
        self.rng = random.Random(self.cfg.seed)
        self.next_value = self.cfg.value_base
        self.producer: Producer | None = None
        self.fatal: list | None = None
        self.acked = 0  # values of ok send ops (stop_after)

    def conf(self) -> dict:
        return {
            "bootstrap.servers": self.cfg.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,  # no batching delay: a partition's records go out in several requests
            "max.in.flight.requests.per.connection": 5,
            "message.timeout.ms": 60000,
            "socket.timeout.ms": 10000,
            "error_cb": self._on_error,
            **self.cfg.producer,
        }

    def _on_error(self, err) -> None:
        if err.fatal():
            self.fatal = error_pair(err)
        self.log(f"producer error: {err}")

    def choose_sends(self) -> list[tuple[str, int]]:
        keys = self.cfg.keys
        n = self.rng.randint(1, self.cfg.max_sends)
        if self.cfg.stop_after is not None:
            n = max(1, min(n, self.cfg.stop_after - self.acked))
        sends = []
        for key in self.rng.choices(keys, k=n):
            sends.append((key, self.next_value))
            self.next_value += 1
        return sends

    def send(self) -> None:
        """One ``send`` op; see the module docstring for outcomes."""
        if self.producer is None:
            self.producer = Producer(self.kafka_conf(self.conf()))
            self.fatal = None
        sends = self.choose_sends()
        offsets: dict[int, int] = {}
        errors: dict[int, Any] = {}

        def on_delivery(err, msg):
            value = int(msg.value())
            if err is not None:
                errors[value] = err
            else:
                offsets[value] = msg.offset()

        self.emit("invoke", "send", [["send", k, v] for k, v in sends])
        error = None
        try:
            for key, value in sends:
                topic, part = key.rsplit("/", 1)
                while True:
                    try:
                        self.producer.produce(topic, value=str(value).encode(), partition=int(part),
                                              on_delivery=on_delivery)
                        break
                    except BufferError:  # local queue full: serve delivery reports, then retry
                        self.producer.poll(0.1)
            remaining = self.producer.flush(float(self.cfg.flush_timeout_s))
            if remaining:
                error = ["_FLUSH_TIMEOUT", f"{remaining} records without a delivery report"]
        except KafkaException as exc:
            errors.setdefault(-1, exc)
        completed = [["send", k, [offsets.get(v), v]] for k, v in sends]
        first = next(iter(errors.values()), None)
        if first is None and error is None:
            self.emit("ok", "send", completed)
            self.acked += len(sends)
            return
        replace = bool(self.fatal)
        if first is not None:
            d = classify(first, "produce")
            replace = replace or d.replace
            error = error or error_pair(first)
        self.emit("info", "send", completed, error=error)
        if replace or error[0] == "_FLUSH_TIMEOUT":
            # a fatal error leaves the instance unusable; records still queued after a flush
            # timeout would be reported to no op. A new instance is a new logical process.
            self.log(f"replacing the producer instance after {error}")
            try:  # fail what is still queued, so that destroying the instance does not block
                self.producer.purge()
                self.producer.flush(1)
            except Exception as exc:  # a fatal instance may refuse; it is dropped anyway
                self.log(f"purge: {exc}")
            self.producer = None
            self.new_instance()

    def run(self) -> None:
        while not self.stopping.is_set():
            if self.cfg.stop_after is not None and self.acked >= self.cfg.stop_after:
                break
            self.send()
        if self.producer is not None:
            self.producer.flush(10)
        self.control(done=True, next_value=self.next_value)
