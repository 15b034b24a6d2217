"""Transactional producer worker (Jepsen's queue workload, transactional).

Config: ``harness.workers.configs.TxnProducerConfig`` (its fields, defaults and units).

Why the flush waits for every outcome by default: aborting while records are still in flight
(abort_transaction purges them) lost a later committed record with librdkafka 2.16.0 on Kafka
4.3.1, finding F1 in docs/scenarios.md (the next batch reuses the purged batch's sequence
number and the broker acknowledges it as a duplicate of the aborted record).
When a flush still times out (a record held by a dead link outlives its message timeout), or a
record fails with _MSG_TIMED_OUT (possibly written: its request may still be on the wire), the
worker aborts and, with ``inflight_abort: replace`` (the default), replaces the producer
instance, so the next transaction runs under a new epoch. scenarios/coordinator-inflight-abort.yaml
sets a shorter ``flush_timeout_s`` and ``inflight_abort: reuse`` to reproduce F1.

Each transaction is one ``txn`` op: invoke with its sends, completion ``ok`` after
commit_transaction returned, ``fail`` after a clean abort (chosen or forced), ``info`` when
the outcome is unknown. The offsets that delivery reports gave are in the completion, also
for aborted transactions, whose records still occupy offsets.
"""
from __future__ import annotations

import random
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from harness.workers.outcomes import Action, classify, error_pair
from harness.workers.base import Worker
from harness.workers.configs import TxnProducerConfig


class TxnOutcome(Exception):
    def __init__(self, type_: str, error: list[str] | None, replace: bool):
        super().__init__(type_)
        self.type, self.error, self.replace = type_, error, replace


class TxnProducerWorker(Worker):
    Config = TxnProducerConfig

    def __init__(self, cfg: dict[str, Any]):
        super().__init__(cfg)
        self.rng = random.Random(self.cfg.seed)
        self.next_value = self.cfg.value_base
        self.committed = 0  # values of ok txn ops (stop_after)
        self.tid = self.cfg.transactional_id
        self.timeout = float(self.cfg.timeout_s)
        message_timeout_s = float(self.conf()["message.timeout.ms"]) / 1000
        self.flush_timeout = float(self.cfg.flush_timeout_s or message_timeout_s + 2)
        self.producer: Producer | None = None

    def conf(self) -> dict:
        return {
            "bootstrap.servers": self.cfg.bootstrap,
            "transactional.id": self.tid,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "transaction.timeout.ms": 30000,
            "message.timeout.ms": 20000,
            "socket.timeout.ms": 10000,
            **self.cfg.producer,
        }

    # -- instances -----------------------------------------------------------------------
    def init(self) -> bool:
        """Create a producer instance and register it (``init`` op). True when it completed ok."""
        self.producer = Producer(self.kafka_conf(self.conf()))
        meta = {"transactional_id": self.tid}
        self.emit("invoke", "init", None, meta=meta)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.producer.init_transactions(self.timeout)
                self.emit("ok", "init", None, meta=meta)
                return True
            except KafkaException as exc:
                d = classify(exc, "init")
                if d.action == Action.RETRY and time.monotonic() < deadline and not self.stopping.is_set():
                    continue
                self.emit("fail" if d.action == Action.FAIL else "info", "init", None,
                          error=error_pair(exc), meta=meta)
                self.replace()
                return False

    def replace(self) -> None:
        """Abandon the current instance; the next one is a new logical process."""
        self.producer = None  # librdkafka destroys it; its epoch is fenced by the next init
        self.new_instance()

    # -- one transaction -----------------------------------------------------------------
    def choose_sends(self) -> list[tuple[str, int]]:
        keys = self.cfg.keys
        n = self.rng.randint(1, min(self.cfg.max_sends, len(keys)))
        if self.cfg.stop_after is not None:
            n = max(1, min(n, self.cfg.stop_after - self.committed))
        sends = []
        for key in self.rng.sample(keys, n):
            sends.append((key, self.next_value))
            self.next_value += 1
        return sends

    def txn(self) -> None:
        sends = self.choose_sends()
        abort_on_purpose = self.rng.random() < self.cfg.abort_probability
        offsets: dict[int, int | None] = {}
        meta = {"transactional_id": self.tid}
        self.emit("invoke", "txn", [["send", k, v] for k, v in sends], meta=meta)

        def completed() -> list:
            return [["send", k, [offsets.get(v), v]] for k, v in sends]

        try:
            self._run_txn(sends, offsets, abort_on_purpose)
            self.emit("ok", "txn", completed(), meta=meta)
            self.committed += len(sends)
        except TxnOutcome as out:
            m = dict(meta, abort="chosen") if out.error is None and out.type == "fail" else meta
            self.emit(out.type, "txn", completed(), error=out.error, meta=m)
            if out.replace:
                self.replace()

    def _run_txn(self, sends, offsets, abort_on_purpose: bool) -> None:
        p = self.producer
        delivery_errors: list = []

        def on_delivery(err, msg):
            if err is not None:
                delivery_errors.append(err)
            else:
                offsets[int(msg.value())] = msg.offset()

        try:
            p.begin_transaction()
            for key, value in sends:
                topic, part = key.rsplit("/", 1)
                p.produce(topic, value=str(value).encode(), partition=int(part), on_delivery=on_delivery)
            remaining = p.flush(self.flush_timeout)
            timed_out = [e for e in delivery_errors if e.code() == KafkaError._MSG_TIMED_OUT]
            if timed_out:
                # a record that timed out may have been written (its request may still be on
                # the wire): the same as a record still in flight at the flush timeout, so the
                # same abort and (by default) a new instance, with a new epoch
                type_, err, replace = self._abort(error_pair(KafkaException(timed_out[0])), False)
                raise TxnOutcome(type_, err, replace or self.cfg.inflight_abort == "replace")
            if delivery_errors:
                raise KafkaException(delivery_errors[0])
            if remaining:
                # records still in flight: the transaction cannot be committed on time; abort
                # it, and (by default) give up this instance: a new one gets a new epoch, so no
                # later record can reuse a purged record's sequence number (finding F1)
                type_, err, replace = self._abort(["_FLUSH_TIMEOUT", f"{remaining} records undelivered"], False)
                raise TxnOutcome(type_, err, replace or self.cfg.inflight_abort == "replace")
        except KafkaException as exc:
            d = classify(exc, "send")
            if d.action == Action.FAIL:
                raise TxnOutcome("fail", error_pair(exc), d.replace)
            raise TxnOutcome(*self._abort(error_pair(exc), False))
        except BufferError as exc:
            raise TxnOutcome(*self._abort(["_QUEUE_FULL", str(exc)], False))
        except SystemError as exc:
            # confluent-kafka raises this when a fatal error (e.g. _FENCED) is pending while
            # flush serves a delivery report ("returned a result with an exception set"): the
            # instance is dead before commit was requested, so its transaction cannot commit
            cause = exc.__cause__
            err = error_pair(cause) if isinstance(cause, KafkaException) else ["_FATAL", str(exc)]
            raise TxnOutcome("fail", err, True)

        if abort_on_purpose:
            type_, err, replace = self._abort(None, False)
            raise TxnOutcome(type_, err, replace)
        self._commit()

    def _commit(self) -> None:
        deadline = time.monotonic() + 4 * self.timeout
        while True:
            try:
                self.producer.commit_transaction(self.timeout)
                return
            except KafkaException as exc:
                d = classify(exc, "commit")
                if d.action == Action.RETRY and time.monotonic() < deadline:
                    continue
                if d.action == Action.ABORT:
                    raise TxnOutcome(*self._abort(error_pair(exc), True))
                raise TxnOutcome("info", error_pair(exc), True)

    def _abort(self, error: list[str] | None, commit_requested: bool) -> tuple[str, list | None, bool]:
        """abort_transaction with retries; returns (type, error, replace) for the op."""
        deadline = time.monotonic() + 4 * self.timeout
        while True:
            try:
                self.producer.abort_transaction(self.timeout)
                return "fail", error, False
            except KafkaException as exc:
                d = classify(exc, "abort", commit_requested=commit_requested)
                if d.action == Action.RETRY and time.monotonic() < deadline:
                    continue
                action = d.action
                if action == Action.RETRY:  # retries ran out: unknown only if commit was requested
                    action = Action.INFO if commit_requested else Action.FAIL
                return action.value, error or error_pair(exc), True

    def run(self) -> None:
        while not self.stopping.is_set():
            if self.cfg.stop_after is not None and self.committed >= self.cfg.stop_after:
                break
            if self.producer is None and not self.init():
                time.sleep(0.5)  # an init that failed: the cluster needs a moment, not a spin
                continue
            self.txn()
        self.control(done=True, next_value=self.next_value)
