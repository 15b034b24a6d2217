import pytest

from harness.workers.outcomes import Action, ErrorFacts, classify


def E(**kw):
    return ErrorFacts(name="X", **kw)


@pytest.mark.parametrize("phase,facts,action,replace", [
    ("send", E(fatal=True), Action.FAIL, True),          # fenced before commit: cannot commit
    ("send", E(txn_requires_abort=True), Action.ABORT, False),
    ("send", E(retriable=True), Action.ABORT, False),
    ("commit", E(retriable=True), Action.RETRY, False),  # librdkafka allows retrying commit
    ("commit", E(txn_requires_abort=True), Action.ABORT, False),
    ("commit", E(fatal=True), Action.INFO, True),        # commit may have gone through
    ("commit", E(), Action.INFO, True),
    ("init", E(retriable=True), Action.RETRY, False),
    ("init", E(fatal=True), Action.FAIL, True),
    ("abort", E(), Action.FAIL, True),
    ("offsets", E(fatal=True), Action.FAIL, True),       # fenced before commit: cannot commit
    ("offsets", E(txn_requires_abort=True), Action.ABORT, False),  # e.g. stale generation
    ("offsets", E(retriable=True), Action.RETRY, False),
    ("offsets", E(), Action.ABORT, False),
    ("produce", E(fatal=True), Action.INFO, True),       # idempotence broken: new instance
    ("produce", E(retriable=True), Action.INFO, False),  # e.g. _MSG_TIMED_OUT: maybe written
])
def test_table(phase, facts, action, replace):
    d = classify(facts, phase)
    assert (d.action, d.replace) == (action, replace)


def test_failed_abort_after_commit_was_requested_is_unknown():
    assert classify(E(), "abort", commit_requested=True).action == Action.INFO
    assert classify(E(), "abort", commit_requested=False).action == Action.FAIL


def test_unknown_phase():
    with pytest.raises(ValueError):
        classify(E(), "flush")


def test_real_kafka_error_facts():
    from confluent_kafka import KafkaError, KafkaException

    err = KafkaError(KafkaError._FENCED, "fenced", fatal=True)
    facts = ErrorFacts.of(KafkaException(err))
    assert facts.fatal and facts.name == "_FENCED"
