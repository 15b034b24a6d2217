"""Client-side events of known defects, found in a run's client logs (logs/*.log but the
brokers' n*.log): the application instances' (app-*.log) and the harness's workers'.

The checkers judge what the history shows; a stall or a restart has many causes, and some
clients say in their own log which one it was. Each event here is a log line that only a
client with a known defect writes, so that the known-bug catalogue (checkers/known_bugs/bugs.py)
can name the defect from meta.json instead of guessing from the stall alone:

* ``offset-fetch-dedup-spin`` (KAFKA-20765, apache/kafka#22747, fixed in 4.4.0): the Java
  consumer's CommitRequestManager (the KIP-848 consumer and the KIP-1071 streams protocol's
  AsyncKafkaConsumer) chained a retried OffsetFetch onto an in-flight one that had already
  failed with STALE_MEMBER_EPOCH, and spun logging "A duplicated, inflight, request was
  identified, but unable to find it in the outbound buffer" until the fetch timed out
  (default.api.timeout.ms, 60 s): the task's partitions made no progress meanwhile. The
  message is gone from kafka-clients 4.4.0 (its fix rewrote that path), so the line itself says
  the client was an affected one.
* ``send-offsets-stuck`` (confluentinc/librdkafka#5511, with #5456; open): a transactional
  producer's ``send_offsets_to_transaction`` did not return long after its timeout (the
  transaction's remaining time). From librdkafka 2.10.0 a broker that drops out of the metadata
  is decommissioned; when it was the group's cached coordinator, the TxnOffsetCommit waits for
  that broker handle to come up, which never happens, and the call's timeout is never checked.
  The line is the example copy service's own (harness/examples/copy_service.py: "copy_service:
  send_offsets_to_transaction has not returned after N s, past its timeout (...; librdkafka
  V)"), written before it exits to be restarted; an application that logs the same words is
  read the same way.
* ``flink-taskmanager-lost`` (finding F7, with the next): a Flink TaskManager shut down on a
  fatal error: Flink's own ``FATAL - exception in exception handler of task ...`` (Task.doRun:
  an exception while the task's failure was handled; from Flink 2.2 that includes the failed
  task's cleanup, its operators' close()), or the example Flink deployment's watchdog line
  ``flink_app: watchdog: the mini-cluster lost its TaskManager`` (harness/examples/flink_app.py;
  it follows the mini-cluster's ``TaskManager #0 failed.``). Either says a TaskManager was lost,
  not why.
* ``flink-kafka-writer-close-threw`` (finding F7): a stack frame ``at
  org.apache.flink.connector.kafka.sink.KafkaWriter.close(KafkaWriter.java:N)``, i.e. the
  KafkaSink writer's ``close()`` threw (flink-connector-kafka 5.0.0 rethrows a send failure
  recorded after the writer already threw one, KafkaWriter.java:210). One line per logged copy
  of the stack (Task's, TaskExecutor's and MiniCluster's for one FATAL).

``scan_client_logs(logs_dir)`` -> {name: {"count", "first": the first line (400 chars at
most), "log": the first log file's name, "logs": every log file's name}} for the events that
occurred; {} when none (or no logs). meta.json keeps it as ``client_events``.
"""
from __future__ import annotations

import re
from pathlib import Path

EVENTS = {
    "offset-fetch-dedup-spin": re.compile(
        r"A duplicated, inflight, request was identified, but unable to find it in the outbound buffer"),
    "send-offsets-stuck": re.compile(r"send_offsets_to_transaction has not returned after \d+ s, past its timeout"),
    "flink-taskmanager-lost": re.compile(
        r"FATAL - exception in exception handler of task |flink_app: watchdog: the mini-cluster lost its TaskManager"),
    "flink-kafka-writer-close-threw": re.compile(
        r"\bat org\.apache\.flink\.connector\.kafka\.sink\.KafkaWriter\.close\(KafkaWriter\.java:\d+\)"),
}

DESCRIPTIONS = {
    "offset-fetch-dedup-spin": "the Java consumer spun on a retried OffsetFetch chained to a failed in-flight "
                               "one until the fetch timed out (KAFKA-20765, fixed in kafka-clients 4.4.0)",
    "send-offsets-stuck": "a transactional producer's send_offsets_to_transaction did not return long after its "
                          "timeout (librdkafka#5511: a decommissioned broker left cached as the group "
                          "coordinator; #5456: the call's timeout is not enforced)",
    "flink-taskmanager-lost": "a Flink TaskManager shut down on a fatal error (Flink 2.2+'s 'FATAL - exception in "
                              "exception handler of task', or the example deployment's watchdog line that the "
                              "mini-cluster lost its TaskManager)",
    "flink-kafka-writer-close-threw": "the KafkaSink writer's close() threw (a KafkaWriter.close frame in a stack; "
                                      "with a lost TaskManager, finding F7)",
}


def scan_client_logs(logs_dir: str | Path) -> dict[str, dict]:
    """Count EVENTS in ``logs_dir``/*.log except the brokers' n<i>.log; unreadable files are
    skipped."""
    found: dict[str, dict] = {}
    for log in sorted(Path(logs_dir).glob("*.log")):
        if re.fullmatch(r"n\d+", log.stem):
            continue
        try:
            with open(log, errors="replace") as fh:
                for line in fh:
                    for name, rx in EVENTS.items():
                        if rx.search(line):
                            ev = found.setdefault(name, {"count": 0, "first": line.strip()[:400],
                                                         "log": log.name, "logs": []})
                            ev["count"] += 1
                            if log.name not in ev["logs"]:
                                ev["logs"].append(log.name)
        except OSError:
            continue
    return found
