"""An exactly-once consume-transform-produce service, written as a user writes one.

One file, confluent-kafka only: it knows nothing of the harness that tests it. It reads
``--input`` with read_committed, writes each record to ``--output`` (same key, same value, same
partition number when the output has it) and commits its input offsets inside the same
transaction (``send_offsets_to_transaction``, KIP-98 / KIP-447), so that an input is in the output
exactly once whatever instance dies when.

    python copy_service.py --bootstrap HOST:PORT --input in --output out --group copy \
        --transactional-id copy-0 [--client-properties FILE] [--commit-offsets-outside-txn] \
        [--group-protocol classic|consumer] [--assignor NAME]

``--client-properties`` reads ``key=value`` lines (bootstrap.servers, security.protocol, sasl.*,
ssl.*) for both clients. ``--group-protocol consumer`` joins with KIP-848's protocol (Kafka 4.0+:
the session timeout is then the brokers', librdkafka refuses ``session.timeout.ms``);
``--assignor`` names the assignor (classic: range, cooperative-sticky; consumer: uniform, range;
empty: the default). ``--commit-offsets-outside-txn`` is the classic mistake, kept as the
negative control: the transaction commits only the outputs, and the consumer commits its offsets
itself, outside it (``enable.auto.commit``, every 5 s); an instance killed restarts from offsets
up to 5 s old, re-reads records whose outputs are already committed and writes them again.

Exit codes: 0 after SIGTERM (the current transaction finished first), 3 when fenced by a newer
instance with the same transactional.id or group.instance.id (a zombie) or on any fatal error.
"""
import argparse
import signal
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def read_properties(path):
    conf = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                conf[k.strip()] = v.strip()
    return conf


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap")
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--transactional-id", required=True)
    ap.add_argument("--client-properties")
    ap.add_argument("--commit-offsets-outside-txn", action="store_true")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic")
    ap.add_argument("--assignor", default="")
    a = ap.parse_args()

    common = read_properties(a.client_properties) if a.client_properties else {}
    if a.bootstrap:
        common["bootstrap.servers"] = a.bootstrap
    consumer = Consumer({
        **common, "group.id": a.group,
        "isolation.level": "read_committed",   # never read records of aborted transactions
        # offsets are committed with the transaction; the broken variant lets the consumer commit
        "enable.auto.commit": a.commit_offsets_outside_txn, "auto.commit.interval.ms": 5000,
        "auto.offset.reset": "earliest",
        # static membership: a restarted instance takes its partitions back at once instead of
        # the whole group waiting out the dead member's session
        "group.instance.id": a.transactional_id,
        # classic: the member's own session timeout; consumer (KIP-848): the brokers' (refused here)
        **({"session.timeout.ms": 10000} if a.group_protocol == "classic" else {"group.protocol": "consumer"}),
        **({"partition.assignment.strategy" if a.group_protocol == "classic" else "group.remote.assignor": a.assignor}
           if a.assignor else {}),
    })
    producer = Producer({**common, "transactional.id": a.transactional_id})
    producer.init_transactions()               # fences any older instance with this id
    consumer.subscribe([a.input])

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

    def rewind():
        """After an abort: go back to the last committed offsets, so the batch is read again."""
        for tp in consumer.committed(consumer.assignment(), timeout=10):
            consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))

    out_partitions = None
    while not stopping:
        msgs = []
        for m in consumer.consume(a.batch, timeout=0.5):
            if m.error() is None:
                msgs.append(m)
            elif m.error().fatal() or m.error().code() == KafkaError._FATAL:
                # e.g. fenced by a newer instance with our group.instance.id (KIP-345): the
                # consumer reports it as code _FATAL with fatal() False
                # (confluent-kafka-python#869); it never consumes again, so exit and be restarted
                print(f"copy_service: fatal consumer error: {m.error()}", file=sys.stderr)
                return 3
        if not msgs:
            continue
        if out_partitions is None:
            md = producer.list_topics(a.output, timeout=10)
            out_partitions = len(md.topics[a.output].partitions)
        producer.begin_transaction()
        try:
            for m in msgs:
                p = m.partition() if m.partition() < out_partitions else None
                kw = {"partition": p} if p is not None else {}
                producer.produce(a.output, key=m.key(), value=m.value(), **kw)
            if not a.commit_offsets_outside_txn:
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata())
            producer.commit_transaction()
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort() or err.retriable():
                # discard the batch's outputs and read it again: the outputs are rewritten in
                # the next transaction, the aborted ones are never visible to read_committed
                try:
                    producer.abort_transaction()
                except KafkaException as abort_err:  # cannot abort: start over as a new instance
                    print(f"copy_service: fatal: abort failed: {abort_err.args[0]}", file=sys.stderr)
                    return 3
                rewind()
                continue
            print(f"copy_service: fatal: {err}", file=sys.stderr)
            return 3
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
