"""The client under test (``workload.client``, harness.workloads.base.ClientSpec) for the
workloads whose workers exist in both clients.

``with_client(cls)`` subclasses a workload class so that every worker it starts carries the
spec's ``client_cfg()`` (harness.run.pool then starts the Java worker of the role, harness.workers.java),
the Java workers are built before the load starts, and ``finish`` adds what the run used:

* ``meta["client"]``: ``{"name": "java" | "librdkafka", "version": ...}``;
* ``meta["transaction_version"]``: ``{"broker": the cluster's finalized transaction.version
  feature (KIP-584 describeFeatures, read by the Java drain; 0 when it is not finalized, as
  on Kafka 3.9; null with librdkafka, whose admin API cannot read features), "client": the transaction protocol versions the producers
  used, sorted (Java: 2 when its TransactionManager runs KIP-890 part 2, else 1; librdkafka
  2.x implements protocol v1 only, so always [1])}``; null for a non-transactional workload.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.workloads.base import WorkerSpec


def _with(spec, workers: list[WorkerSpec]) -> list[WorkerSpec]:
    extra = spec.client_cfg()
    return [WorkerSpec(w.name, w.role, {**w.cfg, **extra}) for w in workers] if extra else workers


def history_client_facts(path: Path) -> dict[str, Any]:
    """From a history file: the Java clients' versions (``init`` ok ``meta.client``), the
    transaction protocol versions (``txn`` ok ``meta.transaction_version``) and the broker's
    finalized features (the Java drain's ``assign`` ``meta.broker_features``). Only lines
    that mention one of them are parsed."""
    clients: set[str] = set()
    versions: set[int] = set()
    features: dict[str, int] = {}
    try:
        f = open(path)
    except OSError:
        return {"clients": [], "transaction_versions": [], "broker_features": {}}
    with f:
        for line in f:
            if '"client"' not in line and '"transaction_version"' not in line and '"broker_features"' not in line:
                continue
            try:
                meta = json.loads(line).get("meta") or {}
            except ValueError:
                continue
            if isinstance(meta.get("client"), str):
                clients.add(meta["client"])
            if isinstance(meta.get("transaction_version"), int):
                versions.add(meta["transaction_version"])
            if isinstance(meta.get("broker_features"), dict):
                features.update(meta["broker_features"])
    return {"clients": sorted(clients), "transaction_versions": sorted(versions), "broker_features": features}


def client_meta(spec, history_path: Path, transactional: bool) -> dict[str, Any]:
    """``meta["client"]`` and ``meta["transaction_version"]`` (module docstring)."""
    facts = history_client_facts(history_path)
    if spec.client == "java":
        from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION

        client = {"name": "java", "version": spec.java_client_version or DEFAULT_JAVA_CLIENT_VERSION}
        used = facts["transaction_versions"]
    else:
        try:
            import confluent_kafka

            ck = confluent_kafka.version()  # a string in 2.x ("2.16.1"; [0] was "2"), (string, int) in 1.x
            version = f"{confluent_kafka.libversion()[0]} (confluent-kafka {ck if isinstance(ck, str) else ck[0]})"
        except ImportError:  # pragma: no cover - a dependency of the harness
            version = None
        client = {"name": "librdkafka", "version": version}
        used = [1]
    tv = None
    if transactional:
        features = facts["broker_features"]
        # a feature the cluster has not finalized is at level 0 (KIP-584): Kafka 3.9 lists none
        broker = features.get("transaction.version", 0) if features else None
        tv = {"broker": broker, "client": used}
    out: dict[str, Any] = {"client": client, "transaction_version": tv}
    if facts["broker_features"]:
        out["broker_features"] = facts["broker_features"]
    return out


def with_client(cls):
    """``cls`` whose workers run the scenario's ``workload.client`` (module docstring)."""

    class WithClient(cls):
        def __init__(self, spec, *args, **kwargs):
            super().__init__(spec, *args, **kwargs)
            if spec.client == "java":  # fetch and compile now, not when the first worker starts
                from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION, build

                build(spec.java_client_version or DEFAULT_JAVA_CLIENT_VERSION)

        def readers(self) -> list[WorkerSpec]:
            return _with(self.spec, super().readers())

        def writers(self) -> list[WorkerSpec]:
            return _with(self.spec, super().writers())

        def drain(self) -> WorkerSpec | None:
            d = super().drain()
            return None if d is None else _with(self.spec, [d])[0]

        def finish(self, run_dir: Path, history) -> dict:
            out = dict(super().finish(run_dir, history) or {})
            out.update(client_meta(self.spec, Path(history.path), bool(self.meta().get("transactional"))))
            return out

    WithClient.__name__ = WithClient.__qualname__ = cls.__name__
    WithClient.__doc__ = cls.__doc__
    WithClient.__module__ = cls.__module__
    return WithClient
