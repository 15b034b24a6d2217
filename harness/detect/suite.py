"""Suites: a matrix of scenarios x seeds x Kafka versions, run one after another, resumable.

A suite file is YAML with a top-level ``suite:`` key, which tells it apart from a scenario
file in the same folder (``is_suite_file``)::

    suite: nightly                      # the suite's name
    description: every scenario, three seeds, both Kafka lines
    scenarios: ["*.yaml"]               # paths or globs, relative to the suite file; suite
                                        # files are never matched. An entry may also be
                                        # {path: smoke.yaml, seeds: [...], kafka_versions: [...], duration: 120}
    seeds: [1, 2, 3]                    # or a count: 3 means [1, 2, 3]
    kafka_versions: [4.3.1, 3.9.1]
    backends: [netns, docker]           # optional: one cell per backend (docs/backends.md);
                                        # omitted: each scenario's own cluster.backend
    group_protocols: [classic, consumer] # optional: one cell per consumer group protocol
                                        # (or protocol/assignor, e.g. consumer/range) of each
                                        # scenario whose workload has a group (eos-pipeline,
                                        # app; harness.workloads.group); others run once
    duration: 180                       # seconds of load per run; omitted: each scenario's own

A *cell* of the matrix is one run: a scenario with its seed, Kafka version and duration
merged in. Cells run seed-major (every scenario and version at the first seed, then the
next seed), so an interrupted suite has covered every scenario once as early as possible.

The suite folder (default ``<results>/suites/<suite>/``) holds::

    runs.jsonl     one record per run that ended (finished, errored or interrupted); append-only,
                   the last record of a cell wins
    index.html     one row per cell: scenario, seed, version, verdict, anomaly counts, duration, report link
    junit.xml      one testcase per cell (failure = invalid, error = unknown or error, skipped = not run)
    summary.json   totals, the exit code and one row per cell

Paths inside these files are relative to the suite folder, so the folder and its run folders
can be moved together (a CI artifact of the whole ``results/``).

Resume: a cell is not run again when its last record says valid, invalid or unknown, its
scenario fingerprint (the merged scenario as run, description aside) is unchanged and its run
folder still holds verdict.json. Errored and interrupted cells run again.
"""
from __future__ import annotations

import glob as globlib
import hashlib
import json
import os
import socket
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal

import yaml
from pydantic import Field, field_validator

from checkers.known_bugs import describe as known_bug_phrase
from checkers.run import Verdict
from checkers.safe_load import file_problem, read_yaml
from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, SECOND_KAFKA_VERSION
from harness.run.scenario import (Scenario, ScenarioError, kafka_version, load_scenario, read_yaml_mapping,
                              validate_model, with_backend, with_group_protocol, with_overrides)
from harness.workloads.base import MAX_INT64, MAX_LOAD_S, Strict
from harness.workloads.group import describe as describe_group, id_suffix as group_id_suffix

#: statuses of a cell. The first three are verdicts (``valid`` True / False / "unknown").
VALID, INVALID, UNKNOWN, ERROR, INTERRUPTED, NOT_RUN = (
    "valid", "invalid", "unknown", "error", "interrupted", "not-run")
STATUSES = (VALID, INVALID, UNKNOWN, ERROR, INTERRUPTED, NOT_RUN)
FINISHED = frozenset({VALID, INVALID, UNKNOWN})
#: seconds a run takes beyond its load duration (cluster start, heal, drain, check, report),
#: before any run of this suite has been measured; measured: 39 s for smoke on 2 cores.
DEFAULT_OVERHEAD_S = 40.0
RECORDS = "runs.jsonl"


class SuiteError(ValueError):
    """The suite file is missing, not YAML, not a suite, or names scenarios that do not load."""


#: a run's seed (harness.run.scenario.Scenario.seed), and a count of seeds 1..N
Seed = Annotated[int, Field(ge=0, le=MAX_INT64)]
SeedCount = Annotated[int, Field(le=10_000)]


def _versions(v: list[str] | None) -> list[str] | None:
    for x in v or []:
        kafka_version(x)
    return v


class SuiteEntry(Strict):
    """One ``scenarios:`` entry; unset fields fall back to the suite's."""

    path: str
    seeds: list[Seed] | SeedCount | None = None
    kafka_versions: list[str] | None = None
    duration: float | None = Field(None, gt=0, le=MAX_LOAD_S)

    @field_validator("kafka_versions")
    @classmethod
    def _versions(cls, v: list[str] | None) -> list[str] | None:
        return _versions(v)


class Suite(Strict):
    suite: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    scenarios: list[str | SuiteEntry] = Field(min_length=1)
    seeds: list[Seed] | SeedCount = Field(default_factory=lambda: [1])
    kafka_versions: list[str] = Field(default_factory=lambda: [DEFAULT_KAFKA_VERSION, SECOND_KAFKA_VERSION],
                                      min_length=1)
    duration: float | None = Field(None, gt=0, le=MAX_LOAD_S, description="seconds of load per run")

    @field_validator("kafka_versions")
    @classmethod
    def _versions(cls, v: list[str] | None) -> list[str] | None:
        return _versions(v)
    #: cluster backends (netns, docker, external): one cell per backend; omitted, each
    #: scenario's own cluster.backend
    backends: list[Literal["netns", "docker", "external"]] | None = Field(None, min_length=1)

    #: consumer group protocols (harness.workloads.group): one cell per value for a workload with
    #: a group; omitted, each scenario's own
    group_protocols: list[str] | None = Field(None, min_length=1)

    @field_validator("group_protocols")
    @classmethod
    def _protocols(cls, v: list[str] | None) -> list[str] | None:
        from harness.workloads.group import check_assignor

        for x in v or []:
            protocol, _, assignor = x.partition("/")
            check_assignor(protocol, assignor or None)
        return v

    @field_validator("seeds")
    @classmethod
    def _some_seeds(cls, v):
        if (isinstance(v, int) and v < 1) or (isinstance(v, list) and not v):
            raise ValueError("give at least one seed (a list, or a count >= 1)")
        return v


def _seed_list(seeds: list[int] | int) -> list[int]:
    return list(range(1, seeds + 1)) if isinstance(seeds, int) else list(seeds)


def _read_yaml(path: Path) -> Any:
    """The file's YAML (checkers.safe_load's limits), or None when it cannot be read (not a
    regular file, not UTF-8, not YAML, beyond a limit): loading it as a scenario says why."""
    if file_problem(path):
        return None
    try:
        return read_yaml(path)
    except (OSError, ValueError, yaml.YAMLError):
        return None


def is_suite_file(path: str | Path) -> bool:
    """True when ``path`` is a YAML mapping with a top-level ``suite`` key (never raises)."""
    data = _read_yaml(Path(path))
    return isinstance(data, dict) and "suite" in data


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file. Raises SuiteError saying what to fix."""
    p, data = read_yaml_mapping(path, "suite", SuiteError)
    if not isinstance(data, dict) or "suite" not in data:
        raise SuiteError(f"{p} is not a suite file (no top-level `suite:` key); "
                         "to run one scenario use `eos-chaos run`")
    if "zoo" in data:  # harness.detect.zoo.load_selection
        raise SuiteError(f"{p} is a zoo selection (release entries with their controls): run it with "
                         f"`eos-chaos zoo --zoo {p}`")
    return validate_model(Suite, data, p, "suite", SuiteError)


# ---------------------------------------------------------------- the matrix

@dataclass
class Cell:
    """One run of the matrix. ``scenario`` has seed, duration and Kafka version merged in."""

    scenario: Scenario
    source: str  # the scenario file, as a path relative to the working directory when possible

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def seed(self) -> int:
        return int(self.scenario.seed)

    @property
    def kafka_version(self) -> str:
        return self.scenario.cluster.kafka_version

    @property
    def duration(self) -> float:
        return float(self.scenario.duration)

    @property
    def backend(self) -> str:
        return self.scenario.cluster.backend

    @property
    def group_protocol(self) -> str | None:
        """``consumer (uniform)``, ... for a workload with a consumer group, else None."""
        w = self.scenario.workload
        return describe_group(getattr(w, "group_protocol", None), getattr(w, "assignor", None))

    @property
    def group_protocol_arg(self) -> str | None:
        """``eos-chaos run --group-protocol``'s value that replays this cell (``consumer``,
        ``classic/range``, ...), None for a workload without a group."""
        w = self.scenario.workload
        protocol, assignor = getattr(w, "group_protocol", None), getattr(w, "assignor", None)
        return None if protocol is None else protocol + (f"/{assignor}" if assignor else "")

    @property
    def id(self) -> str:
        """``<scenario>/s<seed>/kafka-<version>``, then ``/<backend>`` unless netns: unique
        within a suite (netns cells keep the ids they had before backends existed)."""
        base = f"{self.name}/s{self.seed}/kafka-{self.kafka_version}"
        base = base if self.backend == "netns" else f"{base}/{self.backend}"
        return base + group_id_suffix(self.scenario.workload)  # "" for the classic default

    @property
    def title(self) -> str:
        on = "" if self.backend == "netns" else f", {self.backend}"
        if group_id_suffix(self.scenario.workload):
            on += f", group protocol {describe_group(self.scenario.workload.group_protocol, self.scenario.workload.assignor)}"
        return f"{self.name} (seed {self.seed}, Kafka {self.kafka_version}{on}, {self.duration:g} s)"

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.scenario)


def fingerprint(scn: Scenario) -> str:
    """12 hex digits of sha256 over the scenario as run (``Scenario.identity``, JSON, sorted keys)."""
    return hashlib.sha256(json.dumps(scn.identity(), sort_keys=True).encode()).hexdigest()[:12]


def _display_path(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p.resolve())


def _entry_files(entry: SuiteEntry, base: Path) -> list[Path]:
    pattern = entry.path if os.path.isabs(entry.path) else str(base / entry.path)
    if globlib.has_magic(entry.path):
        found = sorted(Path(f) for f in globlib.glob(pattern) if f.endswith((".yaml", ".yml")))
        return [f for f in found if not is_suite_file(f)]
    p = Path(pattern)
    if not p.is_file():
        raise SuiteError(f"scenario file {entry.path} (from {base}) does not exist")
    if is_suite_file(p):
        raise SuiteError(f"{entry.path} is a suite, not a scenario; suites do not nest")
    return [p]


def expand(suite: Suite, base_dir: str | Path, *, seeds: Iterable[int] | None = None,
           kafka_versions: Iterable[str] | None = None, duration: float | None = None,
           backends: Iterable[str] | None = None) -> list[Cell]:
    """The suite's cells in run order (seed-major, then scenario entry, then version, then
    backend).

    ``base_dir`` is the suite file's folder (scenario paths are relative to it). ``seeds``,
    ``kafka_versions``, ``duration`` (seconds) and ``backends``, when given, replace the
    suite's and the entries' own. A scenario that cannot run on a backend of the suite
    (external without cluster.external) is a SuiteError. When a file is named by several entries (a glob and an explicit entry), the
    last entry wins. Raises SuiteError for a missing or invalid scenario file, or for two files
    with the same scenario name.
    """
    base = Path(base_dir)
    per_file: dict[Path, SuiteEntry] = {}
    for raw in suite.scenarios:
        entry = SuiteEntry(path=raw) if isinstance(raw, str) else raw
        files = _entry_files(entry, base)
        if not files:
            raise SuiteError(f"scenario pattern {entry.path!r} matches no scenario file in {base}")
        for f in files:
            per_file.pop(f.resolve(), None)  # re-insert: the last entry wins and sets the order
            per_file[f.resolve()] = entry
    keyed: list[tuple[tuple[int, int, int, int, int], Cell]] = []
    backend_list = list(backends) if backends else suite.backends
    names: dict[str, Path] = {}
    for e_i, (path, entry) in enumerate(per_file.items()):
        try:
            scn = load_scenario(path)
        except ScenarioError as exc:
            raise SuiteError(str(exc)) from exc
        if scn.name in names:
            raise SuiteError(f"{names[scn.name]} and {path} both name scenario {scn.name!r}: "
                             "run ids and results folders would collide")
        names[scn.name] = path
        cell_seeds = list(seeds) if seeds else _seed_list(entry.seeds if entry.seeds is not None else suite.seeds)
        versions = list(kafka_versions) if kafka_versions else (entry.kafka_versions or suite.kafka_versions)
        dur = duration or entry.duration or suite.duration or scn.duration
        for s_i, seed in enumerate(cell_seeds):
            for v_i, version in enumerate(dict.fromkeys(versions)):
                for b_i, backend in enumerate(dict.fromkeys(backend_list or [scn.cluster.backend])):
                    try:
                        on = with_backend(scn, backend)
                    except ScenarioError as exc:
                        raise SuiteError(str(exc)) from exc
                    try:  # validated like the file: --duration inf or a bad version is one line
                        merged = with_overrides(on, seed=seed, duration=float(dur), kafka_version=version)
                    except ScenarioError as exc:
                        raise SuiteError(str(exc)) from None
                    for g_i, protocol in enumerate(dict.fromkeys(suite.group_protocols or [None])):
                        cell = merged if protocol is None else _with_protocol(merged, protocol, first=g_i == 0)
                        if cell is not None:
                            keyed.append(((s_i, e_i, v_i, b_i, g_i), Cell(cell, _display_path(path))))
    cells = [c for _, c in sorted(keyed, key=lambda kc: kc[0])]
    seen: set[str] = set()
    unique = []
    for c in cells:  # a seed listed twice is one run
        if c.id not in seen:
            seen.add(c.id)
            unique.append(c)
    return unique


def _with_protocol(scn: Scenario, protocol: str, first: bool) -> Scenario | None:
    """``scn`` with the suite's group protocol value (harness.workloads.group
    ``with_group_protocol``); for a workload without a group ``scn`` itself at the ``first``
    value and None at the others (such a scenario runs once). SuiteError (one line) when the scenario
    cannot take it (e.g. consumer on a release older than 4.0.0)."""
    if getattr(scn.workload, "group_protocol", None) is None:
        return scn if first else None
    try:
        return with_group_protocol(scn, protocol)
    except ScenarioError as exc:
        raise SuiteError(str(exc)) from None


# ---------------------------------------------------------------- records and resume

def read_records(path: str | Path) -> dict[str, dict]:
    """The last record per cell id from a runs.jsonl (missing file: empty). Lines that are not
    JSON objects with an ``id`` (a write cut short by a crash) are skipped."""
    out: dict[str, dict] = {}
    p = Path(path)
    if not p.is_file():
        return out
    for line in p.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("id"), str):
            out[rec["id"]] = rec
    return out


def append_record(path: str | Path, record: dict) -> None:
    """Append one record as a JSON line and fsync it, so a crash right after keeps it."""
    with open(path, "a") as f:
        f.write(json.dumps(record, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def current_record(cell: Cell, records: dict[str, dict]) -> dict | None:
    """The cell's record if it is for this very scenario (same fingerprint), else None."""
    rec = records.get(cell.id)
    return rec if rec is not None and rec.get("fingerprint") == cell.fingerprint else None


def is_finished(cell: Cell, records: dict[str, dict], suite_dir: str | Path) -> bool:
    """True when the cell need not run again: a verdict (valid/invalid/unknown) for the same
    fingerprint, with verdict.json still in its run folder."""
    rec = current_record(cell, records)
    if rec is None or rec.get("status") not in FINISHED or not rec.get("run_dir"):
        return False
    return (Path(suite_dir) / rec["run_dir"] / "verdict.json").is_file()


def pending(cells: list[Cell], records: dict[str, dict], suite_dir: str | Path) -> list[Cell]:
    """The cells still to run, in run order."""
    return [c for c in cells if not is_finished(c, records, suite_dir)]


def _rel(path: str | Path | None, suite_dir: Path) -> str | None:
    if path is None:
        return None
    return Path(os.path.relpath(Path(path).resolve(), suite_dir.resolve())).as_posix()


def _explain(example: Any, width: int = 500) -> str:
    """An example's ``explanation``, else its compact JSON; cut to ``width`` characters."""
    text = example.get("explanation") if isinstance(example, dict) else None
    text = text or json.dumps(example, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def first_examples(verdict: Verdict, width: int = 300) -> dict[str, str]:
    """Anomaly name -> its first example's explanation (or compact JSON), cut to ``width`` chars."""
    return {name: _explain(exs[0], width) for name, exs in verdict.anomalies.items() if exs}


def status_of(verdict: Verdict) -> str:
    return {True: VALID, False: INVALID}.get(verdict.valid, UNKNOWN)


def make_record(cell: Cell, suite_dir: str | Path, *, status: str, started: float, wall_s: float,
                verdict: Verdict | dict | None = None, run_dir: Path | None = None, report: Path | None = None,
                problems: list[str] | None = None, error: str | None = None, waited_s: float = 0.0) -> dict:
    """The runs.jsonl record of one run. ``started`` is a Unix time (s); ``wall_s`` the seconds
    the run took once it had the cluster lock; ``waited_s`` the seconds it waited for the lock."""
    suite_dir = Path(suite_dir)
    v = Verdict.coerce(verdict) if verdict is not None else Verdict()
    return {
        "id": cell.id, "fingerprint": cell.fingerprint, "scenario": cell.name, "source": cell.source,
        "seed": cell.seed, "kafka_version": cell.kafka_version, "duration_s": cell.duration,
        "group_protocol": cell.group_protocol, "group_protocol_arg": cell.group_protocol_arg,
        "status": status, "valid": v.valid if verdict is not None else None,
        "anomaly_counts": v.anomaly_counts,
        "failing": v.failing,
        "allowed": v.allowed,
        "impossible": v.impossible,
        "known_bugs": v.known_bugs,  # checkers/known_bugs.py: what the failure looks like
        "first_examples": first_examples(v),
        "unknown_reasons": v.unknown_reasons,
        "problems": problems or [], "error": error,
        "run_dir": _rel(run_dir, suite_dir), "report": _rel(report, suite_dir),
        "started_at": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 1), "waited_s": round(waited_s, 1),
        "versions": v.versions or {},  # harness.run.versions: what exactly was tested
    }


def describe_verdict(title: str, verdict: Verdict | dict, *, report: str | Path | None = None,
                     run_dir: str | Path | None = None, problems: Iterable[str] = (),
                     max_examples: int = 1) -> str:
    """A failure message: title and verdict, each anomaly with its count and first example(s),
    unknown reasons, notes, and where the report is. Used by the JUnit output and the pytest
    plugin. ``verdict``: a Verdict, or a runs.jsonl record (its ``first_examples`` stand in for
    the examples it does not keep)."""
    v = Verdict.coerce(verdict)
    lines = [f"{title}: {v.label}"]
    examples = v.anomalies
    firsts = (v.model_extra or {}).get("first_examples") or {}
    counts = v.counts
    allowed = set(v.allowed)
    failing = v.failing_names
    for name in sorted(counts, key=lambda n: (n not in failing, n)):
        note = "" if name in failing else (" (allowed)" if name in allowed else " (not failing)")
        lines.append(f"  {name}: {counts[name]} case(s){note}")
        texts = [_explain(ex) for ex in examples.get(name, [])[:max_examples]]
        for text in texts or ([firsts[name]] if name in firsts else []):
            lines.append(f"    e.g. {text}")
    lines += [f"  unknown: {r}" for r in v.unknown_reasons]
    lines += [f"  known bug: {known_bug_phrase(m)}: {m.get('why')}" for m in v.known_bugs]
    lines += [f"  note: {p}" for p in problems]
    if run_dir:
        lines.append(f"run folder: {run_dir}")
    lines.append(f"report: {report if report else '(none)'}")
    return "\n".join(lines)


# ---------------------------------------------------------------- summary

def rows(cells: list[Cell], records: dict[str, dict]) -> list[dict]:
    """One row per cell in run order: its current record, or a not-run row."""
    out = []
    for c in cells:
        rec = current_record(c, records)
        if rec is None:
            rec = {"id": c.id, "fingerprint": c.fingerprint, "scenario": c.name, "source": c.source,
                   "seed": c.seed, "kafka_version": c.kafka_version, "duration_s": c.duration,
                   "group_protocol": c.group_protocol, "group_protocol_arg": c.group_protocol_arg,
                   "status": NOT_RUN, "valid": None, "anomaly_counts": {}, "failing": [], "allowed": [],
                   "first_examples": {}, "unknown_reasons": [], "problems": [], "error": None,
                   "run_dir": None, "report": None, "started_at": None, "wall_s": None, "waited_s": None}
        out.append(rec)
    return out


def exit_code(statuses: Iterable[str]) -> int:
    """1 when any run is invalid; else 2 when any is unknown, errored, interrupted or not run; else 0."""
    s = set(statuses)
    if INVALID in s:
        return 1
    return 2 if s - {VALID} else 0


def summarize(name: str, source: str | None, cells: list[Cell], records: dict[str, dict]) -> dict:
    """The summary.json document: ``{suite, source, generated_at, host, complete, exit_code,
    totals: {runs, valid, invalid, unknown, error, interrupted, not-run}, anomaly_counts:
    {name: cases over all runs}, wall_s, runs: [row, ...]}``."""
    rs = rows(cells, records)
    totals = {"runs": len(rs), **{s: sum(r["status"] == s for r in rs) for s in STATUSES}}
    anomalies: dict[str, int] = {}
    for r in rs:
        for k, n in (r.get("anomaly_counts") or {}).items():
            anomalies[k] = anomalies.get(k, 0) + n
    return {
        "suite": name, "source": source,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "complete": all(r["status"] in FINISHED for r in rs),
        "exit_code": exit_code(r["status"] for r in rs),
        "totals": totals, "anomaly_counts": dict(sorted(anomalies.items())),
        "wall_s": round(sum(r.get("wall_s") or 0 for r in rs), 1),
        "runs": rs,
    }


def fmt_s(s: float | None) -> str:
    """Seconds as 42s, 3m05s or 1h02m; None as an empty string."""
    if s is None:
        return ""
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")


# ---------------------------------------------------------------- time left

def overhead_s(records: Iterable[dict]) -> float:
    """Median seconds a run took beyond its load duration, over records of finished runs;
    DEFAULT_OVERHEAD_S when none has been measured."""
    extra = [r["wall_s"] - r["duration_s"] for r in records
             if r.get("status") in FINISHED and r.get("wall_s") is not None and r.get("duration_s") is not None]
    return max(0.0, statistics.median(extra)) if extra else DEFAULT_OVERHEAD_S


def estimate_left(todo: list[Cell], overhead: float, current_elapsed: float | None = None) -> float:
    """Seconds left: each cell in ``todo`` takes its duration plus ``overhead``; the first one is
    the run under way when ``current_elapsed`` (seconds it has run) is given."""
    left = sum(c.duration + overhead for c in todo)
    if todo and current_elapsed is not None:
        left -= min(current_elapsed, todo[0].duration + overhead)
    return max(0.0, left)


# ---------------------------------------------------------------- the loop

class SuiteListener:
    """What ``run_suite`` tells its user interface; every method is optional."""

    def begin(self, cells: list[Cell], todo: list[Cell], overhead: float, suite_dir: Path) -> None: ...
    def run_started(self, cell: Cell, progress: Any) -> None: ...
    def run_finished(self, cell: Cell, record: dict, overhead: float) -> None: ...
    def end(self, summary: dict, paths: dict[str, Path]) -> None: ...


def run_dir_since(results_root: str | Path, cell: Cell, started: float) -> Path | None:
    """The newest run folder of ``cell`` begun at or after Unix time ``started`` (s), found by
    its name (``<UTC start>-s<seed>``, harness.run.runner): where an errored run left its logs."""
    stamp = datetime.fromtimestamp(int(started), timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = Path(results_root) / cell.name
    found = sorted(p for p in folder.glob(f"*-s{cell.seed}") if p.is_dir() and p.name >= stamp) \
        if folder.is_dir() else []
    return found[-1] if found else None


def clocked_progress():
    """A harness.run.runner.Progress that notes ``working_since`` (time.monotonic()) when the run
    got the machine's cluster lock, i.e. when its phase first left "starting"/"waiting"; so a
    run's time excludes waiting for other runs."""
    from harness.run.runner import Progress

    class ClockedProgress(Progress):
        def __setattr__(self, name, value):
            if name == "phase" and value not in ("starting", "waiting") and "working_since" not in self.__dict__:
                self.__dict__["working_since"] = time.monotonic()
            super().__setattr__(name, value)

    return ClockedProgress()


def default_suite_dir(results_root: str | Path, name: str) -> Path:
    return Path(results_root) / "suites" / name
