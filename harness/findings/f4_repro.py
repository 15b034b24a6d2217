#!/usr/bin/env python3
"""Finding F4, standalone: a librdkafka consumer whose group rebalances while another
producer's transaction holds pending offsets for one of its partitions starts that partition
at ``auto.offset.reset`` instead of the group's committed offset. With ``earliest`` a
consume-transform-produce service processes the partition again from its first offset
(duplicates); with ``latest`` it skips everything up to the end (loss).

Why (librdkafka 2.16.0, src/rdkafka_assignment.c and src/rdkafka_request.c): a read_committed
consumer fetches committed offsets with require_stable (KIP-447). While a transaction with a
TxnOffsetCommit for the partition is open, the group coordinator answers
UNSTABLE_OFFSET_COMMIT with offset -1 and the client retries the request, but only while the
assignment version is unchanged. When a rebalance changes it, the answer that arrives after
the new assignment goes to ``rd_kafka_assignment_apply_offsets``, which puts the partition back
on the pending list *with the answer's offset*, -1 read as ``RD_KAFKA_OFFSET_INVALID``;
``rd_kafka_assignment_serve_pending`` starts a partition whose offset is INVALID at once, and
the fetcher applies auto.offset.reset.

Needs only confluent-kafka, the standard library and a Kafka cluster. One try, with fresh
names::

    setup   topic T (2 partitions), RECORDS records in each; group G
    txn 1   send_offsets_to_transaction(T-0 @ COMMITTED, T-1 @ COMMITTED, G), commit
    txn 2   another transactional.id: send_offsets_to_transaction(T-0 @ COMMITTED+10, T-1 ..., G)
            and leave it open (the zombie of a replaced processor, in a real pipeline)
    C1      joins G, read_committed, auto.offset.reset=earliest: gets both partitions, waits
            (its OffsetFetch answers UNSTABLE_OFFSET_COMMIT, it retries)
    C2      joins G after HOLD_S: the group rebalances, C1 keeps T-0, C2 gets T-1
    observe OBSERVE_S, then abort txn 2, observe 5 s more
    check   the first offset each consumer read from each partition: below COMMITTED means it
            started at auto.offset.reset, not at the group's committed offset (reproduced)

Variants (``--variant``): ``rebalance`` (default, the steps above), ``no-rebalance`` (control:
no C2; C1 must wait and start at COMMITTED once txn 2 is aborted), ``no-pending`` (control: no
txn 2; both start at COMMITTED), ``committed-then-assign`` (the workaround: C1 and C2 look the
committed offsets up with ``Consumer.committed()``, which retries UNSTABLE_OFFSET_COMMIT until
its timeout, and assign them explicitly in on_assign).

Options of the group (one setting per run): ``--assignor eager|cooperative-sticky`` (classic
protocol; eager is librdkafka's default range,roundrobin), ``--group-protocol classic|consumer``
(consumer = KIP-848), ``--reset earliest|latest`` (auto.offset.reset). After the abort TAIL more
records go to every partition, so a member started at ``latest`` reads them and its first offset
(RECORDS) shows what it skipped; a first offset above COMMITTED counts as reproduced too.

Usage: ``python f4_repro.py --bootstrap HOST:PORT[,...] [--tries N] [--variant V ...]
[--assignor A] [--group-protocol P] [--reset R] [--json] [--debug-log FILE]``. Prints one line
per try and a summary; ``--json`` prints one JSON object per try and a summary object. Exit code 0 when every try ran (whatever it
showed), 2 on a setup error (the message says what to fix). Versions seen:
docs/findings/F4.md.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

VARIANTS = ("rebalance", "no-rebalance", "no-pending", "committed-then-assign")
#: --assignor: the classic protocol's partition.assignment.strategy (librdkafka's default
#: range,roundrobin is eager; cooperative-sticky is incremental, KIP-429)
ASSIGNORS = {"eager": "range,roundrobin", "cooperative-sticky": "cooperative-sticky"}
#: --group-protocol: classic (JoinGroup/SyncGroup) or consumer (KIP-848, ConsumerGroupHeartbeat;
#: the broker's assignor, incremental; librdkafka refuses session.timeout.ms,
#: heartbeat.interval.ms and partition.assignment.strategy with it)
PROTOCOLS = ("classic", "consumer")
RESETS = ("earliest", "latest")
PARTITIONS = 2
RECORDS = 100
COMMITTED = 50
#: records written to every partition after txn 2's abort, so that a consumer started at
#: ``latest`` (the end of the log, RECORDS) reads something and its first offset shows the skip
TAIL = 10


class SetupError(Exception):
    """The cluster is not usable for the reproducer; the message says why."""


def make_topic(admin: AdminClient, topic: str, brokers: int) -> None:
    rf = min(3, brokers)
    fut = admin.create_topics([NewTopic(topic, PARTITIONS, rf)], operation_timeout=30)[topic]
    try:
        fut.result(timeout=60)
    except KafkaException as exc:
        raise SetupError(f"cannot create topic {topic} (rf {rf}): {exc}") from None


def fill(bootstrap: str, topic: str, start: int = 0, count: int = RECORDS) -> None:
    """``count`` records in every partition (offsets start..start+count-1, value p:i)."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for part in range(PARTITIONS):
        for i in range(start, start + count):
            p.produce(topic, value=f"{part}:{i}".encode(), partition=part)
    if p.flush(30):
        raise SetupError(f"could not write the {count} records per partition of {topic} in 30 s")


def consumer_conf(bootstrap: str, group: str, *, assignor: str = "eager", protocol: str = "classic",
                  reset: str = "earliest") -> dict:
    """The members' settings: read_committed, no auto commit, ``reset`` as auto.offset.reset;
    the classic protocol with ``assignor`` (ASSIGNORS) or the consumer protocol (KIP-848)."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": reset,
            "isolation.level": "read_committed", "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
                     "partition.assignment.strategy": ASSIGNORS[assignor]})
    return conf


def txn_producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                  # txn 2 must stay open while the consumers join: the broker aborts it after this
                  "transaction.timeout.ms": 120000})
    p.init_transactions(30)
    return p


def send_offsets(p: Producer, meta, topic: str, offset: int) -> None:
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition(topic, i, offset) for i in range(PARTITIONS)], meta, 30)


class Member(threading.Thread):
    """One group member polling in its own thread; records the first and last offset it read
    per partition and its assignments (seconds since ``t0``)."""

    def __init__(self, name: str, conf: dict, topic: str, t0: float, lookup: bool):
        super().__init__(daemon=True, name=name)
        self.c = Consumer(conf)
        self.topic, self.t0, self.lookup = topic, t0, lookup
        # cooperative-sticky and the consumer protocol hand over only the added partitions
        self.incremental = (conf.get("group.protocol") == "consumer"
                            or conf.get("partition.assignment.strategy") == "cooperative-sticky")
        self.first: dict[int, list] = {}
        self.last: dict[int, int] = {}
        self.assigned: list = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def _on_assign(self, consumer, parts) -> None:
        if self.lookup:  # the workaround: committed offsets looked up, then assigned explicitly
            parts = consumer.committed(parts, timeout=120)
            (consumer.incremental_assign if self.incremental else consumer.assign)(parts)
        self.assigned.append([round(time.monotonic() - self.t0, 3),
                              [[tp.partition, tp.offset] for tp in parts]])

    def run(self) -> None:
        self.c.subscribe([self.topic], on_assign=self._on_assign)
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                self.errors.append(str(m.error()))
                continue
            part = m.partition()
            self.first.setdefault(part, [m.offset(), round(time.monotonic() - self.t0, 3)])
            self.last[part] = m.offset()
        self.c.close()

    def report(self) -> dict:
        return {"first": {str(k): v for k, v in sorted(self.first.items())},
                "last": {str(k): v for k, v in sorted(self.last.items())},
                "assigned": self.assigned, "errors": self.errors[:5]}


def run_try(args, admin: AdminClient, brokers: int, i: int, variant: str, nonce: str,
            debug_log: logging.Logger | None) -> dict:
    name = f"f4-{nonce}-{i}"
    topic, group = name, f"{name}-g"
    make_topic(admin, topic, brokers)
    fill(args.bootstrap, topic)
    # txn 1 and txn 2 commit for the group without being members (generation -1), as a
    # producer given only the group id does (sendOffsetsToTransaction(offsets, groupId))
    meta_src = Consumer({"bootstrap.servers": args.bootstrap, "group.id": group})
    meta = meta_src.consumer_group_metadata()
    t1 = txn_producer(args.bootstrap, f"{name}-committer")
    send_offsets(t1, meta, topic, COMMITTED)
    t1.commit_transaction(30)
    t2 = None
    if variant != "no-pending":
        t2 = txn_producer(args.bootstrap, f"{name}-open")
        send_offsets(t2, meta, topic, COMMITTED + 10)
    meta_src.close()

    conf = consumer_conf(args.bootstrap, group, assignor=args.assignor, protocol=args.group_protocol,
                         reset=args.reset)
    if debug_log is not None:
        conf.update({"debug": "cgrp,consumer,topic", "logger": debug_log})
    t0 = time.monotonic()
    lookup = variant == "committed-then-assign"
    members = [Member("C1", {**conf, "client.id": f"{name}-C1"}, topic, t0, lookup)]
    members[0].start()
    time.sleep(args.hold_s)
    if variant != "no-rebalance":
        members.append(Member("C2", {**conf, "client.id": f"{name}-C2"}, topic, t0, lookup))
        members[1].start()
    time.sleep(args.observe_s)
    seen_before_abort = {m.name: m.report()["first"] for m in members}
    aborted_at = None
    if t2 is not None:
        t2.abort_transaction(30)
        aborted_at = round(time.monotonic() - t0, 3)
    fill(args.bootstrap, topic, RECORDS, TAIL)
    time.sleep(5)
    for m in members:
        m.stop.set()
    for m in members:
        m.join(30)
    res = {"try": i, "variant": variant, "assignor": args.assignor, "group_protocol": args.group_protocol,
           "reset": args.reset, "topic": topic, "group": group, "committed": COMMITTED,
           "pending": COMMITTED + 10 if t2 is not None else None, "aborted_at": aborted_at,
           "members": {m.name: m.report() for m in members},
           "first_before_abort": seen_before_abort}
    starts = [f[0] for m in members for f in m.first.values()]
    # below the committed offset: the member started at auto.offset.reset (earliest)
    res["below_committed"] = sorted({(m.name, p, f[0]) for m in members for p, f in m.first.items()
                                     if f[0] < COMMITTED})
    # above it: started at auto.offset.reset=latest (the end of the log), COMMITTED..RECORDS-1 skipped
    res["above_committed"] = sorted({(m.name, p, f[0]) for m in members for p, f in m.first.items()
                                     if f[0] > COMMITTED})
    res["reproduced"] = bool(res["below_committed"] or res["above_committed"])
    res["read_anything"] = bool(starts)
    return res


def verdict(res: dict) -> str:
    if res["reproduced"]:
        wrong = res["below_committed"] + res.get("above_committed", [])
        return ("REPRODUCED: started at auto.offset.reset, not at the committed offset " + str(res["committed"])
                + ": " + ", ".join(f"{n} partition {p} at {o}" for n, p, o in wrong))
    firsts = {n: m["first"] for n, m in res["members"].items()}
    return f"not reproduced: first offsets read {firsts}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True, help="bootstrap servers")
    ap.add_argument("--tries", type=int, default=3, help="tries per variant")
    ap.add_argument("--variant", action="append", choices=VARIANTS, help="repeatable; default rebalance")
    ap.add_argument("--hold-s", type=float, default=4.0, help="seconds C1 waits alone (default 4)")
    ap.add_argument("--observe-s", type=float, default=8.0, help="seconds both run before the abort (default 8)")
    ap.add_argument("--assignor", choices=sorted(ASSIGNORS), default="eager",
                    help="classic protocol's assignor (default eager: range,roundrobin)")
    ap.add_argument("--group-protocol", choices=PROTOCOLS, default="classic",
                    help="classic (default) or consumer (KIP-848; --assignor does not apply)")
    ap.add_argument("--reset", choices=RESETS, default="earliest", help="auto.offset.reset (default earliest)")
    ap.add_argument("--json", action="store_true", help="one JSON object per try, then a summary")
    ap.add_argument("--debug-log", help="write librdkafka's cgrp,consumer,topic debug log to this file")
    args = ap.parse_args(argv)
    if args.tries < 1:
        ap.error("--tries must be >= 1")
    if args.group_protocol == "consumer" and args.assignor != "eager":
        ap.error("--assignor applies to --group-protocol classic only (the consumer protocol's assignor is the broker's)")
    variants = args.variant or ["rebalance"]
    debug_log = None
    if args.debug_log:
        debug_log = logging.getLogger("librdkafka")
        handler = logging.FileHandler(args.debug_log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        debug_log.addHandler(handler)
        debug_log.setLevel(logging.DEBUG)
    try:
        admin = AdminClient({"bootstrap.servers": args.bootstrap})
        brokers = len(admin.list_topics(timeout=15).brokers)
    except KafkaException as exc:
        print(f"error: cannot reach the cluster at {args.bootstrap}: {exc}", file=sys.stderr)
        return 2
    nonce = uuid.uuid4().hex[:6]
    summary: dict[str, dict] = {}
    for variant in variants:
        s = summary.setdefault(variant, {"tries": 0, "reproduced": 0, "errors": 0})
        for i in range(args.tries):
            try:
                res = run_try(args, admin, brokers, i, variant, f"{nonce}v{VARIANTS.index(variant)}", debug_log)
            except (SetupError, KafkaException) as exc:
                res = {"try": i, "variant": variant, "error": f"{type(exc).__name__}: {exc}"}
                s["errors"] += 1
            s["tries"] += 1
            s["reproduced"] += bool(res.get("reproduced"))
            if args.json:
                print(json.dumps(res), flush=True)
            else:
                print(f"{variant} try {i}: {res.get('error') or verdict(res)}", flush=True)
    if args.json:
        print(json.dumps({"summary": summary}), flush=True)
    else:
        for variant, s in summary.items():
            print(f"{variant}: reproduced {s['reproduced']} of {s['tries']} tries"
                  + (f" ({s['errors']} errors)" if s["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
