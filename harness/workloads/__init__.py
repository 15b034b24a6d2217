"""Workloads by name (jepsen-io/redpanda ``core.clj`` workloads map)."""
from harness.workloads.txn_queue import TxnQueue

WORKLOADS = {"txn-queue": TxnQueue}
