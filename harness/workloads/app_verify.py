"""``output.verify``: the user's own verifier of an app's output (an aggregation: word counts,
sums, windows; outputs that are not one record per input), run by the harness after the final
drain; checkers.finders.app_end_to_end turns what it found into the verdict's ``app-verify`` cases.

The files the harness writes for it, in ``<run>/app/verify/`` (JSON Lines, UTF-8, one object a
line; a record's key and value are its bytes decoded as UTF-8, None when absent):

* ``input.jsonl``: every committed input record (its transaction committed, or, with
  idempotent input, its send acknowledged or read), in each partition's offset order:
  ``{"topic": "in", "partition": 0, "offset": 17, "key": null, "value": "3000017"}``
  (``offset`` null when no reader saw the record and its producer got no offset back);
* ``aborted.jsonl``: the input records of aborted transactions (never to be read by a
  read_committed application), the same shape;
* ``output.jsonl``: every output record the final drain read (read_committed, after the
  application stopped), in each partition's offset order:
  ``{"topic": "out", "partition": 2, "offset": 40, "key": "hello", "value": "3"}``.

The command (``output.verify.command``, placeholders as ``app.command``'s plus
``{input_file}``, ``{output_file}``, ``{aborted_file}``) runs in the scenario's folder (or
``app.cwd``) on the harness's machine, with ``output.verify.timeout_s`` to finish. It prints
JSON Lines on stdout: one object per finding, ``{"kind": "count-too-high", "explanation": "...",
...}`` (``kind``: a short name of the user's choosing; any other fields are kept as the
example's fields), and optionally one ``{"stats": {...}}`` line. It exits 0 whether it found
anything or not. A non-zero exit, a timeout, or a stdout line that is not such an object makes
the run unknown, with the reason and the last lines of its stderr (``error`` below).

Result (meta.json ``app.verify``, read by checkers.finders.app_end_to_end)::

    {"command": [...], "findings": [{"kind", "explanation", ...}, ...] (the first MAX_FINDINGS),
     "count": n, "stats": {...} | None, "seconds": s, "error": None | "why it could not judge",
     "files": {"input": path, "output": path, "aborted": path}, "inputs": n, "outputs": n}
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from checkers.finders.app_end_to_end import committed_inputs
from checkers.history import load_history

#: findings kept in meta.json (the count is always whole)
MAX_FINDINGS = 1000
VERIFY_DIR = Path("app") / "verify"
#: placeholder -> what it becomes, for output.verify.command (beside app.command's)
VERIFY_PLACEHOLDERS = {
    "input_file": "<run>/app/verify/input.jsonl: the committed input records",
    "output_file": "<run>/app/verify/output.jsonl: the output records the final drain read",
    "aborted_file": "<run>/app/verify/aborted.jsonl: the input records of aborted transactions",
}


def files(run_dir: Path) -> dict[str, Path]:
    d = Path(run_dir) / VERIFY_DIR
    return {"input": d / "input.jsonl", "output": d / "output.jsonl", "aborted": d / "aborted.jsonl"}


def write_inputs(run_dir: Path, input_keys: list[str]) -> tuple[int, int]:
    """Write input.jsonl and aborted.jsonl from the run's history (checkers.finders.app_end_to_end's
    reading of committed and aborted input). Returns (committed, aborted) counts."""
    h = load_history(Path(run_dir) / "history.jsonl")
    committed, aborted, written = committed_inputs(h, input_keys)
    f = files(run_dir)

    def line(key: str, offset: int | None, value: int) -> str:
        topic, part = key.rsplit("/", 1)
        return json.dumps({"topic": topic, "partition": int(part), "offset": offset, "key": None,
                           "value": str(value)}) + "\n"
    rows = sorted(((k, o if o is not None else -1, v) for v, (k, o, _t) in committed.items()))
    f["input"].write_text("".join(line(k, o if o >= 0 else None, v) for k, o, v in rows), encoding="utf-8")
    ab = sorted((written.get(v, ("?/0", None))[0], v) for v in aborted)
    f["aborted"].write_text("".join(line(k, written.get(v, (k, None))[1], v) for k, v in ab), encoding="utf-8")
    return len(rows), len(ab)


def sort_output(path: Path) -> int:
    """Put output.jsonl (appended by the drain as it read) in partition and offset order, each
    record once. Returns the number of records."""
    if not path.exists():
        path.write_text("")
        return 0
    recs = {}
    for ln in path.read_text(encoding="utf-8").splitlines():
        if ln.strip():
            r = json.loads(ln)
            recs[(r["topic"], r["partition"], r["offset"])] = ln
    path.write_text("".join(recs[k] + "\n" for k in sorted(recs)), encoding="utf-8")
    return len(recs)


def parse_findings(stdout: str) -> tuple[list[dict], dict | None, str | None]:
    """(findings, stats, error) from the verifier's stdout (module docstring)."""
    findings: list[dict] = []
    stats = None
    for n, ln in enumerate(stdout.splitlines(), 1):
        if not ln.strip():
            continue
        try:
            obj = json.loads(ln)
        except ValueError:
            return findings, stats, f"stdout line {n} is not JSON: {ln[:200]!r}"
        if isinstance(obj, dict) and set(obj) == {"stats"}:
            stats = obj["stats"] if isinstance(obj["stats"], dict) else {"stats": obj["stats"]}
        elif isinstance(obj, dict) and isinstance(obj.get("kind"), str) and isinstance(obj.get("explanation"), str):
            findings.append(obj)
        else:
            return findings, stats, (f"stdout line {n} is neither a finding ({{\"kind\": str, \"explanation\": str, "
                                     f"...}}) nor {{\"stats\": {{...}}}}: {ln[:200]!r}")
    return findings, stats, None


def run_verifier(argv: list[str], cwd: str, timeout_s: float, log: Path) -> dict[str, Any]:
    """Run the verifier; its stderr goes to ``log``. Returns the result (module docstring)
    without ``files``/``inputs``/``outputs``; never raises."""
    t0 = time.monotonic()
    out: dict[str, Any] = {"command": argv, "findings": [], "count": 0, "stats": None, "error": None}
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode("utf-8", "replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        log.write_text(err)
        out["error"] = f"output.verify did not finish within {timeout_s:g} s (killed){_tail(err)}"
    except OSError as e:
        out["error"] = f"output.verify could not start {argv[0]!r}: {e.strerror or e}"
    else:
        log.write_text(p.stderr)
        findings, stats, bad = parse_findings(p.stdout)
        if p.returncode != 0:
            out["error"] = f"output.verify exited with code {p.returncode}{_tail(p.stderr)}"
        elif bad:
            out["error"] = f"output.verify printed what is not a finding: {bad}"
        out.update(findings=findings[:MAX_FINDINGS], count=len(findings), stats=stats)
    out["seconds"] = round(time.monotonic() - t0, 2)
    return out


def _tail(text: str, n: int = 5) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()][-n:]
    return ("; its stderr ends: " + " | ".join(lines)) if lines else ""
