"""What a suite shows: junit.xml, index.html and summary.json in the suite folder, and the
terminal view while it runs (rich). The data (rows, summary, exit code) is harness.detect.suite's."""
from __future__ import annotations

import json
import os
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from harness.detect.suite_records import FAIL, PASS, cause, outcome
from harness.detect.suite import (DEFAULT_OVERHEAD_S, ERROR, INTERRUPTED, INVALID, NOT_RUN, RECORDS, UNKNOWN, VALID, Cell,
                           SuiteListener, describe_verdict, estimate_left, fmt_s, overhead_s, pending, read_records)


def common_versions(runs: list[dict]) -> dict[str, str]:
    """The versions (harness.run.versions) every run that recorded some shares, e.g. the harness,
    librdkafka and the kernel; a version that differs between runs (Kafka in a version matrix)
    is left to each run's row."""
    recorded = [r.get("versions") or {} for r in runs if r.get("versions")]
    if not recorded:
        return {}
    return {k: v for k, v in recorded[0].items() if all(o.get(k) == v for o in recorded[1:])}


def junit_xml(summary: dict) -> str:
    """JUnit XML of a summary: testsuite = the suite, testcase = a cell (classname
    ``<suite>.<scenario>``, name ``<scenario>[seed=N,kafka=V]``, time = wall seconds). Invalid
    runs are failures, unknown and errored runs errors, interrupted and not-run cells skipped.
    Each testcase carries properties report, run_dir, seed, kafka_version, status and
    ``version.<part>`` for each version its run recorded (harness.run.versions); the testsuite
    carries the versions all runs share as ``version.<part>``."""
    t = summary["totals"]
    attrs = {"name": summary["suite"], "tests": str(t["runs"]), "failures": str(t[INVALID]),
             "errors": str(t[UNKNOWN] + t[ERROR]), "skipped": str(t[INTERRUPTED] + t[NOT_RUN]),
             "time": f"{summary['wall_s']:.1f}"}
    root = ET.Element("testsuites", attrs)
    ts = ET.SubElement(root, "testsuite", dict(attrs, timestamp=summary["generated_at"],
                                               hostname=summary.get("host") or ""))
    props = ET.SubElement(ts, "properties")
    ET.SubElement(props, "property", name="suite_source", value=str(summary.get("source")))
    for k, v in common_versions(summary["runs"]).items():
        ET.SubElement(props, "property", name=f"version.{k}", value=str(v))
    for r in summary["runs"]:
        tc = ET.SubElement(ts, "testcase", classname=f"{summary['suite']}.{r['scenario']}",
                           name=f"{r['scenario']}[seed={r['seed']},kafka={r['kafka_version']}]",
                           time=f"{r.get('wall_s') or 0:.1f}", file=r.get("source") or "")
        p = ET.SubElement(tc, "properties")
        for k in ("report", "run_dir", "seed", "kafka_version", "status", "duration_s"):
            if r.get(k) is not None:
                ET.SubElement(p, "property", name=k, value=str(r[k]))
        for k, v in (r.get("versions") or {}).items():
            ET.SubElement(p, "property", name=f"version.{k}", value=str(v))
        status = r["status"]
        judged = r.get("outcome") or outcome(r)
        title = f"{r['scenario']} (seed {r['seed']}, Kafka {r['kafka_version']})"
        text = describe_verdict(title, r, report=r.get("report"), run_dir=r.get("run_dir"),
                                problems=r.get("problems") or [])
        counts = ", ".join(f"{k} x{n}" for k, n in sorted((r.get("anomaly_counts") or {}).items()))
        if judged == PASS:
            pass  # a scenario or control valid, a mutant caught
        elif judged == FAIL and r.get("kind") == "mutant":
            ET.SubElement(tc, "failure", type="missed", message=cause(r)[:1000]).text = text
        elif status == INVALID:
            ET.SubElement(tc, "failure", type="invalid", message=("INVALID" + cause(r)[len("invalid"):])[:1000]).text = text
        elif status == UNKNOWN:
            msg = "; ".join(r.get("unknown_reasons") or []) or "verdict unknown"
            ET.SubElement(tc, "error", type="unknown", message=f"UNKNOWN: {msg}"[:1000]).text = text
        elif status == ERROR:
            ET.SubElement(tc, "error", type="error", message=(r.get("error") or "error")[:1000]).text = \
                f"{r.get('error')}\nrun folder: {r.get('run_dir')}"
        elif status == INTERRUPTED:
            ET.SubElement(tc, "skipped", message="interrupted: the load phase was cut short; runs again on resume")
        elif status == NOT_RUN:
            ET.SubElement(tc, "skipped", message="not run (the suite was interrupted or is still running)")
        if r.get("report"):
            ET.SubElement(tc, "system-out").text = f"report: {r['report']}\nrun folder: {r.get('run_dir')}\n"
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def index_html(summary: dict) -> str:
    """The suite index page (self-contained HTML, jinja2 with autoescaping)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["dur"] = fmt_s
    return env.get_template("suite_index.html.j2").render(s=summary, versions=common_versions(summary["runs"]), labels={
        VALID: "VALID", INVALID: "INVALID", UNKNOWN: "UNKNOWN", ERROR: "ERROR",
        INTERRUPTED: "INTERRUPTED", NOT_RUN: "NOT RUN"})


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_outputs(suite_dir: str | Path, summary: dict) -> dict[str, Path]:
    """Write summary.json, junit.xml and index.html into ``suite_dir`` (each atomically);
    return their paths by name."""
    d = Path(suite_dir)
    paths = {"summary": d / "summary.json", "junit": d / "junit.xml", "index": d / "index.html"}
    _atomic_write(paths["summary"], json.dumps(summary, indent=1, default=str) + "\n")
    _atomic_write(paths["junit"], junit_xml(summary))
    _atomic_write(paths["index"], index_html(summary))
    return paths


class RichSuiteProgress(SuiteListener):
    """The terminal view of a suite: a bar over its runs with elapsed time and an estimate of
    the time left, a status line for the run under way (phase, seconds, ops, faults), and one
    line per finished run. On a console that is not a terminal (CI logs) the bar is printed
    once at the end and ``heartbeat()`` prints the status line every ``heartbeat_s`` seconds."""

    def __init__(self, console, heartbeat_s: float = 60.0):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text

        ui = self

        class LeftColumn(ProgressColumn):
            def render(self, task):
                return Text(f"~{fmt_s(ui.left())} left", style="progress.remaining")

        class Bar(Progress):
            def get_renderables(self):
                yield ui.status_text()
                yield self.make_tasks_table(self.tasks)

        self.console = console
        self.heartbeat_s = heartbeat_s
        self._last_beat = time.monotonic()
        self.todo: list[Cell] = []
        self.overhead = DEFAULT_OVERHEAD_S
        self.cell: Cell | None = None
        self.state: Any = None
        self.run_t0 = 0.0
        self.bar = Bar(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("runs"), TimeElapsedColumn(), LeftColumn(), console=console,
                       auto_refresh=console.is_terminal, refresh_per_second=2)
        self.task = None
        self.suite_dir = Path(".")

    def _elapsed(self) -> float:
        """Seconds the current run has worked (since it got the cluster lock)."""
        since = getattr(self.state, "__dict__", {}).get("working_since")
        return time.monotonic() - since if since is not None else 0.0

    def left(self) -> float:
        """Seconds left in the suite (estimate_left with the measured overhead)."""
        return estimate_left(self.todo, self.overhead, self._elapsed() if self.cell is not None else None)

    def status_text(self):
        from rich.text import Text

        if self.cell is None:
            return Text("")
        p = self.state
        ops = p.ops() if p is not None and hasattr(p, "ops") else {"ok": 0, "fail": 0, "info": 0}
        phase = getattr(p, "phase", "?")
        if phase in ("starting", "waiting"):
            return Text(f"{self.cell.id}  waiting for the machine's cluster lock (another run is on) "
                        f"{time.monotonic() - self.run_t0:6.0f} s")
        return Text(f"{self.cell.id}  phase {phase:<9} {self._elapsed():6.0f} s of ~"
                    f"{self.cell.duration + self.overhead:.0f} s   ops ok {ops['ok']} fail {ops['fail']} "
                    f"info {ops['info']}   faults {getattr(p, 'faults', 0)}")

    def begin(self, cells, todo, overhead, suite_dir):
        self.todo, self.overhead, self.suite_dir = list(todo), overhead, Path(suite_dir)
        done = len(cells) - len(todo)
        self.console.print(f"suite: {len(cells)} runs, {done} finished earlier, {len(todo)} to run "
                           f"(~{fmt_s(estimate_left(self.todo, overhead))}); outputs in {suite_dir}", soft_wrap=True)
        self.task = self.bar.add_task("suite", total=len(cells), completed=done)
        self.bar.start()

    def run_started(self, cell, progress):
        self.cell, self.state, self.run_t0 = cell, progress, time.monotonic()
        if not self.console.is_terminal:
            self.console.print(f"run {cell.id} ({cell.duration:g} s of load) ...", soft_wrap=True)

    def run_finished(self, cell, record, overhead):
        self.todo = [c for c in self.todo if c.id != cell.id]
        self.overhead, self.cell = overhead, None
        self.bar.advance(self.task)
        style = {VALID: "green", INVALID: "red"}.get(record["status"], "yellow")
        counts = ", ".join(f"{k} x{n}" for k, n in sorted(record["anomaly_counts"].items()))
        where = record.get("report") or record.get("run_dir")
        where = os.path.normpath(self.suite_dir / where) if where else ""
        self.console.print(f"[{style}]{record['status'].upper():<11}[/] {cell.id}  {fmt_s(record['wall_s'])}  "
                           f"{counts}  {record.get('error') or ''}  {where}".rstrip(), soft_wrap=True, highlight=False)

    def heartbeat(self) -> None:
        """Call now and then: on a non-terminal, prints the status line every heartbeat_s."""
        if self.console.is_terminal or self.cell is None:
            return
        if time.monotonic() - self._last_beat >= self.heartbeat_s:
            self._last_beat = time.monotonic()
            self.console.print(self.status_text(), f" (suite ~{fmt_s(self.left())} left)", soft_wrap=True)

    def end(self, summary, paths):
        self.cell = None
        self.bar.stop()


def print_plan(out, cells: list[Cell], folder: Path, *, fresh: bool, kind: str, describe) -> list[Cell]:
    """``--dry-run`` of ``suite`` and ``zoo``: a line per cell (``run`` or ``done``, its id, load
    seconds and ``describe(cell)``), then how many runs are left and a time estimate for them
    (from the folder's finished runs); ``kind`` names the folder ("suite", "zoo"). Returns the
    cells left to run. ``fresh``: as if the folder had no finished runs."""
    records = {} if fresh else read_records(folder / RECORDS)
    todo = pending(cells, records, folder)
    ids = {c.id for c in todo}
    for c in cells:
        out.print(f"{'run ' if c.id in ids else 'done'}  {c.id}  {c.duration:g} s  {describe(c)}", highlight=False)
    out.print(f"{len(cells)} runs, {len(todo)} to run, ~{fmt_s(estimate_left(todo, overhead_s(records.values())))}"
              f"; {kind} folder {folder}", highlight=False)
    return todo


def plan_json(cells: list[Cell], folder: Path, *, fresh: bool, describe) -> dict:
    """``--dry-run --json`` of ``suite`` and ``zoo``: ``{"folder", "runs": [{"id", "scenario",
    "seed", "kafka_version", "duration_s", "to_run", "what"}], "total", "to_run",
    "estimate_s"}``: the same plan print_plan prints, as one JSON document."""
    records = {} if fresh else read_records(folder / RECORDS)
    todo = pending(cells, records, folder)
    ids = {c.id for c in todo}
    return {"folder": str(folder),
            "runs": [{"id": c.id, "scenario": c.name, "seed": c.seed, "kafka_version": c.kafka_version,
                      "duration_s": c.duration, "to_run": c.id in ids, "what": describe(c)} for c in cells],
            "total": len(cells), "to_run": len(todo),
            "estimate_s": round(estimate_left(todo, overhead_s(records.values())), 1)}


def run_with_heartbeat(work, ui) -> dict:
    """Run ``work()`` on a thread while this (the main) thread ticks ``ui.heartbeat()`` once a
    second, so the terminal stays live and signals reach the main thread's handlers (which
    set the stop events ``work`` watches). Returns ``{"result": ...}`` or ``{"error": exc}``
    (any exception of ``work``, shown by the caller with exit code 2)."""
    box: dict = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # shown by the caller, exit code 2
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    while t.is_alive():
        t.join(1)
        ui.heartbeat()
    return box
