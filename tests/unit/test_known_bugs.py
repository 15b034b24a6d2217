"""tests/integration/known_bugs.py: a VALID-expecting integration test becomes an expected
failure only for a run that met KAFKA-20734 (docs/findings/F2.md)."""
import json

import pytest

from tests.integration.known_bugs import kafka_20734_hit, xfail_if_kafka_20734

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
