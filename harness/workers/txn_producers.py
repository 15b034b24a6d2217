"""Many transactional producers in one worker process (the ``txn-producers`` role).

One OS process runs ``len(transactional_ids)`` producer instances, one thread each, so that a
scenario can keep 16 to 64 transactions in flight on a 2-core machine: a producer spends most
of a transaction waiting for the brokers (AddPartitionsToTxn, Produce, EndTxn; KIP-98), and
confluent-kafka releases the GIL while it waits. Each thread is a member: a
harness.workers.retire.RetirableTxnProducer with its own ``transactional.id``, its own
``confluent_kafka.Producer`` and one transaction at a time, as Kafka requires. Members write
the txn-producer's history format unchanged (``init`` and ``txn`` ops); each member instance
is its own logical process: the worker protocol's ``proc`` field is a local instance number,
and this process hands out 0, 1, 2, ... across all members (harness.run.pool maps every
(worker spawn, local number) pair to a history process never reused).

Config: ``harness.workers.configs.TxnProducersConfig`` (its fields, defaults and units).

Stop (a ``stop`` line or stdin closed): every member finishes its transaction, then the worker
writes ``{"ctl": {"done": true, ...}}`` and exits. A SIGKILLed worker leaves its members'
in-flight ops without completions; the checkers read them as ``info`` (docs/history.md). Retirement
(a zombie fault, harness.workers.retire): each member exits once its instance is fenced, so
the replacement worker's members keep their transactional.ids.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

from harness.workers.base import Worker
from harness.workers.retire import Retirable, RetirableTxnProducer
from harness.workers.configs import TxnProducersConfig

#: values of one worker spawn (harness.workloads.txn_queue.VALUE_STRIDE); split among members
VALUE_STRIDE = 100_000_000


class StopFlag:
    """A member's stop signal: set on its own (its instance was fenced after retirement) or
    through the worker's shared ``stopping`` event. Quacks like the threading.Event it replaces."""

    def __init__(self, shared: threading.Event):
        self.shared = shared
        self.own = threading.Event()

    def is_set(self) -> bool:
        return self.own.is_set() or self.shared.is_set()

    def set(self) -> None:
        self.own.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self.shared.wait(timeout) or self.own.is_set()


class Member(RetirableTxnProducer):
    """One producer instance of a TxnProducersWorker; shares the worker's output and stop signal."""

    def __init__(self, host: "TxnProducersWorker", cfg: dict[str, Any], index: int):
        super().__init__(cfg)
        self.host, self.index = host, index
        self.stopping = StopFlag(host.stopping)
        self.retired = host.retired
        self._out_lock = host._out_lock
        self.proc = host.next_local()
        self.value_limit = self.cfg.value_base + self.cfg.value_span

    def _watch_stdin(self) -> None:
        """The worker reads stdin; a member never does."""

    def new_instance(self) -> None:
        self.proc = self.host.next_local()

    def choose_sends(self) -> list[tuple[str, int]]:
        keys = self.cfg.keys
        top = min(self.cfg.max_sends, len(keys))
        n = self.rng.randint(min(self.cfg.min_sends, top), top)
        sends = [(key, self.next_value + i) for i, key in enumerate(self.rng.sample(keys, n))]
        self.next_value += n
        return sends

    def run(self) -> None:
        think = float(self.cfg.think_ms) / 1000
        top = self.cfg.max_sends
        while not self.stopping.is_set():
            if self.next_value + top > self.value_limit:
                self.log(f"{self.tid}: value slice used up; this member stops")
                break
            if self.producer is None and not self.init():
                self.stopping.wait(0.5)  # an init that failed: the cluster needs a moment
                continue
            self.txn()
            if think and self.stopping.wait(think):
                break


class TxnProducersWorker(Retirable, Worker):
    """The ``txn-producers`` role: one thread per transactional.id in ``self.cfg.transactional_ids``."""
    Config = TxnProducersConfig


    def __init__(self, cfg: dict[str, Any]):
        super().__init__(cfg)
        self._locals = itertools.count()
        self._locals_lock = threading.Lock()
        ids = list(self.cfg.transactional_ids)
        if not ids:
            raise ValueError("txn-producers: transactional_ids is empty")
        span = VALUE_STRIDE // len(ids)
        self.members = [
            Member(self, self.cfg.model_copy(update={"transactional_id": tid, "seed": self.cfg.seed * 1000 + j,
                                                     "value_base": self.cfg.value_base + j * span,
                                                     "value_span": span}), j)
            for j, tid in enumerate(ids)
        ]

    def next_local(self) -> int:
        """The next local instance number (the worker protocol's ``proc``), unique in this process."""
        with self._locals_lock:
            return next(self._locals)

    def run(self) -> None:
        threads = [threading.Thread(target=m.run, name=f"member-{m.index}", daemon=True) for m in self.members]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.control(done=True, next_values={m.tid: m.next_value for m in self.members})
