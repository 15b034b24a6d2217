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


# -- txn-markers-from-truncated-tail (finding F9) -----------------------------------------------------------
# Kafka 4.2.2, eos-chaos repro f9 (the torn run 20261129T162727Z): n3, restarted within its broker lease,
# is the coordinator of __transaction_state-8 again from its pre-crash metadata image, sends COMMIT
# markers from its unreplicated PREPARE_COMMIT, then truncates the partition once the controller moves it
F9_ELECTED = ("[2026-11-29 16:28:45,059] INFO [TransactionCoordinator id=3] Elected as the txn coordinator for "
              "partition 8 at epoch 0 (kafka.coordinator.transaction.TransactionCoordinator)")
F9_MARKERS = (
    "[2026-11-29 16:28:45,197] INFO [Transaction State Manager 3]: Sending txn markers for "
    "TransactionalIdCoordinatorEpochAndTransitMetadata(f9-txn-162727,0,COMMIT,TransactionMetadata(transactionalId="
    "f9-txn-162727, producerId=0, prevProducerId=-1, nextProducerId=-1, producerEpoch=0, lastProducerEpoch=-1, "
    "txnTimeoutMs=60000, state=PREPARE_COMMIT, pendingState=Optional[COMPLETE_COMMIT], topicPartitions=[f9-1, "
    "f9-0], txnStartTimestamp=1795969710580, txnLastUpdateTimestamp=1795969712977, clientTransactionVersion=TV_0),"
    "TxnTransitMetadata[producerId=0, prevProducerId=0, nextProducerId=-1, producerEpoch=0, lastProducerEpoch=-1, "
    "txnTimeoutMs=60000, txnState=COMPLETE_COMMIT, topicPartitions=[], txnStartTimestamp=1795969710580, "
    "txnLastUpdateTimestamp=1795969725163, clientTransactionVersion=TV_0]) after loading partition 8 "
    "(kafka.coordinator.transaction.TransactionStateManager)")
F9_RESIGNED = ("[2026-11-29 16:29:04,828] INFO [TransactionCoordinator id=3] Resigned as the txn coordinator for "
               "partition 8 at epoch Some(1) (kafka.coordinator.transaction.TransactionCoordinator)")
F9_TRUNCATED = ("[2026-11-29 16:29:06,015] INFO [UnifiedLog partition=__transaction_state-8, dir=/work/meas/f9r/"
                "f9-stale-restart/20261129T162727Z/nodes/n3/data] Truncating to offset 3 "
                "(org.apache.kafka.storage.internals.log.UnifiedLog)")
F9_CANCELLED = ("[2026-11-29 16:29:13,100] INFO [Transaction Marker Request Completion Handler 2]: I am no longer "
                "the coordinator for f9-txn-162727; cancel sending transaction markers TxnMarkerEntry{producerId=0, "
                "producerEpoch=0, coordinatorEpoch=0, result=COMMIT, partitions=[f9-1], transactionVersion=0} to the "
                "brokers (kafka.coordinator.transaction.TransactionMarkerRequestCompletionHandler)")
F9_TORN = [F9_ELECTED, QUIET, F9_MARKERS, F9_RESIGNED, F9_TRUNCATED, F9_CANCELLED]
# Kafka 4.4.0 prints the markers' metadata as a Java record (the torn run 20261129T163434Z, n2, P=44)
F9_MARKERS_440 = (
    "[2026-11-29 16:37:21,275] INFO [Transaction State Manager 2]: Sending txn markers for "
    "TransactionalIdCoordinatorEpochAndTransitMetadata[transactionalId=f9-txn-163434, coordinatorEpoch=0, "
    "result=COMMIT, txnMetadata=TransactionMetadata(transactionalId=f9-txn-163434, producerId=0, prevProducerId=0, "
    "nextProducerId=-1, producerEpoch=0, lastProducerEpoch=-1, txnTimeoutMs=60000, state=PREPARE_COMMIT, "
    "pendingState=Optional[COMPLETE_COMMIT], topicPartitions=[f9-1, f9-0], txnStartTimestamp=1795970226324, "
    "txnLastUpdateTimestamp=1795970228702, clientTransactionVersion=TV_0), transitMetadata=TxnTransitMetadata["
    "producerId=0, prevProducerId=0, nextProducerId=-1, producerEpoch=0, lastProducerEpoch=-1, txnTimeoutMs=60000, "
    "txnState=COMPLETE_COMMIT, topicPartitions=[], txnStartTimestamp=1795970226324, txnLastUpdateTimestamp="
    "1795970241217, clientTransactionVersion=TV_0]] after loading partition 44 "
    "(kafka.coordinator.transaction.TransactionStateManager)")
F9_TRUNCATED_440 = ("[2026-11-29 16:38:09,779] INFO [UnifiedLog partition=__transaction_state-44, dir=/work/meas/f9r/"
                    "f9-stale-restart/20261129T163434Z/nodes/n2/data] Truncating to offset 3 "
                    "(org.apache.kafka.storage.internals.log.UnifiedLog)")
# a valid smoke run on 4.2.2 (seed 3, n2): __transaction_state-16 truncated at 04:51:27, the markers sent
# after n2's later election as its coordinator at 04:51:44 rest on the truncated log
SMOKE_TRUNCATED = ("[2026-11-29 04:51:27,820] INFO [UnifiedLog partition=__transaction_state-16, dir=/tmp/pytest-of-"
                   "root/pytest-64/results0/smoke/20261129T044842Z-s3/nodes/n2/data] Truncating to offset 372 "
                   "(org.apache.kafka.storage.internals.log.UnifiedLog)")
SMOKE_ELECTED = ("[2026-11-29 04:51:44,086] INFO [TransactionCoordinator id=2] Elected as the txn coordinator for "
                 "partition 16 at epoch 2 (kafka.coordinator.transaction.TransactionCoordinator)")
SMOKE_MARKERS = (
    "[2026-11-29 04:51:44,151] INFO [Transaction State Manager 2]: Sending txn markers for "
    "TransactionalIdCoordinatorEpochAndTransitMetadata(eosc-txn-2,2,COMMIT,TransactionMetadata(transactionalId="
    "eosc-txn-2, producerId=0, prevProducerId=0, nextProducerId=-1, producerEpoch=0, lastProducerEpoch=-1, "
    "txnTimeoutMs=30000, state=PREPARE_COMMIT, pendingState=Optional[COMPLETE_COMMIT], topicPartitions=[t0-3, "
    "t1-3, t0-1], txnStartTimestamp=1795927892268, txnLastUpdateTimestamp=1795927892525, clientTransactionVersion="
    "TV_0),TxnTransitMetadata[producerId=0, prevProducerId=0, nextProducerId=-1, producerEpoch=0, "
    "lastProducerEpoch=-1, txnTimeoutMs=30000, txnState=COMPLETE_COMMIT, topicPartitions=[], txnStartTimestamp="
    "1795927892268, txnLastUpdateTimestamp=1795927904132, clientTransactionVersion=TV_0]) after loading partition 16 "
    "(kafka.coordinator.transaction.TransactionStateManager)")
# the fenced-restart control (4.2.2, 20261129T162954Z, n2): started once the controller had moved
# __transaction_state-20, the node truncates it but never loaded it as its coordinator
FENCED_ELECTED = ("[2026-11-29 16:33:08,773] INFO [TransactionCoordinator id=2] Elected as the txn coordinator for "
                  "partition 20 at epoch 0 (kafka.coordinator.transaction.TransactionCoordinator)")
FENCED_TRUNCATED = ("[2026-11-29 16:33:59,946] INFO [UnifiedLog partition=__transaction_state-20, dir=/work/meas/f9r/"
                    "f9-fenced-restart/20261129T162954Z/nodes/n2/data] Truncating to offset 3 "
                    "(org.apache.kafka.storage.internals.log.UnifiedLog)")
# a truncation that removes nothing (4.2.2, the blind hunt run of F9.md, n1)
NO_EFFECT = ("[2026-11-29 13:27:18,251] INFO [UnifiedLog partition=__transaction_state-14, dir=/work/meas/hunt/hunt-"
             "cascading-kills/20261129T132646Z-s864441/nodes/n1/data] Truncating to 0 has no effect as the largest "
             "offset in the log is -1 (org.apache.kafka.storage.internals.log.UnifiedLog)")
# the blind hunt run that found F9 (4.2.2, hunt-cascading-kills seed 864441, n1): elected again from its
# pre-crash image, COMMIT markers after loading __transaction_state-14, then truncated to offset 21
BLIND_F9_LINES = [
    NO_EFFECT,
    "[2026-11-29 13:28:45,793] INFO [TransactionCoordinator id=1] Elected as the txn coordinator for partition 14 "
    "at epoch 1 (kafka.coordinator.transaction.TransactionCoordinator)",
    "[2026-11-29 13:28:46,156] INFO [Transaction State Manager 1]: Sending txn markers for "
    "TransactionalIdCoordinatorEpochAndTransitMetadata(eosc-txn-0,1,COMMIT,TransactionMetadata(transactionalId="
    "eosc-txn-0, producerId=2, prevProducerId=-1, nextProducerId=-1, producerEpoch=4, lastProducerEpoch=-1, "
    "txnTimeoutMs=3750, state=PREPARE_COMMIT, pendingState=Optional[COMPLETE_COMMIT], topicPartitions=[t0-2, t1-3, "
    "t1-1, t1-0], txnStartTimestamp=1795958868409, txnLastUpdateTimestamp=1795958869124, clientTransactionVersion="
    "TV_2),TxnTransitMetadata[producerId=2, prevProducerId=2, nextProducerId=-1, producerEpoch=4, "
    "lastProducerEpoch=-1, txnTimeoutMs=3750, txnState=COMPLETE_COMMIT, topicPartitions=[], txnStartTimestamp="
    "1795958868409, txnLastUpdateTimestamp=1795958926054, clientTransactionVersion=TV_2]) after loading partition "
    "14 (kafka.coordinator.transaction.TransactionStateManager)",
    "[2026-11-29 13:28:46,906] INFO [UnifiedLog partition=__transaction_state-14, dir=/work/meas/hunt/hunt-cascading-"
    "kills/20261129T132646Z-s864441/nodes/n1/data] Truncating to offset 21 "
    "(org.apache.kafka.storage.internals.log.UnifiedLog)",
]
NODE_START = "\n===== eos-chaos: starting node ====="  # harness/cluster/kafka.py, before each start


def _scan(tmp_path, **logs):
    for name, lines in logs.items():
        (tmp_path / f"{name}.log").write_text("\n".join(lines) + "\n")
    return scan_broker_logs(tmp_path)


def test_markers_after_loading_then_a_truncation_of_that_partition_is_the_f9_event(tmp_path):
    ev = _scan(tmp_path, n1=[QUIET], n3=F9_TORN)
    assert set(ev) == {"txn-markers-from-truncated-tail"}
    e = ev["txn-markers-from-truncated-tail"]
    assert (e["count"], e["partitions"], e["transactional_ids"], e["node"]) == \
        (1, ["__transaction_state-8"], ["f9-txn-162727"], "n3")
    assert e["first"].startswith("[2026-11-29 16:28:45,197]") and "COMMIT" in e["first"]
    json.dumps(ev)  # goes into meta.json as is
    # 4.4.0's markers line (a Java record), on another node of the same run: both counted
    ev = _scan(tmp_path, n2=[F9_MARKERS_440, QUIET, F9_TRUNCATED_440])["txn-markers-from-truncated-tail"]
    assert (ev["count"], ev["partitions"], ev["transactional_ids"]) == \
        (2, ["__transaction_state-44", "__transaction_state-8"], ["f9-txn-162727", "f9-txn-163434"])
    assert ev["node"] == "n2"


def test_a_truncation_before_the_markers_or_without_them_is_no_f9_event(tmp_path):
    # the valid smoke run: truncated first, then elected again and markers from the truncated log
    assert _scan(tmp_path, n2=[SMOKE_TRUNCATED, SMOKE_ELECTED, SMOKE_MARKERS]) == {}
    # the fenced-restart control: a truncation, no markers after loading
    assert _scan(tmp_path, n2=[FENCED_ELECTED, NODE_START, FENCED_TRUNCATED]) == {}


def test_a_new_election_a_restart_or_another_partition_between_clears_the_markers(tmp_path):
    # a new election loads the partition again: the earlier markers rest on an earlier load
    assert _scan(tmp_path, n3=[F9_MARKERS, F9_ELECTED, F9_TRUNCATED]) == {}
    # a restart between: the truncation may cut only what the killed process appended after its markers
    assert _scan(tmp_path, n3=[F9_MARKERS, NODE_START, F9_TRUNCATED]) == {}
    # another partition's truncation, or the same lines on two nodes' logs, or a truncation that removes nothing
    assert _scan(tmp_path, n3=[F9_MARKERS, FENCED_TRUNCATED]) == {}
    assert _scan(tmp_path, n3=[F9_MARKERS], n2=[F9_TRUNCATED]) == {}
    (tmp_path / "n2.log").unlink()
    no_effect = NO_EFFECT.replace("__transaction_state-14", "__transaction_state-8")
    assert _scan(tmp_path, n3=[F9_MARKERS, no_effect]) == {}
