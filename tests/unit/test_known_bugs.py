"""tests/integration/known_bugs.py: a VALID-expecting integration test becomes an expected
failure only for a run that met KAFKA-20734 (docs/findings/F2.md), or F4/F5 (a consumer
restarted behind its group's committed offset; the verdict's ranges come from the real
excerpt of the 90-minute soak, checked with its meta.json)."""
import json

import pytest

from tests.integration.known_bugs import (kafka_20734_hit, restart_behind_commit_hit, xfail_if_kafka_20734,
                                          xfail_if_restart_behind_commit)

# the broker event of the CI rehearsal's smoke run that met the bug (results/ci-rehearsal/20261124T062157Z-s1)
SKIPPED = {"skipped-txn-markers": {"count": 2, "partitions": ["t0-0", "t1-0"],
                                   "transactional_ids": ["eosc-txn-1", "eosc-txn-3"]}}
F2_VERDICT = {"valid": False, "failing": ["torn-transaction", "unseen"]}


def test_only_an_invalid_run_with_skipped_markers_and_hanging_transaction_anomalies_is_the_bug():
    reason = kafka_20734_hit(F2_VERDICT, {"broker_events": SKIPPED})
    assert reason and "KAFKA-20734" in reason and "eosc-txn-1" in reason and "t1-0" in reason
    assert kafka_20734_hit(F2_VERDICT, {"broker_events": {}}) is None               # no log line: ours to explain
    assert kafka_20734_hit({"valid": True, "failing": []}, {"broker_events": SKIPPED}) is None
    assert kafka_20734_hit({"valid": False, "failing": ["torn-transaction", "duplicate"]},
                           {"broker_events": SKIPPED}) is None                     # a duplicate is not a hanging txn
    assert kafka_20734_hit({"valid": "unknown", "failing": []}, {"broker_events": SKIPPED}) is None


def test_xfail_reads_the_run_folder(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"broker_events": SKIPPED}))
    (tmp_path / "verdict.json").write_text(json.dumps(F2_VERDICT))
    with pytest.raises(pytest.xfail.Exception, match="KAFKA-20734"):
        xfail_if_kafka_20734(tmp_path)
    xfail_if_kafka_20734(tmp_path, {"valid": True, "failing": []})                  # returns: the test goes on
    xfail_if_kafka_20734(tmp_path / "missing")


def test_restart_behind_commit_only_when_every_range_has_one(tmp_path):
    import gzip
    from pathlib import Path

    from checkers.verdict import check
    root = Path(__file__).resolve().parents[2]
    path = tmp_path / "history.jsonl"
    path.write_bytes(gzip.decompress((root / "tests/data/real-soak-s1-excerpt/history.jsonl.gz").read_bytes()))
    meta = json.loads((root / "docs/soak-runs/2026-11-25-soak-s1/meta.json").read_text())
    v = check(path, meta={"pipeline": meta["pipeline"]}, allowed=["G0", "G0-process", "G0-realtime", "G1c-realtime"])
    ranges = v.stats["reprocessed_ranges"]
    assert [(r["key"], r["from_offset"], r["inputs"], [s["kind"] for s in r["restarts"]]) for r in ranges] == [
        ("in/0", 0, 50, ["offset-reset"])]
    if set(v.failing) == {"eos-duplicate"}:  # the excerpt's other anomalies are the cut's artifacts
        assert "F4" in restart_behind_commit_hit(v)
    forged = v.model_copy(update={"failing": ["eos-duplicate"], "valid": False})
    reason = restart_behind_commit_hit(forged)
    assert reason and "offset-reset" in reason and "in/0 0-110" in reason
    with pytest.raises(pytest.xfail.Exception, match="behind its group's committed offset"):
        xfail_if_restart_behind_commit(forged)
    # a range with no restart behind it (our processor's bug, a zombie): not excused
    unexplained = forged.model_copy(update={"stats": dict(forged.stats, reprocessed_ranges=[
        dict(ranges[0]), {"key": "in/1", "from_offset": 5, "to_offset": 9, "inputs": 5, "restarts": []}])})
    assert restart_behind_commit_hit(unexplained) is None
    assert restart_behind_commit_hit(forged.model_copy(update={"failing": ["eos-duplicate", "G1a"]})) is None
    assert restart_behind_commit_hit(forged.model_copy(update={"stats": {}})) is None
