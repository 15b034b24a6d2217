"""The config of each worker role: one pydantic model per role (``ROLE_CONFIGS``).

A workload (harness.workloads) builds a worker's config as a dict in a ``WorkerSpec``;
``harness.run.pool`` validates it against the role's model before it starts the process (an
unknown or misspelt key, a missing one, a wrong type is one error naming the role and the
field, never a worker that silently reads a default), then passes the same dict, as JSON, to
the Python worker (which reads it back into the model: ``Worker.cfg``) or to the Java worker
of the role (harness.workers.java, which reads the JSON). Defaults live here and only here.

Times are seconds unless a name says otherwise (``start_ns``: ns, ``think_ms``: ms). Client
settings (``producer``, ``consumer``, ``security``) are librdkafka's or, with ``client:
java``, the Java client's (Kafka producer/consumer configs).
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from checkers.run import DEFAULT_ISOLATION_LEVEL, IsolationLevel


class WorkerConfig(BaseModel):
    """What every worker's config has. ``start_ns``: the history's clock origin
    (time.monotonic_ns of the controller when the history began; harness.run.pool sets it);
    ``bootstrap``: host:port,...; ``security``: an external cluster's client security settings
    (harness.cluster.client_access); ``client`` / ``java_client_version``: which client runs
    the role (harness.workloads.base.ClientSpec)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    start_ns: int = 0
    bootstrap: str
    security: dict[str, Any] = Field(default_factory=dict)
    client: Literal["librdkafka", "java"] = "librdkafka"
    java_client_version: str | None = None


class TxnProducerConfig(WorkerConfig):
    """``txn-producer``: one transactional.id writing unique values (``value_base`` upwards) to
    1..``max_sends`` of ``keys`` (``topic/partition``) per transaction, aborting on purpose with
    ``abort_probability``. ``timeout_s``: each transactional call's; ``flush_timeout_s``: the
    flush before commit (None: message.timeout.ms + 2 s); ``inflight_abort``: after a failed
    send, abort and ``replace`` the producer or ``reuse`` it (finding F1)."""

    keys: list[str]
    seed: int
    value_base: int
    transactional_id: str
    max_sends: int = Field(4, ge=1)
    abort_probability: float = Field(0.1, ge=0, le=1)
    timeout_s: float = Field(10.0, gt=0)
    flush_timeout_s: float | None = Field(None, gt=0)
    inflight_abort: Literal["replace", "reuse"] = "replace"
    producer: dict[str, Any] = Field(default_factory=dict)
    #: stop (and exit) once this many values were committed (ok txn ops); None: until stopped.
    #: A transaction never sends more than is left (the app workload's input.preload)
    stop_after: int | None = Field(None, ge=1)


class EpochBurnConfig(TxnProducerConfig):
    """``epoch-burn`` (Java client only, harness/workers/java/src/eosc/EpochBurn.java): a
    txn-producer that first raises its transactional.id's producer epoch to ``burn_to_epoch``
    with bare InitProducerId requests (``burn_timeout_s`` at most), then commits transactions
    until its epoch is ``reinit_at_epoch`` and re-initialises with a transaction open there
    (KAFKA-19367's trigger; with ``trigger: timeout`` it first lets one time out there,
    KAFKA-20090's). Epochs are Kafka's int16 producer epochs (0..32767)."""

    burn_to_epoch: int = Field(32760, ge=0, le=32764)
    reinit_at_epoch: int = Field(32766, ge=1, le=32767)
    burn_timeout_s: float = Field(240.0, gt=0)
    #: ``timeout`` (KAFKA-20090): first let the transaction at reinit_at_epoch time out on the
    #: coordinator, ``timeout_wait_s`` s held open, and abort it late
    trigger: Literal["reinit", "timeout"] = "reinit"
    timeout_wait_s: float = Field(8.0, gt=0)


class TxnProducersConfig(TxnProducerConfig):
    """``txn-producers``: one thread per transactional.id of ``transactional_ids``, each a
    txn-producer over its own ``value_span`` of values; 1.. ``min_sends``..``max_sends`` sends
    per transaction, ``think_ms`` (ms) between transactions. ``transactional_id`` is each
    thread's own (set by the worker)."""

    transactional_id: str = ""
    transactional_ids: list[str] = Field(min_length=1)
    #: each thread's share of the values (set by the worker for its threads, not by the workload)
    value_span: int | None = Field(None, gt=0)
    min_sends: int = Field(1, ge=1)
    think_ms: float = Field(0.0, ge=0)


class IdempotentProducerConfig(WorkerConfig):
    """``idempotent-producer``: enable.idempotence without transactions, 1..``max_sends``
    sends per op to ``keys``; ``flush_timeout_s`` for each op's flush."""

    keys: list[str]
    seed: int
    value_base: int
    max_sends: int = Field(4, ge=1)
    flush_timeout_s: float = Field(90.0, gt=0)
    producer: dict[str, Any] = Field(default_factory=dict)
    #: stop (and exit) once this many values were acknowledged (ok send ops); None: until
    #: stopped. An op never sends more than is left (the app workload's input.preload)
    stop_after: int | None = Field(None, ge=1)


class ConsumerConfig(WorkerConfig):
    """``consumer`` and ``drain``: assigned readers of ``keys`` at ``isolation_level`` in
    ``group_id``. The app workload's readers also name ``output_keys`` (records there are
    mapped to input values by ``match``, harness.workers.app_match, from ``base_dir``), or
    ``output_dirs`` (output key -> a file sink folder, harness.workers.app_files: read every
    ``files_poll_s`` s, and to its end by the drain); ``drain_timeout_s``: how long the final
    drain may take."""

    keys: list[str]
    group_id: str = "eosc-readers"
    isolation_level: IsolationLevel = DEFAULT_ISOLATION_LEVEL
    consumer: dict[str, Any] = Field(default_factory=dict)
    drain_timeout_s: float = Field(120.0, gt=0)
    output_keys: list[str] | None = None
    output_dirs: dict[str, str] | None = None
    files_poll_s: float = Field(2.0, gt=0)
    match: Any = None
    base_dir: str | None = None
    #: the drain of an app with output.verify: every output record read is appended to this
    #: file as JSON ({"topic", "partition", "offset", "key", "value"}: harness.workloads.app_verify)
    dump_output: str | None = None


class ProcessorConfig(TxnProducerConfig):
    """``processor`` (a txn-producer whose values come from its input, so no ``keys`` or
    ``value_base`` of its own): consume-transform-produce from ``input_topic`` to ``output_topic`` in
    ``group_id`` (static member ``group_instance_id`` when set), up to ``max_batch`` records
    per transaction; ``offsets``: sent in the ``transaction`` (EOS), or committed by the
    ``consumer`` or ``commit-before`` the commit (mutants); ``group_metadata``: the consumer
    group metadata sent with the offsets (``member``, KIP-447) or the ``group-only`` (a mutant); ``spawn``: which incarnation (0, 1, ...);
    ``assignment_offsets``: ``fetched`` by librdkafka, or ``committed-then-assign`` (looked up
    with ``Consumer.committed()`` and assigned in on_assign: the F4 workaround)."""

    input_topic: str
    output_topic: str
    group_id: str
    keys: list[str] = Field(default_factory=list)
    seed: int = 0
    value_base: int = 0
    group_instance_id: str | None = None
    group_metadata: Literal["member", "group-only"] = "member"
    max_batch: int = Field(50, ge=1)
    offsets: Literal["transaction", "consumer", "commit-before"] = "transaction"
    assignment_offsets: Literal["fetched", "committed-then-assign"] = "fetched"
    spawn: int = Field(0, ge=0)
    abort_probability: float = Field(0.0, ge=0, le=1)
    consumer: dict[str, Any] = Field(default_factory=dict)
    producer: dict[str, Any] = Field(default_factory=dict)
    #: the group protocol and its assignor (harness.workloads.group: classic range |
    #: cooperative-sticky, consumer uniform | range; None: the default)
    group_protocol: Literal["classic", "consumer"] = "classic"
    assignor: Literal["range", "cooperative-sticky", "uniform"] | None = None


class PipelineDrainConfig(ConsumerConfig):
    """``pipeline-drain``: the final drain of the eos-pipeline: ``keys`` (output) read
    committed, and the committed offsets of ``pipeline_group`` on ``input_keys``."""

    input_keys: list[str]
    pipeline_group: str


class SparkConsumerConfig(WorkerConfig):
    """``spark-consumer``: the Spark driver (harness.workers.spark_driver): Spark's Kafka
    source on ``topics`` at ``isolation_level``, a ``parquet`` or ``kafka`` sink, checkpoint
    and output in ``work_dir``; ``master`` a Spark master URL; ``jars`` the Kafka connector;
    ``conf`` extra Spark settings, ``kafka`` extra source/sink options;
    ``max_offsets_per_trigger`` and ``trigger_s`` (s) pace micro-batches; ``instance``: which
    driver incarnation (1, 2, ...); ``restart_backoff_s`` between query restarts."""

    topics: list[str]
    work_dir: str
    isolation_level: IsolationLevel = DEFAULT_ISOLATION_LEVEL
    sink: Literal["parquet", "kafka"] = "parquet"
    master: str = "local[2]"
    instance: int = Field(1, ge=1)
    conf: dict[str, Any] = Field(default_factory=dict)
    driver_memory: str = "1g"
    jars: list[str] = Field(default_factory=list)
    kafka: dict[str, Any] = Field(default_factory=dict)
    max_offsets_per_trigger: int | None = Field(None, ge=1)
    trigger_s: float | None = Field(None, ge=0)
    restart_backoff_s: float = Field(2.0, ge=0)


class SparkDrainConfig(ConsumerConfig):
    """``spark-drain``: waits up to ``catchup_s`` for the Spark driver's sink in ``work_dir``
    to reach the end of the input, then drains like ``drain`` (``drain_timeout_s``)."""

    work_dir: str
    catchup_s: float = Field(90.0, gt=0)
    drain_timeout_s: float = Field(60.0, gt=0)


class AppInstanceConfig(WorkerConfig):
    """``app``: the supervisor of one instance (``instance``, 0..N-1) of the user's
    application (harness.workers.app_instance): ``argv`` run in ``cwd`` with ``env``, or the
    docker ``image`` on ``network`` (``labels``, ``run_id``); stdout/stderr to ``log``;
    ``restart`` on exit; ``done: exit`` for a batch app; an exit within ``startup_s`` of the
    first start ends the run, unless ``restarted`` (a worker the pool started again: a
    kill-client's restart, a zombie's replacement), whose exits are restarted with a backoff;
    ``stop_grace_s`` between SIGTERM and SIGKILL."""

    instance: int = Field(ge=0)
    work_dir: str
    client_properties: str
    argv: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    log: str | None = None
    restart: Literal["always", "on-failure", "never"] = "on-failure"
    done: Literal["none", "exit"] = "none"
    startup_s: float = Field(5.0, ge=0)
    restarted: bool = False
    stop_grace_s: float = Field(20.0, ge=0)
    image: str | None = None
    network: str | None = None
    run_id: str | None = None
    labels: dict[str, str] | None = None


class AppCatchUpConfig(WorkerConfig):
    """``app-catch-up``: after the load, waits until every committed input of ``input_keys``
    has an output in ``output_keys`` (mapped by ``match`` from ``base_dir``) or in the file
    sinks of ``output_dirs`` (output key -> folder, read every ``files_poll_s`` s), the output
    has been quiet for ``quiet_s``, or ``bound_s`` passed."""

    input_keys: list[str]
    output_keys: list[str]
    output_dirs: dict[str, str] = Field(default_factory=dict)
    files_poll_s: float = Field(2.0, gt=0)
    match: Any = "value"
    base_dir: str | None = None
    bound_s: float = Field(120.0, gt=0)
    quiet_s: float = Field(20.0, gt=0)
    group_id: str = "eosc-catch-up"
    #: the application's consumer group: its committed input offsets are reported at the end
    app_group: str | None = None
    consumer: dict[str, Any] = Field(default_factory=dict)


class ShareConsumerConfig(WorkerConfig):
    """``share-consumer`` (harness.workers.share_consumer; Java: ShareConsumers.java): a member
    of share group ``group_id`` (KIP-932) subscribed to ``topics``, acknowledging explicitly.
    First sets the group's ``group_configs`` (GROUP resource, IncrementalAlterConfigs: e.g.
    share.isolation.level, share.record.lock.duration.ms, share.delivery.count.limit,
    share.auto.offset.reset) for up to ``config_timeout_s`` s. Per record: release with
    ``release_probability``, reject with ``reject_probability``, else process (``process_ms``
    ms per batch) and accept; ``ack_order``: ``after-processing`` (correct) or
    ``before-processing`` (accept, commit, then process: the zoo mutant). ``seed``: the draw."""

    topics: list[str] = Field(min_length=1)
    group_id: str
    seed: int = 0
    group_configs: dict[str, str] = Field(default_factory=dict)
    config_timeout_s: float = Field(60.0, gt=0)
    release_probability: float = Field(0.0, ge=0, le=1)
    reject_probability: float = Field(0.0, ge=0, le=1)
    process_ms: float = Field(0.0, ge=0)
    ack_order: Literal["after-processing", "before-processing"] = "after-processing"
    consumer: dict[str, Any] = Field(default_factory=dict)


class ShareDlqReaderConfig(WorkerConfig):
    """``share-dlq-reader`` (harness.workers.share_dlq_reader): read the share group's
    dead-letter queue ``topic`` (every partition; KIP-1191) to its end within ``timeout_s``
    seconds; ``group_id`` is the reader's own (it assigns, never commits), ``source_group_id``
    the share group whose DLQ it is (recorded in the op's meta)."""

    topic: str = Field(min_length=1)
    group_id: str
    source_group_id: str
    timeout_s: float = Field(120.0, gt=0)


#: role (harness.workers.__main__.ROLES) -> its config model
ROLE_CONFIGS: dict[str, type[WorkerConfig]] = {
    "txn-producer": TxnProducerConfig, "txn-producers": TxnProducersConfig, "epoch-burn": EpochBurnConfig,
    "idempotent-producer": IdempotentProducerConfig, "consumer": ConsumerConfig,
    "drain": ConsumerConfig, "processor": ProcessorConfig, "pipeline-drain": PipelineDrainConfig,
    "spark-consumer": SparkConsumerConfig, "spark-drain": SparkDrainConfig,
    "app": AppInstanceConfig, "app-catch-up": AppCatchUpConfig,
    "share-consumer": ShareConsumerConfig, "share-dlq-reader": ShareDlqReaderConfig,
}


class WorkerConfigError(ValueError):
    """A worker config that does not fit its role's model (a harness bug, not user input)."""


def check_config(role: str, cfg: dict[str, Any]) -> WorkerConfig:
    """``cfg`` read as ``role``'s model. Raises WorkerConfigError (one line: the role and each
    bad field) for an unknown role or a config that does not validate."""
    model = ROLE_CONFIGS.get(role)
    if model is None:
        raise WorkerConfigError(f"no worker role {role!r} (roles: {', '.join(sorted(ROLE_CONFIGS))})")
    try:
        return model.model_validate(cfg)
    except ValidationError as exc:
        bad = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(config)'}: {e['msg']}" for e in exc.errors())
        raise WorkerConfigError(f"worker config of role {role!r} does not fit {model.__name__}: {bad}") from None
