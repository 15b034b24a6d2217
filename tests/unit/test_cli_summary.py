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


def test_reprocessed_ranges_are_named_under_the_verdict():
    ranges = [{"key": "in/3", "from_offset": 0, "to_offset": 4594, "inputs": 2044,
               "restarts": [{"kind": "offset-reset", "assign_index": 12667, "first_offset": 0,
                             "committed_offset": 4595, "pending": 1}]},
              {"key": "in/1", "from_offset": 5, "to_offset": 9, "inputs": 5, "restarts": []},
              {"key": "in/0", "from_offset": 7, "to_offset": 7, "inputs": 1}]  # app workload: none looked for
    text = _summary({"valid": False, "anomaly_counts": {"eos-duplicate": 2050}, "failing": ["eos-duplicate"],
                     "stats": {"reprocessed_ranges": ranges}})
    assert "reprocessed: in/3 offsets 0-4594 (2044 inputs): offset-reset at assign op 12667" in text
    assert "reprocessed: in/1 offsets 5-9 (5 inputs): no restart behind the committed offset" in text
    assert "reprocessed: in/0 offsets 7-7 (1 inputs)\n" in text + "\n"
    assert "reprocessed" not in _summary({"valid": True})
