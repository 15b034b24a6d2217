"""Pure parts of the findings' reproducers (harness/findings): the transaction coordinator's
partition as Kafka computes it, DumpLogSegments batch selection, find-hanging's table, the
reproducer's verdict line and its argument errors."""
from __future__ import annotations

import pytest

from harness.findings.f1 import select_batches
from harness.findings.f1_repro import java_string_hash, main, txn_partition_for, verdict
from harness.findings.hanging import parse_rows

DUMP = """Dumping /x/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false position: 0
| offset: 0 CreateTime: 1 keySize: -1 valueSize: 9 sequence: 0 headerKeys: [] payload: f1-w
baseOffset: 1 lastOffset: 1 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true position: 77
| offset: 1 CreateTime: 1 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 1 lastSequence: 1 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false position: 150
| offset: 2 CreateTime: 1 keySize: -1 valueSize: 9 sequence: 1 headerKeys: [] payload: f1-a
"""


@pytest.mark.parametrize("s, h", [("", 0), ("hello", 99162322), ("Aa", 2112), ("BB", 2112),
                                  ("polygenelubricants", -(1 << 31)), ("é", 233)])
def test_java_string_hash(s, h):
    # values of java.lang.String.hashCode
    assert java_string_hash(s) == h


def test_txn_partition_for_follows_utils_abs():
    assert txn_partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0
    assert txn_partition_for("hello", 50) == 99162322 % 50
    neg = "f1-repro-x"  # any id with a negative hash: abs, not Python's modulo of a negative
    h = java_string_hash(neg)
    assert txn_partition_for(neg, 50) == abs(h) % 50


def test_select_batches_keeps_whole_batches_that_hold_the_offsets():
    lines = select_batches(DUMP, {1, 2})
    assert lines[0].startswith("baseOffset: 1 ") and "isControl: true" in lines[0]
    assert "endTxnMarker: COMMIT" in lines[1]
    assert lines[2].startswith("baseOffset: 2 ") and "baseSequence: 1" in lines[2]
    assert lines[3].strip().endswith("payload: f1-a")
    assert not any("f1-w" in x for x in lines)
    assert select_batches(DUMP, {7}) == []


def test_parse_find_hanging_rows():
    text = ("Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset LastTimestamp Duration(min)\n"
            "f2    0         1000       0             0                3           1795263607097 0\n")
    assert parse_rows(text) == [{"topic": "f2", "partition": 0, "producer_id": 1000, "producer_epoch": 0,
                                 "coordinator_epoch": 0, "start_offset": 3, "last_timestamp": 1795263607097,
                                 "duration_min": 0}]
    assert parse_rows(text.splitlines()[0]) == []


def test_verdict_names_the_lost_value_and_what_its_offset_holds():
    res = {"lost": True, "committed_offset": 2, "value_at_committed_offset": "f1-a",
           "values": {"committed": "f1-b"}}
    assert "LOST" in verdict(res) and "'f1-a'" in verdict(res) and "'f1-b'" in verdict(res)
    assert verdict(dict(res, lost=False)).startswith("ok")


def test_reproducer_rejects_bad_arguments_in_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--bootstrap", "x:1", "--tries", "0"])
    assert exc.value.code == 2
    assert "--tries must be >= 1" in capsys.readouterr().err
    # an unreachable toxiproxy is a one-line error with exit code 2, not a traceback
    assert main(["--bootstrap", "198.18.0.250:9", "--toxiproxy", "http://127.0.0.1:1"]) == 2
    assert "toxiproxy API at http://127.0.0.1:1 unreachable" in capsys.readouterr().err


def test_checkers_judge_the_f2_driver_history():
    """The F2 driver's history of a recorded run (results/f2-leaderless-marker/20261123T191715Z,
    docs/findings/F2.md): T committed v1 (f2/0) and v2 (f2/1), the marker of f2/0 was skipped;
    the checkers must call the run invalid for the torn transaction and the unseen writes."""
    import json
    from pathlib import Path

    import checkers

    d = Path(__file__).resolve().parents[1] / "data" / "real-f2-leaderless-marker"
    meta = json.loads((d / "meta.json").read_text())
    verdict = checkers.check(d / "history.jsonl", meta=meta, allowed=[])
    assert verdict.valid is False
    counts = verdict.anomaly_counts
    assert counts.get("torn-transaction") == 1 and counts.get("unseen") == 2, counts
    # v1 (T's, marker skipped) and v3 (U's, committed later behind the stalled LSO)
    assert {(ex["key"], ex["value"], ex["offset"]) for ex in verdict.anomalies["unseen"]} == {
        ("f2/0", 100000001, 2), ("f2/0", 200000001, 3)}
