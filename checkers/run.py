"""The run contract: the files of a run folder, the metadata beside its history, its verdict.

A run folder (``results/<scenario>/<run-id>/``, docs/architecture.md) holds what one run left:
``RunDir`` names every file in one place. ``meta.json`` is a ``RunMeta``: what the runner
writes and the checkers, ``eos-chaos check``/``report``, the pytest plugin and the report
read. ``verdict.json`` is a ``Verdict``: what ``checkers.check`` returns and the runner, the
CLI, the pytest plugin, the suite, the zoo, explore and the report read by attribute. Both
live here, in checkers, because the checkers write or read them and must not import harness;
the harness imports them.

``RunMeta`` has a format version (``format_version``, now 1). A meta.json written before
the version existed reads as version 1: its top-level liveness bounds
(``stalled_lso_bound_s``, ``realtime_lag_bound_s``, ``unavailable_bound_s``,
``unavailable_fs``) move into ``liveness``. Keys a workload, a backend or a client adds
(``toxiproxy``, ``nodes``, ``image``, ``spark``, ``java_client``, ...) are kept as they are
(pydantic ``extra="allow"``): the model names what the checkers and the report rely on.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

from .safe_load import read_json, read_yaml

FORMAT_VERSION = 1
#: Verdict.format_version now; a verdict.json without the field (written before it existed,
#: same keys) reads as version 1
VERDICT_FORMAT_VERSION = 1
#: the isolation level of the harness's consumers and drains when a scenario, a worker's
#: config or an op's meta names none. Not Kafka's default (``isolation.level`` defaults to
#: read_uncommitted, Kafka consumer configs): an EOS test reads what was committed unless it
#: asks otherwise. The one place this default is written.
IsolationLevel = Literal["read_committed", "read_uncommitted"]
DEFAULT_ISOLATION_LEVEL: IsolationLevel = "read_committed"
LIVENESS_NAMES = ("stalled-lso", "realtime-lag", "unavailable", "server-error", "epoch-exhausted")
#: what fail_on takes: the liveness reports, and unseen judged without a final drain
FAIL_ON_NAMES = (*LIVENESS_NAMES, "unseen")
#: the largest liveness bound (s): a week, the longest load a scenario may have
MAX_BOUND_S = 7 * 24 * 3600.0
_LIVENESS_KEYS = ("stalled_lso_bound_s", "realtime_lag_bound_s", "unavailable_bound_s",
                  "unavailable_fs")


class Liveness(BaseModel):
    """Bounds of the liveness reports (docs/anomalies.md "Liveness and performance"). A case is
    reported when a bound is exceeded; it fails the run only when its name is in
    ``fail_on``.

    * ``realtime_lag_bound_s``: a committed write first read by a consumer more than this
      many seconds after its commit is a realtime-lag case (None: lags are only measured,
      ``verdict.stats.realtime_lag_ms``).
    * ``unavailable_bound_s``: a window longer than this with no ok op of a kind in
      ``unavailable_fs`` is an unavailable case.
    * ``stalled_lso_bound_s``: a read_committed consumer that cannot advance on a key with
      records for longer than this is a stalled-lso case (a hanging transaction,
      KAFKA-17754 family; bound it above ``transaction.timeout.ms`` to tell a hang from a
      slow abort).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    realtime_lag_bound_s: float | None = Field(None, gt=0, le=MAX_BOUND_S)
    unavailable_bound_s: float = Field(10.0, gt=0, le=MAX_BOUND_S)
    unavailable_fs: list[Literal["txn", "send", "poll"]] = Field(
        default_factory=lambda: ["txn", "send"], min_length=1)
    stalled_lso_bound_s: float = Field(30.0, gt=0, le=MAX_BOUND_S)


def check_fail_on(fail_on: list[str], liveness: Liveness) -> None:
    """Raise ValueError (one line) when ``fail_on`` names something that is not a liveness
    report, or realtime-lag without a bound to exceed."""
    bad = [n for n in fail_on if n not in FAIL_ON_NAMES]
    if bad:
        raise ValueError(f"fail_on takes liveness names ({', '.join(FAIL_ON_NAMES)}), not "
                         f"{', '.join(bad)}: other anomalies fail a run unless listed in expected")
    if "realtime-lag" in fail_on and liveness.realtime_lag_bound_s is None:
        raise ValueError("fail_on: [realtime-lag] needs liveness.realtime_lag_bound_s (seconds)")


class RunMeta(BaseModel):
    """meta.json. Fields the checkers read: ``fail_on``, ``liveness``, ``pipeline``
    (checkers/finders/pipeline.py), ``sink`` (checkers/finders/sink.py). The others describe the run for the
    report: scenario, workload, seed, Kafka version, backend, the keys written, the final
    drain, phase timings (s), what teardown could not undo, broker log events and versions."""

    model_config = ConfigDict(extra="allow")

    format_version: int = FORMAT_VERSION
    scenario: str | None = None
    workload: str | None = None
    seed: int | None = None
    kafka_version: str | None = None
    backend: str | None = None
    fail_on: list[str] = Field(default_factory=list)
    liveness: Liveness = Field(default_factory=Liveness)
    keys: list[str] | None = None
    pipeline: dict | None = None
    sink: dict | None = None
    #: the app workload's input and output keys, semantics, order, lag bound (checkers/finders/app_end_to_end.py)
    app: dict | None = None
    #: the share workload's group: group_id, isolation_level, lock_duration_ms,
    #: delivery_count_limit, ack_order, keys (checkers/finders/share_group.py)
    share: dict | None = None
    drain: dict | None = None
    final_reads_complete: bool | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    teardown_problems: list[str] = Field(default_factory=list)
    broker_events: dict = Field(default_factory=dict)
    #: known defects' own log lines in the clients' logs (harness.run.client_events)
    client_events: dict = Field(default_factory=dict)
    versions: dict | None = None
    #: False in the meta.json the runner writes when the load starts (workload meta, keys,
    #: pipeline and sink mapping, liveness bounds, versions: a killed run keeps its contract);
    #: the runner's write at the end makes it True. A folder whose meta.json still says False
    #: lost its controller before the end (SIGKILL, a crash of the machine): its history is a
    #: prefix, with no heal, drain or final reads, and check_run judges it unknown.
    finished: bool = True

    @property
    def pipeline_spec(self) -> dict | None:
        """``pipeline`` (checkers/finders/pipeline.py) with its ``offsets`` (how the group's offsets
        are committed: "transaction", "consumer", "commit-before"), taken from the top-level
        ``pipeline_offsets`` of a meta.json written before ``pipeline`` held it."""
        if not self.pipeline or "offsets" in self.pipeline:
            return self.pipeline
        old = (self.model_extra or {}).get("pipeline_offsets")
        return dict(self.pipeline, offsets=old) if old else self.pipeline

    @model_validator(mode="before")
    @classmethod
    def _liveness_at_top_level(cls, data: Any) -> Any:
        # meta.json before format_version: the bounds were top-level keys
        if isinstance(data, dict) and any(k in data for k in _LIVENESS_KEYS):
            data = dict(data)
            live = dict(data.get("liveness") or {})
            for k in _LIVENESS_KEYS:
                if k in data:
                    v = data.pop(k)
                    if v is not None:
                        live.setdefault(k, v)
            data["liveness"] = live
        return data

    @classmethod
    def coerce(cls, meta: "RunMeta | dict | None") -> tuple["RunMeta", list[str]]:
        """(RunMeta, problems) from a RunMeta, a meta.json dict or None. Never raises: a
        field that does not validate is dropped and named in ``problems``."""
        if isinstance(meta, RunMeta):
            return meta, []
        if not meta:
            return cls(), []
        return _validate_dropping_bad_fields(cls, meta, "meta")

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)


def _validate_dropping_bad_fields(model: type[BaseModel], data: dict, name: str) -> tuple[Any, list[str]]:
    """(``model`` read from ``data``, problems). A top-level field that does not validate is
    dropped and named (``<name>.<field path>: <why>``); if the rest still does not validate,
    the model's defaults. Never raises (the run contract reads files any tool may have written)."""
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
        problems = [f"{name}.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    try:
        return model.model_validate({k: x for k, x in data.items() if k not in bad}), problems
    except ValidationError:
        return model(), problems


#: ``Verdict.valid``: True, False, or "unknown" (docs/anomalies.md "Verdicts")
Validity = StrictBool | Literal["unknown"]


class Verdict(BaseModel):
    """verdict.json: what ``checkers.check`` / ``check_run`` decide about one history.

    * ``valid``: False iff some found anomaly fails the run (``failing``); otherwise
      "unknown" when the history cannot be judged (``unknown_reasons``); otherwise True.
    * ``anomalies``: name -> at most ``max_examples`` cases (dicts with ``anomaly``,
      ``explanation``, op indices; docs/anomalies.md), only names found;
      ``anomaly_counts``: name -> every case found, not only the examples.
    * ``allowed`` (expected by the scenario), ``failing`` (the found names that make it
      invalid), ``impossible`` (names with a case Kafka cannot produce: failing even if
      expected), ``liveness_reports`` (found names that fail only through ``fail_on``),
      ``input_side`` (found names that are the app workload's input producers' cycles Kafka
      allows, reported apart and not failing: checkers/finders/app_end_to_end.py ``INPUT_SIDE``).
    * ``fail_on``, ``liveness_bounds``: echoes of the run's meta.json (``RunMeta``).
    * ``suspect``: cases found in a history that is not well-formed, listed but not judged.
    * ``stats``: counts of the history (events, ops, ops_by_f, log_lengths, realtime_lag_ms
      in ms, problems, notes; ``app`` for the app workload, checkers/finders/app_end_to_end.py;
      ``reprocessed_ranges`` when eos-duplicate was found, checkers/finders/reprocessing.py ``summary``).
    * ``versions``: meta.json's ``versions`` (what exactly was tested), when it has them.
    * ``known_bugs``: the known bugs whose signature the verdict shows (checkers/known_bugs/bugs.py
      ``match``): [{id, title, match: "looks-like" | "resembles", why, evidence, affected,
      fixed, link, doc}]; [] in files written before it. Only fits that rest on a name failing
      the run: a valid run's list is always [].
    * ``known_bugs_seen``: the catalogued signatures seen without being named (match "seen":
      every fit of a valid run, or a report beside a failure it does not explain), listed
      apart and never "looks like"; [] in files written before it.

    Extra keys are kept (``extra="allow"``): a later format's fields survive a round trip.
    Older files and suite rows are read with :meth:`coerce`.
    """

    model_config = ConfigDict(extra="allow")

    format_version: int = VERDICT_FORMAT_VERSION
    valid: Validity = "unknown"
    anomalies: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    anomaly_counts: dict[str, int] = Field(default_factory=dict)
    allowed: list[str] = Field(default_factory=list)
    failing: list[str] = Field(default_factory=list)
    impossible: list[str] = Field(default_factory=list)
    input_side: list[str] = Field(default_factory=list)
    fail_on: list[str] = Field(default_factory=list)
    liveness_bounds: dict[str, Any] = Field(default_factory=dict)
    liveness_reports: list[str] = Field(default_factory=list)
    unknown_reasons: list[str] = Field(default_factory=list)
    suspect: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    stats: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, Any] | None = None
    known_bugs: list[dict[str, Any]] = Field(default_factory=list)
    known_bugs_seen: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def status(self) -> Literal["valid", "invalid", "unknown"]:
        """"valid", "invalid" or "unknown": ``valid`` as a word."""
        return "valid" if self.valid is True else "invalid" if self.valid is False else "unknown"

    @property
    def label(self) -> str:
        """VALID / INVALID / UNKNOWN, as the terminal and the report print it."""
        return self.status.upper()

    @property
    def counts(self) -> dict[str, int]:
        """Cases per found name: ``anomaly_counts``, or the examples' lengths for a verdict
        that has no counts (a hand-written one)."""
        return dict(self.anomaly_counts) or {n: len(cs) for n, cs in self.anomalies.items()}

    @property
    def failing_names(self) -> set[str]:
        """The names that fail the run: ``failing``, or for a verdict without it (written by
        hand, or an old file) every found name not allowed."""
        if self.failing or self.valid is not False:
            return set(self.failing)
        return set(self.counts) - set(self.allowed) - set(self.input_side)

    def mark_unknown(self, *reasons: str) -> None:
        """Add reasons the history cannot be fully judged; a valid verdict becomes unknown
        (an invalid one stays invalid: what was found was found)."""
        self.unknown_reasons = [*self.unknown_reasons, *reasons]
        if reasons and self.valid is True:
            self.valid = "unknown"

    @classmethod
    def coerce(cls, data: "Verdict | dict[str, Any] | None") -> "Verdict":
        """A Verdict from a Verdict, a verdict.json dict of any format version, or any dict
        with the same keys (a suite row). Never raises: fields that do not validate are
        dropped and named in ``unknown_reasons``; None gives an unknown verdict."""
        if isinstance(data, Verdict):
            return data
        if not isinstance(data, dict):
            return cls(unknown_reasons=["no verdict (verdict.json missing or not an object)"])
        if "valid" in data and data["valid"] is None:  # a suite row of a run with no verdict
            data = {k: x for k, x in data.items() if k != "valid"}
        v, why = _validate_dropping_bad_fields(cls, data, "verdict")
        if why:
            v.unknown_reasons = [*v.unknown_reasons, *why]
            if v.valid is True:
                v.valid = "unknown"
        return v

    def to_json(self, indent: int | None = 1) -> str:
        """verdict.json's text (cases may hold values JSON lacks: written as strings)."""
        return json.dumps(self.model_dump(mode="json", fallback=str), indent=indent)


@dataclass(frozen=True)
class RunDir:
    """A run folder and the name of every file in it (one place for the literals)."""

    path: Path

    HISTORY = "history.jsonl"
    META = "meta.json"
    VERDICT = "verdict.json"
    SCENARIO = "scenario.yaml"
    SCHEDULE = "schedule.json"
    REPORT = "report.html"
    LOGS = "logs"
    NODES = "nodes"

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def history(self) -> Path:
        return self.path / self.HISTORY

    @property
    def meta(self) -> Path:
        return self.path / self.META

    @property
    def verdict(self) -> Path:
        return self.path / self.VERDICT

    @property
    def scenario(self) -> Path:
        return self.path / self.SCENARIO

    @property
    def schedule(self) -> Path:
        return self.path / self.SCHEDULE

    @property
    def report(self) -> Path:
        return self.path / self.REPORT

    @property
    def logs(self) -> Path:
        return self.path / self.LOGS

    @property
    def nodes(self) -> Path:
        return self.path / self.NODES

    def read_meta(self) -> tuple[RunMeta, list[str]]:
        """(RunMeta, problems): an absent meta.json gives the defaults (a history from another
        tool has none); an unreadable one (not a file, not JSON, beyond the limits of
        checkers.safe_load) gives the defaults and says why in ``problems``."""
        if not self.meta.exists():
            return RunMeta(), []
        try:
            data = read_json(self.meta)
        except (OSError, ValueError, RecursionError) as exc:
            return RunMeta(), [f"{self.meta} is unreadable ({type(exc).__name__}: {_short(exc)}): "
                               "defaults used"]
        if not isinstance(data, dict):
            return RunMeta(), [f"{self.meta} is not a JSON object: defaults used"]
        try:
            return RunMeta.coerce(data)
        except RecursionError:  # read_json bounds the depth; never a traceback
            return RunMeta(), [f"{self.meta} is nested too deep: defaults used"]

    def write_meta(self, meta: "RunMeta | dict") -> None:
        """Write meta.json atomically (a temporary file renamed over it): a controller killed
        while writing leaves the earlier meta.json whole, never a truncated one. A dict is
        written as it is (the runner's fallback when a field does not validate)."""
        _write_atomically(self.meta, meta.to_json() if isinstance(meta, RunMeta)
                          else json.dumps(meta, indent=1, default=str))

    def expected(self) -> list[str]:
        """The ``expected`` list of scenario.yaml as run ([] when absent or unreadable)."""
        return self.read_expected()[0]

    def read_expected(self) -> tuple[list[str], list[str]]:
        """(the ``expected`` list of scenario.yaml as run, problems): [] and no problem when
        there is no scenario.yaml (a history from another tool); [] and the reason when it
        cannot be read (not UTF-8, not YAML, beyond the limits of checkers.safe_load, not a
        mapping, ``expected`` not a list) or names anomalies outside the catalogue."""
        import yaml

        from .catalogue import describe_unknown

        if not self.scenario.exists():
            return [], []
        why = f"{self.scenario} is unreadable"
        try:
            data = read_yaml(self.scenario)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            return [], [f"{why} ({type(exc).__name__}: {_short(exc)}): no anomaly is taken as expected"]
        data = {} if data is None else data
        exp = data.get("expected", []) if isinstance(data, dict) else None
        if not isinstance(exp, list) or not all(isinstance(x, str) for x in exp):
            return [], [f"{why} (not a scenario mapping with expected: [anomaly, ...]): no anomaly is "
                        "taken as expected"]
        bad = describe_unknown(exp, f"{self.scenario} expected")
        return list(exp), [bad] if bad else []

    def read_verdict(self) -> Verdict | None:
        """verdict.json as a Verdict, or None when it is missing or unreadable (a killed
        controller, not JSON, not an object)."""
        try:
            v = read_json(self.verdict)
        except (OSError, ValueError, RecursionError):
            return None
        return Verdict.coerce(v) if isinstance(v, dict) else None

    def write_verdict(self, verdict: Verdict) -> None:
        """Write verdict.json atomically (a temporary file renamed over it)."""
        _write_atomically(self.verdict, verdict.to_json())


def _write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through ``path``.tmp, fsynced, then renamed over it: a controller
    killed while writing leaves the earlier file whole, never a truncated one."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _short(exc: BaseException, limit: int = 200) -> str:
    """An exception's message on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
