"""An exactly-once consume-transform-produce service, written as a user writes one.

One file, confluent-kafka only: it knows nothing of the harness that tests it. It reads
``--input`` with read_committed, writes each record to ``--output`` (same key, same value, same
partition number when the output has it) and commits its input offsets inside the same
transaction (``send_offsets_to_transaction``, KIP-98 / KIP-447), so that an input is in the output
exactly once whatever instance dies when.

    python copy_service.py --bootstrap HOST:PORT --input in --output out --group copy \
        --transactional-id copy-0 [--client-properties FILE] [--commit-offsets-outside-txn] \
        [--group-protocol classic|consumer] [--assignor NAME] [--debug CONTEXTS]

``--client-properties`` reads ``key=value`` lines (bootstrap.servers, security.protocol, sasl.*,
ssl.*) for both clients. ``--group-protocol consumer`` joins with KIP-848's protocol (Kafka 4.0+:
the session timeout is then the brokers', librdkafka refuses ``session.timeout.ms``);
``--assignor`` names the assignor (classic: range, cooperative-sticky; consumer: uniform, range;
empty: the default). ``--commit-offsets-outside-txn`` is the classic mistake, kept as the
negative control: the transaction commits only the outputs, and the consumer commits its offsets
itself, outside it (``enable.auto.commit``, every 5 s); an instance killed restarts from offsets
up to 5 s old, re-reads records whose outputs are already committed and writes them again.

A transaction that fails or takes over 5 s, and every SIGTERM (the stacks of all threads, through
faulthandler), are logged to stderr.

Its transactions time out after 30 s (``transaction.timeout.ms``; ``--client-properties`` may set
another). A transactional call that has not returned ``STUCK_AFTER_S`` after that timeout (which
bounds each of them) ends the process with exit code 3, as a deployment's liveness check would,
after a line naming the call and the client's version: librdkafka 2.10.0+ can block in
``send_offsets_to_transaction`` for good once the group coordinator's broker was decommissioned
(confluentinc/librdkafka#5511; the call's timeout is not enforced, #5456), and a restarted
instance carries on where the stuck one was fenced.

Exit codes: 0 after SIGTERM (the current transaction finished first), 3 when fenced by a newer
instance with the same transactional.id or group.instance.id (a zombie) or on any fatal error.
"""
import argparse
import faulthandler
import os
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition, libversion

#: seconds past transaction.timeout.ms after which a transactional call is taken as stuck
STUCK_AFTER_S = 15


class CallWatch:
    """Runs transactional calls and ends the process when one has not returned within
    ``bound_s`` (module docstring): the call cannot be interrupted from Python."""

    def __init__(self, bound_s, timeout_ms):
        self.bound_s, self.timeout_ms = bound_s, timeout_ms
        self.call, self.since = None, 0.0
        threading.Thread(target=self._watch, daemon=True).start()

    def __call__(self, name, fn, *args):
        self.call, self.since = name, time.monotonic()
        try:
            return fn(*args)
        finally:
            self.call = None

    def _watch(self):
        while True:
            time.sleep(1.0)
            call, took = self.call, time.monotonic() - self.since
            if call is not None and took > self.bound_s:
                print(f"copy_service: {call} has not returned after {took:.0f} s, past its timeout "
                      f"(transaction.timeout.ms {self.timeout_ms}; librdkafka {libversion()[0]}): "
                      "exiting to be restarted", file=sys.stderr, flush=True)
                faulthandler.dump_traceback(all_threads=True)
                os._exit(3)


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
    ap.add_argument("--debug", default="", help="librdkafka debug contexts for both clients (e.g. eos,cgrp)")
    a = ap.parse_args()

    common = read_properties(a.client_properties) if a.client_properties else {}
    if a.bootstrap:
        common["bootstrap.servers"] = a.bootstrap
    if a.debug:
        common["debug"] = a.debug
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
    pconf = {"transaction.timeout.ms": 30000, **common, "transactional.id": a.transactional_id}
    producer = Producer(pconf)
    timeout_ms = int(pconf["transaction.timeout.ms"])
    watch = CallWatch(timeout_ms / 1000 + STUCK_AFTER_S, timeout_ms)
    producer.init_transactions()               # fences any older instance with this id
    consumer.subscribe([a.input])

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    # the handler above runs only once the main thread is back in Python: a stop that finds the
    # service blocked inside a client call gets every thread's stack on stderr at once, so a hang
    # shows where it is (chain: the handler above still runs)
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)

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
        started = time.monotonic()
        try:
            for m in msgs:
                p = m.partition() if m.partition() < out_partitions else None
                kw = {"partition": p} if p is not None else {}
                producer.produce(a.output, key=m.key(), value=m.value(), **kw)
            if not a.commit_offsets_outside_txn:
                # one call a line: a stack dumped on SIGTERM then names the call that blocks
                assigned = consumer.assignment()
                offsets = consumer.position(assigned)
                group_metadata = consumer.consumer_group_metadata()
                watch("send_offsets_to_transaction", producer.send_offsets_to_transaction, offsets,
                      group_metadata)
            watch("commit_transaction", producer.commit_transaction)
            if time.monotonic() - started > 5:
                print(f"copy_service: a transaction took {time.monotonic() - started:.1f} s",
                      file=sys.stderr, flush=True)
        except KafkaException as e:
            err = e.args[0]
            print(f"copy_service: transaction of {len(msgs)} failed after "
                  f"{time.monotonic() - started:.1f} s: {err}", file=sys.stderr, flush=True)
            if err.txn_requires_abort() or err.retriable():
                # discard the batch's outputs and read it again: the outputs are rewritten in
                # the next transaction, the aborted ones are never visible to read_committed
                try:
                    started = time.monotonic()
                    watch("abort_transaction", producer.abort_transaction)
                    print(f"copy_service: aborted in {time.monotonic() - started:.1f} s",
                          file=sys.stderr, flush=True)
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
