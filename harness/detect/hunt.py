"""A blind search for exactly-once bugs over the shipped scenarios (``eos-chaos hunt``, issue 44).

One *example* is a shipped scenario (``POOL``, by position: the search shrinks toward the
first), a configuration draw (harness.detect.search_space: client, producer, broker and
workload settings within their documented ranges, none from a catalogued bug's trigger) and a
fault schedule drawn from the drawn scenario's own faults (harness.detect.explore_strategy
``schedules``, as ``eos-chaos explore`` draws them). It runs as one real run: the draw is in the
run's scenario.yaml (``workload.producer``, ``workload.client``, ``cluster.broker``, ... and
the description's ``hunt draw:``), and in the campaign's runs.jsonl and summary.

Why Hypothesis drives real runs here, and how far: ``hypothesis.find`` draws the examples,
its shrinker shrinks a failing one (each setting toward "unset", then toward its documented
default; fewer faults, a shorter load, the first scenario of the pool), and ``target()`` gets
the run's feedback signals (harness.detect.hunt_signals). Hypothesis optimises targets only
after ``max_examples // 2`` (at least 10) valid examples of one ``find``, so a *round* is one
``find`` of ``ROUND_EXAMPLES`` (20) examples: its second half climbs the signals. At one to
two machine-minutes a run, targeting starts after about 15 machine-minutes: a shorter
campaign is a random search with shrinking. A round that fails shrinks (at most
``max_shrink_runs`` runs; a candidate counts when its one run is invalid with an anomaly of
the round's first failure) and ends; the next round starts with the next seed, until the
budget is spent.

Resumable: every run is a line of ``<campaign>/runs.jsonl`` keyed by its example; a campaign
started again with the same seed replays Hypothesis's rounds, answers every example already
run from the file (no cluster run) and goes on where it stopped. Machine time is the runs'
wall time without the time they queued for the cluster lock, summed over every session of
the campaign: the budget covers all of them.

A *finding* is named by the verdict's known-bug ids (``known_bugs``, checkers' signatures:
"KAFKA-14402 (looks-like)") or ``new: <failing anomalies>``; its machine time to first
detection is the campaign's machine time up to the end of the first run that showed it. A
run whose draw enabled unclean leader election is marked (``caveat``): losing acknowledged
records is then permitted by configuration.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harness.detect.search_space import CLIENT_WORKLOADS, Draw, SearchSpaceError, apply, draws

#: the shipped scenarios the hunt draws from, by position (the shrinker's order: the first is
#: the simplest). Left out: the app, spark and share workloads (no client choice, seconds of
#: start-up), soak (hours), coordinator-inflight-abort (carries finding F1's trigger),
#: idempotent (no transactions), power-loss and clock-skew (FUSE and libfaketime layers)
POOL = ("smoke", "coordinator", "cascading-kills", "partition", "link-faults", "busy",
        "eos-pipeline", "zombie", "chaos")
#: longest load a hunt run has (s): shipped scenarios run 60-120 s
MAX_LOAD_S = 60.0
#: shortest load a hunt run draws (s). explore's 10 s floor wasted hunt runs: in the first
#: campaign (docs/records/2026-11-29-hunt-kafka-352.md) a 10 s load on 3.5.2 ended before the
#: producers' first init completed (UNKNOWN), and a run that short leaves a fault no time to
#: meet a transaction. The shrinker still moves toward it, never below.
MIN_LOAD_S = 30
#: examples per round (one hypothesis.find): targeting starts after half of them
ROUND_EXAMPLES = 20
#: a run's machine time beyond its load, for plans: cluster start, drain, checks (docs/benchmarks.md)
RUN_OVERHEAD_S = 75.0


class _EndRound(BaseException):
    """Raised by the predicate to end a round's ``find`` at once (budget spent, stop set, or
    shrinking at its cap): a BaseException, so Hypothesis does not take it for a failure."""


class HuntError(ValueError):
    """Bad input to a hunt; the message is one line that says what to fix."""


@dataclass
class PoolEntry:
    name: str
    base: Any            # harness.run.scenario.Scenario (the release set, load capped)
    clients: tuple[str, ...]


def campaign_dir(results: Path, kafka_version: str, client: str | None, seed: int) -> Path:
    return Path(results) / "hunt" / f"kafka-{kafka_version}-{client or 'any'}-s{seed}"


def load_pool(kafka_version: str, client: str | None = None, names=POOL) -> list[PoolEntry]:
    """The pool's scenarios on ``kafka_version`` with their load capped at MAX_LOAD_S, and the
    clients each can run (``client`` alone when given). Raises HuntError in one line for a
    release the harness cannot run, or when no scenario can run ``client``."""
    from harness.cluster.releases import UnsupportedRelease, check_release
    from harness.detect.explore_strategy import ExploreError, schedules
    from harness.run.locate import find_scenario_path
    from harness.run.scenario import ScenarioError, load_scenario, with_overrides

    try:
        check_release(kafka_version)
    except UnsupportedRelease as exc:
        raise HuntError(f"--kafka-version: {exc}") from None
    if client not in (None, "librdkafka", "java"):
        raise HuntError(f"--client {client!r}: pick librdkafka or java")
    pool = []
    for name in names:
        try:
            scn = load_scenario(find_scenario_path(Path(f"scenarios/{name}.yaml")))
            scn = with_overrides(scn, kafka_version=kafka_version, duration=min(scn.duration, MAX_LOAD_S))
            schedules(scn, min_load_s=MIN_LOAD_S)
        except (ScenarioError, ExploreError, OSError) as exc:
            raise HuntError(f"pool scenario {name}: {exc}") from None
        wanted = (client,) if client else ("librdkafka", "java")
        ok = []
        for c in wanted:
            if c != "librdkafka" and scn.workload.name not in CLIENT_WORKLOADS:
                continue
            try:
                apply(scn, Draw(c))
                ok.append(c)
            except SearchSpaceError:
                continue
        if ok:
            pool.append(PoolEntry(name, scn, tuple(ok)))
    if not pool:
        raise HuntError(f"no pool scenario runs the {client} client: drop --client or pick librdkafka")
    return pool


def examples(pool: list[PoolEntry], kafka_version: str):
    """Hypothesis strategy of examples ``{"scenario", "draw", "schedule"}`` (module docstring)."""
    from hypothesis import reject, strategies as st

    from harness.detect.explore_strategy import schedules

    cfgs = {e.name: draws(e.base.workload.name, kafka_version, e.clients) for e in pool}
    memo: dict[str, Any] = {}  # (scenario, draw) -> its schedule strategy, or None when the draw does not apply

    def schedules_of(entry: PoolEntry, cfg: Draw):
        key = json.dumps([entry.name, cfg.as_dict()], sort_keys=True, default=str)
        if key not in memo:
            try:
                memo[key] = schedules(apply(entry.base, cfg), min_load_s=MIN_LOAD_S)
            except SearchSpaceError:
                memo[key] = None
        return memo[key]

    @st.composite
    def example(d):
        entry = pool[d(st.integers(0, len(pool) - 1))]
        cfg = d(cfgs[entry.name])
        strategy = schedules_of(entry, cfg)
        if strategy is None:
            reject()
        sched = d(strategy)
        return {"scenario": entry.name, "draw": cfg, "schedule": sched}

    return example()


def example_key(ex: dict) -> str:
    from harness.detect.explore_strategy import normalized

    text = json.dumps([ex["scenario"], ex["draw"].as_dict(), normalized(ex["schedule"])], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def to_run_scenario(pool: list[PoolEntry], ex: dict, *, name: str | None = None):
    """The runnable scenario of an example: the pool scenario with the draw applied and the
    schedule as its explicit ``nemesis.schedule``."""
    from harness.detect.explore_strategy import to_scenario

    entry = next(e for e in pool if e.name == ex["scenario"])
    scn = apply(entry.base, ex["draw"], name=name or f"hunt-{entry.name}")
    return to_scenario(scn, ex["schedule"])


def finding_name(verdict: dict) -> str:
    """``KAFKA-14402 (looks-like)`` ... from the verdict's known bugs that the run shows
    (``looks-like``), else ``new: <failing anomalies>``, with the ones it only resembles after
    it: ``new: lost-write, torn-transaction (resembles F1, KAFKA-17754)``. A resemblance is not
    a name (its ``why`` says what does not fit), so a campaign never files a finding under one
    (2026-11-29: a torn transaction on 4.2.2 with the Java client was filed as "F1 (resembles),
    ..." although F1 is librdkafka's)."""
    known = [b for b in verdict.get("known_bugs") or [] if b.get("id")]
    named = sorted({f"{b['id']} ({b.get('match')})" for b in known if b.get("match") == "looks-like"})
    if named:
        return ", ".join(named)
    like = sorted({str(b["id"]) for b in known})
    return "new: " + ", ".join(sorted(verdict.get("failing") or [])) + (f" (resembles {', '.join(like)})" if like else "")


def _verdict_dict(v) -> dict:
    if isinstance(v, dict):
        return v
    dump = getattr(v, "model_dump", None)
    return dump(mode="json") if dump else {}


class Hunter:
    """One campaign (module docstring). ``runner(scn, results_root, source=, stop=, progress=)``
    returns an object with ``verdict`` and ``run_dir`` (harness.run.runner.run_scenario, or a
    fake in tests); ``signals_of(run_dir)`` the feedback (hunt_signals.signals)."""

    def __init__(self, kafka_version: str, *, budget_s: float, out_dir: Path, results_root: Path,
                 client: str | None = None, seed: int = 1, runner: Callable[..., Any] | None = None,
                 pool: list[PoolEntry] | None = None, stop: threading.Event | None = None,
                 on_event: Callable[..., None] | None = None, max_shrink_runs: int = 4,
                 round_examples: int = ROUND_EXAMPLES, signals_of: Callable[[Path], dict] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        if budget_s <= 0:
            raise HuntError("--budget-s must be more than 0 seconds")
        self.kafka_version, self.client, self.seed, self.budget_s = kafka_version, client, seed, float(budget_s)
        self.out_dir, self.results_root = Path(out_dir), Path(results_root)
        self.pool = pool if pool is not None else load_pool(kafka_version, client)
        if runner is None:
            from harness.run.runner import run_scenario as runner
        if signals_of is None:
            from harness.detect.hunt_signals import signals as signals_of
        self.runner, self.signals_of, self.clock = runner, signals_of, clock
        self.stop = stop or threading.Event()
        self.on_event = on_event or (lambda kind, **info: None)
        self.max_shrink_runs, self.round_examples = max_shrink_runs, round_examples
        self.records: list[dict] = []
        self.cache: dict[str, dict] = {}
        self.codes_seen: set[str] = set()
        self.stopped = ""
        self.round = 0
        self.original: set[str] | None = None
        self.best: dict | None = None
        self.shrink_runs = 0
        self.findings: dict[str, dict] = {}
        self.load()

    # -- the campaign folder ---------------------------------------------------------------
    @property
    def runs_path(self) -> Path:
        return self.out_dir / "runs.jsonl"

    def load(self) -> None:
        """Read runs.jsonl of an earlier session (resume)."""
        if not self.runs_path.exists():
            return
        for line in self.runs_path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            self._remember(rec)

    def _remember(self, rec: dict) -> None:
        self.records.append(rec)
        if rec.get("key") and rec.get("valid") in (True, False):
            self.cache.setdefault(rec["key"], rec)
        self.codes_seen.update(rec.get("signals", {}).get("codes", []))
        if rec.get("valid") is False and rec.get("failing"):
            name = rec.get("finding") or "new"
            f = self.findings.setdefault(name, {"name": name, "first_run": rec["n"], "machine_s_to_first": rec["machine_s_total"],
                                                "anomalies": sorted(rec["failing"]), "runs": 0, "caveat": rec.get("caveat"),
                                                "first_run_dir": rec.get("run_dir")})
            f["runs"] += 1

    def machine_s(self) -> float:
        return sum(float(r.get("machine_s", 0.0)) for r in self.records)

    def left_s(self) -> float:
        return self.budget_s - self.machine_s()

    def _over(self) -> bool:
        if self.stop.is_set():
            self.stopped = "interrupted"
        elif self.left_s() <= 0:
            self.stopped = "budget"
        return bool(self.stopped)

    # -- one example -----------------------------------------------------------------------
    def run_example(self, ex: dict, phase: str) -> dict:
        """One real run of ``ex``; appends its record to runs.jsonl and returns it."""
        from harness.detect.explore_strategy import normalized
        from harness.detect.hunt_signals import score
        from harness.detect.suite import clocked_progress

        key = example_key(ex)
        n = len(self.records) + 1
        scn = to_run_scenario(self.pool, ex).model_copy(update={"seed": int(key[:8], 16) % 1_000_000 + 1})
        self.on_event("run", n=n, phase=phase, example=ex, left_s=self.left_s())
        progress = clocked_progress()
        t0, began = self.clock(), time.monotonic()
        rec: dict[str, Any] = {"n": n, "key": key, "round": self.round, "phase": phase, "scenario": ex["scenario"],
                               "seed": scn.seed, "draw": ex["draw"].as_dict(), "schedule": normalized(ex["schedule"])}
        try:
            res = self.runner(scn, self.results_root, source=f"eos-chaos hunt ({phase})", stop=self.stop,
                              progress=progress)
            v = _verdict_dict(res.verdict)
            rec.update(valid=v.get("valid"), failing=sorted(v.get("failing") or []), run_dir=str(res.run_dir),
                       known_bugs=[b.get("id") for b in v.get("known_bugs") or []])
            sig = self.signals_of(Path(res.run_dir)) if res.run_dir else {}
            if rec["valid"] is False and rec["failing"]:
                rec["finding"] = finding_name(v)
        except Exception as exc:  # a cluster that did not come up says nothing about the example
            rec.update(valid="error", failing=[], run_dir=None, error=f"{type(exc).__name__}: {exc}")
            sig = {}
        wall = self.clock() - t0
        # a run that never got the cluster lock (stopped while queued) used no machine time
        waited = max(0.0, progress.__dict__["working_since"] - began) if "working_since" in progress.__dict__ else wall
        new_codes = set(sig.get("codes", [])) - self.codes_seen
        rec["signals"] = sig
        rec["novelty"] = len(new_codes)
        rec["score"] = score(sig, len(new_codes)) if sig else 0.0
        rec["machine_s"] = round(max(0.0, wall - waited), 1)
        rec["machine_s_total"] = round(self.machine_s() + rec["machine_s"], 1)
        if str(ex["draw"].broker.get("unclean.leader.election.enable")) == "true":
            rec["caveat"] = "unclean leader election drawn: losing acknowledged records is permitted"
        if self.stop.is_set():
            rec["interrupted"] = True
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with self.runs_path.open("a") as f:
            f.write(json.dumps(rec, default=str) + "\n")
        self._remember(rec)
        self.on_event("done", record=rec, left_s=self.left_s())
        return rec

    def _target(self, rec: dict) -> None:
        from hypothesis import target

        from harness.detect.hunt_signals import SIGNALS

        with contextlib.suppress(Exception):  # target() outside a Hypothesis test case: nothing to steer
            sig = rec.get("signals") or {}
            for name in SIGNALS:
                target(float(sig.get(name, 0.0)), label=name)
            target(float(rec.get("score", 0.0)), label="score")

    def predicate(self, ex: dict) -> bool:
        """Hypothesis's condition (module docstring): one run per example, answered from
        runs.jsonl when the example ran before; False without running once the budget is spent."""
        key = example_key(ex)
        rec = self.cache.get(key)
        phase = "search" if self.original is None else "shrink"
        if phase == "shrink":  # cached shrink steps count too, so a resumed round stops where it stopped
            if self.shrink_runs >= self.max_shrink_runs:
                raise _EndRound()
            self.shrink_runs += 1
        if rec is None:
            if self._over():
                raise _EndRound()
            rec = self.run_example(ex, phase)
            if rec.get("interrupted"):
                raise _EndRound()
        self._target(rec)
        failing = set(rec.get("failing") or [])
        if rec.get("valid") is not False or not failing:
            return False
        if self.original is None:
            self.original = failing
        elif not failing & self.original:
            return False
        self.best = ex
        return True

    # -- rounds ------------------------------------------------------------------------------
    def one_round(self) -> dict | None:
        """One hypothesis.find of ``round_examples`` examples; the smallest failing example
        (shrunk) or None."""
        from hypothesis import HealthCheck, Phase, find, settings
        from hypothesis.errors import NoSuchExample
        import hypothesis.internal.conjecture.engine as engine

        self.original, self.best, self.shrink_runs = None, None, 0
        cfg = settings(database=None, deadline=None, max_examples=self.round_examples,
                       phases=[Phase.generate, Phase.target, Phase.shrink], report_multiple_bugs=False,
                       suppress_health_check=list(HealthCheck))
        old = engine.MAX_SHRINKING_SECONDS
        engine.MAX_SHRINKING_SECONDS = max(old, 4 * int(self.budget_s) + 3600)
        try:
            find(examples(self.pool, self.kafka_version), self.predicate, settings=cfg,
                 random=random.Random(self.seed * 1000 + self.round))
        except (NoSuchExample, _EndRound):
            pass
        finally:
            engine.MAX_SHRINKING_SECONDS = old
        return self.best

    def hunt(self, max_rounds: int = 1000) -> dict:
        """Rounds until the budget is spent (or ``stop``); writes the minimal scenario of each
        round's failure, summary.json and summary.html; returns the summary."""
        from harness.detect.explore_strategy import normalized, scenario_yaml
        from harness.detect.pinning import write_pinned

        self.out_dir.mkdir(parents=True, exist_ok=True)
        (self.out_dir / "campaign.json").write_text(json.dumps(
            {"kafka_version": self.kafka_version, "client": self.client, "seed": self.seed,
             "budget_s": self.budget_s, "pool": [e.name for e in self.pool]}, indent=1) + "\n")
        for self.round in range(max_rounds):
            if self._over():
                break
            with contextlib.suppress(KeyboardInterrupt):
                best = self.one_round()
            if best is not None:
                rec = self.cache.get(example_key(best)) or {}
                name = rec.get("finding") or "new"
                slug = "".join(c if c.isalnum() or c in "-." else "-" for c in name)[:80].strip("-") or "finding"
                path = self.out_dir / "findings" / f"{slug}.yaml"
                path.parent.mkdir(parents=True, exist_ok=True)
                scn = to_run_scenario(self.pool, best, name=f"hunt-{best['scenario']}-minimal")
                path.write_text(scenario_yaml(scn, f"The smallest failing example of eos-chaos hunt round {self.round} "
                                                   f"(finding: {name}; anomalies {sorted(self.original or [])}).\n"
                                                   f"Replay: sudo .venv/bin/eos-chaos run {path}"))
                write_pinned(path, best, rec.get("run_dir"), name,
                             lambda ex: to_run_scenario(self.pool, ex, name=f"hunt-{ex['scenario']}-pinned"))
                f = self.findings.get(name)
                if f is not None and best["draw"].size() < (f.get("minimal") or {}).get("draw_size", 10**9):
                    f["minimal"] = {"path": str(path), "scenario": best["scenario"], "draw": best["draw"].as_dict(),
                                    "schedule": normalized(best["schedule"]), "draw_size": best["draw"].size()}
                self.on_event("finding", name=name, path=str(path))
            self.write_summary()
        if not self.stopped:
            self._over()
        return self.write_summary()

    # -- outputs ------------------------------------------------------------------------------
    def summary(self) -> dict:
        return summarize(self.out_dir, kafka_version=self.kafka_version, client=self.client, seed=self.seed,
                         budget_s=self.budget_s, pool=[e.name for e in self.pool], stopped=self.stopped,
                         minimal={k: v.get("minimal") for k, v in self.findings.items()})

    def write_summary(self) -> dict:
        s = self.summary()
        write_outputs(self.out_dir, s)
        return s


def read_runs(out_dir: Path) -> list[dict]:
    p = Path(out_dir) / "runs.jsonl"
    out = []
    if p.exists():
        for line in p.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return out


def summarize(out_dir: Path, *, kafka_version: str | None = None, client: str | None = None, seed: int | None = None,
              budget_s: float | None = None, pool: list[str] | None = None, stopped: str = "",
              minimal: dict | None = None) -> dict:
    """The campaign summary from its folder's runs.jsonl (and campaign.json for what is not
    given): runs, machine minutes, distinct findings with the machine time to the first
    detection of each, and the ``hunt`` section (every run's draw, the space's ranges)."""
    from harness.detect.search_space import (BROKER, COMPRESSION, NOT_DRAWN, PRODUCER, RESTARTS, WORKLOAD)

    out_dir = Path(out_dir)
    camp = {}
    with contextlib.suppress(OSError, ValueError):
        camp = json.loads((out_dir / "campaign.json").read_text())
    runs = read_runs(out_dir)
    machine_s = 0.0
    findings: dict[str, dict] = {}
    for r in runs:
        machine_s += float(r.get("machine_s", 0.0))
        if r.get("valid") is False and r.get("failing"):
            name = r.get("finding") or "new"
            f = findings.setdefault(name, {"name": name, "first_run": r.get("n"),
                                           "machine_minutes_to_first": round(machine_s / 60, 2),
                                           "anomalies": sorted(r["failing"]), "runs": 0,
                                           "first_run_dir": r.get("run_dir"), "caveat": r.get("caveat"),
                                           "minimal": None})
            f["runs"] += 1
    for name, m in (minimal or {}).items():
        if name in findings and m:
            findings[name]["minimal"] = m

    def rng(s):
        return {"key": s.key, "default": s.default, "drawn": s.grid(), "source": s.source,
                "range": None if s.choices else [s.lo, s.hi], "cap": s.cap_why}
    return {
        "kafka_version": kafka_version or camp.get("kafka_version"), "client": client or camp.get("client"),
        "seed": seed if seed is not None else camp.get("seed"),
        "budget_s": budget_s if budget_s is not None else camp.get("budget_s"),
        "runs": len(runs), "machine_minutes": round(machine_s / 60, 2),
        "valid": sum(1 for r in runs if r.get("valid") is True),
        "invalid": sum(1 for r in runs if r.get("valid") is False),
        "other": sum(1 for r in runs if r.get("valid") not in (True, False)),
        "stopped": stopped or None,
        "findings": sorted(findings.values(), key=lambda f: f["first_run"] or 0),
        "hunt": {
            "pool": pool or camp.get("pool"),
            "runs": [{"n": r.get("n"), "round": r.get("round"), "phase": r.get("phase"), "scenario": r.get("scenario"),
                      "seed": r.get("seed"), "draw": r.get("draw"), "faults": len((r.get("schedule") or {}).get("faults", [])),
                      "load_s": (r.get("schedule") or {}).get("duration"), "valid": r.get("valid"),
                      "failing": r.get("failing"), "finding": r.get("finding"), "score": r.get("score"),
                      "machine_s": r.get("machine_s"), "run_dir": r.get("run_dir")} for r in runs],
            "space": {"producer": {c: [rng(s) for s in ss] for c, ss in PRODUCER.items()},
                      "compression": rng(COMPRESSION), "broker": [rng(s) for s in BROKER],
                      "workload": [dict(rng(w.setting), workloads=list(w.workloads)) for w in WORKLOAD],
                      "restarts": rng(RESTARTS)},
            "not_drawn": NOT_DRAWN,
        },
    }


def write_outputs(out_dir: Path, summary: dict) -> None:
    """summary.json and summary.html (jinja2, autoescaped) in the campaign folder."""
    import jinja2

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.get_template("hunt.html.j2").render(s=summary, dumps=lambda x: json.dumps(x, sort_keys=True, default=str))
    (out_dir / "summary.html").write_text(html)


def plan(pool: list[PoolEntry], kafka_version: str, *, seed: int, budget_s: float, n: int | None = None) -> list[dict]:
    """The first draws of round 0 as the search makes them while no run fails (no run, no
    cluster): ``n`` of them (default: as many as the budget fits at MAX_LOAD_S + RUN_OVERHEAD_S
    a run, at least 1, at most ROUND_EXAMPLES)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    from harness.detect.explore_strategy import normalized

    want = n or max(1, min(ROUND_EXAMPLES, int(budget_s // (MAX_LOAD_S + RUN_OVERHEAD_S)) or 1))
    seen: list[dict] = []

    def collect(ex) -> bool:
        if len(seen) < want:
            seen.append({"scenario": ex["scenario"], "draw": ex["draw"].as_dict(),
                         "schedule": normalized(ex["schedule"]), "key": example_key(ex)})
        return False

    cfg = settings(database=None, deadline=None, max_examples=want, phases=[Phase.generate],
                   suppress_health_check=list(HealthCheck))
    with contextlib.suppress(NoSuchExample):
        find(examples(pool, kafka_version), collect, settings=cfg, random=random.Random(seed * 1000))
    return seen
