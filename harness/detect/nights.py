"""Zoo entries judged over nights, not one run.

A mutant caught 9 runs in 10 misses about one night in ten; a control that is clean 19 nights in 20
has one bad night. One run cannot tell that from a detection that broke, so the merge of a
night's shards (``eos-chaos suite merge ... --nights FILE``) appends the night's zoo cells to
a history of nights (JSON lines, one per night: ``{night, suite, matrix_seed, generated_at,
entries: {entry: {kind, runs, passed}}}``) and judges each entry over its last M nights:

- the rate is passed / runs (a mutant caught, a control valid) over those nights, with its 95 %
  Wilson interval (harness.detect.rates.wilson);
- **red** when the interval's upper end falls below the entry's bar (the zoo file's ``bar:``,
  else 0.5 for a mutant and 0.8 for a control): the entry's rate is below its bar with 95 %
  confidence, a broken detection or a false alarm that keeps coming back;
- **amber** when tonight missed (a mutant not caught, a control invalid) but the interval still
  reaches the bar: one miss, named, the night not red for it;
- **green** otherwise; **new** when the entry has no night yet (no run tonight).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from harness.detect.suite_records import FAIL, PASS
from harness.detect.rates import wilson

#: default bars: the rate (caught for a mutant, valid for a control) below which an entry is red
DEFAULT_BAR = {"mutant": 0.5, "control": 0.8}
RED, AMBER, GREEN = "red", "amber", "green"


def night_entries(runs: Iterable[dict]) -> dict[str, dict]:
    """A night's zoo cells (summary rows with ``kind`` mutant or control) per entry: ``{entry:
    {kind, runs, passed, bar}}``; cells with no verdict (not run, errored, unknown) are left out."""
    out: dict[str, dict] = {}
    for r in runs:
        if r.get("kind") not in DEFAULT_BAR or r.get("outcome") not in (PASS, FAIL):
            continue
        name = r.get("entry") or r["scenario"]
        e = out.setdefault(name, {"kind": r["kind"], "runs": 0, "passed": 0, "bar": r.get("bar")})
        e["runs"] += 1
        e["passed"] += r["outcome"] == PASS
    return out


def read_nights(path: str | Path) -> list[dict]:
    """The nights recorded in ``path`` (missing: none); a line that is not a JSON object (a
    write cut short) is skipped."""
    p = Path(path)
    if not p.is_file():
        return []
    out = []
    for line in p.read_text(errors="replace").splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("entries"), dict):
            out.append(doc)
    return out


def append_night(path: str | Path, night: str, summary: dict) -> dict:
    """Append tonight (``night``: its name, e.g. the date or the CI run id) to the history; a night
    of the same name already there is replaced (a merge run again). Returns the night's record."""
    p = Path(path)
    rec = {"night": night, "suite": summary.get("suite"), "generated_at": summary.get("generated_at"),
           "entries": night_entries(summary.get("runs") or [])}
    kept = [n for n in read_nights(p) if n.get("night") != night]
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text("".join(json.dumps(n) + "\n" for n in kept + [rec]))
    os.replace(tmp, p)
    return rec


def judge(nights: list[dict], last: int = 14) -> list[dict]:
    """Each entry of the newest night judged over the last ``last`` nights (module docstring):
    ``[{entry, kind, nights, runs, passed, rate, ci95, bar, tonight: {runs, passed}, judgement,
    why}]``, red first."""
    if not nights:
        return []
    window = nights[-last:]
    tonight = window[-1]["entries"]
    rows = []
    for name, t in sorted(tonight.items()):
        seen = [n["entries"][name] for n in window if name in n["entries"]]
        runs = sum(int(s.get("runs", 0)) for s in seen)
        passed = sum(int(s.get("passed", 0)) for s in seen)
        ci = wilson(passed, runs)
        bar = t.get("bar") or DEFAULT_BAR.get(t.get("kind"), 0.5)
        what = "caught" if t.get("kind") == "mutant" else "valid"
        missed = t.get("passed", 0) < t.get("runs", 0)
        if ci is not None and ci[1] < bar:
            verdict = RED
            why = (f"{what} {passed} of {runs} over {len(seen)} night(s): 95 % interval "
                   f"{ci[0]:.2f}-{ci[1]:.2f} is below its bar {bar:g}")
        elif missed:
            verdict = AMBER
            why = (f"tonight {what} {t['passed']} of {t['runs']}; over {len(seen)} night(s) {passed} of {runs}, "
                   f"95 % interval {ci[0]:.2f}-{ci[1]:.2f} still reaches its bar {bar:g}")
        else:
            verdict = GREEN
            why = f"{what} {passed} of {runs} over {len(seen)} night(s)"
        rows.append({"entry": name, "kind": t.get("kind"), "nights": len(seen), "runs": runs, "passed": passed,
                     "rate": round(passed / runs, 4) if runs else None, "ci95": ci, "bar": bar,
                     "tonight": {"runs": t.get("runs"), "passed": t.get("passed")}, "judgement": verdict,
                     "why": why})
    order = {RED: 0, AMBER: 1, GREEN: 2}
    return sorted(rows, key=lambda r: (order[r["judgement"]], r["entry"]))


def night_verdict(summary: dict, judged: list[dict] | None) -> tuple[int, list[str]]:
    """The exit code of a merged night and one line per cause (red and unknown first, then amber).
    Scenario cells are judged on tonight's run (a failing one is red with its cause,
    harness.detect.suite_records.cause); zoo cells, when ``judged`` (``judge``'s rows) is given,
    over nights: a red entry is red, an amber one a warning; without ``judged`` on tonight's run.
    Exit 1 on anything red, else 2 on any cell without a verdict (unknown, error, interrupted,
    not run), else 0."""
    over_nights = judged is not None
    red, grey, amber = [], [], []
    not_run = []
    for r in summary.get("runs") or []:
        o = r.get("outcome")
        zoo = r.get("kind") in DEFAULT_BAR
        if o == PASS or (zoo and over_nights and o == FAIL):
            continue
        if o == "not-run":  # one line for them all: the merge lists their ids
            not_run.append(r["id"])
            continue
        line = f"{r['id']}: {r.get('cause') or o}"
        (red if o == FAIL else grey).append(line)
    if not_run:
        grey.append(f"{len(not_run)} cell(s) not run: no shard's folder holds their record (first: {not_run[0]})")
    for j in judged or []:
        if j["judgement"] == RED:
            red.append(f"{j['entry']} ({j['kind']}, judged over nights): {j['why']}")
        elif j["judgement"] == AMBER:
            amber.append(f"{j['entry']} ({j['kind']}, judged over nights): {j['why']}")
    code = 1 if red else 2 if grey else 0
    return code, [f"RED     {x}" for x in red] + [f"UNKNOWN {x}" for x in grey] + [f"AMBER   {x}" for x in amber]
