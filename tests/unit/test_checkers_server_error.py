"""server-error (checkers/finders/server_error.py): ops that failed with an error a correct broker never
returns to a valid request (UNKNOWN_SERVER_ERROR, CORRUPT_MESSAGE, INVALID_RECORD); a liveness
report, failing a run only through fail_on. Tiny histories (positive, near misses) and a
negative control on real runs' histories (tests/data)."""
import json
from pathlib import Path

import pytest
import yaml

from checkers import ANOMALIES, check, load_history, server_error_cases
from checkers.synthetic.build import HistoryBuilder
from checkers.run import FAIL_ON_NAMES
from checkers.finders.server_error import SERVER_ERRORS

DATA = Path(__file__).resolve().parents[1] / "data"


def _kafka_15653_like() -> HistoryBuilder:
    """What a txn-queue producer on Kafka 3.6.0 records when KAFKA-15653 hits: a committed
    transaction, then one whose compressed batch the broker answered with UNKNOWN_SERVER_ERROR
    (librdkafka's name UNKNOWN), aborted: a ``fail`` txn; then a Java worker's
    InvalidRecordException; then a committed transaction again."""
    b = HistoryBuilder(step_ns=1_000_000_000)
    b.init(0, "eosc-txn-0")
    b.txn(0, [("t0/0", 1, 0), ("t0/1", 2, 0)], tid="eosc-txn-0")
    b.txn(0, [("t0/0", 3, 2), ("t0/2", 4, None)], "fail", tid="eosc-txn-0",
          error=["UNKNOWN", "Unknown broker error"])
    b.txn(1, [("t0/3", 5, None)], "fail", tid="eosc-txn-1",
          error=["InvalidRecordException", "One or more records have been rejected"])
    b.txn(0, [("t0/1", 6, 2)], tid="eosc-txn-0")
    b.poll(2, {"t0/0": [(0, 1)], "t0/1": [(0, 2), (2, 6)]}, final=True)
    return b


def test_server_errors_are_cases_with_op_refs_in_completion_order():
    b = _kafka_15653_like()
    h = load_history(b.events)
    cs = server_error_cases(h)
    assert [(c["error"], c["protocol_error"]) for c in cs] == [
        ("UNKNOWN", "UNKNOWN_SERVER_ERROR"), ("InvalidRecordException", "INVALID_RECORD")]
    op = cs[0]["op"]
    assert op["f"] == "txn" and op["type"] == "fail" and op["transactional_id"] == "eosc-txn-0"
    assert isinstance(op["invoke_index"], int) and isinstance(op["complete_index"], int)
    assert cs[0]["time_ns"] < cs[1]["time_ns"]
    assert "UNKNOWN_SERVER_ERROR" in cs[0]["explanation"] and "eosc-txn-0" in cs[0]["explanation"]


def test_a_liveness_report_fails_the_run_only_through_fail_on():
    h = load_history(_kafka_15653_like().events)
    v = check(h, meta={})
    assert v.anomaly_counts.get("server-error") == 2
    assert "server-error" in v.liveness_reports and v.valid is True
    v = check(h, meta={"fail_on": ["server-error"]})
    assert v.valid is False and v.failing == ["server-error"]


def test_errors_a_correct_broker_returns_are_not_server_errors():
    # near misses: fault-time errors, fencing, a local timeout, a server error on an op that
    # completed ok (never happens, but the error then did not fail anything)
    b = HistoryBuilder(step_ns=1_000_000_000)
    for i, err in enumerate(["NOT_ENOUGH_REPLICAS", "_FENCED", "_MSG_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER",
                             "KAFKA_STORAGE_ERROR", "ProducerFencedException", "_FLUSH_TIMEOUT"]):
        b.txn(i, [("t0/0", i + 1, None)], "fail" if i % 2 else "info", tid=f"eosc-txn-{i}", error=[err, "x"])
    b.txn(9, [("t0/1", 50, 0)], "ok", tid="eosc-txn-9", error=["UNKNOWN", "x"])
    h = load_history(b.events)
    assert server_error_cases(h) == []
    assert server_error_cases(load_history([])) == []


def test_every_client_name_maps_to_a_protocol_error_and_the_name_is_catalogued():
    assert set(SERVER_ERRORS.values()) == {"UNKNOWN_SERVER_ERROR", "CORRUPT_MESSAGE", "INVALID_RECORD"}
    assert "server-error" in ANOMALIES and "server-error" in FAIL_ON_NAMES


@pytest.mark.parametrize("name", ["real-smoke-s1", "real-inflight-abort-s2"])
def test_negative_control_real_histories_have_no_server_error(name):
    # real runs on Kafka 4.3.1 with fail txns (aborts by choice, _FLUSH_TIMEOUT under faults):
    # no error of the list, so no case
    d = DATA / name
    meta = json.loads((d / "meta.json").read_text())
    allowed = yaml.safe_load((d / "scenario.yaml").read_text())["expected"]
    h = load_history(d / "history.jsonl")
    assert h.ops.filter(h.ops["error"].is_not_null()).height > 0  # it has errors to look at
    assert server_error_cases(h) == []
    assert "server-error" not in check(h, meta=meta, allowed=allowed).anomaly_counts
