"""Consumer workers: continuous pollers and the final drain.

Config: ``harness.workers.configs.ConsumerConfig`` (its fields, defaults and units).

Both assign every key from the beginning (an ``assign`` op) and never commit offsets. Each
non-empty ``consume()`` call is one ``poll`` op whose completion lists, per key, the
``[offset, value]`` pairs in the order librdkafka returned them. Empty polls are not recorded:
they carry no information for the checkers and would dominate the history.

The drain (``DrainWorker``) runs after the faults are healed and the producers stopped: it reads
each key until its position reaches the key's high watermark taken at its start (with
read_committed, librdkafka moves the position past control records and aborted data), marks
its ops ``meta.final``, and reports per-key positions in a ``drained`` control message.

The app workload's readers also record its output as ``app-poll`` ops: records of the output
keys (``output_keys``, topics), and rows of a file sink (``output_dirs``, harness.workers.app_files:
committed files only), read every ``files_poll_s`` seconds while the run goes on and once,
to the last committed batch, at the end of the drain.
"""
from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from harness.workers.app_files import FileOutput
from harness.workers.app_match import compile_match
from harness.workers.base import Worker
from harness.workers.configs import ConsumerConfig


def _tp(key: str, offset: int = OFFSET_BEGINNING) -> TopicPartition:
    topic, part = key.rsplit("/", 1)
    return TopicPartition(topic, int(part), offset)


class ConsumerWorker(Worker):
    Config = ConsumerConfig
    final = False

    def consumer(self) -> Consumer:
        return Consumer(self.kafka_conf({
            "bootstrap.servers": self.cfg.bootstrap,
            "group.id": self.cfg.group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": self.cfg.isolation_level,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "socket.timeout.ms": 10000,
            **self.cfg.consumer,
        }))

    def meta(self) -> dict | None:
        meta = {"isolation_level": self.cfg.isolation_level}
        if self.final:
            meta["final"] = True
        return meta

    def assign(self, c: Consumer) -> None:
        keys = self.cfg.keys
        meta = dict(self.meta() or {}, **{"from": "beginning"})
        self.emit("invoke", "assign", keys, meta=meta)
        c.assign([_tp(k) for k in keys])
        self.emit("ok", "assign", keys, meta=meta)

    def poll_once(self, c: Consumer, timeout: float = 0.25) -> dict[str, list]:
        """One consume() call; records it as a poll op when it returned records."""
        t0 = self.now()
        msgs = c.consume(num_messages=500, timeout=timeout)
        by_key: dict[str, list] = {}
        app_by_key: dict[str, list] = {}
        for m in msgs:
            if m.error() is not None:
                self.log(f"consumer error: {m.error()}")
                continue
            if self.output_keys and f"{m.topic()}/{m.partition()}" in self.output_keys:
                app_by_key.setdefault(f"{m.topic()}/{m.partition()}", []).append([m.offset(), self.app_output(m)])
                if self.cfg.dump_output:  # output.verify: the user's verifier reads the records themselves
                    self._dump(m)
                continue
            try:
                value = int(m.value())
            except (TypeError, ValueError):
                self.log(f"foreign record at {m.topic()}/{m.partition()}@{m.offset()}: {m.value()!r}")
                continue
            by_key.setdefault(f"{m.topic()}/{m.partition()}", []).append([m.offset(), value])
        if by_key:
            self.emit("invoke", "poll", [["poll"]], time_ns=t0, meta=self.meta())
            self.emit("ok", "poll", [["poll", by_key]], meta=self.meta())
        if app_by_key:  # the app's output, each record as the input value it names (checkers.finders.app_end_to_end)
            self.emit("invoke", "app-poll", [["poll"]], time_ns=t0, meta=self.meta())
            self.emit("ok", "app-poll", [["poll", app_by_key]], meta=self.meta())
        return by_key

    def _dump(self, m) -> None:
        import json

        def text(b: bytes | None) -> str | None:
            return None if b is None else b.decode("utf-8", "backslashreplace")
        if not hasattr(self, "_dump_file"):
            self._dump_file = open(self.cfg.dump_output, "a", encoding="utf-8")  # closed at exit
        self._dump_file.write(json.dumps({"topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                                          "key": text(m.key()), "value": text(m.value())}) + "\n")
        self._dump_file.flush()

    @property
    def output_keys(self) -> frozenset[str]:
        """The app workload's output keys (``self.cfg.output_keys``): read as app-poll ops."""
        if not hasattr(self, "_output_keys"):
            self._output_keys = frozenset(self.cfg.output_keys or ())
            dirs = self.cfg.output_dirs or {}
            self._match = compile_match(self.cfg.match, self.cfg.base_dir) if self._output_keys or dirs else None
            self.matched, self.unmatched, self.samples = 0, 0, []
            self.files = FileOutput(dirs, self._match) if dirs else None
            self._files_due = 0.0
            self._files_problems = 0
        return self._output_keys

    def poll_files(self, final: bool = False) -> None:
        """Read the app's file sinks (``output_dirs``) when ``files_poll_s`` has passed since the
        last read (always when ``final``): the rows committed since then as one app-poll op."""
        _ = self.output_keys  # the match and the file readers
        if self.files is None or (not final and time.monotonic() < self._files_due):
            return
        self._files_due = time.monotonic() + float(self.cfg.files_poll_s)
        t0 = self.now()
        rows = self.files.poll(final)
        for p in self.files.problems()[self._files_problems:]:
            self.log(f"file sink: {p}")
        self._files_problems = len(self.files.problems())
        if rows:
            self.emit("invoke", "app-poll", [["poll"]], time_ns=t0, meta=self.meta())
            self.emit("ok", "app-poll", [["poll", rows]], meta=self.meta())

    def app_stats(self) -> dict | None:
        """matched / unmatched output records (Kafka and file sinks) and the first samples of
        unmatched ones, for the drain's ``drained`` message; None without app output."""
        _ = self.output_keys
        if not self._output_keys and self.files is None:
            return None
        f = self.files
        return {"matched": self.matched + (f.matched if f else 0),
                "unmatched": self.unmatched + (f.unmatched if f else 0),
                "samples": (self.samples + (f.samples if f else []))[:3]}

    def app_output(self, m) -> int | None:
        """The input value output record ``m`` names (harness.workers.app_match), or None;
        the first three records that name none are kept as samples for the error message."""
        v = self._match(m.key(), m.value())
        if v is None:
            self.unmatched += 1
            if len(self.samples) < 3:
                self.samples.append({"at": f"{m.topic()}/{m.partition()}@{m.offset()}",
                                     "key": repr(m.key())[:120], "value": repr(m.value())[:200]})
        else:
            self.matched += 1
        return v

    def run(self) -> None:
        c = self.consumer()
        try:
            self.assign(c)
            while not self.stopping.is_set():
                self.poll_once(c)
                self.poll_files()
        finally:
            c.close()
        self.control(done=True)


class DrainWorker(ConsumerWorker):
    """Reads every key from the beginning to its end offset; see the module docstring."""

    final = True

    def run(self) -> None:
        c = self.consumer()
        keys = self.cfg.keys
        deadline = time.monotonic() + float(self.cfg.drain_timeout_s)
        high: dict[str, int] = {}
        low: dict[str, int] = {}
        for key in keys:
            while key not in high:
                try:
                    low[key], high[key] = c.get_watermark_offsets(_tp(key), timeout=5, cached=False)
                except Exception as exc:  # a broker still recovering: retry until the deadline
                    if time.monotonic() > deadline:
                        raise
                    self.log(f"watermarks of {key}: {exc}")
        self.assign(c)
        positions: dict[str, int] = {}

        def done(k: str) -> bool:  # an empty log has no position to reach
            return high[k] <= low[k] or positions.get(k, -1) >= high[k]

        try:
            while time.monotonic() < deadline and not self.stopping.is_set():
                self.poll_once(c, timeout=0.5)
                pos = c.position([_tp(k) for k in keys])
                positions = {f"{tp.topic}/{tp.partition}": tp.offset for tp in pos}
                if all(done(k) for k in keys):
                    break
        finally:
            c.close()
        complete = all(done(k) for k in keys)
        self.poll_files(final=True)  # the app stopped before the drain: its sinks are as they end
        self.control(drained=True, complete=complete, high=high, positions=positions, app=self.app_stats())
