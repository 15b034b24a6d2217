"""harness.cluster.broker_events on broker log lines as Kafka 4.3.1 printed them in a cascading-kills
run, and the report's box that shows them."""
import json

from harness.cluster.broker_events import scan_broker_logs
from harness.report import render_report_html

UNCLEAN = ("[2026-11-21 12:16:24,717] INFO [QuorumController id=1] UNCLEAN partition change for t1-0 "
           "with topic ID FxOTPb4-Q4KQ1hf21ZhExg: isr: [] -> [1], leader: -1 -> 1, leaderRecoveryState: "
           "RECOVERED -> RECOVERING, leaderEpoch: 2 -> 3, lastKnownElr: [1] -> [], partitionEpoch: 7 -> 8 "
           "(org.apache.kafka.controller.ReplicationControlManager)")
SKIPPED = ("[2026-11-21 12:16:22,680] INFO [Transaction Marker Channel Manager 1]: Couldn't find leader "
           "endpoint for partitions Set(t1-2, t0-3) while trying to send transaction markers for "
           "eosc-txn-1, these partitions are likely deleted already and hence can be skipped "
           "(kafka.coordinator.transaction.TransactionMarkerChannelManager)")
QUIET = "[2026-11-21 12:16:20,001] INFO [Partition t0-1 broker=2] ISR updated to 1,2,3 (kafka.cluster.Partition)"


def test_events_are_counted_with_their_partitions_and_transactional_ids(tmp_path):
    (tmp_path / "n1.log").write_text("\n".join([QUIET, SKIPPED, UNCLEAN]) + "\n")
    (tmp_path / "n2.log").write_text(UNCLEAN.replace("t1-0", "t0-0") + "\n" + QUIET + "\n")
    (tmp_path / "agent.log").write_text(UNCLEAN + "\n")  # not a broker log
    ev = scan_broker_logs(tmp_path)
    assert set(ev) == {"unclean-leader-election", "skipped-txn-markers"}
    u = ev["unclean-leader-election"]
    assert (u["count"], u["partitions"], u["node"]) == (2, ["t0-0", "t1-0"], "n1")
    s = ev["skipped-txn-markers"]
    assert (s["count"], s["partitions"], s["transactional_ids"]) == (1, ["t0-3", "t1-2"], ["eosc-txn-1"])
    assert s["first"].startswith("[2026-11-21 12:16:22,680]")
    json.dumps(ev)  # goes into meta.json as is


def test_quiet_or_missing_logs_have_no_events(tmp_path):
    assert scan_broker_logs(tmp_path / "nowhere") == {}
    (tmp_path / "n1.log").write_text(QUIET + "\n")
    assert scan_broker_logs(tmp_path) == {}


def test_report_shows_the_events_of_a_valid_run(tmp_path):
    (tmp_path / "n1.log").write_text(UNCLEAN + "\n")
    meta = {"broker_events": scan_broker_logs(tmp_path)}
    events = [{"index": 0, "time": 1, "process": 0, "type": "invoke", "f": "poll", "value": [["poll"]]},
              {"index": 1, "time": 2, "process": 0, "type": "ok", "f": "poll", "value": [["poll", {}]]}]
    html = render_report_html(events, {"valid": True, "anomalies": {}}, {"name": "x"}, meta)
    assert 'id="broker-events"' in html and "unclean-leader-election" in html and "t1-0" in html
    quiet = render_report_html(events, {"valid": True, "anomalies": {}}, {"name": "x"}, {"broker_events": {}})
    assert 'id="broker-events"' not in quiet
