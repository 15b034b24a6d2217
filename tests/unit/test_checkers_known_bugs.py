"""The verdict names known bugs (checkers/known_bugs/bugs.py, docs/known-bugs.md).

For each catalogued signature a tiny history goes through the real checker
(``checkers.verdict.check`` with meta, or ``check_run`` on a run folder when the signature
reads scenario.yaml) and its verdict says "looks-like" the bug; the negative control is the same
history with meta saying a release outside the affected range, the other client or the other
transaction protocol version, and its verdict does not say "looks-like" (it says "resembles",
with why, or nothing). A verdict with no anomaly names nothing. The report names no other
engineer's finder: server-error and epoch-exhausted verdicts are built by hand where their
finders are not in ``checkers.verdict.FINDERS`` yet (the catalogue keys on the names only).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from checkers.known_bugs.facts import release, run_facts
from checkers.synthetic.build import HistoryBuilder
from checkers.known_bugs.bugs import BY_ID, CATALOGUE, describe, match, match_dicts
from checkers.run import Verdict
from checkers.verdict import FINDERS, check, check_run
from tests.unit.test_checkers_reprocessing import PIPE, _base

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {"skipped-txn-markers": {"count": 1, "partitions": ["y-0"], "transactional_ids": ["t"], "node": "n3"}}


def named(v: Verdict) -> dict[str, str]:
    """id -> "looks-like" | "resembles" of a verdict's known_bugs."""
    return {m["id"]: m["match"] for m in v.known_bugs}


def _why(v: Verdict, bug: str) -> str:
    return next(m["why"] for m in v.known_bugs if m["id"] == bug)


# -- histories ----------------------------------------------------------------------------------
def stalled() -> list[dict]:
    """A transaction of process 2 hangs open on x/0: consumer 1 stays at position 0 for 13 s
    while a later committed write waits behind the last stable offset (stalled-lso)."""
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.assign(1, ["x/0"])
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.invoke(2, "txn", [["send", "x/0", 2]], {"transactional_id": "h"})  # never completes
    b.txn(0, [("x/0", 3, 2)], tid="t")
    b.poll(1, {"x/0": [(0, 1)]})
    for _ in range(12):
        b.nemesis("noop")
    b.assign(3, ["x/0"])
    b.poll(3, {"x/0": [(0, 1), (2, 3)]}, final=True)
    return b.events


def torn() -> list[dict]:
    """A committed transaction's write to y/0 never visible in the final reads."""
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0), ("y/0", 2, 0)], tid="t")
    b.assign(1, ["x/0", "y/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    return b.events


def aborted_read() -> list[dict]:
    """An aborted transaction's write read by a read_committed poll (G1a)."""
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.txn(0, [("x/0", 2, 1)], "fail", tid="t")
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1), (1, 2)]}, final=True)
    return b.events


def lost() -> HistoryBuilder:
    """A committed write at offset 0 never read although offset 1 was (lost-write, unseen)."""
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.txn(0, [("x/0", 2, 1)], tid="t")
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(1, 2)]}, final=True)
    return b


def clean() -> list[dict]:
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    return b.events


def run_dir(tmp_path: Path, events_builder: HistoryBuilder, meta: dict, workload: dict) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    events_builder.write(d / "history.jsonl")
    (d / "meta.json").write_text(json.dumps(meta))
    (d / "scenario.yaml").write_text(yaml.safe_dump({"name": "t", "workload": workload, "expected": []}))
    return d


# -- KAFKA-14402 -------------------------------------------------------------------------------------
STALL = {"stalled_lso_bound_s": 5.0, "fail_on": ["stalled-lso"], "workload": "txn-queue"}


def test_kafka_14402_hanging_transaction_on_3_5_looks_like_it():
    v = check(stalled(), meta={**STALL, "kafka_version": "3.5.2"})
    assert v.valid is False and "stalled-lso" in v.failing
    assert named(v).get("KAFKA-14402") == "looks-like", v.known_bugs
    m = next(m for m in v.known_bugs if m["id"] == "KAFKA-14402")
    assert describe(m) == "looks like KAFKA-14402 (hanging transaction; Kafka <= 3.5.x, fixed in 3.6.0)"
    assert m["evidence"][0].startswith("stalled-lso (1): e.g. process 1 stuck on x/0 at offset 0")
    assert m["link"] == "https://issues.apache.org/jira/browse/KAFKA-14402"


def test_kafka_14402_control_fixed_release_resembles_and_skipped_markers_name_kafka_20734_instead():
    v = check(stalled(), meta={**STALL, "kafka_version": "3.6.0"})
    assert named(v).get("KAFKA-14402") == "resembles"
    assert "KIP-890 part 1" in _why(v, "KAFKA-14402")
    # the brokers say why the LSO hangs: KAFKA-20734, never KAFKA-14402
    v = check(stalled(), meta={**STALL, "kafka_version": "4.3.1", "broker_events": SKIPPED})
    assert "KAFKA-14402" not in named(v) and named(v).get("KAFKA-20734") == "looks-like"
    # a stall alone, reported but not failing the run (no fail_on): routine under faults, named nothing
    v = check(stalled(), meta={"stalled_lso_bound_s": 5.0, "kafka_version": "3.5.2"})
    assert "stalled-lso" in v.liveness_reports and v.known_bugs == []


# -- KAFKA-20734 (F2) ----------------------------------------------------------------------------------
def test_kafka_20734_skipped_markers_and_a_torn_transaction_on_4_3_1():
    v = check(torn(), meta={"kafka_version": "4.3.1", "workload": "txn-queue", "broker_events": SKIPPED})
    assert v.failing == ["torn-transaction", "unseen"]
    # F1 and KAFKA-17754 fit the anomalies too, but yield to the broker's own evidence
    assert named(v) == {"KAFKA-20734": "looks-like"}, v.known_bugs
    m = v.known_bugs[0]
    assert m["doc"] == "docs/findings/F2.md" and m["fixed"] is None
    assert any("skipped-txn-markers" in e and "y-0" in e for e in m["evidence"])


def test_kafka_20734_control_older_release_resembles_and_no_event_no_name():
    v = check(torn(), meta={"kafka_version": "3.9.1", "workload": "txn-queue", "broker_events": SKIPPED})
    assert named(v).get("KAFKA-20734") == "resembles" and "3.9.1" in _why(v, "KAFKA-20734")
    v = check(torn(), meta={"kafka_version": "4.3.1", "workload": "txn-queue"})
    assert "KAFKA-20734" not in named(v)


def test_the_recorded_f2_run_names_kafka_20734():
    v = check_run(ROOT / "tests" / "data" / "real-f2-leaderless-marker")
    assert named(v) == {"KAFKA-20734": "looks-like"}


# -- F9: markers from a coordinator's truncated __transaction_state tail (a broker event) -----------------------
F9_EVENT = {"txn-markers-from-truncated-tail": {"count": 1, "partitions": ["__transaction_state-8"],
                                                "transactional_ids": ["t"], "node": "n3"}}
JAVA_422 = {"kafka_version": "4.2.2", "workload": "txn-queue", "client": {"name": "java", "version": "4.2.2"},
            "transaction_version": {"broker": 2, "client": [2]}}


def test_f9_stale_markers_and_a_torn_transaction_look_like_f9_alone():
    v = check(torn(), meta={**JAVA_422, "broker_events": F9_EVENT})
    assert v.failing == ["torn-transaction", "unseen"]
    # KAFKA-17754 and F1 fit the torn write too, only resembled, and yield to the brokers' evidence
    assert named(v) == {"F9": "looks-like"}, v.known_bugs
    m = v.known_bugs[0]
    assert m["doc"] == m["link"] == "docs/findings/F9.md" and m["fixed"] is None
    assert any("txn-markers-from-truncated-tail" in e and "__transaction_state-8" in e for e in m["evidence"])
    assert describe(m).startswith("looks like F9 (") and "3.5.2 to 4.4.0 measured" in describe(m)


def test_f9_control_no_event_no_f9_and_the_others_as_before():
    v = check(torn(), meta=JAVA_422)
    assert "F9" not in named(v) and named(v) == {"KAFKA-17754": "resembles", "F1": "resembles"}, v.known_bugs
    # nothing failing beyond F9's kinds: a server-error beside the event is not F9's
    assert "F9" not in {m.id for m in match(_hand_verdict("server-error", protocol_error="UNKNOWN_SERVER_ERROR"),
                                            {**JAVA_422, "broker_events": F9_EVENT})}
    # a valid run with the event names nothing, not even as seen (F9 needs an INVALID verdict)
    v = check(clean(), meta={**JAVA_422, "broker_events": F9_EVENT})
    assert v.known_bugs == [] and v.known_bugs_seen == []


def test_with_the_f9_event_the_other_torn_or_hanging_entries_only_resemble():
    ev = {"broker_events": F9_EVENT}
    # transaction version 1 with the Java client: KAFKA-17754 looked like it; with the event F9 does
    tv1 = {**JAVA_422, "transaction_version": {"broker": 2, "client": [1]}}
    assert named(check(torn(), meta=tv1)) == {"KAFKA-17754": "looks-like", "F1": "resembles"}
    v = check(torn(), meta={**tv1, **ev})
    assert named(v) == {"F9": "looks-like", "KAFKA-17754": "resembles"}, v.known_bugs
    assert "F9 explains the same anomalies more specifically" in _why(v, "KAFKA-17754")
    # a hanging transaction on 3.5.2: KAFKA-14402 looked like it; F9's range has no lower bound
    v = check(stalled(), meta={**STALL, "kafka_version": "3.5.2", **ev})
    assert named(v) == {"F9": "looks-like", "KAFKA-14402": "resembles"}, v.known_bugs
    # both broker events: two mechanisms with their own lines, both named
    v = check(torn(), meta={**JAVA_422, "broker_events": {**SKIPPED, **F9_EVENT}})
    assert named(v) == {"KAFKA-20734": "looks-like", "F9": "looks-like"}, v.known_bugs


def test_f1_yields_to_f9(tmp_path):
    d = run_dir(tmp_path, lost(), {"kafka_version": "4.3.1", "workload": "txn-queue", "broker_events": F9_EVENT},
                {"name": "txn-queue", "inflight_abort": "reuse", "producer": {}})
    v = check_run(d)
    assert named(v).get("F9") == "looks-like" and named(v).get("F1") == "resembles", v.known_bugs
    assert "F9 explains" in _why(v, "F1")


def test_the_blind_f9_run_names_f9_only_with_the_event_its_logs_hold(tmp_path):
    """hunt-cascading-kills seed 864441 on 4.2.2 (the run that found F9): its recorded verdict, with
    meta.json's broker_events as the old scanner wrote them ({}), resembled KAFKA-14402, KAFKA-17754
    and F1; scanned again from its own n1.log lines it looks like F9 and nothing else."""
    from harness.cluster.broker_events import scan_broker_logs
    from tests.unit.test_broker_events import BLIND_F9_LINES

    writer = {"op": 93, "invoke_index": 189, "complete_index": 252, "process": 0, "f": "txn", "type": "info",
              "transactional_id": "eosc-txn-0"}
    poll = {"op": 154, "invoke_index": 320, "complete_index": 321, "process": 1, "f": "poll", "type": "ok"}
    lost_case = {"key": "t1/0", "value": 100000016, "offset": 25, "writer": writer}
    verdict = {"valid": False, "failing": ["int-poll-skip", "lost-write", "poll-skip", "torn-transaction", "unseen"],
               "anomaly_counts": {"G0": 3, "G0-process": 1, "G0-realtime": 1, "int-poll-skip": 1, "lost-write": 1,
                                  "poll-skip": 2, "stalled-lso": 10, "torn-transaction": 1, "unseen": 1},
               "liveness_reports": ["stalled-lso"],
               "anomalies": {"lost-write": [{"anomaly": "lost-write", **lost_case}],
                             "unseen": [{"anomaly": "unseen", **lost_case}],
                             "torn-transaction": [{"anomaly": "torn-transaction", "op": writer}],
                             "poll-skip": [{"anomaly": "poll-skip", "key": "t1/0", "op": poll}],
                             "int-poll-skip": [{"anomaly": "int-poll-skip", "key": "t1/0", "op": poll}],
                             "stalled-lso": [{"anomaly": "stalled-lso", "key": "t0/2", "process": 1,
                                              "stuck_at": {"offset": 21}, "stalled_ms": 57600}]}}
    meta = {"kafka_version": "4.2.2", "client": {"name": "java", "version": "4.3.1"}, "workload": "txn-queue",
            "transaction_version": {"broker": 2, "client": [2]}, "isolation_level": "read_committed",
            "broker_events": {}}
    workload = {"name": "txn-queue", "client": "java", "inflight_abort": "replace"}
    before = {m["id"]: m["match"] for m in match_dicts(verdict, meta, workload)}
    assert before == {"KAFKA-14402": "resembles", "KAFKA-17754": "resembles", "F1": "resembles"}, before
    (tmp_path / "n1.log").write_text("\n".join(BLIND_F9_LINES) + "\n")
    meta["broker_events"] = scan_broker_logs(tmp_path)
    after = match_dicts(verdict, meta, workload)
    assert [(m["id"], m["match"]) for m in after] == [("F9", "looks-like")], after
    assert "eosc-txn-0" in after[0]["why"] and "__transaction_state-14" in after[0]["why"]


# -- KAFKA-17754 ----------------------------------------------------------------------------------------
def test_kafka_17754_aborted_read_with_transaction_version_1():
    meta = {"kafka_version": "4.3.1", "client": {"name": "librdkafka", "version": "2.16.0"},
            "transaction_version": {"broker": None, "client": [1]}, "isolation_level": "read_committed"}
    v = check(aborted_read(), meta=meta)
    assert v.failing == ["G1a"]
    assert named(v) == {"KAFKA-17754": "looks-like"}
    assert v.known_bugs[0]["evidence"][0].startswith("G1a (1): e.g. x/0@1, writer op 2 (txn fail")


def test_kafka_17754_control_transaction_version_2_resembles():
    meta = {"kafka_version": "4.3.1", "client": {"name": "java", "version": "4.3.1"},
            "transaction_version": {"broker": 2, "client": [2]}}
    v = check(aborted_read(), meta=meta)
    # a late Produce after an abort (KAFKA-14402) fits too, but 4.3.1 verifies a transactional
    # produce: both only resemble, neither is named as the cause
    assert named(v) == {"KAFKA-17754": "resembles", "KAFKA-14402": "resembles"}
    assert "transaction version 2" in _why(v, "KAFKA-17754")
    assert "3.6.0" in _why(v, "KAFKA-14402")


# -- F1 -----------------------------------------------------------------------------------------------
def test_f1_lost_write_with_librdkafka_and_inflight_abort_reuse(tmp_path):
    d = run_dir(tmp_path, lost(), {"kafka_version": "4.3.1", "workload": "txn-queue"},
                {"name": "txn-queue", "inflight_abort": "reuse", "producer": {}})
    v = check_run(d)
    assert {"lost-write", "unseen"} <= set(v.failing)
    assert named(v).get("F1") == "looks-like", v.known_bugs
    f1 = next(m for m in v.known_bugs if m["id"] == "F1")
    assert any("inflight_abort: reuse" in e for e in f1["evidence"])
    # KAFKA-17754 fits the lost write too (librdkafka speaks transaction version 1), F1 more closely
    assert named(v).get("KAFKA-17754") == "resembles" and "F1 explains" in _why(v, "KAFKA-17754")


def test_f1_control_java_client_or_the_default_replace_never_looks_like_f1(tmp_path):
    d = run_dir(tmp_path, lost(), {"kafka_version": "4.3.1", "workload": "txn-queue",
                                   "client": {"name": "java", "version": "4.3.1"},
                                   "transaction_version": {"broker": 2, "client": [2]}},
                {"name": "txn-queue", "inflight_abort": "reuse", "client": "java"})
    v = check_run(d)
    assert named(v).get("F1") == "resembles" and "java" in _why(v, "F1")
    assert "looks-like" not in named(v).values()
    v = match_dicts(v, {"kafka_version": "4.3.1", "workload": "txn-queue"}, {"inflight_abort": "replace"})
    f1 = next(m for m in v if m["id"] == "F1")
    assert f1["match"] == "resembles" and "inflight_abort: replace" in f1["why"]


# -- F4 / F5 ---------------------------------------------------------------------------------------------
def test_f4_offset_reset_with_pending_offsets_and_librdkafka():
    v = check(_base(restart_at=0, pending=True).ev, meta={"pipeline": PIPE, "kafka_version": "4.3.1",
                                                          "workload": "eos-pipeline"})
    assert v.failing == ["eos-duplicate"]
    assert named(v) == {"F4": "looks-like"}, v.known_bugs
    assert "offset-reset at assign op" in v.known_bugs[0]["evidence"][0]


def test_f4_control_java_consumer_resembles():
    v = check(_base(restart_at=0, pending=True).ev, meta={
        "pipeline": PIPE, "kafka_version": "4.3.1", "workload": "eos-pipeline",
        "client": {"name": "java", "version": "4.3.1"}})
    assert named(v) == {"F4": "resembles"} and "not librdkafka" in _why(v, "F4")


def test_f5_behind_committed_restart_on_4_3_1():
    v = check(_base(restart_at=1).ev, meta={"pipeline": PIPE, "kafka_version": "4.3.1", "workload": "eos-pipeline"})
    assert named(v) == {"F5": "looks-like"}, v.known_bugs
    assert "behind-committed" in v.known_bugs[0]["evidence"][0]


def test_f5_control_older_release_resembles_and_a_reset_without_pending_offsets_only_resembles():
    v = check(_base(restart_at=1).ev, meta={"pipeline": PIPE, "kafka_version": "3.9.1", "workload": "eos-pipeline"})
    assert named(v) == {"F5": "resembles"}
    v = check(_base(restart_at=0).ev, meta={"pipeline": PIPE, "kafka_version": "4.3.1", "workload": "eos-pipeline"})
    assert named(v) == {"F4": "resembles", "F5": "resembles"}, v.known_bugs


# -- F6 -----------------------------------------------------------------------------------------------------
def share_dlq_events(*dlq_records) -> list[dict]:
    """tests/unit/test_share_dlq.py's rejected record 2 dead-lettered, plus ``dlq_records``."""
    from tests.unit.test_share_dlq import dlq_read, rejected

    return dlq_read(rejected(), [(2, 101, "Offset rejected by client."), *dlq_records]).events()


LIBRDKAFKA = {"name": "librdkafka", "version": "2.16.0"}
MARKER = (1, "\x00\x00\x00\x00\x00\x01", "Offset delivery count exceeded the threshold.")


def test_f6_a_dead_lettered_marker_with_librdkafka_on_4_4_0():
    from tests.unit.test_share_dlq import DLQ

    v = check(share_dlq_events(MARKER), meta={"share": DLQ, "kafka_version": "4.4.0", "client": LIBRDKAFKA})
    assert v.failing == ["share-dlq-spurious"]
    assert named(v) == {"F6": "looks-like"}, v.known_bugs
    assert "t0/0@1" in v.known_bugs[0]["evidence"][0] and "GAP" in _why(v, "F6")


def test_f6_controls_java_client_resembles_and_a_spurious_accepted_record_is_not_f6():
    from tests.unit.test_share_dlq import DLQ

    v = check(share_dlq_events(MARKER), meta={"share": DLQ, "kafka_version": "4.4.0",
                                              "client": {"name": "java", "version": "4.4.0"}})
    assert named(v) == {"F6": "resembles"} and "GAP" in _why(v, "F6")
    v = check(share_dlq_events((0, 100, "x")), meta={"share": DLQ, "kafka_version": "4.4.0"})
    assert v.failing == ["share-dlq-spurious"] and "F6" not in named(v)
    v = check(share_dlq_events(MARKER, (0, 100, "x")), meta={"share": DLQ, "kafka_version": "4.4.0",
                                                              "client": LIBRDKAFKA})
    assert named(v) == {"F6": "resembles"} and "no marker" in _why(v, "F6")


# -- KAFKA-15653, KAFKA-19367, KAFKA-20090: keyed on other finders' report names ----------------------------
def produce_error(error: str) -> list[dict]:
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.txn(0, [("x/0", 2, None)], "fail", tid="t", error=[error, "broker said so"])
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    return b.events


def _hand_verdict(name: str, failing: bool = True, **case_fields) -> Verdict:
    """A verdict with one case of ``name``: failing the run (through fail_on) by default, else
    a valid run that only reports it."""
    case = {"anomaly": name, "op": {"op": 1, "invoke_index": 2, "complete_index": 3, "process": 0, "f": "txn",
                                     "type": "fail", "transactional_id": "t"}, "explanation": name, **case_fields}
    return Verdict(valid=not failing, anomalies={name: [case]}, anomaly_counts={name: 1}, liveness_reports=[name],
                   failing=[name] if failing else [])


COMPRESSED = {"name": "txn-queue", "producer": {"compression.type": "lz4"}}


def test_kafka_15653_server_error_on_3_6_0():
    v = _hand_verdict("server-error", protocol_error="UNKNOWN_SERVER_ERROR", node_faults=[])
    ms = {m.id: m for m in match(v, {"kafka_version": "3.6.0"}, COMPRESSED)}
    assert ms["KAFKA-15653"].match == "looks-like" and "producer compression.type lz4" in ms["KAFKA-15653"].evidence
    # controls: the fixed release; producers that did not compress, or not known to
    assert match(v, {"kafka_version": "3.6.1"}, COMPRESSED)[0].match == "resembles"
    uncompressed = match(v, {"kafka_version": "3.6.0"}, {"name": "txn-queue", "producer": {}})[0]
    assert uncompressed.match == "resembles" and "did not compress" in uncompressed.why
    assert match(v, {"kafka_version": "3.6.0"})[0].match == "resembles"
    # not its mark: CORRUPT_MESSAGE, or a non-transactional op; the report not failing the run: seen only
    assert match(_hand_verdict("server-error", protocol_error="CORRUPT_MESSAGE"), {"kafka_version": "3.6.0"},
                 COMPRESSED) == []
    assert [m.match for m in match(_hand_verdict("server-error", failing=False, protocol_error="INVALID_RECORD"),
                                   {"kafka_version": "3.6.0"}, COMPRESSED)] == ["seen"]


def test_kafka_15653_through_the_server_error_finder_when_it_is_there():
    if "server_error_cases" not in {f[0] for f in FINDERS}:
        pytest.skip("checkers/finders/server_error.py is not in FINDERS yet")
    meta = {"kafka_version": "3.6.0", "fail_on": ["server-error"]}
    v = match_dicts(check(produce_error("UNKNOWN_SERVER_ERROR"), meta=meta), meta, COMPRESSED)
    assert {m["id"]: m["match"] for m in v}.get("KAFKA-15653") == "looks-like", v
    v = check(produce_error("UNKNOWN_SERVER_ERROR"), meta=dict(meta, kafka_version="3.7.0"))
    assert named(v).get("KAFKA-15653") == "resembles"
    # without fail_on the report does not fail the run: seen, not named
    v = check(produce_error("UNKNOWN_SERVER_ERROR"), meta={"kafka_version": "3.6.0"})
    assert v.known_bugs == [] and [m["id"] for m in v.known_bugs_seen] == ["KAFKA-15653"]


TV2 = {"client": {"name": "java", "version": "4.0.0"}, "transaction_version": {"broker": 2, "client": [2]}}


EPOCH_END = {"epoch_evidence": "its last ok init had producer epoch 32741 and 26 transaction(s) completed after it"}


def test_epoch_exhausted_on_4_0_0_with_transaction_version_2_looks_like_both_epoch_bugs():
    v = _hand_verdict("epoch-exhausted", **EPOCH_END)
    assert {m.id: m.match for m in match(v, {"kafka_version": "4.0.0", **TV2})} == {
        "KAFKA-19367": "looks-like", "KAFKA-20090": "looks-like"}
    # 4.2.1: KAFKA-19367 was fixed in 4.0.1, KAFKA-20090 only in 4.3.0
    assert {m.id: m.match for m in match(v, {"kafka_version": "4.2.1", **TV2})} == {
        "KAFKA-20090": "looks-like", "KAFKA-19367": "resembles"}


def test_epoch_exhausted_controls_fixed_release_and_transaction_version_1():
    v = _hand_verdict("epoch-exhausted", **EPOCH_END)
    assert {m.match for m in match(v, {"kafka_version": "4.3.1", **TV2})} == {"resembles"}
    tv1 = match(v, {"kafka_version": "4.0.0", "client": {"name": "librdkafka"}})
    assert {m.match for m in tv1} == {"resembles"} and all("transaction version 1" in m.why for m in tv1)
    # a case that does not show the epoch's end (a verdict written before the finder read it) is not the
    # bugs' mark; a report that does not fail the run is only seen
    assert match(_hand_verdict("epoch-exhausted"), {"kafka_version": "4.0.0", **TV2}) == []
    seen = match(_hand_verdict("epoch-exhausted", failing=False, **EPOCH_END), {"kafka_version": "4.0.0", **TV2})
    assert {m.match for m in seen} == {"seen"}


# -- the catalogue, the verdict file, the terminal line, the docs ---------------------------------------------------
def test_a_run_with_no_anomaly_names_nothing_and_old_verdicts_read():
    v = check(clean(), meta={"kafka_version": "3.5.2", "broker_events": SKIPPED})
    assert v.valid is True and v.known_bugs == []
    old = json.loads(v.to_json())
    del old["known_bugs"]
    assert Verdict.coerce(old).known_bugs == [] and Verdict.coerce(old).valid is True


def test_releases_compare_as_tuples_and_facts_come_from_meta_or_versions():
    assert release("3.5.2") < release("3.6.0") < release("3.10.0") and release("4.0.0-rc1") == (4, 0, 0)
    assert release("4.1") == (4, 1, 0) and release("trunk") is None and release(None) is None
    f = run_facts({"versions": {"kafka": "3.9.1", "java-client": "3.9.1"}})
    assert (f.kafka, f.client, f.tv) == ("3.9.1", "java", (1,))  # no transaction version 2 before 4.0
    f = run_facts({"kafka_version": "4.3.1", "workload": "app"})
    assert (f.client, f.tv) == (None, ())


def test_the_terminal_line_names_the_bug():
    from harness.cli.main import _summary

    v = check(stalled(), meta={**STALL, "kafka_version": "3.5.2"})
    assert "known bug: looks like KAFKA-14402 (hanging transaction; Kafka <= 3.5.x, fixed in 3.6.0): " \
        "a read_committed consumer stalled" in _summary(v)
    assert "known bug" not in _summary(check(clean()))


def test_every_catalogue_entry_is_in_the_docs_table_with_its_releases():
    doc = (ROOT / "docs" / "known-bugs.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines() if line.startswith("| ")}
    for bug in CATALOGUE:
        assert bug.id in rows, bug.id
        assert bug.affected in rows[bug.id] and (bug.fixed or "none") in rows[bug.id], rows[bug.id]
    assert set(BY_ID) == {b.id for b in CATALOGUE} and len(BY_ID) == len(CATALOGUE)
    assert {"KAFKA-14402", "KAFKA-20734", "KAFKA-17754", "KAFKA-15653", "KAFKA-19367", "KAFKA-20090",
            "F1", "F3", "F4", "F5", "F6", "F7", "F9"} <= set(BY_ID)


def test_a_signature_that_raises_is_skipped_not_a_crash(monkeypatch):
    import checkers.known_bugs.bugs as kb

    def boom(v, f):
        raise RuntimeError("boom")

    broken = kb.KnownBug(**{**{k: getattr(BY_ID["KAFKA-17754"], k) for k in (
        "id", "title", "component", "affected", "fixed", "clients", "signature_text", "link", "doc", "notes",
        "in_range")}, "signature": boom})
    monkeypatch.setattr(kb, "CATALOGUE", (broken, *[b for b in CATALOGUE if b.id != "KAFKA-17754"]))
    v = check(aborted_read(), meta={"kafka_version": "4.3.1", "workload": "txn-queue"})
    assert v.failing == ["G1a"] and "KAFKA-17754" not in named(v)          # skipped, the check went on
    assert "looks-like" not in named(v).values()


def test_the_suite_record_and_its_failure_message_carry_the_names():
    from harness.detect.suite import describe_verdict

    v = check_run(ROOT / "tests" / "data" / "real-f2-leaderless-marker")
    record = json.loads(json.dumps({**v.model_dump(mode="json"), "first_examples": {}}))
    assert "known bug: looks like KAFKA-20734 (transaction markers skipped for a leaderless partition, finding F2;" \
        in describe_verdict("f2", record)
    assert "known bug" not in describe_verdict("clean", check(clean()))


def epoch_stuck() -> list[dict]:
    """transactional.id t commits, then its InitProducerId fails for 12 s until the end."""
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.init(0, "t")
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.init(0, "t", "fail", error=["INVALID_PRODUCER_EPOCH", "epoch overflow"])
    for _ in range(10):
        b.nemesis("noop")
    b.init(0, "t", "fail", error=["INVALID_PRODUCER_EPOCH", "epoch overflow"])
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1)]}, final=True)
    return b.events


def test_kafka_19367_through_the_epoch_exhausted_finder_when_it_is_there():
    if "epoch_exhausted_cases" not in {f[0] for f in FINDERS}:
        pytest.skip("checkers/finders/epoch_exhausted.py is not in FINDERS yet")
    meta = {"kafka_version": "4.0.0", "fail_on": ["epoch-exhausted"], **TV2}
    v = check(epoch_stuck(), meta=meta)
    assert "epoch-exhausted" in v.failing, v.counts
    assert named(v) == {"KAFKA-19367": "looks-like", "KAFKA-20090": "looks-like"}, v.known_bugs
    assert "op 4 (init fail, process 0, t)" in v.known_bugs[0]["evidence"][0]
    # the control: 4.3.1 has both fixes
    assert set(named(check(epoch_stuck(), meta=dict(meta, kafka_version="4.3.1"))).values()) == {"resembles"}


def test_the_report_has_a_known_bugs_box_with_why_evidence_and_link(tmp_path):
    import shutil

    from harness.report.render import check_and_render

    d = tmp_path / "f2"
    shutil.copytree(ROOT / "tests" / "data" / "real-f2-leaderless-marker", d)
    _, report = check_and_render(d)
    html = report.read_text()
    box = html.split('id="known-bugs"')[1].split("</div>")[0]
    assert "<b>looks like KAFKA-20734</b>" in box
    # the report works offline and points nowhere (tests/integration/test_report_browser.py): the
    # link is text to copy, not an href
    assert "https://issues.apache.org/jira/browse/KAFKA-20734</span>" in box and "href=\"http" not in html
    assert "docs/findings/F2.md" in box and "broker event skipped-txn-markers" in box and "f2-0" in box
    # a valid run: no box
    smoke = tmp_path / "smoke"
    shutil.copytree(ROOT / "tests" / "data" / "real-smoke-s1", smoke)
    assert 'id="known-bugs"' not in check_and_render(smoke)[1].read_text()


def test_kafka_14402_aborted_read_on_a_release_without_verification_and_its_control():
    """scenarios/zoo/kafka-14402.yaml on 3.5.2: the late Produce of an aborted transaction,
    ended by the replaced producer's next transaction (a new epoch, so not KAFKA-17754's same
    epoch), commits the aborted record: G1a. On 3.6.0 the same history only resembles."""
    old = {"kafka_version": "3.5.2", "client": {"name": "librdkafka", "version": "2.16.0"},
           "transaction_version": {"broker": None, "client": [1]}, "isolation_level": "read_committed"}
    v = check(aborted_read(), meta=old)
    assert named(v)["KAFKA-14402"] == "looks-like" and "G1a" in _why(v, "KAFKA-14402")
    fixed = check(aborted_read(), meta=dict(old, kafka_version="3.6.0"))
    assert named(fixed).get("KAFKA-14402") in (None, "resembles")
    # the entry's own run: the txn-producer replaced its instance after each in-flight abort, so
    # no later transaction shared the aborted one's epoch: KAFKA-14402 alone (17754's doubtful fit
    # is left out for the entry that looks like the cause)
    from checkers.known_bugs.bugs import match as match_
    got = {m.id: m.match for m in match_(v, old, {"name": "txn-queue", "inflight_abort": "replace"})}
    assert got["KAFKA-14402"] == "looks-like" and got.get("KAFKA-17754") != "looks-like"
    # a read_uncommitted consumer reads aborted writes by design: no upstream bug named
    from checkers.known_bugs.facts import run_facts  # noqa: F401  (the facts the match reads)
    from checkers.known_bugs.bugs import match
    ru = match(v, old, {"name": "txn-queue", "isolation_level": "read_uncommitted"})
    assert not [m for m in ru if m.id in ("KAFKA-14402", "KAFKA-17754")]
    # meta.json says it too (the runner writes the workload's isolation_level there): the real
    # read-uncommitted run of tests/data names no upstream bug
    import json
    data = ROOT / "tests" / "data" / "real-read-uncommitted-s2"
    meta = json.loads((data / "meta.json").read_text())
    assert meta["isolation_level"] == "read_uncommitted"
    real = check(data / "history.jsonl", meta=meta, allowed=["G0", "G0-process", "G0-realtime", "G1c-realtime"])
    assert "G1a" in real.failing and not [m for m in real.known_bugs if m["id"] in ("KAFKA-14402", "KAFKA-17754")]


def test_kafka_17754_stands_beside_f1_when_an_aborted_write_was_committed(tmp_path):
    """scenarios/zoo/kafka-17754.yaml on 4.4.0 with librdkafka: G1a (the late Produce of the
    aborted transaction committed by the next one) and lost-write (the next record taken for
    its duplicate, F1). F1 explains the lost write, not the G1a: both are named."""
    from checkers.known_bugs.bugs import match

    meta = {"kafka_version": "4.4.0", "client": {"name": "librdkafka", "version": "2.16.0"},
            "transaction_version": {"broker": 2, "client": [1]}}
    reuse = {"name": "txn-queue", "inflight_abort": "reuse", "producer": {}}
    # the aborted txn's record at offset 1 read as committed; the next txn's write (value 3),
    # acknowledged at offset 1 too (taken for the late record's duplicate), never read
    b = HistoryBuilder()
    b.txn(0, [("x/0", 1, 0)], tid="t")
    b.txn(0, [("x/0", 2, 1)], "fail", tid="t")
    b.txn(0, [("x/0", 3, 2)], tid="t")
    b.txn(0, [("x/0", 4, 3)], tid="t")
    b.assign(1, ["x/0"])
    b.poll(1, {"x/0": [(0, 1), (1, 2), (3, 4)]}, final=True)
    v = check(b.events, meta=meta)
    assert {"G1a", "lost-write"} <= set(v.failing)
    got = {m.id: m.match for m in match(v, meta, reuse)}
    assert got["F1"] == "looks-like" and got["KAFKA-17754"] == "looks-like"
    v = check_run(run_dir(tmp_path, lost(), dict(meta, workload="txn-queue"), reuse))
    assert named(v).get("F1") == "looks-like" and named(v).get("KAFKA-17754") == "resembles"


# -- KAFKA-20765: a client event (harness.run.client_events) and a stall ------------------------------------------
DEDUP = {"offset-fetch-dedup-spin": {"count": 707, "first": "... A duplicated, inflight, request was identified, "
                                     "but unable to find it in the outbound buffer: OffsetFetchRequestState{...}",
                                     "log": "app-2.log", "logs": ["app-2.log"]}}


def test_kafka_20765_stall_with_the_clients_dedup_spin_line():
    v = _hand_verdict("app-stalled")  # failing the run
    ms = {m.id: m for m in match(v, {"kafka_version": "4.3.1", "client_events": DEDUP})}
    assert ms["KAFKA-20765"].match == "looks-like", ms
    assert any("offset-fetch-dedup-spin" in e and "app-2.log" in e for e in ms["KAFKA-20765"].evidence)
    # controls: the same stall without the client's line names nothing (a stall has many causes); the line
    # in a run that reports something else (an allowed G0) only resembles it; a run with nothing to
    # explain names nothing
    assert "KAFKA-20765" not in {m.id for m in match(v, {"kafka_version": "4.3.1"})}
    other = {m.id: m for m in match(_hand_verdict("G0"), {"kafka_version": "4.3.1", "client_events": DEDUP})}
    assert other["KAFKA-20765"].match == "seen" and "no stall" in other["KAFKA-20765"].why
    assert match(Verdict(valid=True), {"kafka_version": "4.3.1", "client_events": DEDUP}) == []
    # the stall reported in a valid run: seen, never named
    valid = match(_hand_verdict("app-stalled", failing=False), {"kafka_version": "4.3.1", "client_events": DEDUP})
    assert [(m.id, m.match) for m in valid] == [("KAFKA-20765", "seen")]


def test_kafka_20765_on_the_real_streams_protocol_run_and_not_on_the_classic_one():
    # app-streams-protocol seed 2, Kafka 4.3.1, kafka-streams 4.3.1, group.protocol=streams (2026-11-27):
    # in/2 stalled ~74 s while instance 2's consumer logged the line 707 times
    d = ROOT / "tests" / "data" / "real-streams-protocol-kafka-20765-s2"
    ms = match_dicts(json.loads((d / "verdict.json").read_text()), json.loads((d / "meta.json").read_text()))
    # the run is valid (its stall a liveness report only): seen in a valid run, not named
    assert {m["id"]: m["match"] for m in ms}.get("KAFKA-20765") == "seen", ms
    # negative control on real data: the classic-protocol Streams run (no such line in its clients' logs)
    c = ROOT / "tests" / "data" / "real-app-streams-s1"
    assert "KAFKA-20765" not in {m["id"] for m in match_dicts(json.loads((c / "verdict.json").read_text()),
                                                                 json.loads((c / "meta.json").read_text()))}


def test_scan_client_logs_reads_the_clients_logs_not_the_brokers(tmp_path):
    from harness.run.client_events import scan_client_logs

    line = ("[consumer_background_thread] WARN ...CommitRequestManager - A duplicated, inflight, request was "
            "identified, but unable to find it in the outbound buffer: OffsetFetchRequestState{}\n")
    (tmp_path / "app-2.log").write_text("start\n" + line * 3)
    (tmp_path / "app-0.log").write_text(line)
    (tmp_path / "n1.log").write_text(line * 5)  # a broker's log is not a client's
    ev = scan_client_logs(tmp_path)["offset-fetch-dedup-spin"]
    assert ev["count"] == 4 and ev["logs"] == ["app-0.log", "app-2.log"] and ev["log"] == "app-0.log"
    assert scan_client_logs(tmp_path / "missing") == {}


# -- librdkafka#5511: the application's send-offsets-stuck line and a stall -------------------------------------
STUCK = {"send-offsets-stuck": {"count": 1, "first": "copy_service: send_offsets_to_transaction has not returned "
                                "after 46 s, past its timeout (transaction.timeout.ms 30000; librdkafka 2.16.0): "
                                "exiting to be restarted", "log": "app-0.log", "logs": ["app-0.log"]}}


def test_librdkafka_5511_stall_with_the_apps_send_offsets_stuck_line():
    v = _hand_verdict("app-stalled")
    ms = {m.id: m for m in match(v, {"kafka_version": "4.3.1", "client_events": STUCK})}
    assert ms["librdkafka#5511"].match == "looks-like", ms
    assert any("send-offsets-stuck" in e and "app-0.log" in e for e in ms["librdkafka#5511"].evidence)
    # controls: the stall alone names nothing; the line with nothing stalled only resembles it; a
    # client older than 2.10.0 (no decommissioning) only resembles it, naming #5456
    assert "librdkafka#5511" not in {m.id for m in match(v, {"kafka_version": "4.3.1"})}
    other = {m.id: m for m in match(_hand_verdict("G0"), {"kafka_version": "4.3.1", "client_events": STUCK})}
    assert other["librdkafka#5511"].match == "seen" and "no stall" in other["librdkafka#5511"].why
    old = {"send-offsets-stuck": dict(STUCK["send-offsets-stuck"],
                                      first=STUCK["send-offsets-stuck"]["first"].replace("2.16.0", "2.8.0"))}
    o = {m.id: m for m in match(v, {"kafka_version": "4.3.1", "client_events": old})}
    assert o["librdkafka#5511"].match == "resembles" and "#5456" in o["librdkafka#5511"].why


def test_scan_client_logs_finds_the_copy_services_stuck_line(tmp_path):
    from harness.run.client_events import scan_client_logs

    line = STUCK["send-offsets-stuck"]["first"] + "\n"
    (tmp_path / "app-0.log").write_text("%7|1.0|ADDOFFSETS|rdkafka#producer-2| ...\n" + line)
    (tmp_path / "app-1.log").write_text("copy_service: a transaction took 31.3 s\n")
    ev = scan_client_logs(tmp_path)["send-offsets-stuck"]
    assert ev["count"] == 1 and ev["logs"] == ["app-0.log"]
    # the words are the copy service's own (its watchdog's line)
    src = (ROOT / "harness" / "examples" / "copy_service.py").read_text()
    assert "has not returned after {took:.0f} s, past its timeout" in src and "librdkafka {libversion()[0]}" in src


# -- F7: a lost Flink TaskManager after the KafkaSink writer's close() threw (client events) and a stall -----------
# lines from docs/findings/F7-evidence/s3-fatal-after-double-warn.txt (app-flink-short-txn-timeout seed 3)
F7_FATAL = ("06:06:58,723 ERROR org.apache.flink.runtime.taskmanager.Task                    [] - FATAL - exception in "
            "exception handler of task Source: input -> copy -> output: Writer -> output: Committer (1/2)#0 "
            "(c07e576437f1728599bdffba68ae92bd_cbc357ccb763df2852fee8c4fc7d55f2_0_0).")
F7_CLOSE = ("\tat org.apache.flink.connector.kafka.sink.KafkaWriter.close(KafkaWriter.java:210) ~[blob_p-7bf2ded1144"
            "cb8aece05adcaccbc81b2ac3ef339-c180d6dddf9ca8c0019ab36f913897bb:5.0.0-2.2]")
F7_EVENTS = {"flink-taskmanager-lost": {"count": 2, "first": F7_FATAL, "log": "app-0.log", "logs": ["app-0.log"]},
             "flink-kafka-writer-close-threw": {"count": 3, "first": F7_CLOSE.strip(), "log": "app-0.log",
                                                "logs": ["app-0.log"]}}
F7_META = {"kafka_version": "4.3.1", "versions": {"kafka": "4.3.1", "flink": "2.2.1",
                                                  "flink-connector-kafka": "5.0.0-2.2"}}


def test_f7_stall_with_a_lost_taskmanager_and_the_writers_close_frame():
    v = _hand_verdict("app-stalled")
    ms = {m.id: m for m in match(v, dict(F7_META, client_events=F7_EVENTS))}
    assert ms["F7"].match == "looks-like", ms
    assert any("flink-taskmanager-lost" in e and "app-0.log" in e for e in ms["F7"].evidence)
    assert any("flink-kafka-writer-close-threw" in e for e in ms["F7"].evidence)
    # controls: the stall alone names nothing; the writer's close frame without a lost TaskManager is not F7
    assert "F7" not in {m.id for m in match(v, F7_META)}
    close_only = {"flink-kafka-writer-close-threw": F7_EVENTS["flink-kafka-writer-close-threw"]}
    assert "F7" not in {m.id for m in match(v, dict(F7_META, client_events=close_only))}
    # a lost TaskManager without the KafkaWriter frame: something else may have killed it
    lost_only = {"flink-taskmanager-lost": F7_EVENTS["flink-taskmanager-lost"]}
    o = {m.id: m for m in match(v, dict(F7_META, client_events=lost_only))}
    assert o["F7"].match == "resembles" and "KafkaWriter.close" in o["F7"].why
    # both events but nothing stalled (the watchdog restarted the job): F7 explains none of the anomalies
    g = {m.id: m for m in match(_hand_verdict("G0"), dict(F7_META, client_events=F7_EVENTS))}
    assert g["F7"].match == "seen" and "no stall" in g["F7"].why
    # Flink before 2.2.0 suppresses a cleanup exception: outside the range
    old = dict(F7_META, versions={"flink": "2.1.1"}, client_events=F7_EVENTS)
    r = {m.id: m for m in match(v, old)}
    assert r["F7"].match == "resembles" and "older than 2.2.0" in r["F7"].why
    assert match(Verdict(valid=True), dict(F7_META, client_events=F7_EVENTS)) == []


def test_scan_client_logs_finds_flinks_fatal_the_watchdog_line_and_the_writers_close_frame(tmp_path):
    from harness.examples.flink_app import watchdog_verdict
    from harness.run.client_events import scan_client_logs

    why = watchdog_verdict(exit_code=None, tm_failure="TaskManager #0 failed.", stalled_s=0.0, checkpointed=True,
                           bound_s=30.0, startup_s=60.0)
    watchdog = f"flink_app: watchdog: {why}; killing the job (pid 21428 and its JVM) and exiting 3\n"
    # what must not count: the WARN, the failure cause's frames, the watchdog's start line, MiniCluster's line
    noise = ("06:06:58,292 WARN  org.apache.flink.connector.kafka.sink.KafkaWriter            [] - Kafka request "
             "failed, sent records: 652, out records: 842\n"
             "\tat org.apache.flink.connector.kafka.sink.KafkaWriter.write(KafkaWriter.java:171) ~[blob_p-1:5.0.0-2.2]\n"
             "flink_app: watchdog on: the job ends when its process exits, its TaskManager is lost, or no checkpoint "
             "completes for 30 s (90 s after a start)\n"
             "06:06:58,725 ERROR org.apache.flink.runtime.minicluster.MiniCluster             [] - TaskManager #0 failed.\n")
    (tmp_path / "app-0.log").write_text(noise + F7_FATAL + "\n" + F7_CLOSE + "\n" + watchdog)
    (tmp_path / "app-1.log").write_text(noise)
    ev = scan_client_logs(tmp_path)
    assert ev["flink-taskmanager-lost"]["count"] == 2 and ev["flink-taskmanager-lost"]["first"] == F7_FATAL
    assert ev["flink-kafka-writer-close-threw"]["count"] == 1
    assert ev["flink-kafka-writer-close-threw"]["logs"] == ["app-0.log"]
    (tmp_path / "app-0.log").write_text(noise)
    assert scan_client_logs(tmp_path) == {}
