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

from checkers.known_bugs.bugs import describe as known_bug_phrase
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
        **cell_fields(cell),
        "status": status, "valid": v.valid if verdict is not None else None,
        "anomaly_counts": v.anomaly_counts,
        "failing": v.failing,
        "allowed": v.allowed,
        "impossible": v.impossible,
        "known_bugs": v.known_bugs,  # checkers/known_bugs/bugs.py: what the failure looks like
        "first_examples": first_examples(v),
        "unknown_reasons": v.unknown_reasons,
        "problems": problems or [], "error": error,
        "run_dir": _rel(run_dir, suite_dir), "report": _rel(report, suite_dir),
        "started_at": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 1), "waited_s": round(waited_s, 1),
        "versions": v.versions or {},  # harness.run.versions: what exactly was tested
        # group members' rebalances (checkers.history.rebalances), to compare group protocols across runs
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
            rec = {**cell_fields(c),
                   "status": NOT_RUN, "valid": None, "anomaly_counts": {}, "failing": [], "allowed": [],
                   "first_examples": {}, "unknown_reasons": [], "problems": [], "error": None,
                   "run_dir": None, "report": None, "started_at": None, "wall_s": None, "waited_s": None}
        rec = dict(rec, outcome=outcome(rec))
        rec["cause"] = cause(rec)
        rec["flaky"] = "[flaky:" in rec["cause"]
        out.append(rec)
    return out


def cell_fields(cell: Any) -> dict:
    """What a record says of its cell (identity, matrix coordinates, and for a tier's zoo cell
    its kind, entry and ``must_find``); also the shape of a shard's matrix rows."""
    return {"id": cell.id, "fingerprint": cell.fingerprint, "scenario": cell.name, "source": cell.source,
            "seed": cell.seed, "kafka_version": cell.kafka_version, "duration_s": cell.duration,
            "group_protocol": cell.group_protocol, "group_protocol_arg": cell.group_protocol_arg,
            "kind": getattr(cell, "kind", "scenario"), "entry": getattr(cell, "entry", None),
            "must_find": list(getattr(cell, "must_find", ()) or ()), "bar": getattr(cell, "bar", None)}


#: a cell's outcome: PASS (a scenario or control valid, a mutant caught), FAIL (a scenario or
#: control invalid, a mutant missed), else its status (unknown, error, interrupted, not-run)
PASS, FAIL = "pass", "fail"


def outcome(rec: dict) -> str:
    """PASS, FAIL or the record's status. A mutant (``kind`` mutant) passes when its run is
    invalid and one of its ``must_find`` anomalies is among the failing ones (harness.detect.zoo's
    *detected*); it fails when its run is valid or fails for other anomalies only."""
    status = rec.get("status")
    if status not in (VALID, INVALID):
        return status or NOT_RUN
    if rec.get("kind") == "mutant":
        caught = status == INVALID and bool(set(rec.get("failing") or []) & set(rec.get("must_find") or []))
        return PASS if caught else FAIL
    return PASS if status == VALID else FAIL


def cause(rec: dict) -> str:
    """Why a cell is not green, in one line (empty for a passed cell): a failing cell names its
    failing anomalies and its known-bug match (checkers.known_bugs.bugs) or says ``new``; a missed
    mutant what it had to find; an unknown cell its reasons; an errored one its error. A cell
    whose replay (same seed, same schedule) came out valid says ``flaky``."""
    o = rec.get("outcome") or outcome(rec)
    if o == PASS:
        return ""
    counts = rec.get("anomaly_counts") or {}
    failing = ", ".join(f"{n} x{counts.get(n, '?')}" for n in rec.get("failing") or [])
    bugs = [known_bug_phrase(m) for m in rec.get("known_bugs") or [] if m.get("match") == "looks-like"]
    named = "; ".join(bugs) if bugs else "new (no catalogued bug looks like it)"
    if o == FAIL and rec.get("kind") == "mutant":
        text = (f"missed: must find one of {', '.join(rec.get('must_find') or [])}; the run was "
                + (f"invalid for {failing}" if rec.get("status") == INVALID else "valid"))
    elif o == FAIL:
        text = f"invalid: {failing or 'failing'}; {named}"
    elif o == UNKNOWN:
        text = "unknown: " + ("; ".join(rec.get("unknown_reasons") or []) or "no reason recorded")
    elif o == ERROR:
        text = f"error: {rec.get('error') or 'no message'}"
    elif o == INTERRUPTED:
        text = "interrupted: the load was cut short; runs again on resume"
    else:
        text = "not run"
    replay = rec.get("replay") or {}
    if replay.get("status") == VALID and o in (FAIL, UNKNOWN) and rec.get("kind") != "mutant":
        text += f" [flaky: its replay (seed {rec.get('seed')}, same schedule) came out valid]"
    elif replay.get("status"):
        text += f" [replayed (seed {rec.get('seed')}, same schedule): {replay['status']} again]"
    return text


def exit_code(statuses: Iterable[str]) -> int:
    """1 when any run is invalid; else 2 when any is unknown, errored, interrupted or not run; else 0.
    Takes statuses or outcomes (``outcome``: PASS counts as valid, FAIL as invalid)."""
    s = {VALID if x == PASS else INVALID if x == FAIL else x for x in statuses}
    if INVALID in s:
        return 1
    return 2 if s - {VALID} else 0


def summarize(name: str, source: str | None, cells: list[Any], records: dict[str, dict],
              meta: dict | None = None) -> dict:
    """The summary.json document: ``{suite, source, generated_at, host, complete, exit_code,
    totals: {runs, valid, invalid, unknown, error, interrupted, not-run, pass, fail}, anomaly_counts:
    {name: cases over all runs}, wall_s, runs: [row, ...]}`` plus ``meta`` (a shard's
    ``shard`` block, harness.detect.shards). Each row has an ``outcome`` (``outcome``); the exit
    code is the outcomes' (a tier's mutant caught counts as passed)."""
    rs = rows(cells, records)
    totals = {"runs": len(rs), **{s: sum(r["status"] == s for r in rs) for s in STATUSES},
              PASS: sum(r["outcome"] == PASS for r in rs), FAIL: sum(r["outcome"] == FAIL for r in rs)}
    anomalies: dict[str, int] = {}
    for r in rs:
        for k, n in (r.get("anomaly_counts") or {}).items():
            anomalies[k] = anomalies.get(k, 0) + n
    return {
        "suite": name, "source": source,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "complete": all(r["status"] in FINISHED for r in rs),
        "exit_code": exit_code(r["outcome"] for r in rs),
        "totals": totals, "anomaly_counts": dict(sorted(anomalies.items())),
        "wall_s": round(sum(r.get("wall_s") or 0 for r in rs), 1),
        "runs": rs,
        **(meta or {}),
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
