"""The harness's producer at full speed, one process per measurement (``python -m harness.bench.producer CFG``).

What harness.bench.eos_cost sets against kafka-producer-perf-test: the same loop as
ProducerPerformance (send as fast as the client takes records; a transactional producer
commits once ``commit_interval_ms`` has passed since it began the transaction, and
commit_transaction blocks, as the Java producer's commitTransaction does), with
confluent-kafka (librdkafka), the client every harness worker uses.

CFG is JSON: ``bootstrap``, ``topic``, ``mode`` ("plain": acks=all without idempotence;
"idempotent"; "txn"), ``commit_interval_ms`` (txn only), ``record_bytes``, ``seconds``
(measured), ``warmup_s`` (sent before the measurement starts, not counted), ``producer``
(extra librdkafka settings), ``transactional_id``.

Prints one JSON line: {"records" (acknowledged in the measured window), "seconds" (from the
window's start until every record sent in it was acknowledged, or committed), "records_per_s",
"mb_per_s" (MiB/s of values, as perf-test's MB/sec), "p50_ms", "p99_ms" (produce() to delivery
report, librdkafka's ``Message.latency()``), "transactions", "errors", "cpu_s" (user + sys of
this process)}. Exits 1 with a one-line error when the producer fails.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
from confluent_kafka import KafkaException, Producer

MODES = ("plain", "idempotent", "txn")


def conf(cfg: dict) -> dict:
    """librdkafka settings of a mode: acks=all and linger.ms=5 (the Java producer's default
    since Kafka 4.0, KIP-1030) for all three, idempotence for idempotent and txn, and a send
    queue of 32 MiB, the Java producer's ``buffer.memory``: at full speed a record's latency is
    mostly its wait in that queue, so the two clients' latencies compare only at equal sizes."""
    mode = cfg["mode"]
    c = {"bootstrap.servers": cfg["bootstrap"], "acks": "all", "linger.ms": 5,
         "enable.idempotence": mode != "plain", "queue.buffering.max.kbytes": 32768}
    if mode == "txn":
        c["transactional.id"] = cfg.get("transactional_id", "eosc-bench-txn")
    c.update(cfg.get("producer") or {})
    return c


def run(cfg: dict) -> dict:
    mode = cfg["mode"]
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    txn = mode == "txn"
    interval = float(cfg.get("commit_interval_ms") or 100) / 1000
    topic, payload = cfg["topic"], os.urandom(int(cfg["record_bytes"]))
    p = Producer(conf(cfg))
    state = {"measuring": False, "acked": 0, "errors": 0}
    latencies: list[float] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            state["errors"] += 1
        elif state["measuring"]:
            state["acked"] += 1
            latencies.append(msg.latency())

    if txn:
        p.init_transactions(30)
    cpu0 = time.process_time()
    start = time.monotonic()
    t_measure = start + float(cfg.get("warmup_s", 1))
    t_end = t_measure + float(cfg["seconds"])
    transactions = 0
    if txn:
        p.begin_transaction()
    txn_start = time.monotonic()
    n = 0
    while True:
        now = time.monotonic()
        if now >= t_end:
            break
        if not state["measuring"] and now >= t_measure:
            p.poll(0)  # deliver what was acknowledged before the window
            state["measuring"], t_measure = True, time.monotonic()
        if txn and now - txn_start >= interval:
            p.commit_transaction(30)
            transactions += state["measuring"]
            p.begin_transaction()
            txn_start = time.monotonic()
        try:
            p.produce(topic, payload, on_delivery=on_delivery)
        except BufferError:  # librdkafka's queue is full: wait for deliveries, as send() blocks in Java
            p.poll(0.005)
            continue
        n += 1
        if n % 64 == 0:
            p.poll(0)
    if txn:
        p.commit_transaction(60)
        transactions += 1
    else:
        left = p.flush(60)
        if left:
            raise RuntimeError(f"{left} records not acknowledged within 60 s")
    seconds = time.monotonic() - t_measure
    lat = np.asarray(latencies) * 1000
    acked = state["acked"]
    return {"records": acked, "seconds": round(seconds, 3),
            "records_per_s": round(acked / seconds, 1) if seconds > 0 else 0.0,
            "mb_per_s": round(acked * len(payload) / seconds / 2**20, 3) if seconds > 0 else 0.0,
            "p50_ms": round(float(np.percentile(lat, 50)), 2) if lat.size else None,
            "p99_ms": round(float(np.percentile(lat, 99)), 2) if lat.size else None,
            "transactions": transactions, "errors": state["errors"],
            "cpu_s": round(time.process_time() - cpu0, 3)}


def main() -> None:
    try:
        out = run(json.loads(sys.argv[1]))
    except (KafkaException, RuntimeError, ValueError, KeyError) as exc:
        print(f"bench producer failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
