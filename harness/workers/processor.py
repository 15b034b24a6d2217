"""Consume-transform-produce processor worker (KIP-98 transactions, KIP-447 group fencing).

Config: ``harness.workers.configs.ProcessorConfig`` (its fields, defaults and units).

One processor instance is a transactional producer plus a consumer in group ``group_id``
(``subscribe``, ``isolation.level=read_committed``, no auto-commit). Each cycle:

1. ``consume()`` up to ``max_batch`` records: wait up to 0.5 s for one, then take what is
   already fetched (empty polls are not recorded);
2. one ``txn`` op, invoked with ``[["poll"], ["send", out_key, value], ...]``:
   ``begin_transaction``; every input record becomes one record on the output key of its
   partition whose value encodes the input value and the attempt (``output_value``):
   ``input_value * OUTPUT_FACTOR + spawn * 1000 + n``, where ``spawn`` is unique per worker
   spawn (``self.cfg.spawn``) and ``n`` counts this worker's attempts at that input. So
   ``output // OUTPUT_FACTOR`` is the input value, and every send of an output key carries a
   value no other send carries (docs/history.md), also when an input is processed again after an
   abort, a crash or a rebalance, which exactly-once processing must do;
   ``send_offsets_to_transaction`` with the next offset of every input partition of
   the batch and the consumer's group metadata (KIP-447: the group coordinator rejects the
   offsets of a member whose generation is stale, which fences zombie processors whatever
   their transactional.id); ``commit_transaction``;
3. the completion holds ``["poll", {in_key: [[offset, value], ...]}]`` and the sends with
   their offsets: ``ok`` when commit returned, ``fail`` after a clean abort (the consumer is
   rewound to the batch's first offsets, so the records are processed again), ``info`` when
   unknown (the instance is replaced: a new logical process, a new ``init`` on the same
   transactional.id, a new group member).

Rebalances are recorded as ``assign`` ops (value: the keys now assigned, the whole assignment
also under an incremental protocol, where a callback names only the partitions added; meta
``group_id``, ``via: rebalance``, ``added`` and, when some were revoked or lost since the
member's previous assign, ``revoked`` with ``revoke_ns``: the history time of the first of those
callbacks), so that checkers do not compare reads across a reassignment.
``group_protocol`` / ``assignor`` pick the rebalance protocol (harness.workloads.group: under
``consumer``, KIP-848, the session timeout and heartbeat interval are the brokers'). A fatal
consumer error between transactions is recorded as a ``crash`` op (``info``, with the error).

Negative-control switches (misconfigured pipelines the checkers must catch):

* ``offsets: consumer``: no ``send_offsets_to_transaction``; the consumer commits its
  position itself (``enable.auto.commit=true``, every ``auto.commit.interval.ms`` = 5 s,
  Kafka's default), outside the transaction: a processor killed after committing output whose
  offsets were not yet committed reprocesses it on restart (eos-duplicate; offsets-ahead when
  the auto-commit ran ahead of a transaction that then died).
* ``offsets: commit-before``: no ``send_offsets_to_transaction``; the consumer commits the
  batch's next offsets synchronously (``commit(asynchronous=False)``, auto-commit off) before
  the transaction begins, outside it: at-most-once, so a processor killed mid-transaction
  loses the batch (eos-loss, offsets-ahead) (the zoo's offsets-outside-txn mutant).
* ``group_metadata: group-only`` sends offsets with the metadata of a consumer that never
  joins the group (generation -1, no member id), like the deprecated
  ``sendOffsetsToTransaction(offsets, groupId)``: the coordinator cannot fence a zombie by
  generation, only by transactional.id epoch.

Not a negative control: ``assignment_offsets: committed-then-assign`` is the F4 workaround
(docs/findings/F4.md): on_assign assigns the offsets ``committed()`` returns.

Error handling follows harness.workers.outcomes (phases ``send``, ``offsets``, ``commit``, ``abort``).
A retired processor (harness.workers.retire) exits when its instance is lost.
"""
from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from harness.workers.outcomes import Action, classify, error_pair
from harness.workers.retire import RetirableTxnProducer
from harness.workers.txn_producer import TxnOutcome
from harness.workers.configs import ProcessorConfig
from harness.workers.group_protocol import consumer_settings


#: output value = input value * OUTPUT_FACTOR + attempt tag (< OUTPUT_FACTOR)
OUTPUT_FACTOR = 1_000_000
#: how long on_assign waits for the committed offsets (assignment_offsets: committed-then-assign):
#: below the processors' max.poll.interval.ms (300 s, Kafka's default), above a coordinator move
COMMITTED_TIMEOUT_S = 60


def output_value(input_value: int, spawn: int, attempt: int) -> int:
    """The output value of one attempt at an input value; ``// OUTPUT_FACTOR`` gives the
    input back. ``spawn`` in 0..999 (one per worker spawn), ``attempt`` in 0..999 (this
    spawn's attempts at this input). Raises ValueError outside those ranges (the tag would
    no longer be unique)."""
    if not (0 <= spawn < 1000 and 0 <= attempt < 1000):
        raise ValueError(f"attempt tag out of range: spawn {spawn}, attempt {attempt}")
    return input_value * OUTPUT_FACTOR + spawn * 1000 + attempt


def _tp(key: str, offset: int) -> TopicPartition:
    topic, part = key.rsplit("/", 1)
    return TopicPartition(topic, int(part), offset)


class ProcessorWorker(RetirableTxnProducer):
    Config = ProcessorConfig

    def __init__(self, cfg: dict[str, Any]):
        super().__init__(cfg)
        self.group = self.cfg.group_id
        self.consumer: Consumer | None = None
        self.standalone: Consumer | None = None  # group-only metadata source
        self._pending: list[TopicPartition] | None = None
        self.spawn = int(self.cfg.spawn)
        self.attempts: dict[int, int] = {}  # input value -> attempts of this worker so far
        self.owned: set[str] = set()  # the keys assigned now (incremental callbacks add/remove)
        self.revoked: list[str] = []  # revoked/lost since the last assign op
        self.revoke_ns: int | None = None

    # -- instances -----------------------------------------------------------------------
    def consumer_conf(self) -> dict:
        return consumer_settings({
            "bootstrap.servers": self.cfg.bootstrap,
            "group.id": self.group,
            # offsets: consumer (negative control) lets the consumer commit its position every
            # auto.commit.interval.ms (5 s), Kafka's default, instead of the transaction
            "enable.auto.commit": self.cfg.offsets == "consumer",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "socket.timeout.ms": 10000,
            # a killed or paused member leaves the group after 10 s (broker minimum 6 s)
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
            # static membership (KIP-345): a restarted processor takes its old member's place at
            # once instead of waiting for that member's session to expire
            **({"group.instance.id": self.cfg.group_instance_id} if self.cfg.group_instance_id else {}),
            **self.cfg.consumer,
        }, self.cfg.group_protocol, self.cfg.assignor)

    def start_instance(self) -> bool:
        """``init`` (fences every older instance of the transactional.id and aborts its open
        transaction), then join the group. False when init failed."""
        if not self.init():
            return False
        self.consumer = Consumer(self.kafka_conf(self.consumer_conf()))
        self.owned, self.revoked, self.revoke_ns = set(), [], None
        self.consumer.subscribe([self.cfg.input_topic], on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_lost)
        return True

    def _on_assign(self, consumer, partitions) -> None:
        added = sorted(f"{tp.topic}/{tp.partition}" for tp in partitions)
        self.owned |= set(added)
        keys = sorted(self.owned)
        meta = {"group_id": self.group, "via": "rebalance", "transactional_id": self.tid, "added": added}
        if self.revoked:
            meta.update(revoked=sorted(set(self.revoked)), revoke_ns=self.revoke_ns)
        self.revoked, self.revoke_ns = [], None
        self.emit("invoke", "assign", keys, meta=meta)
        if self.cfg.assignment_offsets == "committed-then-assign" and partitions:
            self._assign_committed(consumer, partitions)
        self.emit("ok", "assign", keys, meta=meta)

    def _assign_committed(self, consumer, partitions) -> None:
        """The F4 workaround (docs/findings/F4.md): look the group's committed offsets up
        with ``committed()``, which retries UNSTABLE_OFFSET_COMMIT (another transaction's
        pending offsets) until its timeout, and assign them, instead of letting librdkafka
        fetch them, which after a rebalance may start at auto.offset.reset. When the lookup
        fails (the timeout, a coordinator gone), librdkafka's own fetch is left to run."""
        try:
            found = consumer.committed(partitions, timeout=COMMITTED_TIMEOUT_S)
            if self.cfg.group_protocol == "consumer" or self.cfg.assignor == "cooperative-sticky":
                consumer.incremental_assign(found)  # incremental protocols: add to the assignment
            else:
                consumer.assign(found)
        except KafkaException as exc:
            self.log(f"committed() on assign failed, librdkafka fetches instead: {exc}")

    def _on_revoke(self, consumer, partitions, how: str = "revoked") -> None:
        keys = [f"{tp.topic}/{tp.partition}" for tp in partitions]
        if keys and self.revoke_ns is None:
            self.revoke_ns = self.now()
        self.revoked += keys
        self.owned -= set(keys)
        self.log(f"{how} {keys}")

    def _on_lost(self, consumer, partitions) -> None:
        self._on_revoke(consumer, partitions, "lost")

    def close_consumer(self) -> None:
        for c in (self.consumer, self.standalone):
            if c is not None:
                try:
                    c.close()  # leave the group now rather than after session.timeout.ms
                except Exception as exc:  # a consumer of a broken instance may refuse
                    self.log(f"consumer close: {exc}")
        self.consumer = self.standalone = None

    def replace(self) -> None:
        self.close_consumer()
        super().replace()

    # -- one transaction -----------------------------------------------------------------
    def out_key(self, in_key: str) -> str:
        return f"{self.cfg.output_topic}/{in_key.rsplit('/', 1)[1]}"

    def group_metadata(self):
        if self.cfg.group_metadata == "group-only":
            if self.standalone is None:  # never subscribes: generation -1, no member id
                self.standalone = Consumer(self.kafka_conf({"bootstrap.servers": self.cfg.bootstrap,
                                                            "group.id": self.group}))
            return self.standalone.consumer_group_metadata()
        return self.consumer.consumer_group_metadata()

    def step(self) -> None:
        t0 = self.now()
        try:  # wait for one record, then take what else is already fetched, up to max_batch
            msgs = self.consumer.consume(num_messages=1, timeout=0.5)
            if msgs:
                msgs += self.consumer.consume(num_messages=int(self.cfg.max_batch) - 1, timeout=0)
        except KafkaException as exc:  # a fatal consumer error: this instance is done
            self.crash(exc)
            return
        by_key: dict[str, list] = {}
        first: dict[str, int] = {}
        sends: list[tuple[str, int]] = []
        for m in msgs:
            if m.error() is not None:
                self.log(f"consumer error: {m.error()}")
                if m.error().fatal() or m.error().code() == KafkaError._FATAL:
                    # e.g. a static member fenced by a newer one with its group.instance.id
                    self.crash(m.error())
                    return
                continue
            key = f"{m.topic()}/{m.partition()}"
            value = int(m.value())
            by_key.setdefault(key, []).append([m.offset(), value])
            first.setdefault(key, m.offset())
            n = self.attempts.get(value, 0)
            self.attempts[value] = n + 1
            sends.append((self.out_key(key), output_value(value, self.spawn, n)))
        if not sends:
            return
        nxt = [_tp(k, recs[-1][0] + 1) for k, recs in by_key.items()]
        meta = {"transactional_id": self.tid, "group_id": self.group}
        self.emit("invoke", "txn", [["poll"]] + [["send", k, v] for k, v in sends], time_ns=t0, meta=meta)
        offsets: dict[int, int | None] = {}
        abort_on_purpose = self.rng.random() < self.cfg.abort_probability
        mode = self.cfg.offsets
        self._pending = nxt if mode == "transaction" else None
        if mode == "commit-before":  # negative control: the offsets go first, outside the transaction
            try:
                self.consumer.commit(offsets=nxt, asynchronous=False)
            except KafkaException as exc:  # as a careless application would: carry on
                self.log(f"offset commit before the transaction failed: {exc}")

        def completed() -> list:
            return [["poll", by_key]] + [["send", k, [offsets.get(v), v]] for k, v in sends]

        try:
            self._run_txn(sends, offsets, abort_on_purpose)  # its commit sends the offsets first
        except TxnOutcome as out:
            m = dict(meta, abort="chosen") if out.error is None and out.type == "fail" else meta
            self.emit(out.type, "txn", completed(), error=out.error, meta=m)
            if out.replace:
                self.replace()
            elif out.type == "fail":
                self.rewind(first)
            return
        self.emit("ok", "txn", completed(), meta=meta)

    def _commit(self) -> None:
        """send_offsets_to_transaction (unless offsets go through the consumer), then commit."""
        if self._pending is not None:
            self._send_offsets(self._pending)
        super()._commit()

    def _send_offsets(self, tps: list[TopicPartition]) -> None:
        deadline = time.monotonic() + 4 * self.timeout
        while True:
            try:
                self.producer.send_offsets_to_transaction(tps, self.group_metadata(), self.timeout)
                return
            except KafkaException as exc:
                d = classify(exc, "offsets")
                if d.action == Action.RETRY and time.monotonic() < deadline:
                    continue
                if d.action == Action.FAIL:
                    raise TxnOutcome("fail", error_pair(exc), d.replace)
                raise TxnOutcome(*self._abort(error_pair(exc), False))

    def crash(self, err) -> None:
        """The consumer hit a fatal error between transactions (e.g. a static member fenced by
        a newer member with its group.instance.id, KIP-345): record a ``crash`` op (invoke, then
        ``info`` with the error) and replace the instance."""
        meta = {"transactional_id": self.tid, "group_id": self.group, "reason": "fatal consumer error"}
        self.emit("invoke", "crash", None, meta=meta)
        self.emit("info", "crash", None, error=error_pair(err), meta=meta)
        self.log(f"fatal consumer error {err}; replacing the instance")
        self.replace()

    def rewind(self, first: dict[str, int]) -> None:
        """After an abort: seek back to the batch's first offsets, so it is processed again.
        Recorded as a ``rewind`` op (value: {key: offset sought}, docs/history.md) so the
        checkers tell a rewind from a skip; a seek that fails completes it ``info`` and
        replaces the instance."""
        assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        # a key revoked meanwhile is left alone: its new owner starts from the committed offset
        todo = {k: off for k, off in first.items()
                if (k.rsplit("/", 1)[0], int(k.rsplit("/", 1)[1])) in assigned}
        if not todo:
            return
        meta = {"transactional_id": self.tid, "group_id": self.group}
        self.emit("invoke", "rewind", todo, meta=meta)
        for key, off in todo.items():
            try:
                self.consumer.seek(_tp(key, off))
            except KafkaException as exc:
                self.emit("info", "rewind", todo, error=error_pair(exc), meta=meta)
                self.log(f"seek {key}@{off}: {exc}; replacing the instance")
                self.replace()
                return
        self.emit("ok", "rewind", todo, meta=meta)

    def run(self) -> None:
        while not self.stopping.is_set():
            if self.producer is None and not self.start_instance():
                time.sleep(0.5)
                continue
            self.step()
        self.close_consumer()
        self.control(done=True)
