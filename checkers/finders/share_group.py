"""Share groups (KIP-932, queues for Kafka): what a share group's deliveries must respect.

The share workload (docs/workloads.md "share") records ``acquire``, ``process``, ``ack`` and
``share-config`` ops (docs/history.md "Share groups"); meta.json's ``share`` names the group,
its ``share.isolation.level``, ``share.record.lock.duration.ms`` and
``share.delivery.count.limit``. A record is identified by (key, offset); its value is unique
per key. Anomalies (docs/anomalies.md "Share groups"):

* ``share-lost``: a committed record that by the end no consumer processed and the group did
  not archive: no ``process`` op holds it, no ``reject`` acknowledgement of it was accepted or
  left unknown, and no delivery of it reached the delivery-count limit (after which the broker
  archives it). With accept-before-processing and a consumer killed in between, the accepted
  record has no output: this case. A record never handed to anyone at an offset above the
  last one any member was handed on its key may be late rather than lost (the group stalled:
  a partition assigned to nobody, a share coordinator unavailable): its case is a liveness
  report (``"liveness": true``), like ``unseen`` without a final drain.
* ``share-aborted-read``: under ``share.isolation.level=read_committed`` an acquisition
  returned a record of a transaction that aborted (G1a through a share group).
* ``share-double-acquire``: two consumers (processes) acquired one record while the first's
  acquisition lock was held: the second acquisition completed before the first was invoked +
  the lock duration (less ``SLACK_NS``), the first had not acknowledged the record, and no
  fault that legitimately drops locks (a broker fault or partition: a new share-partition
  leader loads no in-flight state; a consumer killed or stopped: its session ends) happened in
  between. A consumer *paused* past its lock is no excuse, but then the second acquisition is
  after the lock anyway.
* ``share-delivery-count``: an acquisition reported a delivery count above the group's limit,
  or a record was acquired again after an ``accept`` or ``reject`` of it completed ``ok``
  (acknowledged and archived records are never delivered again; KIP-932 persists the state
  through the share coordinator before it answers). A copy the client held in its buffer and
  handed out late (its delivery count below one reported before the ack) is no new
  acquisition: at least once, a share-duplicate at most.
* ``share-duplicate``: a record processed more than once (``process`` ops of it in more than
  one op). Share groups deliver at least once, so it is always allowed; its rate is in the
  verdict's ``stats.share``.

Every finder returns [] when meta.json has no ``share``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import polars as pl

from ..history import History
from ..history.log import writes
from ..run import DEFAULT_ISOLATION_LEVEL

#: how far a second acquisition must be inside the first's lock to count (clocks, scheduling)
SLACK_NS = 500_000_000
#: nemesis fs that start a fault which may drop acquisition locks legitimately: a broker
#: killed, paused or cut off (a new share-partition leader loads no in-flight state), a
#: consumer killed or stopped (its share session ends and its records are released); and the
#: fs that end one (share-double-acquire). A consumer pause is no excuse.
LOCK_DROPPING = frozenset({"kill", "pause", "partition", "kill-client", "stop-client"})
LOCK_RESTORING = frozenset({"start", "resume", "heal-partition", "restart-client", "start-client", "heal"})
#: how long after such a fault ends a lock may still be dropped (leaders settling), ns
GRACE_NS = 10_000_000_000
_KINDS = ("accept", "release", "reject")


def _ops(h: History, f: str) -> list[dict]:
    """Ops of ``f`` with their extras: op, process, type, invoke_time, complete_time, value,
    completion_value, error."""
    sel = h.ops.filter(pl.col("f").cast(pl.String) == f).select(
        "op", "process", "type", "invoke_time", "complete_time", "error")
    out = []
    for row in sel.iter_rows(named=True):
        ex = h.extras.get(row["op"], {})
        out.append({**row, "type": str(row["type"]), "value": ex.get("value"),
                    "completion_value": ex.get("completion_value")})
    return out


class ShareFacts:
    """Per record (key, offset): acquisitions, acknowledgements, processing."""

    def __init__(self, h: History):
        self.acquires: dict[tuple, list[dict]] = defaultdict(list)
        self.acks: dict[tuple, list[dict]] = defaultdict(list)
        self.processed: dict[tuple, list[dict]] = defaultdict(list)
        self.value_of: dict[tuple, int] = {}
        self.problems: list[str] = []
        self.configs = _ops(h, "share-config")
        for op in _ops(h, "acquire"):
            if op["type"] != "ok":
                continue
            for key, recs in (op["completion_value"] or {}).items():
                for rec in recs or []:
                    try:
                        off, val = int(rec[0]), int(rec[1])
                        dc = rec[2] if len(rec) > 2 and rec[2] is not None else None
                    except (TypeError, ValueError, IndexError):
                        self.problems.append(f"acquire op {op['op']}: malformed record {rec!r}")
                        continue
                    self.acquires[(key, off)].append({"op": op["op"], "process": op["process"], "value": val,
                                                      "delivery_count": dc, "invoke_time": op["invoke_time"],
                                                      "complete_time": op["complete_time"]})
                    self.value_of[(key, off)] = val
        for op in _ops(h, "process"):
            if op["type"] != "ok":
                continue
            for key, recs in (op["completion_value"] or op["value"] or {}).items():
                for rec in recs or []:
                    try:
                        off, val = int(rec[0]), int(rec[1])
                    except (TypeError, ValueError, IndexError):
                        self.problems.append(f"process op {op['op']}: malformed record {rec!r}")
                        continue
                    self.processed[(key, off)].append({"op": op["op"], "process": op["process"], "value": val,
                                                       "time": op["complete_time"]})
        for op in _ops(h, "ack"):
            for a in op["value"] or []:
                try:
                    kind, key, off, val = str(a[0]), str(a[1]), int(a[2]), a[3]
                except (TypeError, ValueError, IndexError):
                    self.problems.append(f"ack op {op['op']}: malformed acknowledgement {a!r}")
                    continue
                if kind not in _KINDS:
                    self.problems.append(f"ack op {op['op']}: unknown type {kind!r}")
                    continue
                self.acks[(key, off)].append({"op": op["op"], "process": op["process"], "kind": kind,
                                              "value": val, "type": op["type"], "error": op["error"],
                                              "invoke_time": op["invoke_time"], "complete_time": op["complete_time"]})
        for lst in self.acquires.values():
            lst.sort(key=lambda a: a["invoke_time"])

    def archived_by_ack(self, rec: tuple) -> bool:
        """A reject of ``rec`` the broker took or may have taken (ok or info)."""
        return any(a["kind"] == "reject" and a["type"] != "fail" for a in self.acks.get(rec, ()))


def facts(h: History) -> ShareFacts:
    return h.cached("share_facts", ShareFacts)


def _committed(h: History) -> dict[tuple, dict]:
    """(key name, offset) -> {value, op} of every write that must have committed (offset known)."""
    w = writes(h).filter(pl.col("committed") & pl.col("offset").is_not_null())
    return {(h.keys[k], off): {"value": v, "op": op}
            for k, off, v, op in w.select("key", "offset", "value", "op").iter_rows()}


def share_cases(h: History, share: dict | None = None) -> list[dict]:
    """Every share-group case of the history (module docstring); [] without ``share``.
    ``share``: meta.json's ``share`` (``isolation_level``, ``lock_duration_ms``,
    ``delivery_count_limit``). Cases carry ``key``, ``offset``, ``value``, the ops involved
    and an ``explanation``; a case that cannot be decided carries ``unknown: True``."""
    if not share:
        return []
    fx = facts(h)
    out: list[dict] = []
    if fx.configs and not any(c["type"] == "ok" for c in fx.configs):
        out.append({"anomaly": "share-delivery-count", "unknown": True,
                    "explanation": "no share-config op completed ok: the group may run with the brokers' "
                                   "defaults, not the limit and lock meta.json names"})
        return out
    if not fx.acquires and _committed(h):
        out.append({"anomaly": "share-lost", "unknown": True,
                    "explanation": "the share group handed no record to any member in the whole run: "
                                   "nothing was tested (its cases are liveness reports)"})
    out += share_lost_cases(h, share, fx)
    out += share_aborted_read_cases(h, share, fx)
    out += share_double_acquire_cases(h, share, fx)
    out += share_delivery_count_cases(h, share, fx)
    out += share_duplicate_cases(h, share, fx)
    return out


def share_lost_cases(h: History, share: dict, fx: ShareFacts | None = None) -> list[dict]:
    """share-lost: a committed record neither processed nor archived by the end."""
    fx = fx or facts(h)
    limit = int(share.get("delivery_count_limit") or 0)
    committed = _committed(h)
    if not committed:
        return []
    # per key, the highest offset any member was handed: a record below it that nobody was
    # ever handed was skipped (a loss); one above it may only be late (the group stalled)
    reached: dict[str, int] = {}
    for (key, off) in fx.acquires:
        reached[key] = max(reached.get(key, -1), off)
    out = []
    for rec, w in sorted(committed.items()):
        if rec in fx.processed or fx.archived_by_ack(rec):
            continue
        acq = fx.acquires.get(rec, [])
        if limit and any((a["delivery_count"] or 0) >= limit for a in acq):
            continue  # delivered limit times and not processed: archived by the broker
        accepted = [a for a in fx.acks.get(rec, ()) if a["kind"] == "accept" and a["type"] != "fail"]
        key, off = rec
        if accepted:
            how = (f"acquired {len(acq)} time(s) and accepted by ack op {accepted[0]['op']} of process "
                   f"{accepted[0]['process']} ({accepted[0]['type']}), but no process op holds it: accepted "
                   "before it was processed, and never processed")
        elif acq:
            how = (f"acquired {len(acq)} time(s) (last delivery count {acq[-1]['delivery_count']}), never "
                   "processed, never rejected, and below the delivery-count limit")
        else:
            how = "never delivered to any share consumer"
        tail = not acq and off > reached.get(key, -1)
        if tail:
            how += (f" (above the last offset any member was handed on {key}, "
                    f"{reached.get(key, 'none')}: late or lost, a liveness report)")
        out.append({"anomaly": "share-lost", "key": key, "offset": off, "value": w["value"],
                    **({"liveness": True} if tail else {}),
                    "writer": h.op_ref(w["op"]), "acquires": [a["op"] for a in acq],
                    "acks": [{"op": a["op"], "kind": a["kind"], "type": a["type"]} for a in fx.acks.get(rec, ())],
                    "explanation": f"committed value {w['value']} at {key}@{off} was {how}"})
    return out


def share_aborted_read_cases(h: History, share: dict, fx: ShareFacts | None = None) -> list[dict]:
    """share-aborted-read: a read_committed share group delivered an aborted record."""
    if share.get("isolation_level", DEFAULT_ISOLATION_LEVEL) != "read_committed":
        return []
    fx = fx or facts(h)
    ab = writes(h).filter(pl.col("type") == "fail")
    aborted = {(h.keys[k], v): op for k, v, op in ab.select("key", "value", "op").iter_rows()}
    out = []
    for (key, off), acq in sorted(fx.acquires.items()):
        for a in acq:
            w = aborted.get((key, a["value"]))
            if w is None:
                continue
            out.append({"anomaly": "share-aborted-read", "key": key, "offset": off, "value": a["value"],
                        "writer": h.op_ref(w), "reader": h.op_ref(a["op"]),
                        "explanation": f"value {a['value']} at {key}@{off}, written by a transaction that aborted "
                                       f"(op {h.op_ref(w)['invoke_index']}), was acquired by acquire op "
                                       f"{a['op']} of process {a['process']} under share.isolation.level=read_committed"})
    return out


def disturbed(h: History) -> list[tuple[int, int]]:
    """[start, end + GRACE_NS] of every fault that may drop locks (LOCK_DROPPING), ns; a fault
    never ended lasts to the end."""
    def build(h: History):
        spans, open_ = [], []
        for e in sorted(h.nemesis, key=lambda e: e.get("time") or 0):
            f, t = e.get("f"), int(e.get("time") or 0)
            done = isinstance(e.get("value"), dict) and "result" in e["value"]
            if f in LOCK_DROPPING and not done:
                open_.append(t)
            elif f in LOCK_RESTORING and done and open_:
                if f == "heal":
                    spans += [(s, t + GRACE_NS) for s in open_]
                    open_ = []
                else:
                    spans.append((open_.pop(0), t + GRACE_NS))
        return spans + [(s, 1 << 62) for s in open_]
    return h.cached("share_disturbed", build)


def _faults_between(h: History, t0: int, t1: int) -> bool:
    return any(s <= t1 and t0 <= e for s, e in disturbed(h))


def share_double_acquire_cases(h: History, share: dict, fx: ShareFacts | None = None) -> list[dict]:
    """share-double-acquire: a record acquired by a second consumer inside the first's lock."""
    lock_ns = int(share.get("lock_duration_ms") or 0) * 1_000_000
    if lock_ns <= SLACK_NS:
        return []
    fx = fx or facts(h)
    out = []
    for rec, acq in sorted(fx.acquires.items()):
        for i, a in enumerate(acq):
            for b in acq[i + 1:]:
                if b["process"] == a["process"] or b["complete_time"] is None:
                    continue
                if b["complete_time"] >= a["invoke_time"] + lock_ns - SLACK_NS:
                    break  # acquisitions are sorted: later ones are later still
                acked = [k for k in fx.acks.get(rec, ()) if k["process"] == a["process"]
                         and k["invoke_time"] <= b["complete_time"] and k["invoke_time"] >= a["invoke_time"]]
                if acked or _faults_between(h, a["invoke_time"], b["complete_time"]):
                    continue
                key, off = rec
                out.append({"anomaly": "share-double-acquire", "key": key, "offset": off, "value": a["value"],
                            "first": h.op_ref(a["op"]), "second": h.op_ref(b["op"]),
                            "delivery_counts": [a["delivery_count"], b["delivery_count"]],
                            "explanation": f"{key}@{off} (value {a['value']}) was acquired by process {a['process']} "
                                           f"(op {a['op']}, at {a['invoke_time'] / 1e9:.3f} s) and again by process "
                                           f"{b['process']} (op {b['op']}, by {b['complete_time'] / 1e9:.3f} s), "
                                           f"inside the first's {lock_ns / 1e9:g} s acquisition lock, with no "
                                           "acknowledgement by the first and no fault between"})
                break
    return out


def share_delivery_count_cases(h: History, share: dict, fx: ShareFacts | None = None) -> list[dict]:
    """share-delivery-count: a delivery count above the limit, or a delivery after an ok
    accept/reject."""
    limit = int(share.get("delivery_count_limit") or 0)
    fx = fx or facts(h)
    out = []
    for rec, acq in sorted(fx.acquires.items()):
        key, off = rec
        done = sorted((k for k in fx.acks.get(rec, ()) if k["type"] == "ok" and k["kind"] in ("accept", "reject")),
                      key=lambda k: k["complete_time"] or 0)
        for a in acq:
            if limit and a["delivery_count"] is not None and a["delivery_count"] > limit:
                out.append({"anomaly": "share-delivery-count", "key": key, "offset": off, "value": a["value"],
                            "reader": h.op_ref(a["op"]), "delivery_count": a["delivery_count"], "limit": limit,
                            "explanation": f"{key}@{off} was delivered with delivery count {a['delivery_count']}, "
                                           f"above share.delivery.count.limit={limit} (acquire op {a['op']})"})
            after = [k for k in done if k["complete_time"] is not None and k["complete_time"] < a["invoke_time"]
                     and not _buffered_copy(a, acq, k)]
            if after:
                k = after[0]
                out.append({"anomaly": "share-delivery-count", "key": key, "offset": off, "value": a["value"],
                            "reader": h.op_ref(a["op"]), "ack": h.op_ref(k["op"]),
                            "delivery_count": a["delivery_count"],
                            "explanation": f"{key}@{off} was acquired again by acquire op {a['op']} of process "
                                           f"{a['process']} at {a['invoke_time'] / 1e9:.3f} s, after its {k['kind']} "
                                           f"by ack op {k['op']} of process {k['process']} completed ok at "
                                           f"{k['complete_time'] / 1e9:.3f} s"})
    return out


def _buffered_copy(a: dict, acq: list[dict], k: dict) -> bool:
    """Whether acquisition ``a``, handed to the application after ack ``k`` completed, is a copy
    of an earlier acquisition that the client held in its buffer (a consumer paused past its
    lock, say): its delivery count is below that of a delivery reported before ``k``. The
    broker counts every acquisition (KIP-932's delivery count), so a new one after the accept
    would carry a higher count. An equal count (a broker that redelivered without counting) or
    an unknown one is taken for a new acquisition: the rule must not hide a broker that lost
    the accept."""
    if a["delivery_count"] is None:
        return False
    before = [b["delivery_count"] for b in acq if b is not a and b["delivery_count"] is not None
              and b["complete_time"] is not None and b["complete_time"] <= k["complete_time"]]
    return bool(before) and a["delivery_count"] < max(before)


def share_duplicate_cases(h: History, share: dict, fx: ShareFacts | None = None) -> list[dict]:
    """share-duplicate: a record processed by more than one process op (allowed: at least once)."""
    fx = fx or facts(h)
    out = []
    for (key, off), ps in sorted(fx.processed.items()):
        ops = sorted({p["op"] for p in ps})
        if len(ops) > 1:
            out.append({"anomaly": "share-duplicate", "key": key, "offset": off, "value": ps[0]["value"],
                        "processes": sorted({p["process"] for p in ps}), "ops": ops,
                        "explanation": f"{key}@{off} (value {ps[0]['value']}) was processed {len(ops)} times "
                                       f"(process ops {ops[:5]}): at least once, allowed"})
    return out


def share_stats(h: History, share: dict | None) -> dict[str, Any] | None:
    """Counts of the share group's deliveries for ``Verdict.stats["share"]``: records
    acquired, deliveries, processed, duplicated (processed more than once), the duplicate
    rate (duplicated / processed), acknowledgements by type and outcome, the largest delivery
    count; None without ``share``."""
    if not share:
        return None
    fx = facts(h)
    acks: dict[str, int] = defaultdict(int)
    for lst in fx.acks.values():
        for a in lst:
            acks[f"{a['kind']}-{a['type']}"] += 1
    dup = sum(1 for ps in fx.processed.values() if len({p["op"] for p in ps}) > 1)
    n_proc = len(fx.processed)
    counts = [a["delivery_count"] for lst in fx.acquires.values() for a in lst if a["delivery_count"] is not None]
    return {"records_acquired": len(fx.acquires), "deliveries": sum(len(v) for v in fx.acquires.values()),
            "records_processed": n_proc, "records_duplicated": dup,
            "duplicate_rate": round(dup / n_proc, 6) if n_proc else 0.0,
            "acks": dict(sorted(acks.items())), "max_delivery_count": max(counts) if counts else None,
            "problems": fx.problems[:10]}
