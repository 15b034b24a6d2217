"""The consumer group protocol of the workloads whose workers join a consumer group (issue 33).

``group_protocol`` (a workload field of eos-pipeline and app) picks the rebalance protocol of
the group members: ``classic`` (JoinGroup/SyncGroup, the client-side assignor) or ``consumer``
(KIP-848: ConsumerGroupHeartbeat, the broker computes the assignment; generally available from
Kafka 4.0.0). ``assignor`` (optional) picks the assignor of that protocol:

* classic: ``range`` (eager: every member gives up all its partitions at every rebalance) or
  ``cooperative-sticky`` (incremental, KIP-429); unset: the client's default (librdkafka
  ``range,roundrobin``, kafka-clients ``[RangeAssignor, CooperativeStickyAssignor]``);
* consumer: the broker's ``uniform`` or ``range`` (``group.remote.assignor``); unset: the
  broker's first of ``group.consumer.assignors`` (``uniform``).

Under ``consumer`` both clients refuse the classic group settings (librdkafka 2.16:
``session.timeout.ms``, ``heartbeat.interval.ms``, ``partition.assignment.strategy``,
``group.protocol.type``: "not supported for group.protocol=consumer"; kafka-clients 4.x
ConsumerConfig: the first three, a ConfigException): ``consumer_settings`` leaves them out and
the brokers hold the session timeout and heartbeat interval instead
(``group.consumer.session.timeout.ms`` etc., harness.cluster.releases ``consumer_group_broker``).

Only members that ``subscribe`` take part: the processors of eos-pipeline (Python and Java) and
the application of the app workload (it gets the ``{group_protocol}`` and ``{assignor}``
placeholders and must pass them on). The harness's readers and drains ``assign`` their keys and
never join a group, so the protocol does not apply to them.
"""
from __future__ import annotations

from typing import Any

from pydantic import model_validator

from harness.workers.group_protocol import (  # noqa: F401 - re-exported
    ASSIGNORS, JAVA_ASSIGNORS, PROTOCOLS, REFUSED_UNDER_CONSUMER, GroupProtocol,
    check_assignor, consumer_settings, refused_settings)
from harness.workloads.base import Strict


def describe(protocol: str | None, assignor: str | None) -> str | None:
    """``consumer (uniform)``, ``classic (client default)``; None without a protocol: what the
    run's ``versions["group-protocol"]`` says (harness.run.versions)."""
    if protocol is None:
        return None
    if assignor:
        return f"{protocol} ({assignor})"
    return f"{protocol} ({'client default' if protocol == 'classic' else 'broker default, uniform'})"


class GroupSpec(Strict):
    """The fields a workload with a consumer group gains (module docstring)."""

    #: classic (JoinGroup/SyncGroup) or consumer (KIP-848, Kafka 4.0.0 on)
    group_protocol: GroupProtocol = "classic"
    #: classic: range | cooperative-sticky; consumer: uniform | range; None: the default
    assignor: str | None = None

    @model_validator(mode="after")
    def _group_fits(self) -> "GroupSpec":
        check_assignor(self.group_protocol, self.assignor)
        consumer = getattr(self, "consumer", None) or {}
        client = getattr(self, "client", "librdkafka")
        if getattr(self, "name", None) != "app":  # the app's readers assign, they are no members
            bad = refused_settings(consumer, self.group_protocol, client)
            if bad:
                raise ValueError(f"consumer setting {bad[0]} is refused by {client} under group_protocol: consumer "
                                 "(the brokers' group.consumer.* settings hold it): remove it")
        return self

    def group_cfg(self) -> dict[str, Any]:
        """What a group member's worker config gains: ``group_protocol`` and ``assignor``."""
        return {"group_protocol": self.group_protocol, "assignor": self.assignor}


def check_release(workload: Any, kafka_version: str | None, backend: str | None = None) -> None:
    """ValueError (one line) when ``workload`` asks for group_protocol: consumer on a release
    that lacks it (harness.cluster.releases ``Release.supports_consumer_group_protocol``: 4.0.0
    on), when an app's command does not pass ``{group_protocol}`` on, or when a Java worker's
    kafka-clients is older than that (a kafka-clients version is an Apache Kafka release too).
    An external cluster's version is what its scenario says (not checked against the brokers)."""
    from harness.cluster.releases import Release, UnsupportedRelease, first_release

    if getattr(workload, "group_protocol", "classic") != "consumer":
        return
    since = first_release("consumer_group_protocol")
    try:
        old = kafka_version is not None and not Release(kafka_version).supports_consumer_group_protocol()
    except UnsupportedRelease:
        old = False  # the version's own check says so
    if old:
        raise ValueError(f"group_protocol: consumer needs Kafka {since} or newer (KIP-848 "
                         f"generally available); Kafka {kafka_version} has the classic protocol only: "
                         "use group_protocol: classic or a newer kafka_version")
    jv = getattr(workload, "java_client_version", None)
    if getattr(workload, "client", None) == "java" and jv:
        try:
            old_client = not Release(jv).supports_consumer_group_protocol()
        except UnsupportedRelease:
            old_client = False
        if old_client:
            raise ValueError(f"group_protocol: consumer needs kafka-clients {since} or newer, "
                             f"not java_client_version {jv}")
    if getattr(workload, "name", None) == "app":
        app = workload.app
        if app.pyspark is not None:
            raise ValueError("group_protocol: consumer does not apply to a pyspark job (Spark's Kafka source "
                             "assigns partitions, it joins no group): leave group_protocol out")
        texts = [*(app.command or []), *app.env.values()]
        if not any("{group_protocol}" in t.replace("{{", "") for t in texts):
            raise ValueError("group_protocol: consumer, but app.command and app.env never pass {group_protocol} "
                             "on: the application would join with its own protocol; add it to the command")


def with_group_protocol(data: dict, axis_value: str) -> dict:
    """A scenario's data (``Scenario.model_dump``) with the suite axis value ``axis_value``
    (``classic``, ``consumer``, or ``protocol/assignor``, e.g. ``consumer/range``) set on its
    workload; unchanged when the workload has no consumer group. ValueError for a bad value."""
    protocol, _, assignor = axis_value.partition("/")
    check_assignor(protocol, assignor or None)
    w = data.get("workload") or {}
    if w.get("name") not in ("eos-pipeline", "app"):
        return data
    return {**data, "workload": {**w, "group_protocol": protocol, "assignor": assignor or None}}


def id_suffix(workload: Any) -> str:
    """A suite cell id's suffix for the workload's group protocol: "" for the default (classic,
    client default assignor), else ``/group-<protocol>[-<assignor>]``."""
    protocol = getattr(workload, "group_protocol", None)
    assignor = getattr(workload, "assignor", None)
    if protocol is None or (protocol == "classic" and assignor is None):
        return ""
    return f"/group-{protocol}" + (f"-{assignor}" if assignor else "")
