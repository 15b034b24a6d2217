"""The share groups' dead-letter queue (KIP-1191): checkers/finders/share_dlq.py on tiny histories (each
case once failing, once passing), the verdict's wiring, and the workload's ``dlq`` option
(harness/workloads/share.py: group configs, the DLQ topic, the reader, the release check)."""
from __future__ import annotations

from pathlib import Path

import pytest

from checkers import check, load_history
from checkers.finders.share_dlq import share_dlq_cases, share_dlq_stats
from tests.unit.test_checkers_share import K, SHARE, H, good

DLQ = dict(SHARE, dlq={"topic": "dlq.g", "partitions": 1, "copy_record": True})
ROOT = Path(__file__).resolve().parents[2]


def dlq_read(h: H, records, typ: str = "ok", t: float = 60.0) -> H:
    """One dlq-read op: ``records`` as (source offset, value, message) of key K."""
    recs = [[i, {"__dlq.errors.topic": "t0", "__dlq.errors.partition": "0", "__dlq.errors.offset": str(off),
                 "__dlq.errors.group": "g", "__dlq.errors.message": msg}, None if val is None else str(val)]
            for i, (off, val, msg) in enumerate(records)]
    return h.op(98, "dlq-read", {"topic": "dlq.g"}, typ, {"dlq.g/0": recs}, t, t + 0.01,
                meta={"complete": typ == "ok", "source_group_id": "g"})


def rejected() -> H:
    """Record 0 accepted; record 2 rejected (ok): the group archives it as undeliverable."""
    return (H().config(1).txn(10, 100, 0).txn(10, 101, 2)
            .acquire(1, [(0, 100, 1), (2, 101, 1)], 1.0).process(1, [(0, 100)], 1.1)
            .ack(1, "accept", [(0, 100)], 1.2).ack(1, "reject", [(2, 101)], 1.3).drain([(0, 100), (2, 101)]))


def at_limit() -> H:
    """Record 0 released at each of its 3 deliveries (the limit): archived by the broker."""
    h = H().config(1).txn(10, 100, 0)
    for i in range(3):
        h.acquire(1, [(0, 100, i + 1)], 1.0 + i).ack(1, "release", [(0, 100)], 1.1 + i)
    return h.drain([(0, 100)])


def cases(h: H, name: str, share=DLQ) -> list[dict]:
    return [c for c in share_dlq_cases(load_history(h.events()), share) if c["anomaly"] == name]


def test_a_rejected_record_in_the_dlq_passes_and_one_missing_fails():
    assert share_dlq_cases(load_history(dlq_read(rejected(), [(2, 101, "Offset rejected by client.")]).events()),
                           DLQ) == []
    (c,) = cases(dlq_read(rejected(), []), "share-dlq-missing")
    assert (c["key"], c["offset"], c["why"]) == (K, 2, "rejected") and "rejected by ack op" in c["explanation"]
    v = check(dlq_read(rejected(), []).events(), meta={"share": DLQ})
    assert v.valid is False and v.failing == ["share-dlq-missing"]
    assert share_dlq_cases(load_history(rejected().events()), SHARE) == []  # no dlq: nothing to judge


def test_a_record_at_the_delivery_count_limit_must_be_dead_lettered():
    msg = "Offset delivery count exceeded the threshold."
    assert cases(dlq_read(at_limit(), [(0, 100, msg)]), "share-dlq-missing") == []
    (c,) = cases(dlq_read(at_limit(), []), "share-dlq-missing")
    assert c["why"] == "limit" and "delivery count 3" in c["explanation"]
    # accepted on its last delivery: not undeliverable; an accept left unknown: undecided
    for typ in ("ok", "info"):
        h = H().config(1).txn(10, 100, 0).acquire(1, [(0, 100, 3)], 1.0).process(1, [(0, 100)], 1.1)
        assert cases(dlq_read(h.ack(1, "accept", [(0, 100)], 1.2, typ=typ), []), "share-dlq-missing") == []
    # a reject left unknown (info) is undecided either way
    h = H().config(1).txn(10, 100, 0).acquire(1, [(0, 100, 1)], 1.0).ack(1, "reject", [(0, 100)], 1.1, typ="info")
    assert cases(dlq_read(h, []), "share-dlq-missing") == []


def test_an_unread_or_half_read_dlq_is_unknown_not_invalid():
    for h in (rejected(), dlq_read(rejected(), [], typ="info")):
        (c,) = cases(h, "share-dlq-missing")
        assert c["unknown"] and "cannot be judged" in c["explanation"]
        v = check(h.events(), meta={"share": DLQ})
        assert v.valid == "unknown" and any("share-dlq-missing" in r for r in v.unknown_reasons)


def test_spurious_dlq_records_accepted_aborted_or_another_value():
    # record 0 was accepted ok, yet the DLQ holds it
    (c,) = cases(dlq_read(rejected(), [(0, 100, "x"), (2, 101, "y")]), "share-dlq-spurious")
    assert c["offset"] == 0 and "accept of it" in c["explanation"]
    # an aborted record (value 102 at offset 4) under read_committed
    h = dlq_read(good(), [(4, 102, "Offset rejected by client.")])
    (c,) = cases(h, "share-dlq-spurious")
    assert "aborted" in c["explanation"]
    assert cases(h, "share-dlq-spurious", dict(DLQ, isolation_level="read_uncommitted")) == []
    # the copied value is not what the group was handed at that offset
    (c,) = cases(dlq_read(rejected(), [(2, 999, "Offset rejected by client.")]), "share-dlq-spurious")
    assert "carries value 999" in c["explanation"]
    # a transaction marker's control record (version 0, coordinator epoch 1), which no member is
    # handed: seen on Kafka 4.4.0 with librdkafka 2.16.0 (docs/scenarios.md "Share groups")
    (c,) = cases(dlq_read(rejected(), [(2, 101, "r"), (1, "\x00\x00\x00\x00\x00\x01", "exceeded")]),
                 "share-dlq-spurious")
    assert c["offset"] == 1 and "transaction marker" in c["explanation"]
    # another group's DLQ record is not ours; a duplicate DLQ record is allowed (KIP-1191)
    h = dlq_read(rejected(), [(2, 101, "r"), (2, 101, "r")])
    assert share_dlq_cases(load_history(h.events()), DLQ) == []
    assert share_dlq_cases(load_history(dlq_read(rejected(), [(2, 101, "r"), (0, 100, "x")]).events()),
                           dict(DLQ, group_id="other")) != []  # group g is not "other": record 2 missing
    other = dlq_read(rejected(), [(2, 101, "r")])
    other.ev[-1]["value"]["dlq.g/0"].append([1, {"__dlq.errors.topic": "t0", "__dlq.errors.partition": "0",
                                                  "__dlq.errors.offset": "0", "__dlq.errors.group": "h"}, "100"])
    assert share_dlq_cases(load_history(other.events()), DLQ) == []  # group h's record of offset 0: not ours
    st = check(h.events(), meta={"share": DLQ}).stats["share"]["dlq"]
    assert st["records"] == 1 and st["dlq_records"] == 2 and st["duplicated"] == 1 and st["complete"]
    assert st["undeliverable"] == {"rejected": 1, "limit": 0}
    assert share_dlq_stats(load_history(h.events()), SHARE) is None


# -- the workload's dlq option ------------------------------------------------------------------

def _scenario(tmp_path, **workload):
    import yaml

    from harness.run.scenario import load_scenario

    data = yaml.safe_load((ROOT / "scenarios" / "share-dlq.yaml").read_text())
    data["workload"].update(workload)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    return load_scenario(p)


def test_dlq_sets_the_group_configs_and_creates_the_topic(tmp_path):
    from harness.workers.configs import check_config
    from harness.workloads import WORKLOADS
    from harness.workloads.share import DLQ_ENABLE_TOPIC_CONFIG

    scn = _scenario(tmp_path)
    assert scn.workload.dlq is True and scn.cluster.kafka_version == "4.4.0"
    w = WORKLOADS["share"](scn.workload, "10.0.0.1:9092", 1)
    gc = w.readers()[0].cfg["group_configs"]
    assert gc["errors.deadletterqueue.topic.name"] == "dlq.eosc-share"
    assert gc["errors.deadletterqueue.copy.record.enable"] == "true"
    assert [t.name for t in w.topics()] == ["t0", "dlq.eosc-share"]
    assert w.topics()[1].configs == {DLQ_ENABLE_TOPIC_CONFIG: "true"} and w.topics()[1].partitions == 1
    assert w.keys() == ["t0/0", "t0/1", "t0/2"] and w.readers()[0].cfg["topics"] == ["t0"]
    assert w.meta()["share"]["dlq"]["topic"] == "dlq.eosc-share"
    # a name of one's own; group_configs may not set the DLQ a second time
    assert WORKLOADS["share"](_scenario(tmp_path, dlq="dlq.mine").workload, "b:9", 1).dlq_topic() == "dlq.mine"
    from harness.run.scenario import ScenarioError

    for bad, msg in (({"dlq": "__dlq"}, "starts with '__'"), ({"dlq": "a b"}, "not a topic name"),
                     ({"group_configs": {"errors.deadletterqueue.topic.name": "dlq.x"}}, "dlq sets")):
        with pytest.raises(ScenarioError, match=msg):
            _scenario(tmp_path, **bad)
    # the reader the settle step starts fits its role
    spawned = []

    class Pool:
        workers: dict = {}

        def stop(self, names, timeout=None):
            return []

        def spawn(self, spec):
            spawned.append(spec)
            return type("W", (), {"wait": lambda *_a, **_k: True, "control": [{"dlq": {"records": 0, "complete": True}}]})()

    w.spec = w.spec.model_copy(update={"dlq_wait_s": 0})
    assert w.read_dlq(Pool()) == []
    (spec,) = spawned
    assert spec.role == "share-dlq-reader" and spec.cfg["topic"] == "dlq.eosc-share"
    check_config(spec.role, dict(spec.cfg, start_ns=1))
    assert w.settled["dlq"] == {"records": 0, "complete": True}


def test_dlq_is_refused_before_4_4_0_and_without_the_brokers_prefix(tmp_path):
    import yaml

    from harness.run.scenario import ScenarioError, load_scenario
    from harness.workloads import ShareSpec
    from harness.workloads.share import check_release

    spec = ShareSpec(dlq=True)
    check_release(spec, "4.4.0")
    with pytest.raises(ValueError, match=r"needs Kafka 4.4.0 or newer .*Kafka 4.3.1 has no share-group dead-letter"):
        check_release(spec, "4.3.1")
    mine = ShareSpec(dlq="errors.x")
    with pytest.raises(ValueError, match="errors.deadletterqueue.topic.name.prefix 'dlq.'"):
        check_release(mine, "4.4.0")
    check_release(mine, "4.4.0", {"errors.deadletterqueue.topic.name.prefix": ""})
    check_release(ShareSpec(), "4.3.1")  # no dlq: any release
    # the scenario says so when it loads (and --kafka-version, merged in, is checked alike)
    data = yaml.safe_load((ROOT / "scenarios" / "share-dlq.yaml").read_text())
    data["cluster"]["kafka_version"] = "4.3.1"
    p = tmp_path / "old.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match="needs Kafka 4.4.0"):
        load_scenario(p)
    with pytest.raises(ScenarioError, match="does not start with the brokers'"):
        _scenario(tmp_path, dlq="errors.x")


def test_dry_run_refuses_dlq_on_4_3_1(tmp_path):
    from harness.run.preflight import PreflightError, preflight

    scn = _scenario(tmp_path)
    scn = scn.model_copy(update={"cluster": scn.cluster.model_copy(update={"kafka_version": "4.3.1"})})
    with pytest.raises(PreflightError, match="needs Kafka 4.4.0"):
        preflight(scn, maven=lambda *a: None, which=lambda t: "/bin/" + t)
