"""Search fault schedules with Hypothesis and shrink a failing one (``eos-chaos explore``).

A *schedule* is data (harness.detect.explore_strategy): ``{"duration": s, "faults": [{"at": s,
"duration": s, "fault": {fault spec}, "value": {target}}, ...]}``, drawn by ``schedules()`` from a scenario's own faults
(which fault, its target: a node, a client, a grudge or a role; when it begins; how long it
lasts) and a load time. ``to_scenario`` turns one into a runnable scenario whose
``nemesis.schedule`` (harness.run.scenario.ScheduledFault) replaces the seeded draw.

``Explorer.explore`` calls ``hypothesis.find`` with a predicate that runs the scenario on the
real cluster (``runner``: harness.run.runner.run_scenario, or a fake in unit tests):

* searching, one run per example: first the scenario's own seeded draws (seeds 1..``seeded``,
  put into the example database as Hypothesis choice sequences: ``seeded_schedule``,
  ``schedule_choices``), then drawn ones; the first run whose verdict is invalid fixes the
  *original kinds* (its failing anomalies) and Hypothesis starts shrinking (fewer faults, a
  shorter load, the first-listed fault kinds and nodes, earlier and shorter faults: what
  Hypothesis's shrinker makes of lists and integers drawn from the low end);
* shrinking, a candidate counts as failing when at least one of ``k`` runs is invalid with
  an anomaly of an original kind (a real cluster is not deterministic);
* then the smallest failing schedule is replayed ``k`` fresh times; when fewer than two thirds
  of them fail with an original kind, the schedules shrinking accepted before it are replayed,
  smallest first, until one does (``Explorer.replay``): the minimal reported is the smallest
  *confirmed* failing schedule.

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
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from checkers.run import Verdict
from harness.detect.explore_strategy import (MIN_LOAD_S, STRATEGY_VERSION, ExploreError, draw_from_choices,
                                      normalized, scenario_yaml, schedule_choices, schedules, seeded_schedule,
                                      to_scenario)
from harness.run.scenario import Scenario


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
    confirmed: bool = False       # the minimal failed with an original kind in >= 2/3 of its replays
    replayed: list[dict] = field(default_factory=list)   # each schedule replayed, smallest first

    def as_json(self) -> dict:
        """The ``--json`` document of the CLI."""
        m = self.minimal
        return {"found": self.found, "runs": self.runs, "anomalies": self.anomalies,
                "minimal": None if m is None else {"path": str(self.minimal_path), "faults": m["faults"],
                                                   "duration": m["duration"]},
                "replays": self.replays, "confirmed": self.confirmed, "stopped": self.stopped or None,
                "replayed": [{"faults": len(r["schedule"]["faults"]), "duration": r["schedule"]["duration"],
                              "runs": r["runs"], "invalid": r["invalid"], "original_kind": r["original_kind"]}
                             for r in self.replayed],
                "replay_command": replay_command(self.minimal_path) if self.minimal_path else None}


def replay_command(path: Path | str) -> str:
    return f"sudo .venv/bin/eos-chaos run {path}"


class Explorer:
    """One explore session over ``base`` (see the module docstring).

    ``runner(scn, results_root, source=..., stop=..., progress=...)`` returns an object with
    ``verdict`` (a checkers.Verdict) and ``run_dir``; ``out_dir`` receives the minimal
    schedule's scenario file, explore.json and the Hypothesis database; ``k`` runs per shrink
    step and replays; ``budget_s`` seconds for search and shrinking (replays come on top);
    ``on_event(kind, **info)`` is told about every run (the CLI's progress display)."""

    def __init__(self, base: Scenario, results_root: str | Path, out_dir: str | Path, *,
                 runner: Callable[..., Any] | None = None, k: int = 3, budget_s: float = 1800.0,
                 seed: int = 1, stop: threading.Event | None = None, max_faults: int | None = None,
                 on_event: Callable[..., None] | None = None, clock: Callable[[], float] = time.monotonic,
                 db_dir: str | Path | None = None, seeded: int = 2):
        if k < 1:
            raise ExploreError("--runs-per-example must be at least 1")
        self.base, self.results_root, self.out_dir = base, Path(results_root), Path(out_dir)
        self.db_dir = Path(db_dir) if db_dir is not None else self.out_dir / "hypothesis-db"
        if runner is None:
            from harness.run.runner import run_scenario as runner
        self.runner, self.k, self.budget_s, self.seed = runner, k, budget_s, seed
        self.stop = stop or threading.Event()
        #: ends the replays (a second Ctrl-C in the CLI); ``stop`` ends search and shrinking only
        self.replay_stop = threading.Event()
        self.max_faults = max_faults
        #: the scenario's own seeded draws (seeds 1..seeded) go into the example database
        #: first, so the search starts from them (Hypothesis's reuse phase) before drawing
        self.seeded = seeded
        self.on_event = on_event or (lambda kind, **info: None)
        self.clock = clock
        self.t0 = clock()
        self.original: set[str] | None = None
        self.best: dict | None = None
        #: every schedule that counted as failing, in the order Hypothesis accepted them: the
        #: search's failure, then each shrink step that failed (normalized)
        self.chain: list[dict] = []
        #: the replays of each schedule ``replay`` tried, smallest first
        self.replayed: list[dict] = []
        self.attempts: list[Attempt] = []
        self.stopped = ""
        self._runs = 0
        self._seen: dict[str, bool] = {}
        self.waited_s = 0.0   # seconds runs queued for the cluster lock (not charged to the budget)
        self.progress = None  # the run under way's harness.run.runner.Progress

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
        from harness.detect.suite import clocked_progress

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
        v = Verdict.coerce(res.verdict)  # a runner of one's own may hand back verdict.json's dict
        return v.valid, list(v.failing), res, self.clock() - t

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
                self.original = set(failing)
                self._accept(sched)
            self._record("search", sched, valid, failing, res, wall, hit)
            return hit
        for _ in range(self.k):
            if self._over():
                return False
            valid, failing, res, wall = self.run_once(sched, "shrink")
            hit = valid is False and bool(set(failing) & self.original)
            self._record("shrink", sched, valid, failing, res, wall, hit)
            if hit:
                self._accept(sched)
                return True
        return False

    def _accept(self, sched: dict) -> None:
        """``sched`` counted as failing: it is the best so far and joins ``chain``."""
        self.best = normalized(sched)
        self.chain.append(self.best)

    def database(self):
        from hypothesis.database import DirectoryBasedExampleDatabase

        return DirectoryBasedExampleDatabase(str(self.db_dir))

    def database_key(self) -> bytes:
        """The base scenario (``Scenario.identity`` without the seed) and the search's own settings."""
        data = self.base.identity(without={"seed"})
        text = json.dumps([data, self.max_faults, MIN_LOAD_S, STRATEGY_VERSION], sort_keys=True)
        return hashlib.sha256(text.encode()).digest()

    def search(self) -> None:
        """``hypothesis.find`` over ``schedules(base)`` with ``predicate``; leaves the smallest
        failing schedule in ``self.best`` (None when nothing failed)."""
        from hypothesis import Phase, find, settings
        from hypothesis.errors import NoSuchExample
        import hypothesis.internal.conjecture.engine as engine

        strategy = schedules(self.base, max_faults=self.max_faults)
        db = self.database()
        self.seed_database(db, strategy)
        cfg = settings(database=db, deadline=None, max_examples=10_000,
                       phases=[Phase.reuse, Phase.generate, Phase.shrink], derandomize=False,
                       report_multiple_bugs=False)  # the first failing example is shrunk, no other is run
        old = engine.MAX_SHRINKING_SECONDS
        # Hypothesis's own shrink limit is wall-clock time, but runs queued behind other runs
        # for the cluster lock are not charged to the budget (``left_s``): the predicate ends
        # the search on the budget, so the limit only has to stay out of its way
        engine.MAX_SHRINKING_SECONDS = max(old, 4 * int(self.budget_s) + 3600)
        try:
            # no random=: Hypothesis turns its example database off for a seeded search
            find(strategy, self.predicate, settings=cfg, database_key=self.database_key())
        except NoSuchExample:
            pass
        finally:
            engine.MAX_SHRINKING_SECONDS = old

    def seed_database(self, db, strategy) -> list[dict]:
        """Move failures kept by earlier searches from the primary to the secondary corpus
        (below), and save the choice sequences of the scenario's seeded draws (seeds
        1..``seeded``) in the search's *secondary* corpus (``<key>.secondary``: Hypothesis's corpus of failing but
        not yet minimal examples; a failure from the primary one counts as already shrunk);
        returns the schedules saved. A draw outside the strategy's bounds, or whose sequence
        does not draw it back, is skipped. Hypothesis's reuse phase runs them before
        generating, shrinks the first that fails and deletes the others, so every explore
        starts again from the scenario's own schedules."""
        from hypothesis.database import choices_to_bytes

        # A failure kept in the primary corpus counts for Hypothesis as already shrunk: its
        # reuse phase replays it and stops without shrinking. On a real cluster a search's
        # shrinking is nearly always cut short by its budget, so kept failures go back to the
        # secondary corpus, where the next search shrinks the smallest one further.
        key = self.database_key()
        for kept in list(db.fetch(key)):
            db.move(key, key + b".secondary", kept)
        saved = []
        for seed in range(1, self.seeded + 1):
            sched = seeded_schedule(self.base, seed)
            choices = sched and schedule_choices(self.base, sched, max_faults=self.max_faults)
            if not choices:
                continue
            try:
                ok = normalized(draw_from_choices(strategy, choices)) == normalized(sched)
            except Exception:  # Hypothesis internals changed: search without the seeds
                ok = False
            if ok:
                db.save(self.database_key() + b".secondary", choices_to_bytes(choices))
                saved.append(sched)
        self.on_event("seeded", schedules=saved)
        return saved

    @property
    def bar(self) -> int:
        """Replays of ``k`` that must fail with an original kind to confirm a schedule: two
        thirds, rounded up (2 of 3)."""
        return math.ceil(2 * self.k / 3)

    def confirms(self, replays: dict) -> bool:
        """Replays (``replay_one``'s dict) that confirm their schedule: ``bar`` with an original kind."""
        return replays["original_kind"] >= self.bar

    def replay_one(self, sched: dict) -> dict:
        """Up to ``k`` fresh runs of ``sched``: ``{"runs", "invalid", "original_kind"}`` (invalid:
        any failing anomaly; original_kind: one of the original kinds). Stops early once
        ``bar`` can no longer be reached; a schedule that reaches it gets all ``k`` runs."""
        out = {"runs": 0, "invalid": 0, "original_kind": 0}
        for left in range(self.k, 0, -1):
            if self.replay_stop.is_set() or out["original_kind"] + left < self.bar:
                break
            valid, failing, res, wall = self.run_once(sched, "replay")
            same = valid is False and bool(set(failing) & (self.original or set()))
            out["runs"] += 1
            out["invalid"] += valid is False
            out["original_kind"] += same
            self._record("replay", sched, valid, failing, res, wall, same)
        return out

    def replay(self) -> dict:
        """Confirm a minimal schedule; returns its replays (``replay_one``'s dict).

        A shrink step counts as failing on 1 of ``k`` runs, so the smallest schedule found may
        fail only now and then (a single coordinator kill fails F1's scenario about one run
        in three: docs/detection.md). So the schedules Hypothesis accepted are replayed from
        the smallest back up (``chain``), and ``best`` becomes the first that fails with an
        original kind in ``bar`` of ``k`` replays; when none does, the smallest stays, with its
        replays. Each schedule tried is in ``replayed``."""
        empty = {"runs": 0, "invalid": 0, "original_kind": 0}
        if self.best is None:
            return empty
        # smallest first, each schedule once (equal schedules run once while searching, too)
        candidates = list({json.dumps(s, sort_keys=True): s for s in reversed(self.chain or [self.best])}.values())
        self.replayed = []
        for sched in candidates:
            if self.replay_stop.is_set():
                break
            self.on_event("replay", schedule=sched, tried=len(self.replayed))
            self.replayed.append({"schedule": sched, **self.replay_one(sched)})
            if self.confirms(self.replayed[-1]):
                break
        if not self.replayed:
            return empty
        chosen = next((r for r in self.replayed if self.confirms(r)), self.replayed[0])
        self.best = chosen["schedule"]
        return {k: chosen[k] for k in empty}

    def write_minimal(self, replays: dict | None = None) -> Path | None:
        """Write ``best`` as ``<out_dir>/minimal.yaml`` (a runnable scenario); with ``replays``,
        its header says how the replays went. None when nothing failed."""
        if self.best is None:
            return None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        p = self.out_dir / "minimal.yaml"
        scn = to_scenario(self.base, self.best, name=f"{self.base.name}-minimal")
        header = (f"The smallest failing schedule eos-chaos explore found for {self.base.name}\n"
                  f"(original anomalies: {sorted(self.original or [])}; {self._runs} runs so far).\n"
                  f"Replay: {replay_command(p)}")
        if replays is not None:
            header += (f"\nReplays: invalid with an original anomaly in {replays['original_kind']} of "
                       f"{replays['runs']} ({'confirmed' if self.confirms(replays) else 'not confirmed'}: "
                       f"at least {self.bar} of {self.k} needed)")
        p.write_text(scenario_yaml(scn, header))
        return p

    def explore(self) -> Outcome:
        """Search, shrink, write the minimal scenario, replay it ``k`` times; write
        explore.json; return the outcome."""
        with contextlib.suppress(KeyboardInterrupt):
            self.search()
        path = self.write_minimal()  # the smallest failure is on disk even if the replays are cut short
        replays = self.replay() if self.best is not None else {"runs": 0, "invalid": 0, "original_kind": 0}
        if self.best is not None:
            path = self.write_minimal(replays)
        out = Outcome(self.best is not None, self._runs, sorted(self.original or []), self.best, path,
                      replays, self.attempts, self.stopped,
                      confirmed=self.best is not None and self.confirms(replays),
                      replayed=list(self.replayed))
        self.out_dir.mkdir(parents=True, exist_ok=True)
        doc = dict(out.as_json(), attempts=[a.__dict__ for a in self.attempts])
        (self.out_dir / "explore.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
        return out
