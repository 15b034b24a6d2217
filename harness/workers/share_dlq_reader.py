"""The share workload's dead-letter queue reader (role ``share-dlq-reader``; KIP-1191, Kafka 4.4.0).

A share group whose group config ``errors.deadletterqueue.topic.name`` names a topic gets a
*DLQ record* there for each record it archives because a member rejected it or its delivery
count reached ``share.delivery.count.limit``. The broker writes it (asynchronously, not
atomically with the share-group state: KIP-1191 allows a second DLQ record for one record)
with these headers, each a UTF-8 string (4.4.0's ShareGroupDLQStateManager):

* ``__dlq.errors.topic``, ``__dlq.errors.partition``, ``__dlq.errors.offset``: the record it
  stands for;
* ``__dlq.errors.group``: the share group;
* ``__dlq.errors.delivery.count``: its delivery count, when known;
* ``__dlq.errors.message``: why ("Offset rejected by client.", "Offset delivery count
  exceeded the threshold.");

and, with ``errors.deadletterqueue.copy.record.enable=true``, the original key, value and
headers.

After the share consumers stopped (harness.workloads.share ``Share.read_dlq``) this worker
reads every partition of ``topic`` from its start to the high watermark it found first
(read_uncommitted: the broker's DLQ writes are not transactional) and records one op:

* ``dlq-read``: invoke value ``{"topic": topic}``; completion ``ok`` (read to the end) or
  ``info`` (the deadline came first: what was read), value ``{key: [[dlq_offset,
  {header: text}, value text or null], ...]}`` (key: ``topic/partition`` of the DLQ topic),
  meta ``{"complete", "high", "source_group_id"}``.

and a ``{"ctl": {"dlq": {"records", "complete"}}}`` line. Config: ``ShareDlqReaderConfig``.
"""
from __future__ import annotations

import time

from harness.workers.base import Worker
from harness.workers.configs import ShareDlqReaderConfig

DLQ_ROLE = "share-dlq-reader"  # harness.workers.configs.ROLE_CONFIGS names it too
#: the header names of a DLQ record (KIP-1191; 4.4.0)
HEADERS = ("__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset", "__dlq.errors.group",
           "__dlq.errors.delivery.count", "__dlq.errors.message")


def _text(b) -> str | None:
    if b is None:
        return None
    if isinstance(b, str):
        return b
    return bytes(b).decode("utf-8", errors="replace")


def dlq_record(msg) -> list:
    """``[offset, {header: text}, value text or null]`` of a confluent-kafka Message (the
    ``dlq-read`` op's form; headers outside HEADERS are kept too, the last of a name wins)."""
    headers = {str(k): _text(v) for k, v in (msg.headers() or [])}
    return [msg.offset(), headers, _text(msg.value())]


class ShareDlqReaderWorker(Worker):
    Config = ShareDlqReaderConfig

    def meta(self, **extra) -> dict:
        return {"source_group_id": self.cfg.source_group_id, **extra}

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        deadline = time.monotonic() + self.cfg.timeout_s
        self.emit("invoke", "dlq-read", {"topic": self.cfg.topic}, meta=self.meta())
        c = Consumer(self.kafka_conf({
            "bootstrap.servers": self.cfg.bootstrap, "group.id": self.cfg.group_id,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted", "enable.partition.eof": False,
            "fetch.wait.max.ms": 100, "socket.timeout.ms": 10000}))
        parts: list[int] = []
        high: dict[str, int] = {}
        low: dict[str, int] = {}
        out: dict[str, list] = {}
        positions: dict[str, int] = {}
        try:
            while not parts and time.monotonic() < deadline and not self.stopping.is_set():
                try:
                    md = c.list_topics(self.cfg.topic, timeout=5).topics.get(self.cfg.topic)
                    if md is not None and md.error is None:
                        parts = sorted(md.partitions)
                except Exception as exc:  # noqa: BLE001 - a broker still recovering: retry
                    self.log(f"metadata of {self.cfg.topic}: {exc}")
                if not parts:
                    time.sleep(0.5)
            keys = [f"{self.cfg.topic}/{p}" for p in parts]
            for p, key in zip(parts, keys):
                while key not in high and time.monotonic() < deadline and not self.stopping.is_set():
                    try:
                        low[key], high[key] = c.get_watermark_offsets(TopicPartition(self.cfg.topic, p),
                                                                      timeout=5, cached=False)
                    except Exception as exc:  # noqa: BLE001 - as above
                        self.log(f"watermarks of {key}: {exc}")
                        time.sleep(0.5)
            c.assign([TopicPartition(self.cfg.topic, p, OFFSET_BEGINNING) for p in parts])

            def done(k: str) -> bool:
                return k in high and (high[k] <= low[k] or positions.get(k, -1) >= high[k])

            while keys and not all(done(k) for k in keys) and time.monotonic() < deadline \
                    and not self.stopping.is_set():
                for m in c.consume(500, timeout=0.5):
                    if m.error() is not None:
                        self.log(f"DLQ read error: {m.error()}")
                        continue
                    out.setdefault(f"{m.topic()}/{m.partition()}", []).append(dlq_record(m))
                pos = c.position([TopicPartition(self.cfg.topic, p) for p in parts])
                positions = {f"{tp.topic}/{tp.partition}": tp.offset for tp in pos}
            complete = bool(keys) and all(done(k) for k in keys)
        finally:
            c.close()
        n = sum(len(v) for v in out.values())
        self.emit("ok" if complete else "info", "dlq-read", out,
                  error=None if complete else ["INCOMPLETE", f"read {n} DLQ records; not every partition to "
                                                             f"its end (high {high}, positions {positions})"],
                  meta=self.meta(complete=complete, high=high))
        self.control(dlq={"records": n, "complete": complete})
