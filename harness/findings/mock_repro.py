#!/usr/bin/env python3
"""Findings F1, F4 (and F3's client side) on librdkafka's mock cluster: no Kafka, no network
namespaces, no toxiproxy, no root. What a librdkafka maintainer runs with ``pip install confluent-kafka``
alone; docs/findings/F1.md and F4.md say what each shows and what the mock cannot.

The mock cluster is librdkafka's own (src/rdkafka_mock.c, src/rdkafka_mock_handlers.c). Its
control API (src/rdkafka_mock.h) is not exposed by confluent-kafka's Python API, but the wheel's
bundled librdkafka exports it, so this script calls it through ctypes on that same library
(``--lib`` to use another build) and drives the clients with confluent-kafka as the cluster
reproducers do. Functions used, all from rdkafka_mock.h: rd_kafka_mock_cluster_new /
_bootstraps / _destroy, rd_kafka_mock_topic_create, rd_kafka_mock_partition_set_leader,
rd_kafka_mock_coordinator_set, rd_kafka_mock_broker_push_request_error_rtts (a delayed
response), rd_kafka_mock_broker_set_down / _set_up (refused connections),
rd_kafka_mock_push_request_errors_array and rd_kafka_mock_clear_request_errors.

``f1`` (one try): 3 mock brokers, partition P led by broker 2, the transaction coordinator on
broker 1. Transaction 0 writes W to P and commits. Transaction 1: broker 2's next Produce
response is delayed 10 s (the record A is appended at once), 1 s later broker 2 goes down
(connection closed, reconnects refused: A is queued for a retry, possibly persisted), then
``abort_transaction()``, broker 2 up again. Transaction 2 writes B to P and commits. Reproduced
when B's delivery report is a success and a read_committed read of P returns W only (B is
nowhere in the log). Variant ``new-producer`` (control): a new producer instance with the same
transactional.id after the abort (its init_transactions() bumps the epoch).

``f4`` (one try): 1 mock broker, topic T with 2 partitions of 100 records, the group's
committed offsets 50. The pending transactional offset commit is played by errors: every
OffsetFetch is answered UNSTABLE_OFFSET_COMMIT (KIP-447) until the "abort", when the errors
are cleared. C1 joins, C2 joins 4 s later (the rebalance), the errors are cleared at 16 s,
the members stop 10 s later. The members use session.timeout.ms 3000 and retry.backoff.ms
8000 (why: in f4_try). The mock also sets the response's group-level error, so librdkafka
hands the application one "Failed to fetch committed offsets ... unstable offsets" error a
Kafka broker does not cause. Reproduced when a member's first record of a partition is below
50 (earliest) or above it (latest). Variants: ``rebalance``; controls ``no-rebalance`` (no C2) and ``no-pending`` (no
errors). ``--assignor``, ``--group-protocol`` and ``--reset`` as in f4_repro.py.

``f3`` (one try, variant ``fenced``): a static member (group.instance.id) whose next Heartbeat
is answered FENCED_INSTANCE_ID, what Kafka answers the older of two members with one instance id
(KIP-345). Reproduced when poll() returns an error with code ``_FATAL`` and ``fatal()`` False
(confluent-kafka-python issue #869).

Usage: ``python mock_repro.py f1|f3|f4 [--tries N] [--variant V ...] [--json] [--debug-log FILE]
[--lib PATH]``. One line per try and a summary (``--json``: one object per try, then
``{"summary": ...}``). Exit 0 when every try ran, 2 on a setup error (the message says what
to fix).
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import logging
import os
import sys
import threading
import time
import uuid

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

# Kafka protocol numbers (https://kafka.apache.org/protocol): ApiKeys and error codes
PRODUCE, OFFSET_FETCH, HEARTBEAT = 0, 9, 12
UNSTABLE_OFFSET_COMMIT, FENCED_INSTANCE_ID = 88, 82
RD_KAFKA_PRODUCER = 0

F1_VARIANTS = ("reuse", "new-producer")
F4_VARIANTS = ("rebalance", "no-rebalance", "no-pending")
F3_VARIANTS = ("fenced",)
ASSIGNORS = {"eager": "range,roundrobin", "cooperative-sticky": "cooperative-sticky"}


class SetupError(Exception):
    """The mock cluster cannot be used; the message says why."""


def bundled_librdkafka() -> str:
    """The librdkafka shared library confluent-kafka's wheel bundles (confluent_kafka.libs/).
    Raises SetupError when there is none (a build against a system librdkafka: use --lib)."""
    site = os.path.dirname(os.path.dirname(confluent_kafka.__file__))
    found = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
    if not found:
        raise SetupError("no bundled librdkafka in confluent_kafka.libs/; pass --lib /path/to/librdkafka.so")
    return found[0]


class MockCluster:
    """librdkafka's mock cluster with ``brokers`` brokers (ids 1..brokers), owned by a bare
    producer handle created through ctypes on ``lib``. Use as a context manager."""

    def __init__(self, lib: str, brokers: int):
        try:
            self.lib = L = ctypes.CDLL(lib)
        except OSError as exc:
            raise SetupError(f"cannot load {lib}: {exc}") from None
        vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
        for name, res, args in (
                ("rd_kafka_conf_new", vp, []), ("rd_kafka_conf_set", ctypes.c_int, [vp, cp, cp, cp, ctypes.c_size_t]),
                ("rd_kafka_new", vp, [ctypes.c_int, vp, cp, ctypes.c_size_t]),
                ("rd_kafka_destroy", None, [vp]), ("rd_kafka_mock_cluster_new", vp, [vp, ctypes.c_int]),
                ("rd_kafka_mock_cluster_destroy", None, [vp]), ("rd_kafka_mock_cluster_bootstraps", cp, [vp]),
                ("rd_kafka_mock_topic_create", ctypes.c_int, [vp, cp, ctypes.c_int, ctypes.c_int]),
                ("rd_kafka_mock_partition_set_leader", ctypes.c_int, [vp, cp, i32, i32]),
                ("rd_kafka_mock_coordinator_set", ctypes.c_int, [vp, cp, cp, i32]),
                ("rd_kafka_mock_broker_set_down", ctypes.c_int, [vp, i32]),
                ("rd_kafka_mock_broker_set_up", ctypes.c_int, [vp, i32]),
                ("rd_kafka_mock_push_request_errors_array", None,
                 [vp, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]),
                ("rd_kafka_mock_clear_request_errors", None, [vp, ctypes.c_int16])):
            try:
                fn = getattr(L, name)
            except AttributeError:
                raise SetupError(f"{lib} does not export {name} (a librdkafka built without the mock cluster?)") from None
            fn.restype, fn.argtypes = res, args
        # variadic: (mcluster, broker_id, ApiKey, cnt, err0, rtt0, ...); ctypes passes the tail as ints
        self._push_rtts = L.rd_kafka_mock_broker_push_request_error_rtts
        self._push_rtts.restype = ctypes.c_int
        errstr = ctypes.create_string_buffer(512)
        conf = L.rd_kafka_conf_new()
        L.rd_kafka_conf_set(conf, b"log_level", b"4", errstr, 512)  # no notice that it has no bootstrap.servers
        self.rk = L.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, 512)
        if not self.rk:
            raise SetupError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self.mc = L.rd_kafka_mock_cluster_new(self.rk, brokers)
        if not self.mc:
            L.rd_kafka_destroy(self.rk)
            raise SetupError("rd_kafka_mock_cluster_new failed")
        self.bootstrap = L.rd_kafka_mock_cluster_bootstraps(self.mc).decode()

    def __enter__(self) -> "MockCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.lib.rd_kafka_mock_cluster_destroy(self.mc)
        self.lib.rd_kafka_destroy(self.rk)

    def _ok(self, what: str, err: int) -> None:
        if err:
            raise SetupError(f"{what} failed with error {err}")

    def topic(self, name: str, partitions: int, rf: int = 1) -> None:
        self._ok("rd_kafka_mock_topic_create", self.lib.rd_kafka_mock_topic_create(self.mc, name.encode(), partitions, rf))

    def leader(self, topic: str, partition: int, broker: int) -> None:
        self._ok("rd_kafka_mock_partition_set_leader",
                 self.lib.rd_kafka_mock_partition_set_leader(self.mc, topic.encode(), partition, broker))

    def coordinator(self, kind: str, key: str, broker: int) -> None:
        """``kind`` "transaction" or "group"."""
        self._ok("rd_kafka_mock_coordinator_set",
                 self.lib.rd_kafka_mock_coordinator_set(self.mc, kind.encode(), key.encode(), broker))

    def delay_next(self, broker: int, api_key: int, rtt_ms: int) -> None:
        """The broker's next ``api_key`` request is handled at once, its response sent ``rtt_ms`` later."""
        self._ok("rd_kafka_mock_broker_push_request_error_rtts", self._push_rtts(
            ctypes.c_void_p(self.mc), ctypes.c_int32(broker), ctypes.c_int16(api_key), ctypes.c_size_t(1),
            ctypes.c_int(0), ctypes.c_int(rtt_ms)))

    def down(self, broker: int) -> None:
        self._ok("rd_kafka_mock_broker_set_down", self.lib.rd_kafka_mock_broker_set_down(self.mc, broker))

    def up(self, broker: int) -> None:
        self._ok("rd_kafka_mock_broker_set_up", self.lib.rd_kafka_mock_broker_set_up(self.mc, broker))

    def push_errors(self, api_key: int, err: int, count: int) -> None:
        arr = (ctypes.c_int * count)(*([err] * count))
        self.lib.rd_kafka_mock_push_request_errors_array(self.mc, api_key, count, arr)

    def clear_errors(self, api_key: int) -> None:
        self.lib.rd_kafka_mock_clear_request_errors(self.mc, api_key)


def _logger(path: str | None) -> logging.Logger | None:
    if not path:
        return None
    log = logging.getLogger("librdkafka-mock")
    if not log.handlers:
        h = logging.FileHandler(path)
        h.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.DEBUG)
    return log


def _read(bootstrap: str, topic: str, partition: int, isolation: str, end: int = 100) -> dict[int, str]:
    """Every record of the partition as ``isolation`` reads it: {offset: value}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                  "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, partition, 0)])
    out: dict[int, str] = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                break
            continue
        out[m.offset()] = m.value().decode()
    c.close()
    return out


# ---------------------------------------------------------------------------------------- F1

def f1_try(lib: str, i: int, variant: str, nonce: str, log: logging.Logger | None) -> dict:
    name = f"f1m-{nonce}-{i}"
    topic, tid = name, f"{name}-txn"
    with MockCluster(lib, 3) as mc:
        mc.topic(topic, 1, 3)
        mc.leader(topic, 0, 2)
        mc.coordinator("transaction", tid, 1)
        conf = {"bootstrap.servers": mc.bootstrap, "transactional.id": tid, "acks": "all", "linger.ms": 0,
                "socket.timeout.ms": 3000, "message.timeout.ms": 10000, "transaction.timeout.ms": 60000}
        if log is not None:
            conf.update({"debug": "eos,msg,protocol", "logger": log})
        reports: dict[str, list] = {}

        def dr(err, msg):
            reports[msg.value().decode()] = [err.name() if err else None, msg.offset()]

        p = Producer(conf)
        p.init_transactions(10)
        p.begin_transaction()
        p.produce(topic, b"W", partition=0, on_delivery=dr)
        p.commit_transaction(10)
        p.begin_transaction()
        mc.delay_next(2, PRODUCE, 10000)      # A is appended, its response held back
        p.produce(topic, b"A", partition=0, on_delivery=dr)
        time.sleep(1.0)
        mc.down(2)                            # the in-flight request fails, reconnects are refused
        undelivered = p.flush(2)
        p.abort_transaction(10)
        p.poll(0)
        mc.up(2)
        if variant == "new-producer":
            p = Producer(conf)
            p.init_transactions(10)
        p.begin_transaction()
        p.produce(topic, b"B", partition=0, on_delivery=dr)
        p.flush(10)
        p.commit_transaction(10)
        committed = _read(mc.bootstrap, topic, 0, "read_committed")
        uncommitted = _read(mc.bootstrap, topic, 0, "read_uncommitted")
    res = {"try": i, "variant": variant, "undelivered_at_abort": undelivered, "reports": reports,
           "read_committed": committed, "read_uncommitted": uncommitted}
    b_ok = reports.get("B", [None])[0] is None and "B" in reports
    res["reproduced"] = b_ok and "B" not in committed.values() and "B" not in uncommitted.values()
    return res


def f1_verdict(res: dict) -> str:
    if res["reproduced"]:
        return (f"REPRODUCED: B acknowledged at offset {res['reports']['B'][1]}, commit OK, B in no read "
                f"(read_uncommitted {res['read_uncommitted']}, read_committed {res['read_committed']})")
    return f"not reproduced: reports {res['reports']}, read_committed {res['read_committed']}"


# ---------------------------------------------------------------------------------------- F4

class _Member(threading.Thread):
    def __init__(self, name: str, conf: dict, topic: str, t0: float):
        super().__init__(daemon=True, name=name)
        self.c, self.topic, self.t0 = Consumer(conf), topic, t0
        self.first: dict[int, list] = {}
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        self.c.subscribe([self.topic])
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                self.errors.append(m.error().str())
                continue
            self.first.setdefault(m.partition(), [m.offset(), round(time.monotonic() - self.t0, 3)])
        self.c.close()


def f4_try(lib: str, i: int, variant: str, nonce: str, log: logging.Logger | None, args) -> dict:
    name = f"f4m-{nonce}-{i}"
    topic, group = name, f"{name}-g"
    committed = 50
    with MockCluster(lib, 1) as mc:
        mc.topic(topic, 2, 1)
        p = Producer({"bootstrap.servers": mc.bootstrap})
        for part in (0, 1):
            for k in range(100):
                p.produce(topic, f"{part}:{k}".encode(), partition=part)
        p.flush(10)
        # the group's committed offsets, before any member exists (the mock then takes a simple commit)
        c0 = Consumer({"bootstrap.servers": mc.bootstrap, "group.id": group, "enable.auto.commit": False})
        c0.commit(offsets=[TopicPartition(topic, part, committed) for part in (0, 1)], asynchronous=False)
        c0.close()
        if variant != "no-pending":   # the open transaction's pending offsets: UNSTABLE_OFFSET_COMMIT
            mc.push_errors(OFFSET_FETCH, UNSTABLE_OFFSET_COMMIT, 100000)
        conf = {"bootstrap.servers": mc.bootstrap, "group.id": group, "auto.offset.reset": args.reset,
                "isolation.level": "read_committed", "enable.auto.commit": False}
        # The mock holds a rebalance's JoinGroup for session.timeout.ms - 1 s (rdkafka_mock_cgrp.c,
        # rd_kafka_mock_cgrp_classic_rebalance) and librdkafka sends nothing else to the coordinator
        # while a JoinGroup is in flight, so the retried OffsetFetch would go out, and be ignored,
        # between JoinGroup and SyncGroup. A short session and a retry backoff longer than the
        # rebalance keep the old request waiting across it, as a quick rebalance does on Kafka.
        conf.update({"retry.backoff.ms": 8000, "retry.backoff.max.ms": 8000})
        if args.group_protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"session.timeout.ms": 3000, "heartbeat.interval.ms": 500,
                         "partition.assignment.strategy": ASSIGNORS[args.assignor]})
        if log is not None:
            conf.update({"debug": "cgrp,consumer,topic", "logger": log})
        t0 = time.monotonic()
        members = [_Member("C1", {**conf, "client.id": f"{name}-C1"}, topic, t0)]
        members[0].start()
        time.sleep(4)
        if variant != "no-rebalance":
            members.append(_Member("C2", {**conf, "client.id": f"{name}-C2"}, topic, t0))
            members[1].start()
        time.sleep(12)
        mc.clear_errors(OFFSET_FETCH)         # the "abort": the committed offsets are stable again
        cleared_at = round(time.monotonic() - t0, 3)
        p.produce(topic, b"tail", partition=0)
        p.produce(topic, b"tail", partition=1)
        p.flush(10)
        time.sleep(10)                        # > one retry backoff: the waiting members start too
        for m in members:
            m.stop.set()
        for m in members:
            m.join(30)
    res = {"try": i, "variant": variant, "assignor": args.assignor, "group_protocol": args.group_protocol,
           "reset": args.reset, "committed": committed, "cleared_at": cleared_at,
           "members": {m.name: {"first": {str(k): v for k, v in sorted(m.first.items())},
                                "errors": sorted(set(m.errors))[:5]} for m in members}}
    res["wrong_start"] = sorted({(m.name, p_, f[0]) for m in members for p_, f in m.first.items()
                                 if f[0] != committed})
    res["reproduced"] = bool(res["wrong_start"])
    return res


def f4_verdict(res: dict) -> str:
    if res["reproduced"]:
        return ("REPRODUCED: started at auto.offset.reset, not at the committed offset 50: "
                + ", ".join(f"{n} partition {p} at {o}" for n, p, o in res["wrong_start"]))
    return f"not reproduced: first offsets {({n: m['first'] for n, m in res['members'].items()})}"


# ---------------------------------------------------------------------------------------- F3

def f3_try(lib: str, i: int, variant: str, nonce: str, log: logging.Logger | None) -> dict:
    """A static member (group.instance.id) whose Heartbeat is answered FENCED_INSTANCE_ID, as
    Kafka answers the older of two members with the same instance id (KIP-345): what the
    application's poll() returns."""
    name = f"f3m-{nonce}-{i}"
    with MockCluster(lib, 1) as mc:
        mc.topic(name, 1, 1)
        conf = {"bootstrap.servers": mc.bootstrap, "group.id": f"{name}-g", "group.instance.id": f"{name}-i",
                "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "enable.auto.commit": False}
        if log is not None:
            conf.update({"debug": "cgrp", "logger": log})
        c = Consumer(conf)
        c.subscribe([name])
        errors, fenced_at, t0 = [], None, time.monotonic()
        while time.monotonic() - t0 < 15:
            if fenced_at is None and c.assignment():
                mc.push_errors(HEARTBEAT, FENCED_INSTANCE_ID, 1)
                fenced_at = round(time.monotonic() - t0, 3)
            m = c.poll(0.2)
            if m is not None and m.error() is not None:
                e = m.error()
                errors.append({"code": e.name(), "fatal": e.fatal(), "retriable": e.retriable(), "str": e.str()})
                if e.code() == confluent_kafka.KafkaError._FATAL:
                    break
        c.close()
    fatal = [e for e in errors if e["code"] == "_FATAL"]
    return {"try": i, "variant": variant, "fenced_at": fenced_at, "errors": errors[:5],
            "reproduced": bool(fatal) and not any(e["fatal"] for e in fatal)}


def f3_verdict(res: dict) -> str:
    fatal = [e for e in res["errors"] if e["code"] == "_FATAL"]
    if res["reproduced"]:
        return f"REPRODUCED: poll() returned code _FATAL with fatal() False: {fatal[0]['str']}"
    return f"not reproduced: errors {res['errors']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("finding", choices=("f1", "f3", "f4"))
    ap.add_argument("--tries", type=int, default=3, help="tries per variant (default 3)")
    ap.add_argument("--variant", action="append",
                    help=f"f1: {', '.join(F1_VARIANTS)}; f4: {', '.join(F4_VARIANTS)}; f3: fenced; repeatable")
    ap.add_argument("--assignor", choices=sorted(ASSIGNORS), default="eager", help="f4, classic protocol")
    ap.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic", help="f4")
    ap.add_argument("--reset", choices=("earliest", "latest"), default="earliest", help="f4: auto.offset.reset")
    ap.add_argument("--lib", help="librdkafka shared library (default: the one bundled with confluent-kafka)")
    ap.add_argument("--json", action="store_true", help="one JSON object per try, then a summary")
    ap.add_argument("--debug-log", help="write librdkafka's debug log to this file")
    args = ap.parse_args(argv)
    known = {"f1": F1_VARIANTS, "f3": F3_VARIANTS, "f4": F4_VARIANTS}[args.finding]
    variants = args.variant or [known[0]]
    bad = [v for v in variants if v not in known]
    if bad:
        ap.error(f"unknown variant {bad} for {args.finding}; known: {', '.join(known)}")
    if args.tries < 1:
        ap.error("--tries must be >= 1")
    try:
        lib = args.lib or bundled_librdkafka()
        MockCluster(lib, 1).__exit__()        # fail early, in one line, on an unusable library
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    log = _logger(args.debug_log)
    nonce = uuid.uuid4().hex[:6]
    summary: dict[str, dict] = {}
    ck = confluent_kafka.version()            # a str in 2.16, a (str, int) tuple before
    versions = {"confluent_kafka": ck if isinstance(ck, str) else ck[0],
                "librdkafka": confluent_kafka.libversion()[0], "lib": lib}
    for variant in variants:
        s = summary.setdefault(variant, {"tries": 0, "reproduced": 0, "errors": 0})
        for i in range(args.tries):
            try:
                if args.finding == "f1":
                    res = f1_try(lib, i, variant, nonce, log)
                elif args.finding == "f3":
                    res = f3_try(lib, i, variant, nonce, log)
                else:
                    res = f4_try(lib, i, variant, nonce, log, args)
            except (SetupError, KafkaException) as exc:
                res = {"try": i, "variant": variant, "error": f"{type(exc).__name__}: {exc}"}
                s["errors"] += 1
            s["tries"] += 1
            s["reproduced"] += bool(res.get("reproduced"))
            if args.json:
                print(json.dumps(res), flush=True)
            else:
                verdict = {"f1": f1_verdict, "f3": f3_verdict, "f4": f4_verdict}[args.finding]
                print(f"{variant} try {i}: {res.get('error') or verdict(res)}", flush=True)
    if args.json:
        print(json.dumps({"summary": summary, "versions": versions}), flush=True)
    else:
        print(f"confluent-kafka {versions['confluent_kafka']}, librdkafka {versions['librdkafka']} ({lib})")
        for variant, s in summary.items():
            print(f"{variant}: reproduced {s['reproduced']} of {s['tries']} tries"
                  + (f" ({s['errors']} errors)" if s["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
