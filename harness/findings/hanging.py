"""Kafka's own recovery check for hanging transactions: ``kafka-transactions.sh find-hanging``
(org.apache.kafka.tools.TransactionsCommand, KIP-664), run against a live cluster from the
client namespace, its output written to a run folder (``logs/find-hanging.txt``).

A hanging transaction is an open transaction on a partition (DescribeProducers reports a
``currentTransactionStartOffset``) that its coordinator no longer lists for that partition
(DescribeTransactions): no COMMIT/ABORT marker will ever come, and the partition's last
stable offset stays at the transaction's first offset (finding F2, docs/findings/F2.md).
``--max-transaction-timeout 0`` lists every such transaction, not only those older than the
default 15 minutes.

``find_hanging(host, bootstrap, kafka_version, broker_ids, out)`` -> FindHanging: the rows
(``topic``, ``partition``, ``producer_id``, ``producer_epoch``, ``coordinator_epoch``,
``start_offset``, ``last_timestamp``, ``duration_min``, and ``broker_id``: the broker asked; a
partition appears once per replica that holds the open transaction), the raw text and the
exit codes.
Kafka 4.x only here (the tool comes from the kafka-tools jar harness.cluster.artifacts.kafka_tools_command
fetches); raises ArtifactError otherwise.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster.artifacts import kafka_tools_command

COLUMNS = ("topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch", "start_offset",
           "last_timestamp", "duration_min")


@dataclass
class FindHanging:
    rows: list[dict] = field(default_factory=list)
    text: str = ""
    returncodes: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every call of the tool exited 0 (rows may still be empty)."""
        return all(rc == 0 for rc in self.returncodes)


def transactions_command(kafka_version: str) -> list[str]:
    """``java -cp ... org.apache.kafka.tools.TransactionsCommand`` of ``kafka_version`` (Kafka 4.x
    here: ArtifactError otherwise, harness.cluster.artifacts.kafka_tools_command)."""
    return kafka_tools_command(kafka_version, "org.apache.kafka.tools.TransactionsCommand")


def parse_rows(text: str) -> list[dict]:
    """Rows of find-hanging's table (header ``Topic Partition ProducerId ...``), one dict each."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == len(COLUMNS) and parts[1].isdigit() and parts[0] != "Topic":
            rows.append(dict(zip(COLUMNS, [parts[0]] + [int(x) for x in parts[1:]])))
    return rows


def find_hanging(host, bootstrap: str, kafka_version: str, broker_ids: list[int], out: Path | None = None,
                 timeout: float = 120.0) -> FindHanging:
    """Run find-hanging once per broker in ``broker_ids`` from ``host`` (a harness.cluster.namespaces.Host:
    the client namespace, where ``bootstrap`` is reachable); append each call's command line
    and output to ``out`` when given. A call that fails or times out is recorded, not raised."""
    base = transactions_command(kafka_version)
    res = FindHanging()
    chunks = []
    for b in broker_ids:
        argv = base + ["--bootstrap-server", bootstrap, "find-hanging", "--broker-id", str(b),
                       "--max-transaction-timeout", "0"]
        try:
            proc = subprocess.run(host.exec_prefix() + argv, capture_output=True, text=True, timeout=timeout)
            rc, stdout, text = proc.returncode, proc.stdout, proc.stdout + (proc.stderr if proc.returncode else "")
        except subprocess.TimeoutExpired:
            rc, stdout, text = -1, "", f"(no answer in {timeout:.0f} s)\n"
        res.returncodes.append(rc)
        res.rows += [dict(r, broker_id=b) for r in parse_rows(stdout if rc == 0 else "")]
        chunks.append(f"$ kafka-transactions.sh --bootstrap-server {bootstrap} find-hanging --broker-id {b} "
                      f"--max-transaction-timeout 0   (exit {rc})\n{text}")
    res.text = "\n".join(chunks)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a") as fh:
            fh.write(res.text + "\n")
    return res
