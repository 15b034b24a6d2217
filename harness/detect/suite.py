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

The records, the summary and the time left are harness.detect.suite_records (re-exported here).
"""
from __future__ import annotations

import glob as globlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal

import yaml
from pydantic import Field, field_validator

from checkers.safe_load import file_problem, read_yaml
from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, SECOND_KAFKA_VERSION
from harness.detect.suite_records import (  # noqa: F401 - re-exported: a suite's records and summary
    DEFAULT_OVERHEAD_S, ERROR, FINISHED, INTERRUPTED, INVALID, NOT_RUN, RECORDS, STATUSES, UNKNOWN, VALID,
    _explain, _rel, append_record, current_record, describe_verdict, estimate_left, exit_code, first_examples,
    fmt_s, is_finished, make_record, overhead_s, pending, read_records, rows, status_of, summarize)
from harness.run.scenario import (Scenario, ScenarioError, kafka_version, load_scenario, read_yaml_mapping,
                              validate_model, with_backend, with_group_protocol, with_overrides)
from harness.workloads.base import MAX_INT64, MAX_LOAD_S, Strict
from harness.workloads.group import describe as describe_group, id_suffix as group_id_suffix


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


class ZooPart(Strict):
    """One ``zoos:`` entry of a suite (a tier): the zoo folder or selection file (relative to the
    suite file; harness.detect.zoo), ``runs`` per entry (seeds from the suite's first seed on),
    ``only`` the entries to take (default: the selection's, or every reproduced entry)."""

    path: str
    runs: int = Field(1, ge=1, le=100)
    only: list[str] | None = None


class Budget(Strict):
    """A tier's budget: at most ``runners`` machines of 2 cores, each shard at most ``wall_min``
    minutes of wall time (``eos-chaos suite --dry-run --shards N`` checks the plan against it)."""

    runners: int = Field(ge=1, le=1000)
    wall_min: float = Field(gt=0, le=24 * 60)


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

    #: zoo parts (a tier, harness.detect.tiers): zoo folders or selection files, relative to the
    #: suite file, each entry run ``runs`` times; their cells join the matrix
    zoos: list[ZooPart] = Field(default_factory=list)
    #: what the suite may cost: ``--dry-run --shards N`` compares its plan with it
    budget: Budget | None = None

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
    #: scenario (must come out valid), or a zoo cell of a tier: mutant (must fail with one of
    #: ``must_find``) or control (must come out valid); ``entry`` is its zoo entry's name
    kind: str = "scenario"
    must_find: tuple[str, ...] = ()
    entry: str | None = None
    #: a zoo cell's bar (harness.detect.nights): the rate below which its entry goes red
    bar: float | None = None

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
