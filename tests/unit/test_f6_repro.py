"""Pure parts of finding F6's reproducer (harness/findings/f6_repro.py, f6.py): where the markers
are, how the DLQ records are sorted, the verdict per variant, the evidence lines picked, and
the argument errors."""
from __future__ import annotations

import pytest

from harness.findings.f6 import debug_lines, dlq_lines
from harness.findings.f6_repro import (classify_dlq, group_configs, is_reproduced, main, marker_offsets, summarize,
                                       verdict)

# the four batches of a try as produce() returns them: txn 1 committed, 2 aborted, 3 committed, 4 aborted
BATCHES = [{"commit": c, "transactional": True, "offsets": offs}
           for c, offs in ((True, [0, 1, 2]), (False, [4, 5, 6]), (True, [8, 9, 10]), (False, [12, 13, 14]))]
LIMIT = "Offset delivery count exceeded the threshold."


def dlq(offset: int, topic: str = "t", message: str = LIMIT) -> dict:
    return {"dlq_offset": offset, "value_hex": "000000000001",
            "headers": {"__dlq.errors.topic": topic, "__dlq.errors.partition": "0",
                        "__dlq.errors.offset": str(offset), "__dlq.errors.message": message,
                        "__dlq.errors.delivery.count": "2"}}


def test_a_marker_is_the_offset_after_a_transactions_last_record_and_an_idempotent_batch_has_none():
    assert marker_offsets(BATCHES) == {3: "COMMIT", 7: "ABORT", 11: "COMMIT", 15: "ABORT"}
    plain = [dict(b, transactional=False) for b in BATCHES]
    assert marker_offsets(plain) == {}
    assert marker_offsets([{"commit": False, "transactional": True, "offsets": []}]) == {}


def test_dlq_records_sorted_into_markers_written_records_and_others():
    markers, written = marker_offsets(BATCHES), {o for b in BATCHES for o in b["offsets"]}
    res = classify_dlq([dlq(7), dlq(15), dlq(5), dlq(99), dlq(7, topic="other")], "t", markers, written)
    assert res == {"dlq": 5, "dlq_at_markers": 2, "dlq_at_records": 1, "dlq_other": 2,
                   "marker_offsets_in_dlq": [7, 15]}
    bad = {"dlq_offset": 0, "headers": {"__dlq.errors.offset": "x"}}
    assert classify_dlq([bad], "t", markers, written)["dlq_other"] == 1


def test_reproduced_means_a_marker_dead_lettered_and_for_the_control_any_dlq_record():
    hit = {"dlq": 2, "dlq_at_markers": 2}
    none = {"dlq": 0, "dlq_at_markers": 0}
    assert is_reproduced("txn", hit) and is_reproduced("java", hit)
    assert not is_reproduced("txn", none) and not is_reproduced("java", {"dlq": 1, "dlq_at_markers": 0})
    assert is_reproduced("no-txn", {"dlq": 1, "dlq_at_markers": 0}) and not is_reproduced("no-txn", none)
    tries = [{"variant": "txn", "reproduced": True}, {"variant": "txn", "reproduced": False},
             {"variant": "no-txn", "error": "boom"}]
    assert summarize(tries) == {"txn": {"tries": 2, "reproduced": 1, "errors": 0},
                                "no-txn": {"tries": 1, "reproduced": 0, "errors": 1}}


def test_verdict_names_the_dead_lettered_markers():
    res = {"reproduced": True, "dlq": 2, "dlq_at_markers": 2, "dlq_at_records": 0, "dlq_other": 0,
           "marker_offsets_in_dlq": [7, 15], "markers": {"3": "COMMIT", "7": "ABORT", "11": "COMMIT", "15": "ABORT"},
           "consumed": 6}
    line = verdict(res)
    assert line.startswith("REPRODUCED") and "2 at markers (7 ABORT, 15 ABORT)" in line and "consumer got 6" in line
    ok = dict(res, reproduced=False, dlq=0, dlq_at_markers=0, marker_offsets_in_dlq=[], markers={})
    assert verdict(ok).startswith("not reproduced") and "markers none" in verdict(ok)


def test_group_configs_set_the_dlq_the_limit_and_read_committed():
    c = group_configs("dlq.g", 2000)
    assert c["errors.deadletterqueue.topic.name"] == "dlq.g" and c["share.delivery.count.limit"] == "2"
    assert c["share.isolation.level"] == "read_committed" and c["share.record.lock.duration.ms"] == "2000"
    assert c["errors.deadletterqueue.copy.record.enable"] == "true"


def test_evidence_lines_of_the_dlq_records_and_the_debug_log(tmp_path):
    t = {"variant": "txn", "try": 1, "topic": "f6-abc123-txn-1", "markers": {"7": "ABORT"},
         "dlq_records": [dlq(7, topic="f6-abc123-txn-1")]}
    (line,) = dlq_lines(t)
    assert "f6-abc123-txn-1-0@7 (ABORT) delivery.count=2" in line and "value=0x000000000001" in line
    log = tmp_path / "librdkafka-debug.log"
    log.write_text(
        "a SHAREFETCH [c] b: f6-abc123-txn-1 [0]: Acquired Records from offset 7 to 7, DeliveryCount 1\n"
        "a SHAREFETCH [c] b: Built share fetch response rko with 0 messages, 1 gaps, and 1 partitions\n"
        "a HEARTBEAT [c] b: heartbeat\n"
        "a SHAREFETCH [c] b: f6-abc123-no-txn-1 [0]: Acquired Records from offset 0 to 2, DeliveryCount 1\n"
        "a SHAREFETCH [c] b: Built share fetch response rko with 3 messages, 0 gaps, and 1 partitions\n")
    lines = debug_lines(log, [t])
    assert lines[0].startswith("# librdkafka debug log") and len(lines) == 3
    assert "0 messages, 1 gaps" in lines[2] and not any("3 messages" in x for x in lines)
    assert debug_lines(log, [dict(t, variant="no-txn")]) == [] and debug_lines(tmp_path / "none", [t]) == []


def test_argument_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--bootstrap", "x:1", "--variant", "nope"])
    assert e.value.code == 2
