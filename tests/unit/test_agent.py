"""Which admin errors the agent retries (harness.cluster.agent.transient_admin_error)."""
from confluent_kafka import KafkaError, KafkaException

from harness.cluster.agent import transient_admin_error


def test_broker_handle_destroyed_and_transport_errors_are_retried():
    # the CI failure of 2026-11-21: CreateTopics in flight on a retired bootstrap connection
    assert transient_admin_error(KafkaException(KafkaError(KafkaError._DESTROY_BROKER)))
    assert transient_admin_error(KafkaException(KafkaError(KafkaError._TRANSPORT)))
    assert transient_admin_error(KafkaException(KafkaError(KafkaError.NOT_CONTROLLER)))


def test_real_errors_are_not_retried():
    assert not transient_admin_error(KafkaException(KafkaError(KafkaError.INVALID_REPLICATION_FACTOR)))
    assert not transient_admin_error(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    assert not transient_admin_error(ValueError("not a Kafka error"))
    assert not transient_admin_error(KafkaException())
