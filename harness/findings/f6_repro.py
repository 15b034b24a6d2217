#!/usr/bin/env python3
"""Finding F6, standalone: with librdkafka's share consumer (KIP-932), a transaction marker
whose ShareFetch response holds no message is never acknowledged; the broker delivers it
again until ``share.delivery.count.limit`` and, on Kafka 4.4.0 with a dead-letter queue
(KIP-1191), writes it to the share group's DLQ as "Offset delivery count exceeded the
threshold." kafka-clients' KafkaShareConsumer acknowledges the same offsets as GAP.

Why (librdkafka master 4c3b017c3, the newest source to hand; the 2.16.0 wheel's library has the
same debug strings): the ShareFetch reply handler pre-sets every acquired offset to GAP and
overwrites it where a message is (src/rdkafka_fetcher.c), and hands the per-partition ack
batches to the application thread inside a SHARE_FETCH_RESPONSE op; but
``rd_kafka_q_serve_share_rkmessages`` (src/rdkafka_queue.c) moves them into the in-flight map
only ``if (total_msgs > 0)``, so a response with only GAP offsets (an aborted transaction's
marker: its records the broker archives itself under read_committed; a commit marker fetched
after its records) is destroyed with its acknowledgements. docs/findings/F6.md.

Needs only confluent-kafka, the standard library and a Kafka 4.4.0 cluster whose brokers allow
a short acquisition lock (``group.share.min.record.lock.duration.ms`` at or below ``--lock-ms``;
the broker default is 15000). One try, with fresh names::

    setup    topic T (1 partition), DLQ topic dlq.<G> (errors.deadletterqueue.group.enable=true);
             share group G: share.isolation.level=read_committed, share.auto.offset.reset=earliest,
             share.record.lock.duration.ms=LOCK, share.delivery.count.limit=2,
             errors.deadletterqueue.topic.name=dlq.<G>, errors.deadletterqueue.copy.record.enable=true
    consumer one ShareConsumer, share.acknowledgement.mode=explicit: ACCEPTs every message it is
             handed and commits (commit_sync) after each non-empty poll
    produce  one transactional.id: txn 1 (RECORDS records) committed, wait until the consumer has
             them; txn 2 aborted; GAP_S; txn 3 committed, wait; txn 4 aborted; GAP_S
    wait     2 x LOCK + MARGIN_S with the consumer polling, then close it, DLQ_WAIT_S, read the
             DLQ topic to its end
    check    reproduced when the DLQ holds a record whose __dlq.errors.offset is a marker's
             offset (the offset after each transaction's last record)

Variants (``--variant``): ``txn`` (default, the steps above); ``no-txn`` (control: the same
four batches from an idempotent producer, so the log holds no marker: the DLQ must stay
empty; a DLQ record here counts as reproduced, i.e. the control failed); ``java`` (control:
``txn`` with kafka-clients' KafkaShareConsumer instead, the harness's Java share-consumer
worker given by ``--java-worker FILE``: a JSON object ``{"argv": [...], "cfg": {...}}``, the
command without its config argument and extra config keys; it ACCEPTs every record too);
``read-uncommitted`` (``txn`` with share.isolation.level=read_uncommitted and the consumer
handed each batch before its transaction ends: every marker, COMMIT as well as ABORT, then
comes in a ShareFetch response of its own).

Usage: ``python f6_repro.py --bootstrap HOST:PORT[,...] [--tries N] [--variant V ...]
[--lock-ms MS] [--json] [--debug-log FILE] [--java-worker FILE --java-log FILE]``. Prints one
line per try and a summary; ``--json`` one JSON object per try and a summary object. Exit code
0 when every try ran (whatever it showed), 2 on a setup error.
"""
from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   ResourceType)

VARIANTS = ("txn", "no-txn", "java", "read-uncommitted")
#: the transactions of a try, in order: True commits, False aborts
PLAN = (True, False, True, False)
RECORDS = 3
DELIVERY_LIMIT = 2
#: after an aborted transaction: time for the consumer to fetch its marker on its own
GAP_S = 2.0
#: beyond 2 x lock: the second delivery's fetch, the lock's expiry, the broker's DLQ write
MARGIN_S = 8.0
#: after the consumer closed, before the DLQ is read (the brokers' DLQ writes are asynchronous)
DLQ_WAIT_S = 3.0
#: a DLQ record's headers (KIP-1191, Kafka 4.4.0)
DLQ_OFFSET = "__dlq.errors.offset"
DLQ_MESSAGE = "__dlq.errors.message"
DLQ_COUNT = "__dlq.errors.delivery.count"
DLQ_TOPIC_H = "__dlq.errors.topic"


class SetupError(Exception):
    """The cluster cannot run a try (topic creation, group configs refused): the message says why."""


def group_configs(dlq_topic: str, lock_ms: int, isolation: str = "read_committed") -> dict[str, str]:
    """The share group's configs of a try (module docstring)."""
    return {"share.isolation.level": isolation, "share.auto.offset.reset": "earliest",
            "share.record.lock.duration.ms": str(lock_ms), "share.delivery.count.limit": str(DELIVERY_LIMIT),
            "errors.deadletterqueue.topic.name": dlq_topic, "errors.deadletterqueue.copy.record.enable": "true"}


def marker_offsets(batches: list[dict]) -> dict[int, str]:
    """{offset: "COMMIT"|"ABORT"} of the transaction markers of ``batches`` (each ``{"commit":
    bool, "offsets": [...], "transactional": bool}``, in the order written by one producer to
    one partition): a transaction's marker is the offset after its last record. None for an
    idempotent producer's batches."""
    return {max(b["offsets"]) + 1: "COMMIT" if b["commit"] else "ABORT"
            for b in batches if b.get("transactional") and b["offsets"]}


def classify_dlq(records: list[dict], topic: str, markers: dict[int, str], written: set[int]) -> dict:
    """Sort the DLQ records of ``topic`` (dicts with ``headers``): at a marker's offset, at a
    record the producer wrote, or elsewhere. Returns counts and the marker offsets hit."""
    at_markers, at_written, other = [], [], []
    for r in records:
        h = r.get("headers") or {}
        if h.get(DLQ_TOPIC_H) not in (None, topic):
            other.append(r)
            continue
        try:
            off = int(h.get(DLQ_OFFSET))
        except (TypeError, ValueError):
            other.append(r)
            continue
        (at_markers if off in markers else at_written if off in written else other).append(r)
    return {"dlq": len(records), "dlq_at_markers": len(at_markers), "dlq_at_records": len(at_written),
            "dlq_other": len(other),
            "marker_offsets_in_dlq": sorted({int(r["headers"][DLQ_OFFSET]) for r in at_markers})}


def is_reproduced(variant: str, res: dict) -> bool:
    """``txn``/``java``: a DLQ record at a marker's offset. ``no-txn``: any DLQ record (the
    control failed)."""
    return res["dlq"] > 0 if variant == "no-txn" else res["dlq_at_markers"] > 0


def summarize(tries: list[dict]) -> dict:
    """Per variant: tries, reproduced, errors."""
    out: dict[str, dict] = {}
    for t in tries:
        s = out.setdefault(t["variant"], {"tries": 0, "reproduced": 0, "errors": 0})
        s["tries"] += 1
        s["errors"] += 1 if "error" in t else 0
        s["reproduced"] += 1 if t.get("reproduced") else 0
    return out


def verdict(res: dict) -> str:
    """One line of a try's outcome."""
    markers = {int(o): k for o, k in (res.get("markers") or {}).items()}
    hit = ", ".join(f"{o} {markers.get(int(o), '?')}" for o in res.get("marker_offsets_in_dlq") or [])
    listed = ", ".join(f"{o} {k}" for o, k in sorted(markers.items())) or "none"
    return (("REPRODUCED: " if res.get("reproduced") else "not reproduced: ")
            + f"DLQ {res['dlq']} records, {res['dlq_at_markers']} at markers" + (f" ({hit})" if hit else "")
            + f", {res['dlq_at_records']} at written records, {res['dlq_other']} other; markers {listed}"
            + f"; consumer got {res.get('consumed', 0)} records")


def dlq_header_text(v) -> str | None:
    if v is None:
        return None
    return bytes(v).decode("utf-8", errors="replace") if not isinstance(v, str) else v


class ShareMember(threading.Thread):
    """librdkafka's ShareConsumer in its own thread (it is single-threaded by design): poll,
    ACCEPT every message, commit_sync; ``got`` holds (offset, value, delivery count)."""

    def __init__(self, bootstrap: str, group: str, topic: str, debug_log: logging.Logger | None):
        super().__init__(daemon=True)
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit",
                     "socket.timeout.ms": 10000}
        if debug_log is not None:
            self.conf.update({"debug": "fetch,cgrp,queue", "logger": debug_log})
        self.topic = topic
        self.got: list[list] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def offsets(self) -> set[int]:
        return {o for o, _v, _d in list(self.got)}

    def run(self) -> None:
        from confluent_kafka import AcknowledgeType, ShareConsumer

        c = ShareConsumer(self.conf)
        c.subscribe([self.topic])
        try:
            while not self.stop.is_set():
                try:
                    msgs = c.poll(0.5)
                except Exception as exc:  # noqa: BLE001 - recorded, poll again
                    self.errors.append(f"poll: {exc}")
                    time.sleep(0.2)
                    continue
                n = 0
                for m in msgs or []:
                    if m.error() is not None:
                        self.errors.append(f"message error: {m.error()}")
                        continue
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
                    self.got.append([m.offset(), (m.value() or b"").decode(errors="replace"), m.delivery_count()])
                    n += 1
                if n:
                    try:
                        c.commit_sync(10.0)
                    except Exception as exc:  # noqa: BLE001 - recorded
                        self.errors.append(f"commit_sync: {exc}")
        finally:
            try:
                c.close()
            except Exception as exc:  # noqa: BLE001 - recorded
                self.errors.append(f"close: {exc}")


class JavaMember:
    """The harness's Java share-consumer worker (kafka-clients' KafkaShareConsumer, explicit
    acknowledgement, ACCEPT everything): its ``acquire`` ops on stdout give ``got``; "stop" on
    stdin ends it."""

    def __init__(self, spec: dict, bootstrap: str, group: str, topic: str, configs: dict, log_path: str | None):
        cfg = {"start_ns": 0, "security": {}, "consumer": {}, "release_probability": 0.0, "reject_probability": 0.0,
               "process_ms": 0.0, "ack_order": "after-processing", "config_timeout_s": 60.0, **spec.get("cfg", {}),
               "bootstrap": bootstrap, "topics": [topic], "group_id": group, "seed": 0, "group_configs": configs,
               "client": "java"}
        self.log = open(log_path, "ab") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen([*spec["argv"], json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.got: list[list] = []
        self.errors: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("f") == "acquire" and ev.get("type") == "ok":
                for recs in (ev.get("value") or {}).values():
                    self.got += [[r[0], str(r[1]), r[2]] for r in recs]
            elif ev.get("f") == "share-config" and ev.get("type") == "fail":
                self.errors.append(f"share-config: {ev.get('error')}")

    def offsets(self) -> set[int]:
        return {o for o, _v, _d in list(self.got)}

    def close(self) -> None:
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)
        if self.log is not subprocess.DEVNULL:
            self.log.close()


def create_topics(admin: AdminClient, topic: str, dlq: str, brokers: int) -> None:
    rf = min(3, brokers)
    futs = admin.create_topics([NewTopic(topic, 1, rf),
                                NewTopic(dlq, 1, rf, config={"errors.deadletterqueue.group.enable": "true"})],
                               operation_timeout=30)
    for name, f in futs.items():
        try:
            f.result(timeout=60)
        except Exception as exc:  # noqa: BLE001 - one line to the user
            raise SetupError(f"cannot create topic {name}: {exc}") from exc


def set_group_configs(admin: AdminClient, group: str, configs: dict[str, str], timeout_s: float = 60) -> None:
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        try:
            admin.incremental_alter_configs([res])[res].result(timeout=15)
            return
        except Exception as exc:  # noqa: BLE001 - a coordinator not ready yet: retry
            last = exc
            time.sleep(1)
    raise SetupError(f"the brokers refused the share group configs {configs}: {last} (Kafka 4.4.0 with "
                     "group.share.min.record.lock.duration.ms <= --lock-ms?)")


def produce(bootstrap: str, topic: str, transactional: bool, tid: str, values: list[list[int]],
            plan: tuple[bool, ...], wait_for, gap_s: float, uncommitted: bool = False) -> list[dict]:
    """Write ``values`` (one list per batch) to partition 0 of ``topic``: each batch one
    transaction committed or aborted as ``plan`` says (``transactional``), else an idempotent
    producer's flushed batch. After a committed (or any non-transactional) batch
    ``wait_for(offsets)`` waits until the consumer has it; after an aborted one, ``gap_s``.
    ``uncommitted`` (a read_uncommitted group): ``wait_for`` each batch before its commit or
    abort, so that every marker is fetched on its own."""
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    if transactional:
        conf["transactional.id"] = tid
    p = Producer(conf)
    if transactional:
        p.init_transactions(30)
    out = []
    for commit, vals in zip(plan, values):
        offsets: list[int] = []
        errs: list[str] = []

        def dr(err, msg, offsets=offsets, errs=errs):
            if err is not None:
                errs.append(str(err))
            else:
                offsets.append(msg.offset())

        if transactional:
            p.begin_transaction()
        for v in vals:
            p.produce(topic, str(v).encode(), partition=0, on_delivery=dr)
        p.flush(30)
        if errs:
            raise SetupError(f"produce to {topic} failed: {errs[0]}")
        if uncommitted:
            wait_for(set(offsets))
        if transactional:
            (p.commit_transaction if commit else p.abort_transaction)(30)
        out.append({"commit": commit, "transactional": transactional, "offsets": sorted(offsets), "values": vals})
        if (commit or not transactional) and not uncommitted:
            wait_for(set(offsets))
        else:
            time.sleep(gap_s)
    return out


def read_dlq(bootstrap: str, dlq: str, timeout_s: float = 30) -> list[dict]:
    """Every record of the DLQ topic's partition 0 up to its high watermark: offset, headers
    (text), value (hex)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{dlq}-reader", "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted", "auto.offset.reset": "earliest"})
    tp = TopicPartition(dlq, 0)
    out: list[dict] = []
    try:
        low, high = c.get_watermark_offsets(tp, timeout=10, cached=False)
        if high <= low:
            return out
        c.assign([TopicPartition(dlq, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for m in c.consume(100, timeout=0.5):
                if m.error() is None:
                    out.append({"dlq_offset": m.offset(),
                                "headers": {k: dlq_header_text(v) for k, v in (m.headers() or [])},
                                "value_hex": (m.value() or b"").hex()})
            if out and out[-1]["dlq_offset"] >= high - 1:
                break
    finally:
        c.close()
    return out


def run_try(args, admin: AdminClient, brokers: int, i: int, variant: str, nonce: str,
            debug_log: logging.Logger | None, java_spec: dict | None) -> dict:
    topic = f"f6-{nonce}-{variant}-{i}"
    group = f"f6-{nonce}-{variant}-{i}"
    dlq = f"dlq.{group}"
    res: dict = {"variant": variant, "try": i, "topic": topic, "group": group, "dlq_topic": dlq}
    create_topics(admin, topic, dlq, brokers)
    uncommitted = variant == "read-uncommitted"
    configs = group_configs(dlq, args.lock_ms, "read_uncommitted" if uncommitted else "read_committed")
    res["group_configs"] = configs
    if variant == "java":
        if java_spec is None:
            raise SetupError("variant java needs --java-worker")
        member = JavaMember(java_spec, args.bootstrap, group, topic, configs, args.java_log)
    else:
        set_group_configs(admin, group, configs)
        member = ShareMember(args.bootstrap, group, topic, debug_log)
        member.start()
    t0 = time.monotonic()

    def wait_for(offsets: set[int]) -> None:
        deadline = time.monotonic() + args.join_timeout_s
        while not offsets <= member.offsets() and time.monotonic() < deadline:
            if isinstance(member, JavaMember) and member.proc.poll() is not None:
                raise RuntimeError(f"the Java share consumer exited with {member.proc.returncode} (--java-log)")
            time.sleep(0.1)
        if not offsets <= member.offsets():
            raise RuntimeError(f"the consumer did not get committed offsets {sorted(offsets)} within "
                               f"{args.join_timeout_s:.0f} s: the try shows nothing")

    values = [[i * 1000 + b * 100 + k for k in range(RECORDS)] for b in range(len(PLAN))]
    try:
        batches = produce(args.bootstrap, topic, variant != "no-txn", f"{topic}-tid", values, PLAN, wait_for, GAP_S,
                          uncommitted)
        time.sleep(DELIVERY_LIMIT * args.lock_ms / 1000 + MARGIN_S)
    finally:
        if isinstance(member, ShareMember):
            member.stop.set()
            member.join(timeout=30)
        else:
            member.close()
    res["consumer_s"] = round(time.monotonic() - t0, 1)
    time.sleep(DLQ_WAIT_S)
    records = read_dlq(args.bootstrap, dlq)
    markers = marker_offsets(batches)
    written = {o for b in batches for o in b["offsets"]}
    res.update(classify_dlq(records, topic, markers, written))
    res.update({"batches": [{k: b[k] for k in ("commit", "transactional", "offsets")} for b in batches],
                "markers": {str(o): k for o, k in sorted(markers.items())},
                "consumed": len(member.got), "consumed_offsets": sorted(member.offsets()),
                "redelivered": sorted({o for o, _v, d in member.got if d is not None and d > 1}),
                "client_errors": member.errors[:5], "dlq_records": records})
    res["reproduced"] = is_reproduced(variant, res)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True, help="bootstrap servers")
    ap.add_argument("--tries", type=int, default=3, help="tries per variant")
    ap.add_argument("--variant", action="append", choices=VARIANTS, help="repeatable; default txn")
    ap.add_argument("--lock-ms", type=int, default=2000,
                    help="share.record.lock.duration.ms (default 2000; brokers' minimum must allow it)")
    ap.add_argument("--join-timeout-s", type=float, default=45.0,
                    help="longest wait for the consumer to get a committed batch (default 45)")
    ap.add_argument("--json", action="store_true", help="one JSON object per try, then a summary")
    ap.add_argument("--debug-log", help="write librdkafka's fetch,cgrp,queue debug log to this file")
    ap.add_argument("--java-worker", help="variant java: JSON file {argv: [...], cfg: {...}} of the Java worker")
    ap.add_argument("--java-log", help="variant java: the worker's stderr goes here")
    args = ap.parse_args(argv)
    variants = args.variant or ["txn"]
    java_spec = None
    if args.java_worker:
        with open(args.java_worker) as fh:
            java_spec = json.load(fh)
    debug_log = None
    if args.debug_log:
        debug_log = logging.getLogger("librdkafka")
        handler = logging.FileHandler(args.debug_log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        debug_log.addHandler(handler)
        debug_log.setLevel(logging.DEBUG)
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    try:
        brokers = len(admin.list_topics(timeout=30).brokers)
    except Exception as exc:  # noqa: BLE001 - one line to the user
        print(f"error: cannot reach {args.bootstrap}: {exc}", file=sys.stderr)
        return 2
    nonce = uuid.uuid4().hex[:6]
    tries: list[dict] = []
    for variant in variants:
        for i in range(1, args.tries + 1):
            try:
                res = run_try(args, admin, brokers, i, variant, nonce, debug_log, java_spec)
            except SetupError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            except Exception as exc:  # noqa: BLE001 - a try that stopped: recorded, the next one runs
                res = {"variant": variant, "try": i, "error": f"{type(exc).__name__}: {exc}"}
            tries.append(res)
            if args.json:
                print(json.dumps(res), flush=True)
            else:
                print(f"{variant} try {i}: " + (res.get("error") or verdict(res)), flush=True)
    summary = summarize(tries)
    if args.json:
        print(json.dumps({"summary": summary}), flush=True)
    else:
        for v, s in summary.items():
            print(f"{v}: reproduced {s['reproduced']} of {s['tries']} tries"
                  + (f" ({s['errors']} errors)" if s["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
