"""``eos-chaos explore``: the terminal side of harness.detect.explore (registered by harness.cli.detect_commands)."""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import console, out, require_root, stop_on_signals

from harness.detect.suite_outputs import run_with_heartbeat


class ExploreProgress:
    """A bar over the budget (elapsed, left), a status line (phase, runs, original anomalies,
    best schedule so far, the run under way) and one line per finished run; on a console that
    is not a terminal, one line per run and a status line every ``heartbeat_s`` seconds."""

    def __init__(self, console, budget_s: float, heartbeat_s: float = 60.0):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        ui = self

        class Bar(Progress):
            def get_renderables(self):
                yield ui.status_text()
                yield self.make_tasks_table(self.tasks)

        self.console, self.budget_s, self.heartbeat_s = console, budget_s, heartbeat_s
        self.t0 = self._beat = time.monotonic()
        self.phase, self.runs, self.best, self.original, self.current = "search", 0, None, None, None
        self.explorer = None  # set by the command: the run under way's progress is read from it
        self.bar = Bar(TextColumn("[bold]explore"), BarColumn(), TextColumn("{task.fields[left]}"),
                       TimeElapsedColumn(), console=console, auto_refresh=console.is_terminal,
                       refresh_per_second=2)
        self.task = self.bar.add_task("explore", total=max(1.0, budget_s), left="")
        self.bar.start()

    def status_text(self):
        from rich.text import Text

        from harness.detect.explore_strategy import size

        best = "none yet" if self.best is None else "{} fault(s), {} s load".format(*size(self.best)[:2])
        orig = ", ".join(sorted(self.original)) if self.original else "-"
        cur = ""
        if self.current is not None:
            n, phase, sched, t = self.current
            p = getattr(self.explorer, "progress", None)
            what = getattr(p, "phase", "")
            what = "waiting for the cluster lock" if what in ("starting", "waiting") else f"phase {what}"
            cur = (f"   run {n} ({phase}, {len(sched['faults'])} fault(s), {sched['duration']} s load) "
                   f"{what} {time.monotonic() - t:5.0f} s")
        return Text(f"{self.phase}: {self.runs} runs   anomalies {orig}   best {best}{cur}")

    def event(self, kind: str, **info) -> None:
        from harness.detect.suite import fmt_s

        if kind == "run":
            self.phase = info["phase"]
            self.current = (info["n"], info["phase"], info["schedule"], time.monotonic())
            if not self.console.is_terminal:
                self.console.print(f"run {info['n']} ({info['phase']}): {json.dumps(info['schedule'])}", soft_wrap=True)
        elif kind == "done":
            a = info["attempt"]
            self.runs += 1
            self.best, self.original, self.current = info["best"], info["original"], None
            style = "red" if a.valid is False else ("green" if a.valid is True else "yellow")
            label = {True: "VALID", False: "INVALID"}.get(a.valid, str(a.valid).upper())
            mark = " (counts)" if a.counted else ""
            self.console.print(f"[{style}]{label:<11}[/] {a.phase:<6} {len(a.schedule['faults'])} fault(s) "
                               f"{a.schedule['duration']} s load  {', '.join(a.failing)}{mark}  {fmt_s(a.wall_s)}  "
                               f"{a.run_dir}", soft_wrap=True, highlight=False)
        elif kind == "seeded":
            for sch in info["schedules"]:
                self.console.print(f"start from the scenario's seeded draw: {len(sch['faults'])} fault(s), "
                                   f"{sch['duration']} s load", soft_wrap=True, highlight=False)
        elif kind == "replay":
            sch = info["schedule"]
            what = "replay the smallest failing schedule" if not info["tried"] else \
                "not confirmed; replay the schedule shrinking accepted before it"
            self.console.print(f"{what}: {len(sch['faults'])} fault(s), {sch['duration']} s load",
                               soft_wrap=True, highlight=False)
        elif kind == "error":
            self.console.print(f"[yellow]ERROR[/] {info['error']}", soft_wrap=True)
        left = info.get("left_s")
        if left is not None:
            self.bar.update(self.task, completed=min(self.budget_s, self.budget_s - left),
                            left=f"~{fmt_s(max(0.0, left))} of budget left")

    def heartbeat(self) -> None:
        if self.console.is_terminal or time.monotonic() - self._beat < self.heartbeat_s:
            return
        self._beat = time.monotonic()
        self.console.print(self.status_text(), soft_wrap=True)

    def end(self) -> None:
        self.bar.stop()


def explore(
    scenario: Path = typer.Argument(..., help="scenario YAML file whose faults the search draws from "
                                    "(scenarios/NAME.yaml: also found among the packaged scenarios from any folder)"),
    budget_s: float = typer.Option(1800.0, "--budget-s", metavar="SECONDS", help="seconds for search and shrinking (replays come on top)"),
    runs_per_example: int = typer.Option(3, "--runs-per-example", "-k", metavar="K",
                                         help="runs per shrink step (failing when any is invalid with an original anomaly) and final replays"),
    as_json: bool = typer.Option(False, "--json", help="print the outcome as JSON"),
    max_faults: Optional[int] = typer.Option(None, metavar="N", help="most faults in a drawn schedule (default: as many as the seeded draw fits, <= 8)"),
    duration: Optional[float] = typer.Option(None, metavar="SECONDS", help="longest load to draw, seconds (default: the scenario's duration)"),
    seed: int = typer.Option(1, metavar="N", help="seed of Hypothesis's search and of the runs' workload seeds"),
    seeded: int = typer.Option(2, "--seeded", metavar="N", help="run the scenario's own seeded schedules (seeds 1..N) first, then draw"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
) -> None:
    """Search fault schedules of SCENARIO with Hypothesis, one real run per example; shrink the
    first failing one (fewer faults, shorter load, simpler targets, earlier times) and replay
    it K times (when fewer than 2/3 of them fail, the schedules shrinking accepted before it
    are replayed, smallest first, until one does). Writes the minimal schedule as a runnable scenario and explore.json under
    RESULTS/explore/<scenario>/<time>/; Hypothesis's database there keeps failures for later
    searches. Ctrl-C ends the search with the best schedule so far (still replayed; a second
    Ctrl-C ends the replays). Each run starts a fresh cluster: root.
    Exit codes: 1 a failing schedule was found, 0 none, 2 bad input, no root or an error."""
    from harness.detect.explore import Explorer, replay_command
    from harness.detect.explore_strategy import ExploreError, schedules, size
    from harness.run.locate import find_scenario_path
    from harness.run.scenario import ScenarioError, load_scenario

    try:
        scn = load_scenario(find_scenario_path(scenario))  # as given, else scenarios/... of the package
        if duration is not None:
            scn = scn.model_copy(update={"duration": float(duration)})
        schedules(scn, max_faults=max_faults)  # fails now on a scenario it cannot explore
    except (ScenarioError, ExploreError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    if runs_per_example < 1:
        console.print("[red]error:[/] --runs-per-example must be at least 1")
        raise typer.Exit(2)
    require_root()
    root = results / "explore" / scn.name
    session = root / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    stop = threading.Event()
    ui = ExploreProgress(console, budget_s)
    ex = Explorer(scn, results, session, k=runs_per_example, budget_s=budget_s, seed=seed, stop=stop,
                  max_faults=max_faults, on_event=ui.event, db_dir=root / "hypothesis-db", seeded=seeded)
    ui.explorer = ex

    def interrupt(*_):  # the first Ctrl-C ends the search (best so far is replayed), the second the replays
        if stop.is_set():
            ex.replay_stop.set()
        stop.set()

    stop_on_signals(stop, interrupt)
    box = run_with_heartbeat(ex.explore, ui)
    ui.end()
    if "error" in box:
        console.print(f"[red]error:[/] {type(box['error']).__name__}: {box['error']}")
        raise typer.Exit(2)
    res = box["result"]
    if as_json:
        out.print_json(json.dumps(res.as_json(), default=str))
    elif res.found:
        n, load = size(res.minimal)[:2]
        out.print(f"found {', '.join(res.anomalies)} in {res.runs} runs; minimal: {n} fault(s), {load} s of load; "
                  f"replays invalid {res.replays['invalid']}/{res.replays['runs']} "
                  f"({res.replays['original_kind']} with an original anomaly; "
                  f"{'confirmed' if res.confirmed else 'NOT confirmed'}, at least {ex.bar} of {ex.k} needed)",
                  soft_wrap=True)
        for r in res.replayed[:-1] if res.confirmed else []:
            out.print(f"  (smaller, not confirmed: {len(r['schedule']['faults'])} fault(s), "
                      f"{r['original_kind']}/{r['runs']} replays)", soft_wrap=True)
        out.print(f"scenario: {res.minimal_path}", soft_wrap=True)
        out.print(f"replay:   {replay_command(res.minimal_path)}", soft_wrap=True)
    else:
        out.print(f"no failing schedule in {res.runs} runs" + (f" ({res.stopped})" if res.stopped else ""))
    if not as_json:  # --json prints one JSON document and nothing else on stdout
        out.print(f"explore.json: {session / 'explore.json'}", soft_wrap=True)
    raise typer.Exit(1 if res.found else 0)
