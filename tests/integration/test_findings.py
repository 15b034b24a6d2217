"""The findings' reproducers on the real cluster (docs/findings/F1.md, F2.md, F4.md, F9.md): each must still
show its defect with the client and broker versions the harness pins. When a fixed librdkafka
or Kafka makes one of these fail, the finding is fixed upstream: update the document and turn
the test around."""
from __future__ import annotations

import json
import re

import pytest

from harness.findings.f1 import run_f1
from harness.findings.f2 import run_f2
from harness.findings.f4 import run_f4
from harness.findings.f9 import run_f9

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


def test_f4_rebalance_while_a_transaction_holds_offsets_starts_at_auto_offset_reset(results_root):
    res = run_f4(results_root, tries=1, variants=["rebalance", "no-rebalance"])
    by = {t["variant"]: t for t in res.tries}
    assert not any("error" in t for t in res.tries), res.tries
    # the rebalance lands while txn 2 holds the offsets: C1 starts T-0 at 0, not at 50 ...
    bad = by["rebalance"]
    assert bad["reproduced"] and ["C1", 0, 0] in bad["below_committed"], bad
    assert "0" in bad["first_before_abort"]["C1"]  # ... and reads it while the txn is still open
    # control: no rebalance, the same open transaction: C1 waits and starts at the committed offset
    ok = by["no-rebalance"]
    assert not ok["reproduced"] and ok["first_before_abort"]["C1"] == {}
    assert {p: f[0] for p, f in ok["members"]["C1"]["first"].items()} == {"0": 50, "1": 50}
    text = "\n".join(res.evidence)
    assert "back to pending list because on-going transaction is blocking offset retrieval" in text
    assert "at offset INVALID" in text


def test_f9_coordinator_started_within_its_lease_commits_what_its_successor_aborts(results_root):
    # about 50 s of steps: the successor aborts once C's 30 s broker lease has ended (BROKER9)
    res = run_f9(results_root, variant="stale-restart")
    r = res.result
    assert "error" not in r, r.get("error")
    # the restarted coordinator loaded its unreplicated PREPARE_COMMIT and sent COMMIT markers,
    # then truncated that record once the controller moved its partition away
    lines = r["coordinator_lines"]
    assert any("Sending txn markers for" in x and r["transactional_id"] in x and "COMMIT" in x for x in lines), lines
    assert any(f"partition=__transaction_state-{r['txn_partition']}," in x and "Truncating to offset" in x
               for x in lines), lines
    # f9-0 took that COMMIT, f9-1 only the successor's ABORT: one transaction, two outcomes
    assert r["v0_visible"] and not r["v1_visible"] and r["torn"], r
    epochs = {m: sorted({int(e) for e in re.findall(rf"endTxnMarker: {m} coordinatorEpoch: (\d+)", "\n".join(res.evidence))})
              for m in ("COMMIT", "ABORT")}
    assert epochs["COMMIT"] and epochs["ABORT"] and max(epochs["COMMIT"]) < min(epochs["ABORT"]), epochs
    assert r["verdict"]["valid"] is False and "torn-transaction" in r["verdict"]["anomaly_counts"], r["verdict"]
    # the brokers' logs carry F9's event, and the verdict names F9
    meta = json.loads((res.run_dir / "meta.json").read_text())
    assert "txn-markers-from-truncated-tail" in meta["broker_events"], meta["broker_events"]
    named = [(b["id"], b["match"]) for b in json.loads((res.run_dir / "verdict.json").read_text())["known_bugs"]]
    assert ("F9", "looks-like") in named, named


def _mock_tries(finding: str, variants: list[str]) -> dict[str, dict]:
    """harness/findings/mock_repro.py FINDING, one try per variant, as {variant: try}. The
    variants run at once, one process and mock cluster each: a try mostly sleeps through its
    timeline (F4: ~26 s), so in parallel they take the time of one."""
    import json
    import subprocess
    import sys

    from harness.findings import mock_repro

    argv = [sys.executable, mock_repro.__file__, finding, "--tries", "1", "--json"]
    procs = [subprocess.Popen(argv + ["--variant", v], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for v in variants]
    tries = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        tries += [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    return {t["variant"]: t for t in tries if "variant" in t}


def test_f1_on_librdkafkas_mock_cluster():
    # no Kafka: the mock holds A's Produce response and refuses reconnects; about 10 s
    t = _mock_tries("f1", ["reuse", "new-producer"])
    assert "error" not in t["reuse"] and "error" not in t["new-producer"], t
    assert t["reuse"]["reproduced"] and t["reuse"]["reports"]["A"][0] == "_PURGE_QUEUE"
    assert "B" not in t["reuse"]["read_uncommitted"].values()
    assert not t["new-producer"]["reproduced"] and "B" in t["new-producer"]["read_uncommitted"].values()


def test_f4_on_librdkafkas_mock_cluster():
    # no Kafka: OffsetFetch answered UNSTABLE_OFFSET_COMMIT until cleared; about 30 s
    t = _mock_tries("f4", ["rebalance", "no-rebalance"])
    assert "error" not in t["rebalance"] and "error" not in t["no-rebalance"], t
    assert t["rebalance"]["reproduced"] and any(o < 50 for _, _, o in t["rebalance"]["wrong_start"]), t
    assert not t["no-rebalance"]["reproduced"]
    assert {p: f[0] for p, f in t["no-rebalance"]["members"]["C1"]["first"].items()} == {"0": 50, "1": 50}, t
