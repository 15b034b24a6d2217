"""checkers/finders/share_group.py: each share-group anomaly on a tiny history that has it and one that does
not, the verdict's wiring (share-duplicate allowed, stats.share), and a negative control on a
real run of scenarios/share.yaml (tests/data/real-share-s1)."""
from __future__ import annotations

from pathlib import Path

import pytest

from checkers import check, load_history
from checkers.finders.share_group import share_cases, share_stats

K = "t0/0"
SHARE = {"group_id": "g", "isolation_level": "read_committed", "lock_duration_ms": 5000,
         "delivery_count_limit": 3, "ack_order": "after-processing", "keys": [K]}
S = 1_000_000_000  # ns


class H:
    """A tiny history builder: ops as invoke/completion pairs, times in seconds."""

    def __init__(self):
        self.ev: list[dict] = []

    def op(self, proc, f, inv_value, typ, cmp_value, t0, t1, **kw):
        self.ev.append({"process": proc, "type": "invoke", "f": f, "value": inv_value, "time": int(t0 * S)})
        c = {"process": proc, "type": typ, "f": f, "value": cmp_value, "time": int(t1 * S)}
        c.update(kw)
        self.ev.append(c)
        return self

    def txn(self, proc, value, offset, typ="ok", t=None):
        t = 0.1 + offset / 100 if t is None else t  # one after another
        return self.op(proc, "txn", [["send", K, value]], typ, [["send", K, [offset, value]]], t, t + 0.01)

    def config(self, proc, t=0.05, typ="ok"):
        return self.op(proc, "share-config", {"share.delivery.count.limit": "3"}, typ,
                       {"share.delivery.count.limit": "3"}, t, t + 0.01)

    def acquire(self, proc, recs, t):
        return self.op(proc, "acquire", None, "ok", {K: [list(r) for r in recs]}, t, t + 0.01)

    def process(self, proc, recs, t):
        v = {K: [list(r) for r in recs]}
        return self.op(proc, "process", v, "ok", v, t, t + 0.01)

    def ack(self, proc, kind, recs, t, typ="ok"):
        v = [[kind, K, off, val] for off, val in recs]
        return self.op(proc, "ack", v, typ, v, t, t + 0.01)

    def drain(self, recs, t=50.0):
        return self.op(99, "poll", [["poll"]], "ok", [["poll", {K: [list(r) for r in recs]}]], t, t + 0.01,
                       meta={"final": True, "isolation_level": "read_committed"})

    def nemesis(self, f, t, value):
        self.ev.append({"process": "nemesis", "type": "info", "f": f, "value": value, "time": int(t * S)})
        return self

    def events(self):
        evs = sorted(self.ev, key=lambda e: e["time"])
        return [dict(e, index=i) for i, e in enumerate(evs)]


def cases(h: H, name: str, share=SHARE) -> list[dict]:
    return [c for c in share_cases(load_history(h.events()), share) if c["anomaly"] == name]


def good() -> H:
    """Two records, delivered, processed, accepted; one aborted record never delivered."""
    return (H().config(1).config(2).txn(10, 100, 0).txn(10, 101, 2).txn(10, 102, 4, typ="fail")
            .acquire(1, [(0, 100, 1), (2, 101, 1)], 1.0).process(1, [(0, 100), (2, 101)], 1.1)
            .ack(1, "accept", [(0, 100), (2, 101)], 1.2).drain([(0, 100), (2, 101)]))


def test_good_history_has_no_case():
    assert share_cases(load_history(good().events()), SHARE) == []
    assert share_cases(load_history(good().events()), None) == []  # not a share run


def test_share_lost_accepted_before_processing():
    # accepted, then the consumer died before processing: no output
    h = (H().config(1).txn(10, 100, 0).acquire(1, [(0, 100, 1)], 1.0).ack(1, "accept", [(0, 100)], 1.1)
         .drain([(0, 100)]))
    (c,) = cases(h, "share-lost")
    assert c["key"] == K and c["offset"] == 0 and "accepted" in c["explanation"]


def test_share_lost_never_delivered_but_not_when_archived():
    # skipped: a later record of the key was handed out, this one never
    h = (H().config(1).txn(10, 100, 0).txn(10, 101, 2).acquire(1, [(2, 101, 1)], 1.0).process(1, [(2, 101)], 1.1)
         .ack(1, "accept", [(2, 101)], 1.2).drain([(0, 100), (2, 101)]))
    (c,) = cases(h, "share-lost")
    assert "never delivered" in c["explanation"] and not c.get("liveness")
    # the tail never handed out: late or lost, a liveness report (the run stays valid)
    h = H().config(1).txn(10, 100, 0).drain([(0, 100)])
    (c,) = [c for c in cases(h, "share-lost") if not c.get("unknown")]
    assert c["liveness"] and "liveness report" in c["explanation"]
    v = check(h.events(), meta={"share": SHARE})
    assert v.valid == "unknown" and "share-lost" in v.liveness_reports and "share-lost" not in v.failing
    assert any("handed no record" in r for r in v.unknown_reasons)
    # rejected: archived, not lost
    h = (H().config(1).txn(10, 100, 0).acquire(1, [(0, 100, 1)], 1.0).ack(1, "reject", [(0, 100)], 1.1)
         .drain([(0, 100)]))
    assert cases(h, "share-lost") == []
    # delivered limit times, released each time: archived by the broker
    h = H().config(1).txn(10, 100, 0)
    for i in range(3):
        h.acquire(1, [(0, 100, i + 1)], 1.0 + i).ack(1, "release", [(0, 100)], 1.1 + i)
    assert cases(h.drain([(0, 100)]), "share-lost") == []


def test_share_aborted_read():
    h = good().acquire(2, [(4, 102, 1)], 2.0)
    (c,) = cases(h, "share-aborted-read")
    assert c["value"] == 102 and "aborted" in c["explanation"]
    assert cases(h, "share-aborted-read", dict(SHARE, isolation_level="read_uncommitted")) == []


def test_share_double_acquire_inside_the_lock():
    base = lambda: H().config(1).config(2).txn(10, 100, 0).acquire(1, [(0, 100, 1)], 1.0)
    h = base().acquire(2, [(0, 100, 2)], 3.0).process(2, [(0, 100)], 3.1).ack(2, "accept", [(0, 100)], 3.2)
    (c,) = cases(h.drain([(0, 100)]), "share-double-acquire")
    assert c["delivery_counts"] == [1, 2]
    # after the lock expired (1 s + 5 s): fine
    h = base().acquire(2, [(0, 100, 2)], 6.6)
    assert cases(h.drain([(0, 100)]), "share-double-acquire") == []
    # released by the first before: fine
    h = base().ack(1, "release", [(0, 100)], 2.0).acquire(2, [(0, 100, 2)], 3.0)
    assert cases(h.drain([(0, 100)]), "share-double-acquire") == []
    # a broker killed in between: leadership may move, locks are not persisted
    h = (base().nemesis("kill", 1.5, {"node": 1}).nemesis("kill", 1.6, {"node": 1, "result": "killed"})
         .acquire(2, [(0, 100, 2)], 3.0))
    assert cases(h.drain([(0, 100)]), "share-double-acquire") == []


def test_share_delivery_count_above_limit_and_after_accept():
    h = H().config(1).txn(10, 100, 0).acquire(1, [(0, 100, 4)], 1.0)
    (c,) = cases(h, "share-delivery-count")
    assert c["delivery_count"] == 4 and c["limit"] == 3
    h = good().acquire(2, [(0, 100, 2)], 9.0)
    (c,) = cases(h, "share-delivery-count")
    assert "after its accept" in c["explanation"]
    # after a failed accept (lock expired) a redelivery is fine
    h = (H().config(1).config(2).txn(10, 100, 0).acquire(1, [(0, 100, 1)], 1.0)
         .ack(1, "accept", [(0, 100)], 7.0, typ="fail").acquire(2, [(0, 100, 2)], 9.0))
    assert cases(h, "share-delivery-count") == []


def test_group_configs_never_set_is_unknown():
    h = good()
    h.ev = [e for e in h.ev if e["f"] != "share-config"]
    h.config(1, typ="fail")
    out = share_cases(load_history(h.events()), SHARE)
    assert len(out) == 1 and out[0]["unknown"]


def test_share_duplicate_is_allowed_and_its_rate_reported():
    # processed, then paused past the lock: its accept fails, another consumer processes it again
    h = (H().config(1).config(2).txn(10, 100, 0).txn(10, 101, 2)
         .acquire(1, [(0, 100, 1), (2, 101, 1)], 1.0).process(1, [(0, 100), (2, 101)], 1.1)
         .ack(1, "accept", [(2, 101)], 1.2).acquire(2, [(0, 100, 2)], 7.0).process(2, [(0, 100)], 7.1)
         .ack(2, "accept", [(0, 100)], 7.2).ack(1, "accept", [(0, 100)], 7.5, typ="fail").drain([(0, 100), (2, 101)]))
    (c,) = cases(h, "share-duplicate")
    assert c["ops"] and len(c["ops"]) == 2
    v = check(h.events(), meta={"share": SHARE})
    assert "share-duplicate" in v.allowed and v.valid is True, v
    st = v.stats["share"]
    assert st["records_processed"] == 2 and st["records_duplicated"] == 1 and st["duplicate_rate"] == 0.5
    assert share_stats(load_history(h.events()), None) is None


def test_verdict_fails_on_share_lost():
    h = (H().config(1).txn(10, 100, 0).acquire(1, [(0, 100, 1)], 1.0).ack(1, "accept", [(0, 100)], 1.1)
         .drain([(0, 100)]))
    v = check(h.events(), meta={"share": SHARE})
    assert v.valid is False and v.failing == ["share-lost"]


REAL = Path(__file__).resolve().parents[1] / "data" / "real-share-s1"


@pytest.mark.skipif(not (REAL / "history.jsonl").exists(), reason="no real share run kept")
def test_negative_control_on_a_real_share_run():
    from checkers.run import RunMeta
    import json

    meta = RunMeta.coerce(json.loads((REAL / "meta.json").read_text()))[0]
    h = load_history(REAL / "history.jsonl")
    found = {c["anomaly"] for c in share_cases(h, meta.share)}
    assert found <= {"share-duplicate"}, found
    assert share_stats(h, meta.share)["records_processed"] > 0


@pytest.mark.skipif(not (REAL / "history.jsonl").exists(), reason="no real share run kept")
def test_real_share_run_is_valid_and_losing_one_output_is_caught():
    import json

    from checkers.verdict import check_run

    assert check_run(REAL).valid is True
    meta = json.loads((REAL / "meta.json").read_text())
    events = [json.loads(x) for x in (REAL / "history.jsonl").read_text().splitlines()]
    # the first process op of the run never happened: its records were accepted without output
    first = next(e for e in events if e.get("f") == "process" and e["type"] == "ok")
    pair = [e for e in events if e.get("f") == "process" and e["process"] == first["process"]
            and e["time"] <= first["time"]][-2:]
    kept = [e for e in events if e not in pair]
    kept = [dict(e, index=i) for i, e in enumerate(kept)]
    lost = [c for c in share_cases(load_history(kept), meta["share"]) if c["anomaly"] == "share-lost"]
    n = sum(len(v) for v in first["value"].values())
    assert len(lost) == n and all("accepted" in c["explanation"] for c in lost), lost[:2]


def test_a_buffered_copy_handed_out_late_is_no_new_delivery():
    """CI rehearsal 2026-11-29 (share.yaml seed 2, 4.3.1): share-consumer-0 was paused 7 s with
    t0/2@34 (delivery count 1) in its client's buffer; its lock expired, share-consumer-2 got
    the record with delivery count 2 and accepted it; resumed, share-consumer-0 handed the
    buffered copy (count 1) to the application after that accept. Not a delivery by the
    broker after the accept: its count is not above the accepted delivery's."""
    h = (H().config(1).config(2).txn(10, 100, 0)
         .acquire(2, [(0, 100, 2)], 8.0).process(2, [(0, 100)], 8.1).ack(2, "accept", [(0, 100)], 8.2)
         .acquire(1, [(0, 100, 1)], 9.0).process(1, [(0, 100)], 9.1).drain([(0, 100)]))
    assert cases(h, "share-delivery-count") == []
    assert [c["processes"] for c in cases(h, "share-duplicate")] == [[1, 2]]  # at least once: allowed
    # a count above the accepted delivery's is a new acquisition by the broker: still a case
    h = (H().config(1).config(2).txn(10, 100, 0)
         .acquire(2, [(0, 100, 2)], 8.0).process(2, [(0, 100)], 8.1).ack(2, "accept", [(0, 100)], 8.2)
         .acquire(1, [(0, 100, 3)], 9.0))
    (c,) = cases(h, "share-delivery-count")
    assert "after its accept" in c["explanation"]


def test_real_run_with_a_buffered_copy_is_valid():
    """The rehearsal's run itself (tests/data/real-share-buffered-s2: share.yaml seed 2, Kafka
    4.3.1, share-consumer-0 paused 6.06-13.07 s): t0/2@34 accepted by share-consumer-2 at
    12.75 s (delivery count 2), then handed to share-consumer-0 from its buffer at 13.07 s
    (count 1). It failed on share-delivery-count before the buffered-copy rule."""
    from checkers.verdict import check_run

    run = Path(__file__).resolve().parents[1] / "data" / "real-share-buffered-s2"
    v = check_run(run)
    assert v.valid is True and "share-delivery-count" not in v.anomaly_counts, v.anomaly_counts
    dup = [c for c in v.anomalies["share-duplicate"] if (c["key"], c["offset"]) == ("t0/2", 34)]
    assert dup and dup[0]["processes"] == [0, 1]


def test_a_redelivery_at_the_accepted_count_is_still_a_case():
    # a buffered copy always carries a lower count than the redelivery that replaced it; the
    # same count after the accept would be a broker handing the record out again uncounted
    h = (H().config(1).config(2).txn(10, 100, 0)
         .acquire(2, [(0, 100, 1)], 8.0).process(2, [(0, 100)], 8.1).ack(2, "accept", [(0, 100)], 8.2)
         .acquire(1, [(0, 100, 1)], 9.0))
    (c,) = cases(h, "share-delivery-count")
    assert "after its accept" in c["explanation"]
