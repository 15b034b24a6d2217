"""The app workload's input producers that all crashed before writing anything (issue 36).

Such a run has no input: its history has nothing to judge, and without this the verdict said
only that ("history has no completed client read or write ... nothing to judge"), never why.
``input_crash`` finds the case at the end of the load, with the first lines of each crash from
the producer's log (``logs/producer-<i>.log``: a worker's stderr, so a Python traceback's
exception line is there); harness.workloads.app puts it in meta.json (``app.input_crashed``)
and checkers.finders.app_end_to_end.app_unknown turns it into the verdict's first unknown reason.
"""
from __future__ import annotations

from pathlib import Path

#: how many lines of a crash are kept per producer, and how long each may be
CRASH_LINES, LINE_CHARS = 3, 300
_ERROR_WORDS = ("error", "exception", "fatal", "failed")


def crash_excerpt(text: str, n: int = CRASH_LINES) -> list[str]:
    """The first ``n`` lines (each cut to ``LINE_CHARS``) that say why a worker crashed, from
    its log's ``text``: a Python traceback's exception lines (after its last frame), else the
    first lines that name an error, else the log's last lines. [] for an empty log."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call last)")]
    if starts:
        # a traceback's frames are indented; the exception (its type and message) is not
        tail = lines[starts[-1] + 1:]
        exc = [ln for ln in tail if not ln.startswith((" ", "\t"))]
        if exc:
            return [ln[:LINE_CHARS] for ln in exc[:n]]
    errors = [ln for ln in lines if any(w in ln.lower() for w in _ERROR_WORDS)]
    return [ln[:LINE_CHARS] for ln in (errors[:n] if errors else lines[-n:])]


def input_crash(pool, names: list[str], logdir: Path) -> dict | None:
    """When every input producer named in ``names`` has exited by itself with a non-zero code
    and none ever completed an ok op (in any incarnation: ``pool.ok_count``), what each crash
    said: ``{"workers": {name: {"code": exit code, "crash": [lines]}}, "logs": "<logdir>/producer-*.log"}``;
    None otherwise (no producers, one still running, or one that wrote something)."""
    if not names:
        return None
    out: dict[str, dict] = {}
    for name in names:
        w = pool.workers.get(name)
        if w is None or not hasattr(w, "alive") or w.alive():  # never started, or still running
            return None
        code = w.proc.returncode
        if not code or getattr(pool, "ok_count", {}).get(name, 0):  # stopped cleanly, or it wrote something
            return None
        try:
            text = (Path(logdir) / f"{name}.log").read_text(errors="replace")
        except OSError:
            text = ""
        out[name] = {"code": code, "crash": crash_excerpt(text)}
    return {"workers": out, "logs": str(Path(logdir) / "producer-*.log")}
