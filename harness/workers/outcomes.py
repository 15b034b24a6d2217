"""One table that turns librdkafka errors into history outcomes.

Clients classify, never guess (jepsen-io/redpanda ``workload/queue.clj`` with-errors). An op
completes ``fail`` only when Kafka's protocol guarantees it did not happen, ``info`` when the
outcome is unknown. The table is keyed by the *phase* of a transactional producer's op,
because the same error means different things before and after commit was requested:
a transaction whose commit was never requested cannot become visible (the coordinator aborts
it on fencing or on ``transaction.timeout.ms``), so any error before commit is a ``fail``; once
``commit_transaction`` was called, only an abortable error (the commit was refused) is a
``fail``, and everything else is ``info``.

Sources: librdkafka INTRODUCTION.md "Transactional producer" error handling;
confluent-kafka ``KafkaError.fatal() / retriable() / txn_requires_abort()``; KIP-98.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# ErrorFacts lives in harness.util so that the admin agent (harness.cluster.agent) reads errors
# alike without importing the workers
from harness.util import ErrorFacts


class Action(str, Enum):
    RETRY = "retry"  # call the same API again (librdkafka allows it for retriable errors)
    ABORT = "abort"  # abort_transaction(), then the op completes fail
    FAIL = "fail"  # complete the op fail: it certainly did not happen
    INFO = "info"  # complete the op info: unknown


@dataclass(frozen=True)
class Decision:
    action: Action
    #: the producer instance is unusable (fatal error, or unknown state): the worker replaces
    #: it with a new instance, which is a new logical process in the history.
    replace: bool


#: (phase, condition) -> decision. Conditions are checked in this order; first match wins.
#: phases: init = init_transactions, send = begin/produce/flush, offsets =
#: send_offsets_to_transaction, commit = commit_transaction, abort = abort_transaction
#: (commit_requested tells whether commit had been called before), produce = a
#: non-transactional record's delivery report.
TABLE: list[tuple[str, str, Decision]] = [
    ("init", "fatal", Decision(Action.FAIL, replace=True)),
    ("init", "retriable", Decision(Action.RETRY, replace=False)),
    ("init", "other", Decision(Action.INFO, replace=True)),
    ("send", "fatal", Decision(Action.FAIL, replace=True)),  # commit never requested
    ("send", "txn_requires_abort", Decision(Action.ABORT, replace=False)),
    ("send", "retriable", Decision(Action.ABORT, replace=False)),
    ("send", "other", Decision(Action.ABORT, replace=False)),
    # send_offsets_to_transaction (a consume-transform-produce processor, KIP-447): commit not
    # yet requested, so nothing of the transaction can become visible; a stale group
    # generation (a fenced zombie member) comes back abortable
    ("offsets", "fatal", Decision(Action.FAIL, replace=True)),
    ("offsets", "txn_requires_abort", Decision(Action.ABORT, replace=False)),
    ("offsets", "retriable", Decision(Action.RETRY, replace=False)),
    ("offsets", "other", Decision(Action.ABORT, replace=False)),
    ("commit", "fatal", Decision(Action.INFO, replace=True)),  # e.g. fenced mid-commit: unknown
    ("commit", "txn_requires_abort", Decision(Action.ABORT, replace=False)),  # commit refused
    ("commit", "retriable", Decision(Action.RETRY, replace=False)),  # e.g. _TIMED_OUT
    ("commit", "other", Decision(Action.INFO, replace=True)),
    ("abort", "fatal", Decision(Action.FAIL, replace=True)),
    ("abort", "retriable", Decision(Action.RETRY, replace=False)),
    ("abort", "other", Decision(Action.FAIL, replace=True)),
    # non-transactional produce (idempotent workload): a delivery error after retries means the
    # record may or may not be in the log, except when librdkafka says it was never sent.
    ("produce", "fatal", Decision(Action.INFO, replace=True)),
    ("produce", "other", Decision(Action.INFO, replace=False)),
]


def classify(err, phase: str, *, commit_requested: bool = False) -> Decision:
    """Decide what a librdkafka error in ``phase`` means for the op and the producer.

    ``err`` is a KafkaError, a KafkaException or ErrorFacts. An abort failure after commit was
    requested (``commit_requested``) is ``info``: the commit may have gone through.
    Raises ValueError for an unknown phase.
    """
    facts = err if isinstance(err, ErrorFacts) else ErrorFacts.of(err)
    rows = [r for r in TABLE if r[0] == phase]
    if not rows:
        raise ValueError(f"unknown phase {phase!r}")
    for _, cond, decision in rows:
        if cond == "other" or getattr(facts, cond):
            if phase == "abort" and commit_requested and decision.action == Action.FAIL:
                return Decision(Action.INFO, replace=True)
            return decision
    raise AssertionError("every phase ends with an 'other' row")  # pragma: no cover


def error_pair(err) -> list[str]:
    """The history's ``error`` field: ``[error_name, message]``."""
    if hasattr(err, "args") and err.args and hasattr(err.args[0], "name"):
        err = err.args[0]
    if hasattr(err, "name") and callable(err.name):
        return [err.name(), err.str()]
    return [type(err).__name__, str(err)]
