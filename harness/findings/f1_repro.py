#!/usr/bin/env python3
"""Finding F1, standalone: librdkafka's abort_transaction() purges a record that may already be
in the log, moves the partition's sequence base past it without an epoch bump, and the next
transaction's record on that partition reuses its sequence number: the broker acknowledges it
as a duplicate of the aborted record, and a committed write is lost.

Needs only confluent-kafka, the standard library, a Kafka cluster of >= 2 brokers reached
through toxiproxy (https://github.com/Shopify/toxiproxy), one proxy per broker, named after the
broker id (``--proxy-name n{id}``; the brokers advertise the proxies' addresses). The one fault
is a toxiproxy ``timeout`` toxic (timeout 0: data dropped, connection kept) on the *downstream*
(broker -> client) stream of the partition leader's proxy: the ProduceRequest reaches the
leader and is written, its response never comes back.

One try, with a fresh transactional.id (see ``run_try``)::

    txn 0  begin, produce W to P, commit                  (connection and sequence established)
    txn 1  begin, toxic on, produce A to P, flush(6 s)    -> A's request times out (socket.timeout.ms
           3 s), A goes back to the partition queue as "possibly persisted"; flush returns 1
           abort_transaction()                            -> A purged (_PURGE_QUEUE), ABORT marker
           toxic off
    txn 2  begin, produce B to P, flush, commit           -> delivery report: offset of A
    check  read_committed from the beginning of P         -> W, but not B: committed write lost

P is a partition whose leader is not the transaction coordinator of the transactional.id
(otherwise the toxic would also hold EndTxn). Variants (``--variant``):

* ``reuse`` (default): the sequence above, F1.
* ``new-producer``: after the abort, close the producer and create a new one with the same
  transactional.id; its init_transactions() bumps the epoch (the harness txn-producer's
  workaround, ``inflight_abort: replace``).
* ``wait-outcomes``: flush until every record has an outcome before aborting: A times out
  after message.timeout.ms (10 s here), librdkafka raises an abortable error that requires an
  epoch bump (KIP-360) and the abort bumps it (the harness txn-producer's default flush).
* ``max-inflight-1``: ``reuse`` with max.in.flight.requests.per.connection=1.
* ``abort-in-flight``: ``reuse``, but abort 1 s after the produce, while A's request is still
  in flight (not yet timed out): abort_transaction waits for it.

Usage: ``python f1_repro.py --bootstrap PROXY_HOST:PORT[,...] [--toxiproxy URL] [--tries N]
[--variant V ...] [--topic T] [--json]``. Prints one line per try and a summary
(``reproduced M of N``); ``--json`` prints one JSON object per try and a summary object.
Exit code 0 when every try ran (whatever its outcome), 2 on a setup error (message says what
to fix). Versions seen: docs/findings/F1.md.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import urllib.error
import urllib.request
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

VARIANTS = ("reuse", "new-producer", "wait-outcomes", "max-inflight-1", "abort-in-flight")
TOXIC = "f1-hold-responses"


class SetupError(Exception):
    """The cluster or toxiproxy is not usable for the reproducer; the message says why."""


# -- toxiproxy's HTTP API (https://github.com/Shopify/toxiproxy#http-api) -------------------
class Toxiproxy:
    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise SetupError(f"toxiproxy {method} {path}: HTTP {exc.code} {exc.read().decode(errors='replace')}") from None
        except OSError as exc:
            raise SetupError(f"toxiproxy API at {self.url} unreachable: {exc}") from None
        return json.loads(raw) if raw.strip() else None

    def proxies(self) -> dict:
        return self._call("GET", "/proxies")

    def hold_responses(self, proxy: str) -> None:
        """``timeout`` toxic, timeout 0, on the downstream stream: requests reach the broker,
        no byte of its answers reaches the client, the connection stays open."""
        self._call("POST", f"/proxies/{proxy}/toxics",
                   {"name": TOXIC, "type": "timeout", "stream": "downstream", "toxicity": 1.0,
                    "attributes": {"timeout": 0}})

    def release(self, proxy: str) -> None:
        try:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{TOXIC}")
        except SetupError as exc:
            if "404" not in str(exc):
                raise


# -- cluster facts -----------------------------------------------------------------------
def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode of ``s`` (UTF-16 code units), as a signed 32-bit int."""
    data, h = s.encode("utf-16-be"), 0
    for j in range(0, len(data), 2):
        h = (31 * h + (data[j] << 8 | data[j + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_of(admin: AdminClient, transactional_id: str) -> int:
    """Broker id of the transaction coordinator: the leader of __transaction_state partition
    Utils.abs(transactionalId.hashCode) % partitions (Kafka TransactionStateManager.partitionFor)."""
    md = admin.list_topics("__transaction_state", timeout=10).topics.get("__transaction_state")
    if md is None or md.error or not md.partitions:
        raise SetupError("__transaction_state does not exist yet (init_transactions creates it)")
    return md.partitions[txn_partition_for(transactional_id, len(md.partitions))].leader


def txn_partition_for(transactional_id: str, partitions: int) -> int:
    """The __transaction_state partition of ``transactional_id``: Utils.abs(hashCode) %
    ``partitions``, where Kafka's Utils.abs maps Integer.MIN_VALUE to 0."""
    h = java_string_hash(transactional_id)
    return 0 if h == -(1 << 31) else abs(h) % partitions


def ensure_topic(admin: AdminClient, topic: str, brokers: int) -> None:
    partitions = max(3, brokers)
    rf = min(3, brokers)
    fut = admin.create_topics([NewTopic(topic, partitions, rf, config={"min.insync.replicas": str(min(2, rf))})],
                              request_timeout=30)[topic]
    try:
        fut.result(30)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise SetupError(f"cannot create topic {topic}: {exc}") from None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=10).topics[topic]
        if not t.error and t.partitions and all(p.leader >= 0 and len(p.isrs) >= min(2, rf)
                                                 for p in t.partitions.values()):
            return
        time.sleep(0.5)
    raise SetupError(f"topic {topic}: not every partition has a leader and an ISR after 60 s")


def partition_not_led_by(admin: AdminClient, topic: str, broker: int) -> tuple[int, int]:
    """(partition, leader) of the lowest partition of ``topic`` whose leader is not ``broker``."""
    parts = admin.list_topics(topic, timeout=10).topics[topic].partitions
    for p in sorted(parts):
        if parts[p].leader not in (-1, broker):
            return p, parts[p].leader
    raise SetupError(f"every partition of {topic} is led by broker {broker}, the transaction "
                     "coordinator: the reproducer needs >= 2 brokers")


# -- one try ---------------------------------------------------------------------------
def producer_conf(bootstrap: str, tid: str, variant: str, debug_log: logging.Logger | None) -> dict:
    conf = {
        "bootstrap.servers": bootstrap,
        "transactional.id": tid,
        "enable.idempotence": True,  # implied by transactional.id; stated for the reader
        "acks": "all",
        "linger.ms": 0,
        # a ProduceRequest whose response is held times out after 3 s (librdkafka caps a
        # request's timeout at socket.timeout.ms) and its record goes back to the queue
        "socket.timeout.ms": 3000,
        # longer than the flush before the abort, so no record times out: no epoch bump
        "message.timeout.ms": 10000,
        "transaction.timeout.ms": 60000,
        "reconnect.backoff.max.ms": 500,
    }
    if variant == "max-inflight-1":
        conf["max.in.flight.requests.per.connection"] = 1
    if debug_log is not None:
        conf.update({"debug": "eos,msg,topic", "logger": debug_log})
    return conf


def new_producer(conf: dict) -> Producer:
    p = Producer(conf)
    p.init_transactions(30)
    return p


def produce_one(p: Producer, topic: str, part: int, value: str, reports: dict) -> None:
    def on_delivery(err, msg):
        reports[value] = (err.name() if err else None, msg.offset() if err is None else None)

    p.produce(topic, value=value.encode(), partition=part, on_delivery=on_delivery)


def read_partition(bootstrap: str, topic: str, part: int, isolation: str, timeout: float = 30) -> dict[int, str]:
    """offset -> value of every data record ``isolation`` ("read_committed" or
    "read_uncommitted") returns from the beginning of topic/part up to its end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"f1-check-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, part, OFFSET_BEGINNING)])
        out: dict[int, str] = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().name() == "_PARTITION_EOF":
                    return out
                raise SetupError(f"consumer error on {topic}/{part}: {m.error()}")
            out[m.offset()] = m.value().decode(errors="replace")
        raise SetupError(f"{isolation} read of {topic}/{part} did not reach the end in {timeout:.0f} s")
    finally:
        c.close()


def run_try(args, admin: AdminClient, proxy: Toxiproxy, i: int, variant: str, nonce: str,
            debug_log: logging.Logger | None) -> dict:
    """One try of ``variant``; returns what it saw (see ``verdict``)."""
    tid = f"f1-repro-{nonce}-{i}"
    conf = producer_conf(args.bootstrap, tid, variant, debug_log)
    p = new_producer(conf)
    coord = coordinator_of(admin, tid)
    part, leader = partition_not_led_by(admin, args.topic, coord)
    proxy_name = args.proxy_name.format(id=leader)
    v = {k: f"f1-{nonce}-{i}-{k}" for k in ("warmup", "aborted", "committed")}
    reports: dict = {}
    res = {"try": i, "variant": variant, "transactional_id": tid, "topic": args.topic,
           "partition": part, "leader": leader, "coordinator": coord, "proxy": proxy_name,
           "values": v}
    t0 = time.monotonic()

    # txn 0: the producer has written to P once, so A is not its first record there
    p.begin_transaction()
    produce_one(p, args.topic, part, v["warmup"], reports)
    p.commit_transaction(30)

    # txn 1: A is written by the leader, its response is held; abort with A undelivered
    p.begin_transaction()
    proxy.hold_responses(proxy_name)
    try:
        produce_one(p, args.topic, part, v["aborted"], reports)
        flush_s = {"wait-outcomes": 60.0, "abort-in-flight": 1.0}.get(variant, 6.0)
        res["undelivered_at_abort"] = p.flush(flush_s)
        res["abort_after_s"] = round(time.monotonic() - t0, 2)
        try:
            p.abort_transaction(60)
        except KafkaException as exc:  # wait-outcomes: the abort may need a retry after the bump
            res["abort_error"] = str(exc)
            p.abort_transaction(60)
    finally:
        proxy.release(proxy_name)
    res["aborted_report"] = reports.get(v["aborted"])

    # txn 2: one record to the same partition, committed
    if variant == "new-producer":
        p.flush(10)
        del p  # destroyed; the next init_transactions fences its epoch
        p = new_producer(conf)
    p.begin_transaction()
    produce_one(p, args.topic, part, v["committed"], reports)
    p.flush(30)
    p.commit_transaction(30)
    res["commit"] = "ok"
    res["committed_report"] = reports.get(v["committed"])
    p.flush(5)
    del p

    committed = read_partition(args.bootstrap, args.topic, part, "read_committed")
    uncommitted = read_partition(args.bootstrap, args.topic, part, "read_uncommitted")
    res["read_committed"] = {o: x for o, x in committed.items() if x.startswith(f"f1-{nonce}-{i}-")}
    res["read_uncommitted"] = {o: x for o, x in uncommitted.items() if x.startswith(f"f1-{nonce}-{i}-")}
    off = (res["committed_report"] or (None, None))[1]
    res["committed_offset"] = off
    res["value_at_committed_offset"] = uncommitted.get(off) if off is not None else None
    res["lost"] = v["committed"] not in committed.values()
    res["aborted_in_log"] = v["aborted"] in uncommitted.values()
    res["seconds"] = round(time.monotonic() - t0, 2)
    return res


def verdict(res: dict) -> str:
    if res["lost"]:
        return (f"LOST: commit ok, delivery report offset {res['committed_offset']}, which holds "
                f"{res['value_at_committed_offset']!r}; read_committed never returns {res['values']['committed']!r}")
    return f"ok: {res['values']['committed']!r} committed and read at offset {res['committed_offset']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True, help="bootstrap servers reached through toxiproxy")
    ap.add_argument("--toxiproxy", default="http://127.0.0.1:8474", help="toxiproxy API URL")
    ap.add_argument("--proxy-name", default="n{id}", help="proxy name of broker {id} (default n{id})")
    ap.add_argument("--topic", default="f1-repro")
    ap.add_argument("--tries", type=int, default=5, help="tries per variant")
    ap.add_argument("--variant", action="append", choices=VARIANTS, help="repeatable; default reuse")
    ap.add_argument("--json", action="store_true", help="one JSON object per try, then a summary")
    ap.add_argument("--debug-log", help="write librdkafka's eos,msg,topic debug log to this file")
    args = ap.parse_args(argv)
    variants = args.variant or ["reuse"]
    if args.tries < 1:
        ap.error("--tries must be >= 1")

    debug_log = None
    if args.debug_log:
        debug_log = logging.getLogger("librdkafka")
        handler = logging.FileHandler(args.debug_log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        debug_log.addHandler(handler)
        debug_log.setLevel(logging.DEBUG)
    try:
        proxy = Toxiproxy(args.toxiproxy)
        known = proxy.proxies()
        admin = AdminClient({"bootstrap.servers": args.bootstrap})
        md = admin.list_topics(timeout=15)
        missing = [args.proxy_name.format(id=b) for b in md.brokers if args.proxy_name.format(id=b) not in known]
        if missing:
            raise SetupError(f"no toxiproxy proxy named {missing} (proxies: {sorted(known)}); "
                             "name one proxy per broker as --proxy-name says")
        ensure_topic(admin, args.topic, len(md.brokers))
    except (SetupError, KafkaException) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    nonce = uuid.uuid4().hex[:6]
    summary: dict[str, dict] = {}
    for variant in variants:
        s = summary.setdefault(variant, {"tries": 0, "reproduced": 0, "errors": 0})
        for i in range(args.tries):
            try:
                res = run_try(args, admin, proxy, i, variant, nonce + variant[:2], debug_log)
            except (SetupError, KafkaException) as exc:
                res = {"try": i, "variant": variant, "error": f"{type(exc).__name__}: {exc}"}
                s["errors"] += 1
            s["tries"] += 1
            s["reproduced"] += bool(res.get("lost"))
            if args.json:
                print(json.dumps(res), flush=True)
            else:
                what = res.get("error") or verdict(res)
                print(f"{variant} try {i}: {what}", flush=True)
    if args.json:
        print(json.dumps({"summary": summary}), flush=True)
    else:
        for variant, s in summary.items():
            print(f"{variant}: reproduced {s['reproduced']} of {s['tries']} tries"
                  + (f" ({s['errors']} errors)" if s["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
