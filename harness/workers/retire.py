"""Retirement: how a client instance learns that a replacement took over its transactional.id.

A zombie fault (nemesis.zombie) pauses a transactional client and starts a replacement with
the same transactional.id. Before pausing it, the controller writes ``retire`` on the old
worker's stdin (harness.run.pool ``Pool.replace_client``); the worker acknowledges with a
``{"ctl": {"retired": true}}`` line. A retired worker behaves like an application that
received ``ProducerFencedException`` (KIP-98; librdkafka ``_FENCED``): when its current
client instance becomes unusable it *exits* instead of registering a new instance, which
would fence its own replacement and start a fencing war. Until then it keeps trying: its
in-flight transaction runs on when it is resumed, and must be fenced. (An instance paused in
the middle of ``init_transactions`` may complete it after the replacement's init: it then is
the newest epoch and fences the replacement, which registers again; the retired worker exits
right after such an init.)
"""
from __future__ import annotations

import sys
import threading
from typing import Any

from harness.workers.txn_producer import TxnProducerWorker


class Retirable:
    """Mixin for a harness.workers.base.Worker: adds ``self.retired`` (a threading.Event) set
    by a ``retire`` line on stdin. List it before the Worker class in the bases."""

    def __init__(self, cfg: dict[str, Any]):
        self.retired = threading.Event()
        super().__init__(cfg)  # type: ignore[call-arg]  # starts the stdin thread below

    def _watch_stdin(self) -> None:
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "stop":
                self.stopping.set()  # type: ignore[attr-defined]
            elif cmd == "retire":
                self.retired.set()
                self.control(retired=True)  # type: ignore[attr-defined]
        self.stopping.set()  # type: ignore[attr-defined]  # stdin closed: the controller is gone


class RetirableTxnProducer(Retirable, TxnProducerWorker):
    """The ``txn-producer`` role: harness.workers.txn_producer.TxnProducerWorker that exits,
    instead of re-registering, once it is retired and its producer instance is lost (fenced).

    It also stamps every ``txn`` completion whose commit was requested with
    ``meta.commit_ns``: when ``commit_transaction`` was first called (ns since the run
    started). A zombie paused inside commit_transaction records its ``ok`` only after it is
    resumed, long after its replacement's ``init``, although its EndTxn reached the
    coordinator before that init; ``commit_ns`` tells the two apart (docs/workloads.md).
    """

    _commit_ns: int | None = None

    def _commit(self) -> None:
        if self._commit_ns is None:
            self._commit_ns = self.now()
        super()._commit()

    def emit(self, type_, f, value, **kw) -> None:
        if f == "txn" and type_ != "invoke":
            if self._commit_ns is not None:
                kw["meta"] = dict(kw.get("meta") or {}, commit_ns=self._commit_ns)
            self._commit_ns = None
        super().emit(type_, f, value, **kw)

    def init(self) -> bool:
        """An instance paused *during* init_transactions may complete it after its replacement
        did (a legitimate epoch bump that fences the replacement). A retired worker then exits
        at once rather than fight its replacement; returns False so that no transaction runs."""
        ok = super().init()
        if ok and self.retired.is_set():
            self.log("retired, yet registered a new instance (paused mid-init): exiting")
            self.stopping.set()
            return False
        return ok

    def replace(self) -> None:
        super().replace()
        if self.retired.is_set():
            self.log("retired: the producer instance is gone (fenced); exiting instead of "
                     "registering a new one, which would fence the replacement")
            self.stopping.set()
