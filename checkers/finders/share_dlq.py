"""The share groups' dead-letter queue (KIP-1191, Kafka 4.4.0 with share.version=2).

A share group whose group config ``errors.deadletterqueue.topic.name`` names a topic gets a
*DLQ record* there for every *undeliverable record*: one it archives because a member
rejected it (``reject`` acknowledgement) or because its delivery count reached
``share.delivery.count.limit`` without an accept. The DLQ record's headers name the record
(``__dlq.errors.topic`` / ``.partition`` / ``.offset``), the group (``__dlq.errors.group``)
and why (``__dlq.errors.message``); with ``errors.deadletterqueue.copy.record.enable`` it
carries the record's value. KIP-1191 allows a second DLQ record for one record (the DLQ write
is not atomic with the share-group state): duplicates are counted, never a case.

The share workload reads the DLQ topic after its consumers stopped: one ``dlq-read`` op
(harness/workers/share_dlq_reader.py; docs/history.md "Share groups"), completion value
``{dlq key: [[dlq offset, {header: text}, value text or null], ...]}``, ``ok`` when read to
its end, ``info`` when not. meta.json's ``share.dlq`` names the topic. Anomalies
(docs/anomalies.md "Share groups"):

* ``share-dlq-missing``: an undeliverable record with no DLQ record: a ``reject`` of it
  completed ``ok`` (the broker took it), or it was delivered with a delivery count at the
  limit and no ``accept`` of it after that delivery completed ``ok`` or ``info`` (so the broker
  archived it when the member released it or its lock expired). A reject left ``info`` is
  undecided and never a case. The DLQ read incomplete or missing: an unknown reason instead.
* ``share-dlq-spurious``: a DLQ record of our group for a record that was never
  undeliverable: an ``accept`` of it completed ``ok`` (an accepted record is archived as
  acknowledged, never dead-lettered), or, under ``share.isolation.level=read_committed``, its
  copied value is a write whose transaction aborted (such records are never delivered, so
  never rejected), or its copied value is not the value the group was handed at that offset,
  or it is no value the workload wrote at all (a transaction marker's control record: finding
  F6, Kafka 4.4.0 with librdkafka 2.16.0's ShareConsumer, docs/findings/F6.md).

``share_dlq_cases`` returns [] when meta.json's ``share`` has no ``dlq``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import polars as pl

from ..history import History
from ..history.log import writes
from ..run import DEFAULT_ISOLATION_LEVEL
from .share_group import ShareFacts, _ops, facts

H_TOPIC, H_PART, H_OFFSET = "__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset"
H_GROUP, H_COUNT, H_MESSAGE = "__dlq.errors.group", "__dlq.errors.delivery.count", "__dlq.errors.message"


class DlqFacts:
    """The DLQ as read: per source record (key, offset) its DLQ records; the read's outcome."""

    def __init__(self, h: History, group_id: str | None):
        self.reads = _ops(h, "dlq-read")
        self.complete = any(r["type"] == "ok" for r in self.reads)
        self.by_record: dict[tuple, list[dict]] = defaultdict(list)
        self.foreign = 0  # DLQ records of another group
        self.problems: list[str] = []
        self.records = 0
        done = [r for r in self.reads if r["type"] in ("ok", "info")]
        for op in done[-1:]:  # the last read holds the whole topic
            for dkey, recs in (op["completion_value"] or {}).items():
                for rec in recs or []:
                    self.records += 1
                    try:
                        doff, headers, value = int(rec[0]), dict(rec[1] or {}), rec[2]
                        key = f"{headers[H_TOPIC]}/{int(headers[H_PART])}"
                        off = int(headers[H_OFFSET])
                    except (TypeError, ValueError, KeyError, IndexError):
                        self.problems.append(f"dlq-read op {op['op']}: a DLQ record without the KIP-1191 "
                                             f"headers: {str(rec)[:200]}")
                        continue
                    if group_id and headers.get(H_GROUP) not in (None, group_id):
                        self.foreign += 1
                        continue
                    self.by_record[(key, off)].append({
                        "dlq": f"{dkey}@{doff}", "op": op["op"], "value": value, "message": headers.get(H_MESSAGE),
                        "delivery_count": headers.get(H_COUNT)})


def undeliverable(fx: ShareFacts, limit: int) -> dict[tuple, str]:
    """Records the group must have dead-lettered, with why: ``rejected`` (a reject completed
    ok) or ``limit`` (a delivery at the limit with no accept ok/info after it)."""
    out: dict[tuple, str] = {}
    for rec, acks in fx.acks.items():
        if any(a["kind"] == "reject" and a["type"] == "ok" for a in acks):
            out[rec] = "rejected"
    if limit:
        for rec, acq in fx.acquires.items():
            if rec in out:
                continue
            last = [a for a in acq if a["delivery_count"] is not None and a["delivery_count"] >= limit]
            if not last:
                continue
            t = last[-1]["invoke_time"]
            if not any(k["kind"] == "accept" and k["type"] in ("ok", "info") and k["invoke_time"] >= t
                       for k in fx.acks.get(rec, ())):
                out[rec] = "limit"
    return out


def share_dlq_cases(h: History, share: dict | None, fx: ShareFacts | None = None) -> list[dict]:
    """share-dlq-missing and share-dlq-spurious (module docstring); [] without ``share.dlq``.
    ``share``: meta.json's ``share`` (``group_id``, ``isolation_level``,
    ``delivery_count_limit``, ``dlq``: {``topic``, ...}). Cases carry ``key``, ``offset``,
    ``value``, the ops involved and an ``explanation``; one undecidable case carries
    ``unknown: True``."""
    if not share or not share.get("dlq"):
        return []
    fx = fx or facts(h)
    topic = share["dlq"].get("topic")
    dq = DlqFacts(h, share.get("group_id"))
    must = undeliverable(fx, int(share.get("delivery_count_limit") or 0))
    out: list[dict] = []
    absent = sorted(rec for rec in must if rec not in dq.by_record)
    if absent and not dq.complete:
        why = "was never read (no dlq-read op)" if not dq.reads else "was not read to its end (dlq-read info)"
        out.append({"anomaly": "share-dlq-missing", "unknown": True,
                    "explanation": f"the DLQ topic {topic} {why}: {len(absent)} undeliverable record(s) not "
                                   "found there cannot be judged"})
    elif absent:
        for rec in absent:
            key, off = rec
            acks = fx.acks.get(rec, ())
            acq = fx.acquires.get(rec, [])
            if must[rec] == "rejected":
                r = next(a for a in acks if a["kind"] == "reject" and a["type"] == "ok")
                how = f"rejected by ack op {r['op']} of process {r['process']} (ok)"
            else:
                a = [x for x in acq if (x["delivery_count"] or 0) >= int(share["delivery_count_limit"])][-1]
                how = (f"delivered with delivery count {a['delivery_count']} (the limit) by acquire op {a['op']} "
                       "and never accepted after")
            out.append({"anomaly": "share-dlq-missing", "key": key, "offset": off,
                        "value": fx.value_of.get(rec), "why": must[rec],
                        "acquires": [x["op"] for x in acq],
                        "acks": [{"op": x["op"], "kind": x["kind"], "type": x["type"]} for x in acks],
                        "explanation": f"{key}@{off} (value {fx.value_of.get(rec)}) was {how}: the group archived "
                                       f"it as undeliverable, but the DLQ topic {topic}, read to its end, holds no "
                                       "DLQ record of it"})
    out += _spurious(h, share, fx, dq, topic)
    return out


def _spurious(h: History, share: dict, fx: ShareFacts, dq: DlqFacts, topic: str | None) -> list[dict]:
    aborted: dict[tuple, int] = {}
    if share.get("isolation_level", DEFAULT_ISOLATION_LEVEL) == "read_committed":
        ab = writes(h).filter(pl.col("type") == "fail")
        aborted = {(h.keys[k], v): op for k, v, op in ab.select("key", "value", "op").iter_rows()}
    out = []
    for rec, dl in sorted(dq.by_record.items()):
        key, off = rec
        d = dl[0]
        why = None
        acc = next((a for a in fx.acks.get(rec, ()) if a["kind"] == "accept" and a["type"] == "ok"), None)
        try:
            copied = int(d["value"]) if d["value"] is not None else None
        except (TypeError, ValueError):
            copied = None
        handed = fx.value_of.get(rec)
        if acc is not None:
            why = (f"an accept of it by ack op {acc['op']} of process {acc['process']} completed ok: an accepted "
                   "record is archived as acknowledged, never dead-lettered")
        elif copied is not None and (key, copied) in aborted:
            why = (f"its copied value {copied} was written by a transaction that aborted (op "
                   f"{h.op_ref(aborted[(key, copied)])['invoke_index']}): under read_committed the group never "
                   "delivers it, so no member could reject it")
        elif copied is not None and handed is not None and copied != handed:
            why = f"it carries value {copied}, but the group was handed value {handed} at that offset"
        elif d["value"] is not None and copied is None:
            why = (f"its copied value {d['value']!r} is no value the workload wrote (each is a decimal integer)"
                   + (": 6 bytes, 0 then a 4-byte number, the form of a transaction marker's control record "
                      "(version 0, coordinator epoch), which is no record of the log and never handed to a member"
                      if _marker(d["value"]) else ""))
        if why:
            out.append({"anomaly": "share-dlq-spurious", "key": key, "offset": off, "value": copied,
                        "dlq": [x["dlq"] for x in dl], "message": d["message"],
                        "explanation": f"the DLQ topic {topic} holds DLQ record {d['dlq']} for {key}@{off} "
                                       f"({d['message'] or 'no reason header'}), but {why}"})
    return out


def _marker(value: str) -> bool:
    """Whether ``value`` (the DLQ record's copied value as text) has the form of a transaction
    marker's control record value: int16 version 0, int32 coordinator epoch (KIP-98)."""
    b = value.encode("utf-8", errors="replace")
    return len(b) == 6 and b[:2] == b"\x00\x00"


def share_dlq_stats(h: History, share: dict | None) -> dict[str, Any] | None:
    """For ``Verdict.stats["share"]["dlq"]``: DLQ records read, records they name, duplicates
    (a record with more than one DLQ record, allowed by KIP-1191), DLQ records by reason
    header, other groups' records, whether the read reached the end, and the undeliverable
    records the history shows by why (rejected, limit); None without ``share.dlq``."""
    if not share or not share.get("dlq"):
        return None
    fx = facts(h)
    dq = DlqFacts(h, share.get("group_id"))
    reasons: dict[str, int] = defaultdict(int)
    for dl in dq.by_record.values():
        for d in dl:
            reasons[d["message"] or "none"] += 1
    must = undeliverable(fx, int(share.get("delivery_count_limit") or 0))
    return {"topic": share["dlq"].get("topic"), "complete": dq.complete, "dlq_records": dq.records,
            "records": len(dq.by_record), "duplicated": sum(1 for dl in dq.by_record.values() if len(dl) > 1),
            "foreign": dq.foreign, "by_reason": dict(sorted(reasons.items())),
            "undeliverable": {"rejected": sum(1 for w in must.values() if w == "rejected"),
                              "limit": sum(1 for w in must.values() if w == "limit")},
            "problems": dq.problems[:10]}
