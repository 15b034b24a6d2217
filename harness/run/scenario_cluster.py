"""The ``cluster:`` section of a scenario file: nodes, the Kafka release, broker and topic
settings, the backend (netns, docker, or an external cluster with its node-control commands).
Models only; harness.run.scenario assembles them into a Scenario."""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
from harness.workloads.base import MAX_TIME_S, Strict

BACKENDS = ("netns", "docker", "external")
#: node-control command templates of the external backend
COMMANDS = ("kill", "start", "pause", "resume")
#: fault kind -> the templates an external cluster needs for it (begin, end)
EXTERNAL_FAULT_COMMANDS = {"kill": ("kill", "start"), "pause": ("pause", "resume")}
#: a feature name (KIP-584): transaction.version, group.version, share.version, ...
FEATURE_NAME = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)*\.version")
#: librdkafka settings an external cluster's clients may be given (security only)
CLIENT_PREFIXES = ("security.protocol", "sasl.", "ssl.", "enable.ssl.")


class ExternalNode(Strict):
    """One node of an external cluster: its Kafka ``node.id``, ``host`` and ``name`` as the
    command templates use them (``{id}``, ``{host}``, ``{name}``)."""

    id: int = Field(ge=0, le=2**31 - 1)
    host: str = ""
    name: str = ""


class ExternalSpec(Strict):
    """``cluster.external``: a cluster the harness did not start (docs/backends.md)."""

    bootstrap: str = Field(min_length=1, description="bootstrap.servers of the cluster")
    client: dict[str, str] = Field(default_factory=dict, description="security settings for every client")
    #: the same for the Java workers (workload.client: java), in the Java client's spelling
    #: (sasl.jaas.config, ssl.truststore.*); default: client's security.protocol and sasl.mechanism
    java_client: dict[str, str] = Field(default_factory=dict, description="Java client security settings")
    nodes: list[ExternalNode] = Field(default_factory=list)
    commands: dict[str, str] = Field(default_factory=dict, description="node-control command templates")
    command_timeout_s: float = Field(120.0, gt=0, le=MAX_TIME_S)

    @field_validator("client", "java_client")
    @classmethod
    def _security_only(cls, v: dict[str, str]) -> dict[str, str]:
        bad = sorted(k for k in v if not k.startswith(CLIENT_PREFIXES))
        if bad:
            raise ValueError(f"only security settings (security.protocol, sasl.*, ssl.*) are passed "
                             f"to the clients; not: {bad}")
        return v

    @field_validator("commands")
    @classmethod
    def _templates(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(v) - set(COMMANDS))
        if unknown:
            raise ValueError(f"unknown command {unknown}; known: {list(COMMANDS)}")
        for k, t in v.items():
            try:
                t.format(id=1, host="h", name="n")
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(f"command {k}: placeholders are {{id}} {{host}} {{name}}; {t!r} has "
                                 f"{exc!r}") from None
        return v

    @model_validator(mode="after")
    def _nodes_for_commands(self) -> "ExternalSpec":
        if self.commands and not self.nodes:
            raise ValueError("commands need nodes: [{id, host, name}, ...] to fill {id} {host} {name}")
        ids = [n.id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"node ids repeat: {ids}")
        return self


class DockerSpec(Strict):
    """``cluster.docker``: the image of every broker (Kafka under /opt/kafka, the layout of
    the official apache/kafka image); default: kafka-eos-chaos/kafka:<kafka_version>, built
    locally by ``eos-chaos setup --docker``."""

    image: str | None = None


class ClusterSpec(Strict):
    nodes: int = Field(3, ge=1, le=9)
    kafka_version: str = DEFAULT_KAFKA_VERSION
    heap_mb: int = Field(512, ge=128, le=1 << 20)
    broker: dict[str, str] = Field(default_factory=dict, description="extra server.properties settings")
    backend: Literal["netns", "docker", "external"] = "netns"
    docker: DockerSpec | None = None
    external: ExternalSpec | None = None
    #: each broker's log dir on the FUSE layer that can lose unsynced writes
    #: (harness.cluster.unsynced_fs); on by itself when a fault needs it (lose-unsynced), or set
    #: it to run a scenario on the layer without that fault (its cost, a control)
    lazyfs: bool = False
    #: every broker JVM under libfaketime with a clock control file; on by itself with clock-skew
    faketime: bool = False
    #: feature levels finalized when the nodes' KRaft log dirs are formatted (``kafka-storage
    #: format --feature NAME=LEVEL``, KIP-584/KIP-1022; Kafka 3.8.0 on), e.g.
    #: ``{transaction.version: 1}`` for KIP-98's transaction protocol on a 4.x release that
    #: would finalize 2 (KIP-890 part 2). Empty: the release's defaults (Release.default_features)
    features: dict[str, Annotated[int, Field(ge=0, le=32767)]] = Field(default_factory=dict,
                                     description="feature levels set at format time, e.g. {transaction.version: 1}")

    @field_validator("kafka_version")
    @classmethod
    def _version(cls, v: str) -> str:
        return kafka_version(v)

    @field_validator("features", mode="before")
    @classmethod
    def _feature_levels(cls, v):
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise ValueError(f"cluster.features maps feature names to levels, e.g. {{transaction.version: 1}}; "
                             f"not {v!r}")
        for name, level in v.items():
            if not isinstance(name, str) or not FEATURE_NAME.fullmatch(name):
                raise ValueError(f"cluster.features: {name!r} is not a feature name like transaction.version")
            if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 32767:
                raise ValueError(f"cluster.features {name}: the level is a whole number 0..32767, not {level!r}")
        return v

    @field_validator("broker")
    @classmethod
    def _min_isr(cls, v: dict[str, str]) -> dict[str, str]:
        if "min.insync.replicas" in v:
            raw = str(v["min.insync.replicas"]).strip()
            if not raw.isdigit() or not 1 <= int(raw) <= 9:
                raise ValueError(f"cluster.broker min.insync.replicas must be a whole number 1..9, not {raw!r}")
        return v

    def topic_min_isr(self) -> int:
        """``min.insync.replicas`` of the workload's topics (a topic config, set when the runner
        creates them): ``cluster.broker``'s ``min.insync.replicas`` when the scenario sets it (a
        scenario that lowers the brokers' default lowers its own topics' too, e.g. the zoo
        mutant unclean-leader-lose-unsynced's min ISR 1), else 2 (1 on a one-node cluster)."""
        if "min.insync.replicas" in self.broker:
            return min(int(str(self.broker["min.insync.replicas"]).strip()), self.nodes)
        return min(2, self.nodes)

    @model_validator(mode="after")
    def _backend_fields(self) -> "ClusterSpec":
        for other in ("docker", "external"):
            if getattr(self, other) is not None and self.backend != other:
                raise ValueError(f"cluster.{other} is read only with backend: {other} (backend is {self.backend})")
        if self.backend == "external":
            if self.external is None:
                raise ValueError("backend external needs cluster.external.bootstrap (the cluster's bootstrap.servers)")
            if self.broker:
                raise ValueError("cluster.broker settings cannot be applied to an external cluster; remove them")
            if self.external.nodes:
                if "nodes" in self.model_fields_set and self.nodes != len(self.external.nodes):
                    raise ValueError(f"cluster.nodes is {self.nodes} but cluster.external.nodes lists "
                                     f"{len(self.external.nodes)}")
                self.nodes = len(self.external.nodes)
        if self.features and self.backend == "external":
            raise ValueError("cluster.features are set when the harness formats the brokers' storage; "
                             "an external cluster is not formatted by it: remove cluster.features")
        from harness.cluster.releases import broker_override_problems, feature_problems  # what the release lacks

        problems = feature_problems(self.kafka_version, self.features) + broker_override_problems(self.kafka_version,
                                                                                                  self.broker)
        if problems:
            raise ValueError(problems[0])
        return self


def kafka_version(v: str) -> str:
    """``v`` when it is a version like 4.3.1 (harness.cluster.artifacts.VERSION: it names a
    cache folder and a Maven artifact) of a release the harness runs (3.5.0 on,
    harness.cluster.releases); else ValueError in one line."""
    from harness.cluster.artifacts import ArtifactError, check_kafka_release

    try:
        return check_kafka_release(v)
    except ArtifactError as exc:
        raise ValueError(str(exc)) from None


def node_ids(cluster: ClusterSpec) -> list[int]:
    """The Kafka node ids of a run on ``cluster``, numbered as its backend numbers them."""
    if cluster.backend == "external" and cluster.external is not None and cluster.external.nodes:
        return sorted(n.id for n in cluster.external.nodes)
    return list(range(1, cluster.nodes + 1))
