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

DESCRIPTIONS = {
    "unclean-leader-election": "the controller elected a partition leader outside the ISR "
                               "(UNCLEAN partition change, KIP-966 last known ELR): writes the "
                               "new leader lacks are lost without a client error",
    "skipped-txn-markers": "the transaction coordinator skipped COMMIT/ABORT markers for "
                           "partitions it found without a leader",
}


def scan_broker_logs(logs_dir: str | Path) -> dict[str, dict]:
    """Count EVENTS in ``logs_dir``/n*.log (each controller logs its own decisions, so an
    event may appear once per node that logged it; ``count`` counts lines)."""
    found: dict[str, dict] = {}
    for log in sorted(Path(logs_dir).glob("n*.log")):
        try:
            with open(log, errors="replace") as fh:
                for line in fh:
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
