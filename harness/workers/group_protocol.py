"""Consumer settings of a group member for its group protocol (KIP-848) and assignor.

Pure code shared by the Python workers (harness.workers.processor) and the workloads
(harness.workloads.group, which defines the scenario fields and says why): which assignors
each protocol has, which settings each client refuses under ``group.protocol=consumer``
(librdkafka 2.16: "`session.timeout.ms` is not supported for `group.protocol=consumer`", also
heartbeat.interval.ms, partition.assignment.strategy, group.protocol.type; kafka-clients 4.x
ConsumerConfig's CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS: the first three, a ConfigException), and
``consumer_settings``, which builds a member's settings. The Java processor does the same in
harness/workers/java/src/eosc/Processor.java ``groupProtocol``. Which releases have the
consumer protocol is the release object's question (harness.cluster.releases
``Release.supports_consumer_group_protocol``), asked by harness.workloads.group.
"""
from __future__ import annotations

from typing import Any, Literal

GroupProtocol = Literal["classic", "consumer"]
PROTOCOLS: tuple[str, ...] = ("classic", "consumer")
#: protocol -> its assignors (names as the scenario writes them)
ASSIGNORS: dict[str, tuple[str, ...]] = {"classic": ("range", "cooperative-sticky"), "consumer": ("uniform", "range")}
#: client settings each client refuses under group.protocol=consumer
REFUSED_UNDER_CONSUMER: dict[str, tuple[str, ...]] = {
    "librdkafka": ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy",
                   "group.protocol.type"),
    "java": ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"),
}
#: classic assignor -> kafka-clients' class
JAVA_ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                  "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}


def check_assignor(protocol: str, assignor: str | None) -> None:
    """ValueError (one line) when ``protocol`` is not one or ``assignor`` is not one of its."""
    if protocol not in ASSIGNORS:
        raise ValueError(f"group_protocol {protocol!r}: use one of {', '.join(PROTOCOLS)}")
    if assignor is not None and assignor not in ASSIGNORS[protocol]:
        other = [p for p, names in ASSIGNORS.items() if assignor in names]
        hint = f" ({assignor} is a {other[0]} assignor)" if other else ""
        raise ValueError(f"assignor {assignor!r} does not exist under group_protocol {protocol}{hint}: "
                         f"use one of {', '.join(ASSIGNORS[protocol])}, or leave it out")


def refused_settings(settings: dict[str, Any], protocol: str, client: str = "librdkafka") -> list[str]:
    """The keys of ``settings`` (a workload's extra consumer settings) that ``client`` refuses
    under ``protocol``, sorted; [] under classic."""
    if protocol != "consumer":
        return []
    return sorted(k for k in settings if k in REFUSED_UNDER_CONSUMER.get(client, ()))


def consumer_settings(conf: dict[str, Any], protocol: str, assignor: str | None,
                      client: str = "librdkafka") -> dict[str, Any]:
    """``conf`` (a group member's consumer settings, librdkafka's or with ``client="java"``
    kafka-clients') for ``protocol`` and ``assignor``: under ``consumer`` the refused settings
    (REFUSED_UNDER_CONSUMER) are dropped, ``group.protocol=consumer`` and, when given,
    ``group.remote.assignor`` set; under ``classic`` the assignor, when given, becomes
    ``partition.assignment.strategy``. A new dict; ValueError for an unknown protocol or
    assignor (check_assignor)."""
    check_assignor(protocol, assignor)
    out = dict(conf)
    if protocol == "consumer":
        for k in REFUSED_UNDER_CONSUMER[client]:
            out.pop(k, None)
        out["group.protocol"] = "consumer"
        if assignor:
            out["group.remote.assignor"] = assignor
    elif assignor:
        out["partition.assignment.strategy"] = JAVA_ASSIGNORS[assignor] if client == "java" else assignor
    return out


