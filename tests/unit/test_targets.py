import random

import pytest

from nemesis.targets import choose_client, java_string_hash, resolve_role, transaction_state_partition


def test_java_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE


def test_transaction_state_partition_uses_kafka_utils_abs():
    assert transaction_state_partition("hello") == 99162322 % 50
    assert transaction_state_partition("polygenelubricants") == 0  # Utils.abs(MIN_VALUE) == 0


DESCRIBE = {
    "brokers": [1, 2, 3], "controller": 2,
    "topics": {
        "__transaction_state": {"partitions": {str(p): {"leader": 1 + p % 3} for p in range(50)}},
        "t0": {"partitions": {"0": {"leader": 3}, "1": {"leader": -1}}},
    },
}


def test_resolve_roles():
    assert resolve_role({"role": "controller"}, DESCRIBE) == 2
    assert resolve_role({"role": "leader", "key": "t0/0"}, DESCRIBE) == 3
    p = transaction_state_partition("eosc-txn-0")
    assert resolve_role({"role": "coordinator", "transactional_id": "eosc-txn-0"}, DESCRIBE) == 1 + p % 3
    with pytest.raises(LookupError):
        resolve_role({"role": "leader", "key": "t0/1"}, DESCRIBE)


def test_choose_client_only_matching():
    rng = random.Random(0)
    assert {choose_client(rng, ["a-1", "b-1", "a-2"], ["a-*"]) for _ in range(20)} == {"a-1", "a-2"}
