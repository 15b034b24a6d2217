#!/usr/bin/env python3
"""The Kafka-client side of finding F2's driver (harness/findings/f2.py): a process in the
client namespace that answers one JSON request per stdin line with one JSON reply per stdout
line (``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``), so that the
driver can kill a broker between a transaction's writes and its commit. confluent-kafka and
the standard library only.

Requests (``cmd`` plus):
``create_topic`` name, assignment (list of replica lists, first = preferred leader), configs;
``coordinator`` transactional_id -> broker id of its transaction coordinator;
``init`` name, transactional_id, optional transaction_timeout_ms (default 60000) (a
transactional producer, init_transactions);
``begin`` name; ``produce`` name, topic, partition, value -> offset (waits for the ack);
``commit`` name; ``abort`` name; ``close`` name;
``read`` topic, partition, isolation -> {"records": {offset: value}, "low", "high"} (high is
the last stable offset for read_committed: ListOffsets with isolation level READ_COMMITTED).
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from f1_repro import coordinator_of, read_partition  # noqa: E402


class Client:
    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.producers: dict[str, Producer] = {}

    def create_topic(self, name: str, assignment: list[list[int]], configs: dict) -> str:
        fut = self.admin.create_topics([NewTopic(name, len(assignment), replica_assignment=assignment, config=configs)],
                                       request_timeout=30)[name]
        fut.result(30)
        return "created"

    def coordinator(self, transactional_id: str) -> int:
        return coordinator_of(self.admin, transactional_id)

    def init(self, name: str, transactional_id: str, transaction_timeout_ms: int = 60000) -> str:
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": transactional_id,
                      "acks": "all", "linger.ms": 0,
                      # librdkafka refuses a message timeout above the transaction timeout
                      "message.timeout.ms": min(30000, transaction_timeout_ms),
                      "transaction.timeout.ms": transaction_timeout_ms})
        p.init_transactions(60)
        self.producers[name] = p
        return transactional_id

    def begin(self, name: str) -> None:
        self.producers[name].begin_transaction()

    def produce(self, name: str, topic: str, partition: int, value: str) -> int:
        p, box = self.producers[name], {}
        p.produce(topic, value=value.encode(), partition=partition,
                  on_delivery=lambda err, msg: box.update(err=err, offset=msg.offset()))
        p.flush(40)
        if "err" not in box:
            raise RuntimeError(f"no delivery report for {value} in 40 s")
        if box["err"] is not None:
            raise RuntimeError(f"delivery of {value} failed: {box['err']}")
        return box["offset"]

    def commit(self, name: str) -> str:
        self.producers[name].commit_transaction(60)
        return "committed"

    def abort(self, name: str) -> str:
        self.producers[name].abort_transaction(60)
        return "aborted"

    def close(self, name: str) -> None:
        p = self.producers.pop(name)
        p.flush(5)

    def read(self, topic: str, partition: int, isolation: str) -> dict:
        records = read_partition(self.bootstrap, topic, partition, isolation)
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"f2-wm-{uuid.uuid4().hex[:6]}",
                      "isolation.level": isolation, "enable.auto.commit": False})
        try:
            low, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=20, cached=False)
        finally:
            c.close()
        return {"records": records, "low": low, "high": high}


def main() -> None:
    client = Client(sys.argv[1])
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        cmd = req.pop("cmd")
        t0 = time.monotonic()
        try:
            reply = {"ok": True, "result": getattr(client, cmd)(**req)}
        except (KafkaException, RuntimeError, Exception) as exc:  # answered, the driver decides
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        reply["seconds"] = round(time.monotonic() - t0, 3)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
