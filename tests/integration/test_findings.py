"""The findings' reproducers on the real cluster (docs/findings/F1.md, F2.md): each must still
show its defect with the client and broker versions the harness pins. When a fixed librdkafka
or Kafka makes one of these fail, the finding is fixed upstream: update the document and turn
the test around."""
from __future__ import annotations

import pytest

from harness.findings.f1 import run_f1
from harness.findings.f2 import run_f2

pytestmark = pytest.mark.integration


def test_f1_abort_with_a_record_in_flight_loses_the_next_commit(results_root):
    res = run_f1(results_root, tries=1, variants=["reuse"])
    (t,) = res.tries
    assert "error" not in t, t
    assert t["undelivered_at_abort"] == 1 and t["commit"] == "ok"
    # the committed record was acknowledged at the aborted record's offset and is never read
    assert t["lost"], res.evidence
    assert t["value_at_committed_offset"] == t["values"]["aborted"]
    assert t["values"]["committed"] not in t["read_uncommitted"].values()
    # Kafka's DumpLogSegments shows the aborted record and no trace of the committed one
    text = "\n".join(res.evidence)
    assert f"payload: {t['values']['aborted']}" in text
    assert f"payload: {t['values']['committed']}" not in text
    assert "endTxnMarker: ABORT" in text and "endTxnMarker: COMMIT" in text


def test_f2_leaderless_partition_keeps_a_committed_transaction_open(results_root):
    res = run_f2(results_root)
    r = res.result
    assert "error" not in r, r.get("error")
    assert r["committed"] is True
    # the coordinator skipped the victim partition's marker ...
    assert r["skipped_marker_lines"], res.evidence
    # ... so its committed write is invisible, the other partition's is visible (torn), the
    # LSO stays at the open transaction and find-hanging lists it
    assert r["v2_visible"] and not r["v1_visible"] and not r["v3_visible"]
    assert r["lso"] == r["v1_offset"] < r["high_watermark"]
    assert any(h["topic"] == "f2" and h["partition"] == 0 and h["start_offset"] == r["v1_offset"]
               for h in r["hanging"]), r["hanging"]
    assert (res.run_dir / "logs" / "find-hanging.txt").is_file()
    assert r["verdict"]["valid"] is False
