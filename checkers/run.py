"""The run contract: the files of a run folder and the metadata beside its history.

A run folder (``results/<scenario>/<run-id>/``, docs/architecture.md) holds what one run left:
``RunDir`` names every file in one place. ``meta.json`` is a ``RunMeta``: what the runner
writes and the checkers, ``eos-chaos check``/``report``, the pytest plugin and the report
read. It lives here, in checkers, because the checkers read it and must not import harness;
the harness imports it.

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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .safe_load import read_json, read_yaml

FORMAT_VERSION = 1
LIVENESS_NAMES = ("stalled-lso", "realtime-lag", "unavailable")
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
    (checkers/pipeline.py), ``sink`` (checkers/sink.py). The others describe the run for the
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
    #: the app workload's input and output keys, semantics, order, lag bound (checkers/app_end_to_end.py)
    app: dict | None = None
    drain: dict | None = None
    final_reads_complete: bool | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    teardown_problems: list[str] = Field(default_factory=list)
    broker_events: dict = Field(default_factory=dict)
    versions: dict | None = None
    #: False in the meta.json the runner writes when the load starts (workload meta, keys,
    #: pipeline and sink mapping, liveness bounds, versions: a killed run keeps its contract);
    #: the runner's write at the end makes it True. A folder whose meta.json still says False
    #: lost its controller before the end (SIGKILL, a crash of the machine): its history is a
    #: prefix, with no heal, drain or final reads, and check_run judges it unknown.
    finished: bool = True

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
        try:
            return cls.model_validate(meta), []
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            problems = [f"meta.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            try:
                return cls.model_validate({k: v for k, v in meta.items() if k not in bad}), problems
            except ValidationError:
                return cls(), problems

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)


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
        text = meta.to_json() if isinstance(meta, RunMeta) else json.dumps(meta, indent=1, default=str)
        tmp = self.meta.with_name(self.META + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.meta)

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

    def read_verdict(self) -> dict | None:
        """verdict.json, or None when it is missing or unreadable (a killed controller)."""
        try:
            v = read_json(self.verdict)
        except (OSError, ValueError):
            return None
        return v if isinstance(v, dict) else None


def _short(exc: BaseException, limit: int = 200) -> str:
    """An exception's message on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
