"""A suite's records and summary (harness.detect.suite): the statuses of a cell, runs.jsonl
(read, append, resume), a run's record, the failure message, summary.json and the time left.
Re-exported by harness.detect.suite, where the suite file, the matrix (``Cell``) and the loop
live; ``cell`` arguments are its Cells (``id``, ``fingerprint``, ``name``, ``source``, ``seed``,
``kafka_version``, ``duration``, ``group_protocol``, ``group_protocol_arg``).
"""
from __future__ import annotations

import json
import os
import socket
import statistics
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from checkers.known_bugs import describe as known_bug_phrase
from checkers.run import Verdict

#: statuses of a cell. The first three are verdicts (``valid`` True / False / "unknown").
VALID, INVALID, UNKNOWN, ERROR, INTERRUPTED, NOT_RUN = (
    "valid", "invalid", "unknown", "error", "interrupted", "not-run")
STATUSES = (VALID, INVALID, UNKNOWN, ERROR, INTERRUPTED, NOT_RUN)
FINISHED = frozenset({VALID, INVALID, UNKNOWN})
#: seconds a run takes beyond its load duration (cluster start, heal, drain, check, report),
#: before any run of this suite has been measured; measured: 39 s for smoke on 2 cores.
DEFAULT_OVERHEAD_S = 40.0
RECORDS = "runs.jsonl"


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


def current_record(cell: Any, records: dict[str, dict]) -> dict | None:
    """The cell's record if it is for this very scenario (same fingerprint), else None."""
    rec = records.get(cell.id)
    return rec if rec is not None and rec.get("fingerprint") == cell.fingerprint else None


def is_finished(cell: Any, records: dict[str, dict], suite_dir: str | Path) -> bool:
    """True when the cell need not run again: a verdict (valid/invalid/unknown) for the same
    fingerprint, with verdict.json still in its run folder."""
    rec = current_record(cell, records)
    if rec is None or rec.get("status") not in FINISHED or not rec.get("run_dir"):
        return False
    return (Path(suite_dir) / rec["run_dir"] / "verdict.json").is_file()


def pending(cells: list[Any], records: dict[str, dict], suite_dir: str | Path) -> list[Any]:
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


def make_record(cell: Any, suite_dir: str | Path, *, status: str, started: float, wall_s: float,
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
        # group members' rebalances (checkers.rebalances), to compare group protocols across runs
        "rebalances": (v.stats or {}).get("rebalances"),
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

def rows(cells: list[Any], records: dict[str, dict]) -> list[dict]:
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


def summarize(name: str, source: str | None, cells: list[Any], records: dict[str, dict]) -> dict:
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


def estimate_left(todo: list[Any], overhead: float, current_elapsed: float | None = None) -> float:
    """Seconds left: each cell in ``todo`` takes its duration plus ``overhead``; the first one is
    the run under way when ``current_elapsed`` (seconds it has run) is given."""
    left = sum(c.duration + overhead for c in todo)
    if todo and current_elapsed is not None:
        left -= min(current_elapsed, todo[0].duration + overhead)
    return max(0.0, left)
