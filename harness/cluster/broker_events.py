"""Broker-side events that threaten exactly-once, found in a run's broker logs (logs/n*.log).

The checkers judge what the clients saw; these lines say what Kafka did underneath, so that a
reader of a valid run still learns that the cluster went through a risky path (finding F2,
docs/scenarios.md), and a reader of an invalid one where to look:

* ``unclean-leader-election``: the controller made an UNCLEAN partition change: a leader
  elected outside the ISR, e.g. the last known ELR member after every replica had been down
  (KIP-966), although ``unclean.leader.election.enable`` is false. Acknowledged writes the
  new leader lacks are gone.
* ``skipped-txn-markers``: the transaction coordinator found no leader for partitions of a
  transaction and skipped their COMMIT/ABORT markers ("likely deleted already and hence can be
  skipped"); a partition that was not deleted keeps an unfinished transaction.
* ``txn-markers-from-truncated-tail``: on one node's log, the transaction coordinator sent
  COMMIT/ABORT markers "after loading partition P" of ``__transaction_state`` and the same
  process later truncated ``__transaction_state-P`` ("Truncating to offset N"), with no new
  election as P's coordinator between (finding F9): the markers may rest on a PREPARE_COMMIT
  or PREPARE_ABORT above the high watermark that the new leader of P never had, while the new
  coordinator ends the transaction otherwise. ``partitions`` are the truncated
  ``__transaction_state-P``, ``first`` the markers line, ``count`` the markers lines followed
  by such a truncation.

``scan_broker_logs(logs_dir)`` -> {name: {"count", "partitions", "transactional_ids",
"first": the first line, "node"}} for the events that occurred; {} when none (or no logs).
"""
from __future__ import annotations

import re
from pathlib import Path

EVENTS = {
    "unclean-leader-election": re.compile(r"UNCLEAN partition change for (?P<partitions>\S+)"),
    "skipped-txn-markers": re.compile(
        r"Couldn't find leader endpoint for partitions Set\((?P<partitions>[^)]*)\) while trying "
        r"to send transaction markers for (?P<tid>\S+?), these partitions are likely deleted"),
}

#: txn-markers-from-truncated-tail's lines. The markers line as 4.2.x (a Scala case class:
#: "(tid,0,COMMIT,") and 4.4.x (a Java record: "[transactionalId=tid, coordinatorEpoch=0,
#: result=COMMIT,") print it. UnifiedLog says "Truncating to offset N" only when it removes records
#: ("Truncating to N has no effect ..." otherwise)
MARKERS_AFTER_LOAD = re.compile(
    r"Sending txn markers for TransactionalIdCoordinatorEpochAndTransitMetadata[(\[](?:transactionalId=)?"
    r"(?P<tid>[^,\s]+), ?(?:coordinatorEpoch=)?\d+, ?(?:result=)?(?:COMMIT|ABORT),"
    r".* after loading partition (?P<p>\d+) ")
TXN_LOG_TRUNCATED = re.compile(r"Log partition=__transaction_state-(?P<p>\d+), [^\]]*\] Truncating to offset \d+ \(")
ELECTED = re.compile(r"Elected as the txn coordinator for partition (?P<p>\d+) ")
#: what harness.cluster (kafka.py, docker/nodes.py) writes into n*.log before each start of a node
NODE_START = "===== eos-chaos: starting node"

DESCRIPTIONS = {
    "unclean-leader-election": "the controller elected a partition leader outside the ISR "
                               "(UNCLEAN partition change, KIP-966 last known ELR): writes the "
                               "new leader lacks are lost without a client error",
    "skipped-txn-markers": "the transaction coordinator skipped COMMIT/ABORT markers for "
                           "partitions it found without a leader",
    "txn-markers-from-truncated-tail": "a transaction coordinator sent COMMIT/ABORT markers after "
                                       "loading a __transaction_state partition, then truncated that "
                                       "partition: the markers may rest on a record the new leader never "
                                       "had, which ends the transaction otherwise (finding F9)",
}


def scan_broker_logs(logs_dir: str | Path) -> dict[str, dict]:
    """Count EVENTS in ``logs_dir``/n*.log (each controller logs its own decisions, so an
    event may appear once per node that logged it; ``count`` counts lines)."""
    found: dict[str, dict] = {}
    for log in sorted(Path(logs_dir).glob("n*.log")):
        tail = _TruncatedTail()
        try:
            with open(log, errors="replace") as fh:
                for line in fh:
                    stale = tail.feed(line)
                    if stale:
                        first, partition, tids, n = stale
                        ev = found.setdefault("txn-markers-from-truncated-tail", {
                            "count": 0, "partitions": set(), "transactional_ids": set(),
                            "first": first.strip()[:400], "node": log.stem})
                        ev["count"] += n
                        ev["partitions"].add(partition)
                        ev["transactional_ids"].update(tids)
                    for name, rx in EVENTS.items():
                        m = rx.search(line)
                        if not m:
                            continue
                        ev = found.setdefault(name, {"count": 0, "partitions": set(),
                                                     "transactional_ids": set(),
                                                     "first": line.strip()[:400], "node": log.stem})
                        ev["count"] += 1
                        ev["partitions"].update(p.strip() for p in m["partitions"].split(",") if p.strip())
                        if "tid" in rx.groupindex:
                            ev["transactional_ids"].add(m["tid"])
        except OSError:
            continue
    return {name: {**ev, "partitions": sorted(ev["partitions"]),
                   "transactional_ids": sorted(ev["transactional_ids"])}
            for name, ev in found.items()}


class _TruncatedTail:
    """One node's log, line by line: the markers its transaction coordinator sent after loading
    a ``__transaction_state`` partition, kept per partition until a truncation of that
    partition (then ``feed`` returns them), a new election as its coordinator (a new load) or a
    new start of the node. After a restart the truncation may cut only what the killed process
    appended after its markers (a coordinator killed with unreplicated appends), which says
    nothing about the records the markers rest on."""

    def __init__(self) -> None:
        self.sent: dict[str, tuple[str, int, set[str]]] = {}   # P -> (first markers line, lines, tids)

    def feed(self, line: str) -> tuple[str, str, set[str], int] | None:
        """(first markers line, "__transaction_state-P", transactional ids, markers lines) when
        ``line`` truncates a partition whose loaded state sent markers; else None."""
        if line.startswith(NODE_START):
            self.sent.clear()
        elif m := MARKERS_AFTER_LOAD.search(line):
            first, n, tids = self.sent.get(m["p"], (line, 0, set()))
            self.sent[m["p"]] = (first, n + 1, tids | {m["tid"]})
        elif m := ELECTED.search(line):
            self.sent.pop(m["p"], None)
        elif (m := TXN_LOG_TRUNCATED.search(line)) and m["p"] in self.sent:
            first, n, tids = self.sent.pop(m["p"])
            return first, f"__transaction_state-{m['p']}", tids, n
        return None
