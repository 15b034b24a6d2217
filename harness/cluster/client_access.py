"""What a run's clients are given on a cluster: the run's names and the security settings.

On the netns and docker backends the cluster is the run's own, so the workloads' names stay
as they are (topics ``t0`` ``in`` ``out``, group ids and transactional.ids ``eosc-*``). On an
``external`` cluster (docs/backends.md) two runs, or a run and someone's applications, share
the brokers, so:

* ``RunNames("eosc-<run id>-")`` prefixes every name the run makes on the cluster: topics
  (``eosc-<run id>-t0``), consumer group ids and transactional.ids (``eosc-txn-0`` becomes
  ``eosc-<run id>-txn-0``). Topics alone would not do: a second run under the same group id
  would join the first run's group and take its partitions in a rebalance, and under the same
  transactional.id would fence the first run's producers (KIP-98 epochs). The scenario's role
  targets (``key``, ``transactional_id``) are renamed the same way (``targets``).
* ``SecureWorkload`` adds the cluster's client security settings to every worker config as
  ``security`` (harness.workers.base ``Worker.kafka_conf``; the Java workers merge it into
  every Properties, harness/workers/java/src/eosc): producers, consumers, processors, drains, zombies
  and restarted workers (their configs derive from these), and the Java drain's admin client.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, TypeVar

#: a worker spec (harness.workloads.base.WorkerSpec, a frozen dataclass with ``cfg``), copied
#: with ``dataclasses.replace``: harness.cluster imports nothing of harness.workloads
Spec = TypeVar("Spec")

#: librdkafka settings whose name and meaning are the same in the Java client
SHARED_SECURITY_KEYS = ("security.protocol", "sasl.mechanism", "sasl.mechanisms")


@dataclass(frozen=True)
class RunNames:
    """The names a run makes on its cluster; ``prefix`` "" keeps the workloads' own."""

    prefix: str = ""

    @classmethod
    def for_run(cls, run_id: str) -> "RunNames":
        """``eosc-<run id>-``, with characters Kafka refuses in topic names made ``_``
        (legal: ASCII letters, digits, ``.``, ``_``, ``-``; at most 249 characters)."""
        return cls(f"eosc-{re.sub(r'[^A-Za-z0-9._-]', '_', run_id)}-")

    def topic(self, name: str) -> str:
        return self.prefix + name

    def key(self, key: str) -> str:
        """"topic/partition" with the topic renamed."""
        topic, part = key.rsplit("/", 1)
        return f"{self.topic(topic)}/{part}"

    def client_id(self, name: str) -> str:
        """A group id or transactional.id: ``eosc-txn-0`` -> ``<prefix>txn-0``."""
        return self.prefix + name.removeprefix("eosc-") if self.prefix else name

    def targets(self, fault: dict[str, Any]) -> dict[str, Any]:
        """A fault spec (nemesis.registry dict) with its role target's ``key`` and
        ``transactional_id`` renamed."""
        if not self.prefix:
            return fault
        out = dict(fault)
        if out.get("key"):
            out["key"] = self.key(out["key"])
        if out.get("transactional_id"):
            out["transactional_id"] = self.client_id(out["transactional_id"])
        return out


def java_security(client: dict[str, str], java_client: dict[str, str]) -> dict[str, str]:
    """The Java client's security settings: ``java_client`` when given, else the settings of
    ``client`` (librdkafka's) that mean the same in Java (``security.protocol``,
    ``sasl.mechanism``). Raises ValueError naming the settings Java spells differently
    (``sasl.username`` -> ``sasl.jaas.config``, ``ssl.ca.location`` ->
    ``ssl.truststore.location`` with ``ssl.truststore.type: PEM``, ...)."""
    if java_client:
        return dict(java_client)
    other = sorted(k for k in client if k not in SHARED_SECURITY_KEYS)
    if other:
        raise ValueError(f"client: java needs cluster.external.java_client (the Java client's spelling of "
                         f"{other}, e.g. sasl.jaas.config, ssl.truststore.location)")
    return {("sasl.mechanism" if k == "sasl.mechanisms" else k): v for k, v in client.items()}


def with_security(spec: Spec, client: dict[str, str], java_client: dict[str, str]) -> Spec:
    """``spec`` with ``cfg["security"]``: ``java_security(...)`` for a Java worker
    (``cfg["client"] == "java"``), else ``client``. Unchanged when there is nothing to add."""
    sec = java_security(client, java_client) if spec.cfg.get("client") == "java" else dict(client)
    if not sec:
        return spec
    return replace(spec, cfg={**spec.cfg, "security": sec})


class SecureWorkload:
    """``workload`` whose every worker config carries ``security`` (module docstring);
    everything else is the workload's own."""

    def __init__(self, workload, client: dict[str, str], java_client: dict[str, str] | None = None):
        self._w, self._client, self._java = workload, dict(client), dict(java_client or {})
        if hasattr(workload, "secure"):  # a workload that starts workers of its own (the app's catch-up)
            workload.secure = lambda spec: self._add([spec])[0]

    def __getattr__(self, name: str):
        return getattr(self._w, name)

    def _add(self, specs: list[Spec]) -> list[Spec]:
        return [with_security(s, self._client, self._java) for s in specs]

    def readers(self) -> list:
        return self._add(self._w.readers())

    def writers(self) -> list:
        return self._add(self._w.writers())

    def drain(self):
        d = self._w.drain()
        return None if d is None else self._add([d])[0]


def run_names(cluster, run_id: str) -> RunNames:
    """The run's names on ``cluster`` (a ClusterSpec): prefixed on external, else the workloads' own."""
    return RunNames.for_run(run_id) if cluster.backend == "external" else RunNames()


def renamed_targets(scn, names: RunNames):
    """``scn`` (a Scenario) whose faults' role targets name the run's topics and
    transactional.ids (``names.targets``); ``scn`` itself when nothing is renamed."""
    if not names.prefix:
        return scn
    nem = scn.nemesis
    faults = [f.model_copy(update=_renamed(names, f)) for f in nem.faults]
    schedule = None if nem.schedule is None else [
        s.model_copy(update={"fault": s.fault.model_copy(update=_renamed(names, s.fault))}) for s in nem.schedule]
    return scn.model_copy(update={"nemesis": nem.model_copy(update={"faults": faults, "schedule": schedule})})


def _renamed(names: RunNames, fault) -> dict[str, Any]:
    d = names.targets({"key": fault.key, "transactional_id": fault.transactional_id})
    return {k: v for k, v in d.items() if v is not None}


def cluster_workload(cls, spec, bootstrap: str, seed: int, names: RunNames, client: dict[str, str],
                     java_client: dict[str, str] | None = None):
    """``cls(spec, bootstrap, seed)`` (a harness.workloads class) making the run's ``names``
    and giving every worker the cluster's security settings (``SecureWorkload``)."""
    workload = cls(spec, bootstrap, seed, names=names) if names.prefix else cls(spec, bootstrap, seed)
    return SecureWorkload(workload, client, java_client) if client or java_client else workload
