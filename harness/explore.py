"""Search fault schedules with Hypothesis and shrink a failing one (``eos-chaos explore``).

A *schedule* is data: ``{"duration": s, "faults": [{"at": s, "duration": s, "fault": {fault
spec}, "value": {target}}, ...]}``, drawn by ``schedules()`` from a scenario's own faults
(which fault, its target: a node, a client, a grudge or a role; when it begins; how long it
lasts) and a load time. ``to_scenario`` turns one into a runnable scenario whose
``nemesis.schedule`` (harness.scenario.ScheduledFault) replaces the seeded draw.

``Explorer.explore`` calls ``hypothesis.find`` with a predicate that runs the scenario on the
real cluster (``runner``: harness.runner.run_scenario, or a fake in unit tests):

* searching, one run per example; the first run whose verdict is invalid fixes the
  *original kinds* (its failing anomalies) and Hypothesis starts shrinking (fewer faults, a
  shorter load, the first-listed fault kinds and nodes, earlier and shorter faults: what
  Hypothesis's shrinker makes of lists and integers drawn from the low end);
* shrinking, a candidate counts as failing when at least one of ``k`` runs is invalid with
  an anomaly of an original kind (a real cluster is not deterministic);
* then the smallest failing schedule is replayed ``k`` fresh times.

The search ends when the budget (seconds) is spent or ``stop`` is set (Ctrl-C); shrinking
then ends at once with the best schedule so far, which is still replayed (``replay_stop``,
a second Ctrl-C in the CLI, ends the replays too). Hypothesis's example database
(``DirectoryBasedExampleDatabase`` in ``db_dir``, by default ``<out_dir>/hypothesis-db``; the
CLI keeps one per scenario name, ``<results>/explore/<name>/hypothesis-db``; keyed by the
scenario's fingerprint) keeps the failing schedule, so a later explore of the same scenario replays it
first. Hypothesis stops shrinking after ``MAX_SHRINKING_SECONDS`` (300 s), meant for
millisecond tests; explore raises it to the budget while it runs, since each step here is a
cluster run.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from harness.scenario import Scenario
from nemesis.registry import FAULTS, SPEC_KEYS, choose_client_target, choose_node_target

#: shortest load an example may have (s): the workers need a few seconds to start
MIN_LOAD_S = 10


class ExploreError(ValueError):
    """The scenario cannot be explored (no faults, a load too short); says what to fix."""


# ---------------------------------------------------------------- schedules as data

def client_names(scn: Scenario) -> list[str]:
    """The client worker names a run of ``scn`` starts (readers, then writers), from its
    workload without a cluster; [] when the workload cannot be built here."""
    from harness.workloads import WORKLOADS

    try:
        w = WORKLOADS[scn.workload.name](scn.workload, "127.0.0.1:9", scn.seed or 1)
        return [s.name for s in w.readers()] + [s.name for s in w.writers()]
    except Exception:  # e.g. spark fetches jars when built: client faults then pick at run time
        return []


def fault_choices(scn: Scenario) -> list[dict]:
    """The scenario's faults as spec dicts (weight dropped: the search picks by index)."""
    return [{k: v for k, v in f.as_dict().items() if k != "weight"} for f in scn.nemesis.faults]


def schedules(scn: Scenario, *, max_faults: int | None = None, min_load_s: int = MIN_LOAD_S):
    """Hypothesis strategy of schedules for ``scn`` (see the module docstring). Load time:
    integer seconds in [min_load_s, scn.duration]; faults: 1..max_faults (default: as many as
    the seeded draw could fit, at most 8), each an index into ``scn.nemesis.faults``, an
    integer start in [0, load) s and length in the scenario's fault_duration_s range, and a
    target (node or client drawn from the low end; other kinds' targets from a drawn integer
    through the fault kind's own chooser). Raises ExploreError for a scenario without faults."""
    from hypothesis import strategies as st

    faults = fault_choices(scn)
    if not faults:
        raise ExploreError(f"scenario {scn.name} has no nemesis.faults to draw from")
    top = int(scn.duration)
    if top < min_load_s:
        raise ExploreError(f"scenario {scn.name} lasts {scn.duration} s; explore needs at least {min_load_s} s of load")
    n = scn.nemesis
    if max_faults is None:
        max_faults = max(1, min(8, math.ceil((top - n.first_fault_s) / max(1.0, n.interval_s[0]))))
    lo, hi = max(1, math.floor(n.fault_duration_s[0])), max(1, math.ceil(n.fault_duration_s[1]))
    nodes = list(range(1, scn.cluster.nodes + 1))
    clients = client_names(scn)

    @st.composite
    def one_fault(draw):
        i = draw(st.integers(0, len(faults) - 1))
        spec = faults[i]
        kind = FAULTS[spec["fault"]]
        at = draw(st.integers(0, top - 1))
        length = draw(st.integers(lo, hi))
        if kind.choose is choose_node_target and spec.get("target", "random") == "random":
            value = {"node": draw(st.sampled_from(nodes))}
        elif kind.choose is choose_client_target:
            import fnmatch

            pats = spec.get("clients") or ["*"]
            match = sorted(c for c in clients if any(fnmatch.fnmatch(c, p) for p in pats))
            value = {"client": draw(st.sampled_from(match))} if match else None
        else:  # roles (no choice), grudges and toxics: the kind's own chooser, seeded by a draw
            t = draw(st.integers(0, 999))
            value = kind.choose(random.Random(t), spec, nodes, clients)
        return {"at": at, "duration": length, "fault": dict(spec), "value": value}

    @st.composite
    def schedule(draw):
        load = draw(st.integers(min(min_load_s, top), top))
        fs = draw(st.lists(one_fault(), min_size=1, max_size=max_faults))
        return {"duration": load, "faults": fs}

    return schedule()


def normalized(sched: dict) -> dict:
    """The schedule as it runs: faults that begin before the load ends, sorted by start, each
    cut at the load's end; ``value`` without the ``params`` the fault spec already holds."""
    load = sched["duration"]
    out = []
    for f in sorted(sched["faults"], key=lambda f: (f["at"], f["fault"]["fault"])):
        if f["at"] >= load:
            continue
        g = {"at": f["at"], "duration": min(f["duration"], load - f["at"]), "fault": dict(f["fault"])}
        if f.get("value"):
            g["value"] = {k: v for k, v in f["value"].items() if k != "params"}
        out.append(g)
    return {"duration": load, "faults": out}


def to_scenario(base: Scenario, sched: dict, *, name: str | None = None) -> Scenario:
    """``base`` with the load time and explicit ``nemesis.schedule`` of ``sched`` (normalized)."""
    s = normalized(sched)
    data = base.model_dump(mode="json", exclude_none=True)
    data["duration"] = float(s["duration"])
    data["nemesis"]["schedule"] = s["faults"]
    if name:
        data["name"] = name
    data.pop("seed", None)
    return Scenario.model_validate(data)


def scenario_yaml(scn: Scenario, header: str = "") -> str:
    """A scenario file's text (comment lines from ``header``), loadable by load_scenario."""
    data = scn.model_dump(mode="json", exclude_none=True)
    data.pop("seed", None)
    head = "".join(f"# {line}\n" for line in header.splitlines())
    return head + yaml.safe_dump(data, sort_keys=False)


def size(sched: dict) -> tuple:
    """How big a schedule is, for reports: (faults, load s, total fault s, sum of starts)."""
    s = normalized(sched)
    return (len(s["faults"]), s["duration"], sum(f["duration"] for f in s["faults"]), sum(f["at"] for f in s["faults"]))


# ---------------------------------------------------------------- the search

@dataclass
class Attempt:
    """One real run: the phase (search / shrink / replay), the schedule, its verdict's
    ``valid`` and failing anomalies, the run folder, and whether it counted as failing."""

    phase: str
    schedule: dict
    valid: Any
    failing: list[str]
    run_dir: str | None
    counted: bool
    wall_s: float


@dataclass
class Outcome:
    found: bool
    runs: int
    anomalies: list[str]
    minimal: dict | None          # normalized schedule
    minimal_path: Path | None
    replays: dict                 # {"runs": k, "invalid": m}
    attempts: list[Attempt] = field(default_factory=list)
    stopped: str = ""             # why the search ended early ("budget", "interrupted") or ""

    def as_json(self) -> dict:
        """The ``--json`` document of the CLI."""
        m = self.minimal
        return {"found": self.found, "runs": self.runs, "anomalies": self.anomalies,
                "minimal": None if m is None else {"path": str(self.minimal_path), "faults": m["faults"],
                                                   "duration": m["duration"]},
                "replays": self.replays, "stopped": self.stopped or None,
                "replay_command": replay_command(self.minimal_path) if self.minimal_path else None}


def replay_command(path: Path | str) -> str:
    return f"sudo .venv/bin/eos-chaos run {path}"


class Explorer:
    """One explore session over ``base`` (see the module docstring).

    ``runner(scn, results_root, source=..., stop=..., progress=...)`` returns an object with
    ``verdict`` (checkers.verdict's dict) and ``run_dir``; ``out_dir`` receives the minimal
    schedule's scenario file, explore.json and the Hypothesis database; ``k`` runs per shrink
    step and replays; ``budget_s`` seconds for search and shrinking (replays come on top);
    ``on_event(kind, **info)`` is told about every run (the CLI's progress display)."""

    def __init__(self, base: Scenario, results_root: str | Path, out_dir: str | Path, *,
                 runner: Callable[..., Any] | None = None, k: int = 3, budget_s: float = 1800.0,
                 seed: int = 1, stop: threading.Event | None = None, max_faults: int | None = None,
                 on_event: Callable[..., None] | None = None, clock: Callable[[], float] = time.monotonic,
                 db_dir: str | Path | None = None):
        if k < 1:
            raise ExploreError("--runs-per-example must be at least 1")
        self.base, self.results_root, self.out_dir = base, Path(results_root), Path(out_dir)
        self.db_dir = Path(db_dir) if db_dir is not None else self.out_dir / "hypothesis-db"
        if runner is None:
            from harness.runner import run_scenario as runner
        self.runner, self.k, self.budget_s, self.seed = runner, k, budget_s, seed
        self.stop = stop or threading.Event()
        #: ends the replays (a second Ctrl-C in the CLI); ``stop`` ends search and shrinking only
        self.replay_stop = threading.Event()
        self.max_faults = max_faults
        self.on_event = on_event or (lambda kind, **info: None)
        self.clock = clock
        self.t0 = clock()
        self.original: set[str] | None = None
        self.best: dict | None = None
        self.attempts: list[Attempt] = []
        self.stopped = ""
        self._runs = 0
        self._seen: dict[str, bool] = {}
        self.waited_s = 0.0   # seconds runs queued for the cluster lock (not charged to the budget)
        self.progress = None  # the run under way's harness.runner.Progress

    # -- budget --------------------------------------------------------------------------
    def left_s(self) -> float:
        """Budget left (s): time spent since the start, less the time runs queued for the
        machine's cluster lock behind other runs."""
        return self.budget_s - (self.clock() - self.t0 - self.waited_s)

    def _over(self) -> bool:
        if self.stop.is_set():
            self.stopped = "interrupted"
        elif self.left_s() <= 0:
            self.stopped = "budget"
        return bool(self.stopped)

    # -- runs ----------------------------------------------------------------------------
    def run_once(self, sched: dict, phase: str) -> tuple[Any, list[str], Any, float]:
        """One real run of ``sched`` with a fresh seed; returns (valid, failing anomalies,
        result, seconds). A run that raised is ("error", [], None, s); a run cut short by
        ``stop`` is ("interrupted", ...): neither counts as failing."""
        self._runs += 1
        scn = to_scenario(self.base, sched).model_copy(update={"seed": self.seed * 100_000 + self._runs})
        self.on_event("run", phase=phase, n=self._runs, schedule=normalized(sched), left_s=self.left_s())
        t = self.clock()
        from harness.suite import clocked_progress

        progress = clocked_progress()  # notes when the run got the cluster lock
        self.progress, began = progress, time.monotonic()
        stop = self.replay_stop if phase == "replay" else self.stop
        try:
            res = self.runner(scn, self.results_root, source=f"eos-chaos explore ({phase})", stop=stop,
                              progress=progress)
        except Exception as exc:  # a cluster that did not come up is no verdict about the schedule
            self.on_event("error", error=f"{type(exc).__name__}: {exc}")
            return "error", [], None, self.clock() - t
        if "working_since" in progress.__dict__:
            self.waited_s += max(0.0, progress.__dict__["working_since"] - began)
        if stop.is_set():
            return "interrupted", [], res, self.clock() - t
        v = res.verdict
        return v.get("valid"), list(v.get("failing") or []), res, self.clock() - t

    def _record(self, phase, sched, valid, failing, res, wall, counted) -> None:
        a = Attempt(phase, normalized(sched), valid, failing, str(getattr(res, "run_dir", "") or ""), counted, round(wall, 1))
        self.attempts.append(a)
        self.on_event("done", attempt=a, best=self.best, original=self.original, left_s=self.left_s())

    def predicate(self, sched: dict) -> bool:
        """Hypothesis's condition: searching, one run, True when invalid (and the original kinds
        are fixed); shrinking, up to ``k`` runs, True at the first invalid run with an
        original kind. False without running when the budget is spent or stop is set."""
        key = json.dumps(normalized(sched), sort_keys=True)
        if key in self._seen:  # Hypothesis replays the minimal example; equal schedules run once
            return self._seen[key]
        if self._over():
            return False
        self._seen[key] = hit = self._judge(sched)
        return hit

    def _judge(self, sched: dict) -> bool:
        if self.original is None:
            valid, failing, res, wall = self.run_once(sched, "search")
            hit = valid is False and bool(failing)
            if hit:
                self.original, self.best = set(failing), normalized(sched)
            self._record("search", sched, valid, failing, res, wall, hit)
            return hit
        for _ in range(self.k):
            if self._over():
                return False
            valid, failing, res, wall = self.run_once(sched, "shrink")
            hit = valid is False and bool(set(failing) & self.original)
            self._record("shrink", sched, valid, failing, res, wall, hit)
            if hit:
                self.best = normalized(sched)
                return True
        return False

    def database(self):
        from hypothesis.database import DirectoryBasedExampleDatabase

        return DirectoryBasedExampleDatabase(str(self.db_dir))

    def database_key(self) -> bytes:
        """The base scenario (seed and description aside) and the search's own settings."""
        data = self.base.model_dump(mode="json", exclude={"description", "seed"})
        text = json.dumps([data, self.max_faults, MIN_LOAD_S], sort_keys=True)
        return hashlib.sha256(text.encode()).digest()

    def search(self) -> None:
        """``hypothesis.find`` over ``schedules(base)`` with ``predicate``; leaves the smallest
        failing schedule in ``self.best`` (None when nothing failed)."""
        from hypothesis import Phase, find, settings
        from hypothesis.errors import NoSuchExample
        import hypothesis.internal.conjecture.engine as engine

        strategy = schedules(self.base, max_faults=self.max_faults)
        cfg = settings(database=self.database(), deadline=None, max_examples=10_000,
                       phases=[Phase.reuse, Phase.generate, Phase.shrink], derandomize=False)
        old = engine.MAX_SHRINKING_SECONDS
        engine.MAX_SHRINKING_SECONDS = max(old, int(self.budget_s) + 60)
        try:
            # no random=: Hypothesis turns its example database off for a seeded search
            find(strategy, self.predicate, settings=cfg, database_key=self.database_key())
        except NoSuchExample:
            pass
        finally:
            engine.MAX_SHRINKING_SECONDS = old

    def replay(self) -> dict:
        """``k`` fresh runs of the best schedule: ``{"runs", "invalid", "original_kind"}``
        (invalid: any failing anomaly; original_kind: one of the original kinds)."""
        out = {"runs": 0, "invalid": 0, "original_kind": 0}
        if self.best is None:
            return out
        for _ in range(self.k):
            if self.replay_stop.is_set():
                break
            valid, failing, res, wall = self.run_once(self.best, "replay")
            same = valid is False and bool(set(failing) & (self.original or set()))
            out["runs"] += 1
            out["invalid"] += valid is False
            out["original_kind"] += same
            self._record("replay", self.best, valid, failing, res, wall, same)
        return out

    def write_minimal(self) -> Path | None:
        if self.best is None:
            return None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        p = self.out_dir / "minimal.yaml"
        scn = to_scenario(self.base, self.best, name=f"{self.base.name}-minimal")
        header = (f"The smallest failing schedule eos-chaos explore found for {self.base.name}\n"
                  f"(original anomalies: {sorted(self.original or [])}; {self._runs} runs so far).\n"
                  f"Replay: {replay_command(p)}")
        p.write_text(scenario_yaml(scn, header))
        return p

    def explore(self) -> Outcome:
        """Search, shrink, write the minimal scenario, replay it ``k`` times; write
        explore.json; return the outcome."""
        with contextlib.suppress(KeyboardInterrupt):
            self.search()
        path = self.write_minimal()
        replays = self.replay() if self.best is not None else {"runs": 0, "invalid": 0, "original_kind": 0}
        out = Outcome(self.best is not None, self._runs, sorted(self.original or []), self.best, path,
                      replays, self.attempts, self.stopped)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        doc = dict(out.as_json(), attempts=[a.__dict__ for a in self.attempts])
        (self.out_dir / "explore.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
        return out
