"""Run a suite's cells one after another, resumable: after each run its record is appended to
runs.jsonl and the outputs (harness.detect.suite_outputs) are rewritten. The matrix, records and
summary are harness.detect.suite's; this module joins them to the outputs."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from harness.detect.suite import (ERROR, INTERRUPTED, RECORDS, Cell, SuiteListener, append_record, clocked_progress,
                                  make_record, overhead_s, pending, read_records, run_dir_since, status_of, summarize)
from harness.detect.suite_outputs import write_outputs
from harness.detect.suite_records import FAIL, UNKNOWN, outcome


class PreflightFailed(RuntimeError):
    """A cell's preflight said what is missing; the cell is an error, the suite goes on."""


def same_schedule(suite_dir: Path, a: str | None, b: str | None) -> bool | None:
    """Whether two run folders (relative to ``suite_dir``) hold the same schedule.json (the
    fault steps drawn for the seed); None when either is missing."""
    try:
        return (suite_dir / a / "schedule.json").read_bytes() == (suite_dir / b / "schedule.json").read_bytes()
    except (OSError, TypeError):
        return None


@dataclass
class SuiteResult:
    summary: dict
    paths: dict[str, Path]
    ran: list[str] = field(default_factory=list)      # cell ids run by this call
    skipped: list[str] = field(default_factory=list)  # cell ids finished earlier (resumed)

    @property
    def exit_code(self) -> int:
        return self.summary["exit_code"]


def run_suite(cells: list[Cell], results_root: str | Path, suite_dir: str | Path, *, name: str,
              source: str | None = None, runner: Callable[..., Any] | None = None,
              stop: threading.Event | None = None, listener: SuiteListener | None = None,
              fresh: bool = False, meta: dict | None = None, replay_failing: bool = False,
              check: Callable[[Any], Any] | None = None) -> SuiteResult:
    """Run the cells not finished earlier, one after another; after each, append its record and
    rewrite the outputs. Returns the summary (also in ``suite_dir``).

    ``runner`` is ``harness.run.runner.run_scenario`` unless given (same signature). ``stop`` ends
    the current run's load early (it still heals, drains and checks; it is recorded as
    interrupted) and runs no further cell. A runner exception is recorded as an error and the
    suite goes on. ``fresh`` moves an existing runs.jsonl aside (``runs-<time>.jsonl``) first.
    ``check`` runs before each cell (default, with the real runner: harness.run.preflight,
    what ``run --dry-run`` checks); a ValueError it raises records the cell as an error with
    its line, and no cluster starts for it.
    ``meta`` joins the summary (a shard's ``shard`` block, harness.detect.shards).
    ``replay_failing``: after the matrix, each scenario or control cell that came out invalid or
    unknown is run once more with the same seed (hence the same fault schedule); its record
    gets ``replay: {status, failing, run_dir, same_schedule}`` and a valid replay marks the cell
    flaky (harness.detect.suite_records.cause). Mutants are judged over nights, not replayed.
    """
    if check is None and runner is None:
        from harness.run.preflight import preflight as check  # what `run --dry-run` checks
    if runner is None:
        from harness.run.runner import run_scenario as runner

    stop = stop or threading.Event()
    listener = listener or SuiteListener()
    d = Path(suite_dir)
    d.mkdir(parents=True, exist_ok=True)
    rec_path = d / RECORDS
    if fresh and rec_path.exists():
        rec_path.rename(d / f"runs-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.jsonl")
    records = read_records(rec_path)
    todo = pending(cells, records, d)
    todo_ids = {c.id for c in todo}
    skipped = [c.id for c in cells if c.id not in todo_ids]
    overhead = overhead_s(records.values())
    listener.begin(cells, todo, overhead, d)
    ran: list[str] = []
    paths = write_outputs(d, summarize(name, source, cells, records, meta))

    def run_one(cell: Cell) -> dict:
        progress = clocked_progress()
        listener.run_started(cell, progress)
        started, t0 = time.time(), time.monotonic()
        try:
            if check is not None:
                try:  # a cell whose tools, jars or release are missing says so before a cluster starts
                    check(cell.scenario)
                except ValueError as exc:
                    raise PreflightFailed(f"preflight: {exc} (eos-chaos suite ... --setup-args names what to install)") \
                        from None
            res = runner(cell.scenario, results_root, source=cell.source, progress=progress, stop=stop)
        except PreflightFailed as exc:
            res, status, error = None, ERROR, str(exc)
        except Exception as exc:  # recorded, shown, and the suite goes on
            res, status, error = None, INTERRUPTED if stop.is_set() else ERROR, f"{type(exc).__name__}: {exc}"
        else:
            status = INTERRUPTED if stop.is_set() else status_of(res.verdict)
        begun = progress.__dict__.get("working_since", t0)
        timing = dict(started=started, wall_s=time.monotonic() - begun, waited_s=begun - t0)
        if res is None:
            rec = make_record(cell, d, status=status, error=error,
                              run_dir=run_dir_since(results_root, cell, started), **timing)
        else:
            rec = make_record(cell, d, status=status, verdict=res.verdict, run_dir=res.run_dir,
                              report=res.report, problems=list(res.problems), **timing)
        return rec

    for cell in todo:
        if stop.is_set():
            break
        rec = run_one(cell)
        append_record(rec_path, rec)
        records[cell.id] = rec
        ran.append(cell.id)
        overhead = overhead_s(records.values())
        listener.run_finished(cell, rec, overhead)
        paths = write_outputs(d, summarize(name, source, cells, records, meta))
    for cell in cells if replay_failing else []:
        rec = records.get(cell.id)
        if stop.is_set() or rec is None or cell.kind == "mutant" or rec.get("replay") \
                or rec.get("fingerprint") != cell.fingerprint or outcome(rec) not in (FAIL, UNKNOWN):
            continue
        again = run_one(cell)
        rec = dict(rec, replay={"status": again["status"], "failing": again.get("failing") or [],
                                "run_dir": again.get("run_dir"), "report": again.get("report"),
                                "same_schedule": same_schedule(d, rec.get("run_dir"), again.get("run_dir"))})
        append_record(rec_path, rec)
        records[cell.id] = rec
        ran.append(cell.id + " (replay)")
        listener.run_finished(cell, again, overhead_s(records.values()))
        paths = write_outputs(d, summarize(name, source, cells, records, meta))
    summary = summarize(name, source, cells, records, meta)
    paths = write_outputs(d, summary)
    listener.end(summary, paths)
    return SuiteResult(summary, paths, ran, skipped)
