"""The ``app`` workload's scenario models (``workload: {name: app, input, app, output, ...}``),
validated when the scenario loads; harness.workloads.app runs them (its docstring says what each
part does; docs/your-pipeline.md documents every field).

Placeholders in ``command``, ``env`` values and ``cwd`` (``{name}``; ``{{``/``}}`` for a brace):
``PLACEHOLDERS`` below. A name not listed is an error when the scenario loads.
"""
from __future__ import annotations

import string
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from checkers.run import DEFAULT_ISOLATION_LEVEL, IsolationLevel

from harness.workers.app_match import check_spec
from harness.workloads.base import Setting, Strict
from harness.workloads.group import GroupSpec

#: placeholder -> what it becomes
PLACEHOLDERS = {
    "bootstrap": "the cluster's bootstrap servers, host:port,... (reachable from the client namespace)",
    "instance": "this instance's number, 0 .. instances-1 (a replacement keeps its instance's)",
    "instances": "how many instances run",
    "work_dir": "the instance's own folder, kept across its restarts (<run>/app/<instance>)",
    "kafka_libs": "a Java classpath of the Kafka client jars (kafka-clients with its dependencies)",
    "kafka_tools": "a Java classpath of Kafka's own jars with kafka-tools (as kafka-run-class.sh builds it), "
                   "for Kafka's tools such as org.apache.kafka.tools.TransactionalMessageCopier",
    "client_properties": "a .properties file with bootstrap.servers and the cluster's security settings",
    "input_topic": "the first input topic", "input_topics": "the input topics, comma-separated",
    "output_topic": "the first output topic", "output_topics": "the output topics, comma-separated",
    "group": "a consumer group id for the application (prefixed on a shared cluster)",
    "transactional_id": "a transactional.id for this instance: <group>-<instance>",
    "python": "the harness's own Python interpreter (it has confluent-kafka and pyspark)",
    "examples": "the folder of the example applications shipped with the harness",
    "scenario_dir": "the folder of the scenario file",
    "group_protocol": "workload.group_protocol: classic or consumer (KIP-848), for the app's group.protocol",
    "assignor": "workload.assignor or empty: the app's partition.assignment.strategy / group.remote.assignor",
}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: ``output.topics`` and ``output.partitions`` when a scenario does not set them (a topic sink)
DEFAULT_OUTPUT_TOPICS, DEFAULT_OUTPUT_PARTITIONS = ("out",), 6


def placeholders_in(text: str) -> list[str]:
    """The placeholder names ``text`` uses. Raises ValueError for a malformed one."""
    try:
        return [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        raise ValueError(f"{text!r}: {e} (write {{{{ and }}}} for a literal brace)") from None


def fill(text: str, values: dict[str, Any]) -> str:
    return text.format_map(values)


class AppInput(Strict):
    topics: list[str] = Field(default_factory=lambda: ["in"], min_length=1, max_length=8)
    partitions: int = Field(6, ge=1, le=64)
    #: live input producers during the load; 0 with ``preload``: a pure batch run (no live input)
    producers: int = Field(2, ge=0, le=32)
    #: false: idempotent producers (no transactions, nothing aborted)
    transactional: bool = True
    abort_probability: float = Field(0.1, ge=0.0, le=1.0)
    max_sends_per_txn: int = Field(4, ge=1, le=1000)
    #: records committed to the input before any instance starts (a batch app: with
    #: ``app.done: exit``), by ``min(4, max(1, producers))`` producers of the same kind as the
    #: live ones, their transactions' outcomes in the history; 0: none
    preload: int = Field(0, ge=0, le=1_000_000)
    producer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka settings")
    #: the input producers' own cycles that Kafka allows (G0, G0-process, G0-realtime,
    #: G1c-realtime: checkers.finders.app_end_to_end.INPUT_SIDE): "report" lists them in the verdict's
    #: input side without failing the run; "fail" judges them as any scenario does
    cycles: Literal["report", "fail"] = "report"

    @model_validator(mode="after")
    def _some_input(self) -> "AppInput":
        if self.producers == 0 and self.preload == 0:
            raise ValueError("input: producers: 0 writes nothing during the load; give preload: N (records "
                             "committed before the application starts) or producers >= 1")
        return self


class AppPySpark(Strict):
    #: the user's transformation, "module:function" (DataFrame -> DataFrame of key, value)
    job: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    #: kafka: the output topic (Spark's Kafka sink, at-least-once); parquet: Spark's file sink
    #: in the instance's work dir (exactly-once), read by the harness from its committed files
    sink: Literal["kafka", "parquet"] = "kafka"
    isolation_level: IsolationLevel = DEFAULT_ISOLATION_LEVEL
    master: str = "local[2]"


class AppProcess(Strict):
    instances: int = Field(1, ge=1, le=16)
    command: list[str] | None = Field(None, min_length=1)
    #: a container image (docker backend): each instance a container on the run's network;
    #: ``command``, if given, is its command (arguments after the image's entrypoint)
    image: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
    pyspark: AppPySpark | None = None
    env: dict[str, str] = Field(default_factory=dict)
    #: working directory of the command, and where a pyspark job or a python match is imported
    #: from; default: the scenario file's folder; ``{examples}`` names the shipped examples
    cwd: str | None = None
    restart: Literal["always", "on-failure", "never"] = "on-failure"
    done: Literal["none", "exit"] = "none"
    #: an instance whose first start exits within this many seconds fails the run's start
    startup_s: float = Field(5.0, gt=0, le=300)
    #: seconds between SIGTERM and SIGKILL when an instance is stopped
    stop_grace_s: float = Field(20.0, gt=0, le=300)

    @model_validator(mode="after")
    def _one_way_to_run(self) -> "AppProcess":
        if (self.command is None and self.image is None) == (self.pyspark is None):
            raise ValueError("app: give exactly one of command (a list of arguments), image (docker backend) "
                             "or pyspark {job: module:function}")
        if self.cwd and set(placeholders_in(self.cwd)) - {"examples"}:
            raise ValueError(f"cwd {self.cwd!r}: the only placeholder a cwd takes is {{examples}}")
        for text in [*(self.command or []), *self.env.values()]:
            unknown = [p for p in placeholders_in(text) if p not in PLACEHOLDERS]
            if unknown:
                raise ValueError(f"unknown placeholder {{{unknown[0]}}} in {text!r}; known: "
                                 + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS))
        return self


class AppVerify(Strict):
    """``output.verify``: the user's own verifier (harness.workloads.app_verify: the files it
    reads, what it prints)."""

    #: its argv; placeholders as app.command's, plus {input_file}, {output_file}, {aborted_file}
    command: list[str] = Field(min_length=1)
    #: seconds it may take; past them it is killed and the run is unknown
    timeout_s: float = Field(120.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _placeholders(self) -> "AppVerify":
        from harness.workloads.app_verify import VERIFY_PLACEHOLDERS

        known = {**PLACEHOLDERS, **VERIFY_PLACEHOLDERS}
        for text in self.command:
            unknown = [p for p in placeholders_in(text) if p not in known]
            if unknown:
                raise ValueError(f"output.verify: unknown placeholder {{{unknown[0]}}} in {text!r}; known: "
                                 + ", ".join(f"{{{p}}}" for p in known))
        return self


class AppOutput(Strict):
    #: the output topics and their partitions; unset: ``["out"]`` and 6 (filled in by AppSpec),
    #: and left unset with a pyspark job's ``sink: parquet``, which writes no topic
    topics: list[str] | None = Field(None, min_length=1, max_length=8)
    partitions: int | None = Field(None, ge=1, le=64)
    #: how an output record names its input: value | key | {json: PATH} | {regex: RE} |
    #: {python: "mod:fn"} | none (with ``verify``: unset means none)
    match: str | dict[str, str] = "value"
    semantics: Literal["exactly-once", "at-least-once"] = "exactly-once"
    order: Literal["none", "per-partition"] = "none"
    #: the user's own verifier, for outputs that are not one record per input (aggregations):
    #: it replaces the record-by-record checks (harness.workloads.app_verify)
    verify: AppVerify | None = None
    #: app-stalled: an input first seen in the output more than this many seconds after its commit
    lag_bound_s: float | None = Field(60.0, gt=0, le=3600)
    #: after the load, how long the application may take to name every committed input
    catch_up_s: float = Field(180.0, gt=0, le=3600)
    #: ... ending early when no new output arrived for this long (above the consumer group's
    #: session timeout, 45 s by default: a rebalance waits that long for a paused member)
    quiet_s: float = Field(60.0, gt=0, le=600)

    @field_validator("match")
    @classmethod
    def _match(cls, v):
        check_spec(v)
        return v

    @model_validator(mode="after")
    def _verify_or_match(self) -> "AppOutput":
        if self.verify is None:
            if self.match == "none":
                raise ValueError("output.match: none names no input, so nothing could be checked: give "
                                 "output.verify (your own verifier) or a match")
            return self
        if "match" in self.model_fields_set and self.match != "none":
            raise ValueError("output.verify replaces the record-by-record match: remove output.match "
                             f"({self.match!r}), or remove output.verify")
        self.match = "none"
        return self


class AppSpec(GroupSpec):
    name: Literal["app"] = "app"
    input: AppInput = Field(default_factory=AppInput)
    app: AppProcess
    output: AppOutput = Field(default_factory=AppOutput)
    #: the harness's read_committed readers of input and output during the run
    consumers: int = Field(1, ge=0, le=8)
    consumer: dict[str, Setting] = Field(default_factory=dict, description="extra librdkafka settings of the readers")

    @model_validator(mode="after")
    def _topics_apart(self) -> "AppSpec":
        ps = self.app.pyspark
        o = self.output
        if ps is not None and ps.sink == "parquet":
            if o.verify is not None:
                raise ValueError("output.verify reads the output topics; a pyspark job with sink: parquet "
                                 "writes files: use sink: kafka, or remove output.verify")
            given = [f for f in ("topics", "partitions") if getattr(o, f) is not None]
            if given:
                raise ValueError(f"output.{given[0]}: a pyspark job with sink: parquet writes files, not a topic "
                                 "(its output is <run>/app/<i>/sink): remove output."
                                 + " and output.".join(given))
            return self
        if o.topics is None:
            o.topics = list(DEFAULT_OUTPUT_TOPICS)
        if o.partitions is None:
            o.partitions = DEFAULT_OUTPUT_PARTITIONS
        both = set(self.input.topics) & set(self.output.topics)
        if both:
            raise ValueError(f"topic {sorted(both)[0]} is both input and output: name them apart")
        return self
