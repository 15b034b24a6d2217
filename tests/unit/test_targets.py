import random

import pytest

from nemesis.targets import (RoleTopicAbsent, choose_client, java_string_hash, resolve_role, resolve_target,
                             transaction_state_partition)


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


def test_role_topic_absent_is_a_lookup_error_not_a_key_error():
    """A coordinator fault before the first producer created __transaction_state (Java
    coordinator runs, kill at 5 s) was recorded as ``KeyError: '__transaction_state'``."""
    before = {"brokers": [1, 2, 3], "controller": 2, "topics": {}}
    with pytest.raises(RoleTopicAbsent, match="__transaction_state"):
        resolve_role({"role": "coordinator", "transactional_id": "eosc-txn-1"}, before)
    with pytest.raises(RoleTopicAbsent, match="t9/0"):
        resolve_role({"role": "leader", "key": "t9/0"}, DESCRIBE)
    creating = {"topics": {"__transaction_state": {"error": "LEADER_NOT_AVAILABLE", "partitions": {}}}}
    with pytest.raises(RoleTopicAbsent, match="LEADER_NOT_AVAILABLE"):
        resolve_role({"role": "coordinator", "transactional_id": "eosc-txn-1"}, creating)


class _Admin:
    """An AdminView whose metadata has ``__transaction_state`` from the ``appears``-th describe on."""

    def __init__(self, appears: int):
        self.appears, self.calls = appears, 0

    def request(self, cmd, timeout=10.0, **args):
        self.calls += 1
        assert cmd == "describe" and args["topics"] == ["__transaction_state"]
        return DESCRIBE if self.calls >= self.appears else {"controller": 2, "topics": {}}


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def test_resolve_target_waits_for_transaction_state():
    target = {"role": "coordinator", "transactional_id": "eosc-txn-0"}
    clock, admin = _Clock(), _Admin(appears=4)
    node = resolve_target(admin, target, wait_s=15, poll_s=1, clock=clock, sleep=clock.sleep)
    assert node == resolve_role(target, DESCRIBE) and admin.calls == 4 and clock.now == 3


def test_resolve_target_gives_up_with_a_clear_lookup_error():
    target = {"role": "coordinator", "transactional_id": "eosc-txn-0"}
    clock, admin = _Clock(), _Admin(appears=100)
    with pytest.raises(LookupError, match=r"__transaction_state/\d+ not in the metadata yet after 5 s") as e:
        resolve_target(admin, target, wait_s=5, poll_s=1, clock=clock, sleep=clock.sleep)
    assert not isinstance(e.value, KeyError) and clock.now <= 5 and admin.calls == 6


def test_resolve_target_does_not_wait_for_a_leaderless_partition():
    """A partition without a leader (an election) is a fact of the moment: no retry."""
    clock = _Clock()
    with pytest.raises(LookupError, match="no node is leader"):
        resolve_target(type("A", (), {"request": lambda self, cmd, timeout=5, topics=None: DESCRIBE})(),
                       {"role": "leader", "key": "t0/1"}, clock=clock, sleep=clock.sleep)
    assert clock.now == 0
