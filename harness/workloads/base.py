"""What a workload gives the run loop (harness.run.runner).

A workload names its topics and keys, the client workers to start (readers first, stopped
after the final drain; writers second, stopped before it), the final drain, the run metadata
the checkers need, and an optional ``finish`` step run after the drain while the history is
still open (a Spark workload turns its sink into poll ops there); what ``finish`` returns is
merged into the run's meta.json. Add a workload by writing a
module with a pydantic spec (with a ``name`` Literal) and a class, and registering both in
harness/workloads/__init__.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

#: Bounds every numeric scenario field keeps (issue 23): nothing infinite, nan or beyond what a
#: run can do. The load of a run lasts at most MAX_LOAD_S (a week); any other time of a
#: scenario (an interval, a fault's length, a timeout) at most MAX_TIME_S (a day).
MAX_LOAD_S = 7 * 24 * 3600.0
MAX_TIME_S = 24 * 3600.0
MAX_INT64 = 2**63 - 1


def _setting(v: Any) -> Any:
    if isinstance(v, (str, bool)) or (isinstance(v, int) and -MAX_INT64 - 1 <= v <= MAX_INT64):
        return v
    if isinstance(v, int):
        raise ValueError(f"{v} does not fit in 64 bits")
    raise ValueError(f"a client setting is text, true/false or an integer, not {v!r}")


#: a client setting's value (librdkafka's or the Java client's): text, a flag or a 64-bit integer
Setting = Annotated[Union[str, bool, int], BeforeValidator(_setting)]


class Strict(BaseModel):
    """A scenario section: unknown fields are errors, so a typo never falls back to a default;
    no number is infinite or nan."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ClientSpec(Strict):
    """The client under test, for workloads whose workers exist in both clients
    (txn-queue, idempotent, eos-pipeline): ``librdkafka`` (confluent-kafka, the Python workers)
    or ``java`` (kafka-clients, harness.workers.java; docs/java-client.md). With ``java``, the
    workload's ``producer`` / ``consumer`` settings are Java client settings."""

    client: Literal["librdkafka", "java"] = "librdkafka"
    #: kafka-clients version of the Java workers (Maven Central); default: harness.workers.java's
    #: DEFAULT_JAVA_CLIENT_VERSION
    java_client_version: str | None = Field(None, pattern=r"^[0-9][0-9A-Za-z.+-]*$")
    #: the producers' compression codec (``compression.type``, one name and the same values in
    #: librdkafka and kafka-clients); None leaves the client's default (none). Merged into the
    #: workload's ``producer`` settings, so every producer of either client gets it (KAFKA-15653
    #: needs compressed transactional batches: scenarios/zoo/kafka-15653.yaml)
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] | None = None

    @model_validator(mode="after")
    def _compression_into_producer(self) -> "ClientSpec":
        producer = getattr(self, "producer", None)
        if self.compression is None or producer is None:
            return self
        # librdkafka also reads compression.codec, an alias: two settings must not disagree
        for k in ("compression.type", "compression.codec"):
            if k in producer and str(producer[k]) != self.compression:
                raise ValueError(f"compression: {self.compression} and producer {k}: {producer[k]} disagree: "
                                 "keep one of them")
        self.producer = {**producer, "compression.type": self.compression}
        return self

    @model_validator(mode="after")
    def _java_version_needs_java(self) -> "ClientSpec":
        if self.java_client_version and self.client != "java":
            raise ValueError("java_client_version needs client: java")
        if self.client == "java" and getattr(self, "multi", False):  # txn-queue's busy variant
            raise ValueError("client: java has no txn-producers worker (producers_per_worker > 1 or "
                             "think_time_ms > 0): drop those or use client: librdkafka")
        return self

    def client_cfg(self) -> dict[str, Any]:
        """What every worker config of this workload gains: nothing for librdkafka,
        ``client`` and ``java_client_version`` for java (read by harness.run.pool)."""
        if self.client != "java":
            return {}
        from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION

        return {"client": "java", "java_client_version": self.java_client_version or DEFAULT_JAVA_CLIENT_VERSION}


@dataclass(frozen=True)
class WorkerSpec:
    """One client worker process: ``role`` is a harness.workers role, ``cfg`` its JSON config."""

    name: str
    role: str
    cfg: dict


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)


class Workload(Protocol):
    def topics(self) -> list[TopicSpec]: ...
    def keys(self) -> list[str]: ...
    def readers(self) -> list[WorkerSpec]: ...
    def writers(self) -> list[WorkerSpec]: ...
    def drain(self) -> WorkerSpec | None: ...
    def meta(self) -> dict[str, Any]: ...
    def respawn(self, spec: WorkerSpec) -> WorkerSpec: ...
    def finish(self, run_dir: Path, history) -> dict[str, Any]: ...
