"""The terminal's verdict line (harness.cli.main._summary) keeps failing, expected and liveness apart."""
from harness.cli.main import _summary


def test_valid_run_lists_expected_and_liveness_apart():
    text = _summary({"valid": True, "anomaly_counts": {"G0": 24, "unavailable": 1},
                     "allowed": ["G0"], "failing": []})
    assert "VALID" in text and "INVALID" not in text
    assert "expected: G0: 24" in text and "liveness: unavailable: 1" in text
    assert "anomalies:" not in text


def test_invalid_run_puts_failing_names_first():
    text = _summary({"valid": False, "anomaly_counts": {"G1a": 3, "G0": 2, "stalled-lso": 1},
                     "allowed": ["G0"], "failing": ["G1a", "stalled-lso"]})
    assert "INVALID" in text
    assert "anomalies: G1a: 3, stalled-lso: 1" in text  # stalled-lso listed in fail_on
    assert "expected: G0: 2" in text and "liveness:" not in text


def test_verdict_without_failing_field_still_groups():
    text = _summary({"valid": False, "anomalies": {"duplicate": [{}, {}]}})
    assert "anomalies: duplicate: 2" in text


def test_summary_says_which_expected_name_failed_as_impossible_in_kafka():
    text = _summary({"valid": False, "anomaly_counts": {"G0-realtime": 3, "G0": 2},
                     "allowed": ["G0", "G0-realtime"], "failing": ["G0-realtime"],
                     "impossible": ["G0-realtime"]})
    assert "anomalies: G0-realtime: 3 (impossible in Kafka)" in text and "expected: G0: 2" in text
