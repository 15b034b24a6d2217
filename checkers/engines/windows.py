"""Checking a history window by window while it is written (soak runs, issue 25 section 3).

A *window* k of ``every_s`` seconds holds the events whose ``time`` is in
[k * every_s, (k + 1) * every_s). ``WindowTracker`` follows history.jsonl line by line (byte
offsets, constant state: one entry per process and per open window) and says when a window is
*closed*: no op invoked before its end is still open (its completion line has been read), or
the op has been open for ``grace_s`` (2 * every_s by default; the slice then reads it as
``info``, as the loader reads a missing completion), and ``settle_s`` have passed on the run's
clock since its end (a poll's invoke is written with its completion, with the invoke's time,
so a poll in flight at the window's end is not yet in the file). Its *slice* is the lines
from the first line of window k - 1 (one window of overlap, so an anomaly straddling a window
boundary lies inside some slice) up to the last line read when it closed: a byte range, read
with one seek (``read_slice``), so the cost of a window does not grow with the run.

``check_slice`` judges a slice with the *window finders* only: those for which every case
found on a contiguous slice of a history is a case of the whole history ("a case found stays
found"). The slice is read as follows (``slice_lines``): a completion whose process has no
invoke in the slice (its invoke lies before the slice) is dropped, so no orphan completion
makes the slice look broken; indices keep the file's numbers (examples name the file's lines),
so the loader does not check index gaps; an op whose completion lies after the slice reads as
``info`` (unknown), which no window finder counts against it. Below, "whole" is the history
the slice was cut from; a value written before the slice is never judged, because no window
finder judges a read by its writer unless the writer is in the slice.

* duplicate, inconsistent-offsets: observations (key, offset, value) from known-offset sends
  and polls. Every observation of the slice is one of the whole: a value at two offsets, or an
  offset with two values, in the slice is so in the whole.
* G1a: a polled value whose writing op completed ``fail``. The writer must be in the slice
  (a value written before it has no writer there: not judged); ``fail`` in the slice is the
  writer's completion line, the same in the whole (a cut op reads ``info``, never ``fail``).
* precommitted-read: a value polled and sent by one op: within one op, the same in the whole.
* poll-skip, nonmonotonic-poll (and int-): a consumer's consecutive reads of a key, compared by
  position in the key's committed log. The slice holds a contiguous run of each process's ops
  (a process has one op in flight, its lines are in op order, and a dropped completion drops
  its whole op), so two reads consecutive in the slice are consecutive in the whole, in the
  same segment unless an ``assign``/``seek``/``rewind`` before the slice started it (then the
  slice simply has no earlier read to compare with: a seek the slice does not see never makes
  a step). Across ops only ``ok`` reads are compared; an op cut at the slice's end is its
  process's last op in the slice. The slice's committed log is a subset of the whole's (an
  offset read in the slice, or held by an ok write or an info write whose value was read; the
  one exception, an offset held in the whole by a ``fail`` write, is itself G1a or
  inconsistent-offsets there), so positions keep their order: a step back or a repeat in the
  slice is one in the whole, and a committed offset between two reads in the slice is
  committed in the whole, so a skip stays a skip.
* nonmonotonic-send (and int-): a process's sends to a key in op order whose offsets do not
  grow. The slice holds a contiguous run of the process's sends; a send the slice cannot place
  (offset unknown, its value not read in the slice) only removes a comparison: if A then C do
  not grow, then A, B, C do not grow somewhere in the whole.
* G0, G1c and their -process/-realtime variants (``cycle_cases``): every edge of the slice's
  graph is an edge or a path of edges of the same kinds in the whole: ww between two positions
  consecutive in the slice's log is a chain of ww edges through the positions between them in
  the whole; wr, process (consecutive ops of a process, none out of an ``info`` op) and
  realtime (A completed ok before B was invoked) edges are the same. So a cycle of the slice
  maps to a cycle of the whole with the same edge kinds, which the whole's search (each
  anomaly on its own, Elle) finds under the same name.
* eos-duplicate (``checkers.finders.pipeline.pipeline_window_cases``; it needs the run's ``pipeline``
  mapping, meta.json): a committed input record of the slice whose output key holds records
  carrying its value (``output // value_divisor``) written by two or more distinct ops that
  completed ``ok``. An op is ``ok`` in the slice only when its invoke and its completion are
  both there, and then it is the same op, ``ok``, in the whole (a process's lines are in op
  order; a cut op reads ``info``); ``info`` and ``fail`` writers are never counted. Every
  ``ok`` write is committed in the whole, so ``pipeline_cases`` (committed writer ops of the
  output key, grouped by the input value they carry; more than one is eos-duplicate) counts
  at least those writers for the same input value; the input record, and each writer's
  output record with a known offset, are in the whole's committed log, as the slice's log is
  a subset of it (the one exception, an offset held in the whole by a ``fail`` write or by
  another value, is G1a or inconsistent-offsets there). Not used: the whole check's count of
  output offsets (the ``ok`` writer ops are what a slice vouches for) and ``info`` writers
  whose value was read (an ``info`` of the slice may be ``fail`` in the whole).

Not window finders: lost-write and unseen (a write is lost only against reads after it, the
final drain), torn-transaction (the final drain), zombie-write (instances are ordered by their
``init``, which may lie before the slice), ``impossible_cycle_cases`` (a ww edge between
positions that are not adjacent in the whole bounds I(A) < C(B) directly, which the whole's
event graph, built from adjacent positions only, need not contain: a window could fail what
the final check passes), the rest of the pipeline check (eos-loss, offsets-ahead/-behind,
pipeline-stalled), the sink and app checks (inputs against outputs after the drain), and the
liveness reports stalled-lso, realtime-lag and unavailable (bounds over the whole run and its
end).

``python -m checkers.engines.windows HISTORY --start B --end B [--meta RUN_DIR] [--allowed NAME ...]``
judges one byte range and prints a JSON summary (``summary``); the harness runs it as a child
process with ``--meta`` the run folder (``read_meta``: its meta.json, written when the load
started, holds the pipeline mapping; an app with ``semantics: at-least-once`` allows
eos-duplicate, as in ``checkers.verdict.check``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import orjson

from ..history import load_history
from ..history.log import index
from ..finders.pipeline import pipeline_window_cases
from ..run import RunDir, RunMeta, Verdict
from ..verdict import FINDERS, fold, judgeable, malformed

#: the finders whose cases on a contiguous slice are cases of the whole history (module docstring)
WINDOW_FINDER_NAMES = ("duplicate_cases", "inconsistent_offsets_cases", "g1a_cases",
                       "poll_skip_cases", "nonmonotonic_poll_cases", "precommitted_read_cases",
                       "nonmonotonic_send_cases", "cycle_cases", "pipeline_window_cases")
#: FINDERS' window finders, then eos-duplicate's window form (checkers.finders.pipeline; it needs the
#: run's ``pipeline`` mapping: ``check_slice(meta=...)``, ``--meta``)
WINDOW_FINDERS = tuple(f for f in FINDERS if f[0] in WINDOW_FINDER_NAMES) + (
    ("pipeline_window_cases", pipeline_window_cases, lambda m: {"pipeline": m.pipeline_spec}),)
NS = 1_000_000_000
_COMPLETIONS = (b"ok", b"fail", b"info")


@dataclass(frozen=True)
class Window:
    """A closed window: ``k``; its times [start_ns, end_ns) since the run started; its slice,
    the byte range [slice_start, slice_end) of history.jsonl (from window k - 1's first line);
    ``events``: lines whose time falls in the window, as read when it closed."""

    k: int
    start_ns: int
    end_ns: int
    slice_start: int
    slice_end: int
    events: int


class WindowTracker:
    """Follows history.jsonl line by line; ``feed(line, end)`` takes one line (bytes) and the
    byte offset just after it, ``closed(now_ns)`` returns the windows that closed, in order.

    ``every_s`` > 0 (seconds); ``grace_s`` (default 2 * every_s): an op open that long no
    longer holds a window; ``settle_s`` (default min(every_s, 10)): how long after a window's
    end to wait for late poll lines. ``now_ns`` is the run's clock (the history's ``time``
    base); the largest ``time`` read counts too, so a finished file can be followed with
    ``now_ns=0`` and ``finish()``. State: per process its open invoke's time, per worker its
    latest process, per open window its first line and its count of events; nothing per event.
    """

    def __init__(self, every_s: float, grace_s: float | None = None, settle_s: float | None = None):
        if not every_s > 0:
            raise ValueError(f"every_s must be > 0, got {every_s}")
        self.every = int(every_s * NS)
        self.grace = int((2 * every_s if grace_s is None else grace_s) * NS)
        self.settle = int((min(every_s, 10.0) if settle_s is None else settle_s) * NS)
        self.pos = 0  # bytes read
        self.max_time = 0
        self.open: dict = {}  # process -> time of its invoke whose completion is not read yet
        self.workers: dict = {}  # worker name (an event's meta.worker) -> its latest process
        self.starts: dict[int, int] = {}  # window -> byte offset of its first line
        self.counts: dict[int, int] = {}  # window -> lines whose time falls in it
        self.next_k = 0
        self._started = 0  # windows below this have their first line

    def feed(self, line: bytes, end: int) -> None:
        """One line of the file (without or with its newline) ending at byte ``end``. A line
        that is not a JSON object with an integer ``time`` is skipped (the loader reports it)."""
        start, self.pos = self.pos, end
        try:
            ev = orjson.loads(line)
            t = ev["time"]
            if not isinstance(t, int) or isinstance(t, bool):
                return
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return
        k = max(0, t // self.every)
        while self._started <= k:  # windows with no line of their own start here too
            self.starts[self._started] = start
            self._started += 1
        if k >= self.next_k:
            self.counts[k] = self.counts.get(k, 0) + 1
        self.max_time = max(self.max_time, t)
        p = ev.get("process")
        if p == "nemesis":
            self._killed(ev)
            return
        if p is None:
            return
        meta = ev.get("meta")
        if isinstance(meta, dict) and isinstance(meta.get("worker"), str):
            self.workers[meta["worker"]] = p
        kind = ev.get("type")
        if kind == "invoke":
            self.open[p] = t
        elif kind in ("ok", "fail", "info"):
            self.open.pop(p, None)

    def _killed(self, ev: dict) -> None:
        """A client killed by the nemesis (``kill-client``'s completion, value ``{"client",
        "worker", "result": "killed ..."}``; ``worker``, the incarnation hit, is absent from
        histories before it was recorded) never completes its open op: it no longer holds a
        window (the loader reads it as ``info``). Without this every window of a run that kills
        clients waited the whole grace."""
        v = ev.get("value")
        if (ev.get("f") == "kill-client" and isinstance(v, dict)
                and str(v.get("result", "")).startswith("killed")):
            self.open.pop(self.workers.get(v.get("worker") or v.get("client")), None)

    def closed(self, now_ns: int = 0) -> list[Window]:
        """Windows closed by now (``now_ns``: the run's clock in ns), oldest first."""
        now = max(now_ns, self.max_time)
        out = []
        while True:
            end = (self.next_k + 1) * self.every
            if now < end + self.settle:
                break
            if any(t < end and now - t < self.grace for t in self.open.values()):
                break
            out.append(self._close(end))
        return out

    def finish(self) -> list[Window]:
        """The file is complete: every window up to its last line closes (a finished file's
        open ops read as ``info``)."""
        out = []
        while self.next_k * self.every <= self.max_time:
            out.append(self._close((self.next_k + 1) * self.every))
        return out

    def _close(self, end: int) -> Window:
        k = self.next_k
        first = self.starts.get(max(0, k - 1), self.starts.get(k, self.pos))
        w = Window(k, k * self.every, end, first, self.pos, self.counts.pop(k, 0))
        self.starts.pop(k - 2, None)  # no later slice starts there
        self.next_k += 1
        if self._started <= self.next_k:  # the next window has no line yet: it starts here
            self.starts.setdefault(k, self.pos)
        return w


def read_slice(path: str | Path, start: int, end: int) -> bytes:
    """Bytes [start, end) of ``path``: one seek, one read."""
    with open(path, "rb") as fh:
        fh.seek(start)
        return fh.read(max(0, end - start))


def slice_lines(data: bytes) -> tuple[list[bytes], int]:
    """The lines of a slice that the loader should read, and how many were dropped: a client
    completion whose process has no invoke earlier in the slice (its invoke lies before it).
    Blank lines are dropped; a line that does not parse is kept (the loader reports it)."""
    kept, dropped, seen = [], 0, set()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            ev = orjson.loads(line)
            p, kind = ev.get("process"), ev.get("type")
        except (orjson.JSONDecodeError, AttributeError):
            kept.append(line)
            continue
        if p != "nemesis" and isinstance(p, int) and p not in seen:
            if kind == "invoke":
                seen.add(p)
            elif kind in ("ok", "fail", "info"):
                dropped += 1
                continue
        kept.append(line)
    return kept, dropped


def check_slice(source: str | Path | bytes | Iterable[bytes], byte_range: tuple[int, int] | None = None,
                allowed: Iterable[str] = (), max_examples: int = 3,
                finders: tuple = WINDOW_FINDERS, meta: RunMeta | dict | None = None) -> tuple[Verdict, dict]:
    """Judge one slice of a history with the window finders (``finders``, default
    ``WINDOW_FINDERS``; entries shaped as ``checkers.verdict.FINDERS``').

    ``source``: a history.jsonl path with ``byte_range`` (start, end) in bytes (None: the whole
    file), the slice's bytes, or its lines. ``allowed``: the scenario's expected names.
    ``meta``: the run's meta.json (a RunMeta or a dict; None: defaults): its ``pipeline``
    mapping lets eos-duplicate be found (without it that finder finds nothing), and an app
    with ``semantics: at-least-once`` allows eos-duplicate, as ``checkers.verdict.check`` does;
    a meta field that does not validate is an unknown reason.
    Returns (Verdict, facts): the verdict as ``checkers.verdict.fold`` makes it (``valid``
    False when a window finder found a name not allowed; "unknown" when the slice holds no
    completed read or write, is not well-formed, or a finder crashed), and facts ``lines``
    (read), ``dropped`` (completions of ops invoked before the slice), ``ops``. Raises
    OSError when the file cannot be read.
    """
    if isinstance(source, (str, Path)):
        start, end = byte_range if byte_range is not None else (0, os.path.getsize(source))
        data = read_slice(source, start, end)
    elif isinstance(source, bytes):
        data = source
    else:
        data = b"\n".join(source)
    lines, dropped = slice_lines(data)
    del data
    meta, meta_problems = RunMeta.coerce(meta)
    allowed = set(allowed)
    if meta.app and meta.app.get("semantics") == "at-least-once":  # as check(): duplicates declared
        allowed.add("eos-duplicate")
    with tempfile.TemporaryDirectory(prefix="eosc-window-") as tmp:
        path = Path(tmp) / "slice.jsonl"
        with open(path, "wb") as fh:
            for line in lines:
                fh.write(line)
                fh.write(b"\n")
        n_lines = len(lines)
        del lines
        h = load_history(path, index_gaps=False)
        unknown = meta_problems + judgeable(h)
        try:  # shared by the finders; a failure here is reported by each of them
            index(h)
        except Exception:  # noqa: BLE001
            pass
        results = []
        for fname, finder, kw in finders:
            try:
                results.append(finder(h, **(kw(meta) if kw else {})))
            except Exception as e:  # noqa: BLE001 - a crash is an unknown reason, as in check()
                results.append(f"finder {fname} crashed: {type(e).__name__}: {e}")
        stats = {"events": h.n_events, "ops": h.ops.height}
        v = fold(results, unknown, meta=meta, allowed=sorted(set(allowed)),
                 malformed_n=malformed(h), stats=stats, max_examples=max_examples)
    return v, {"lines": n_lines, "dropped": dropped, "ops": h.ops.height}


def summary(v: Verdict, facts: dict) -> dict:
    """What windows.jsonl keeps of a window's verdict: valid, anomaly counts, failing names,
    the first example's explanation of each failing name, the first unknown reasons."""
    return {"valid": v.valid, "anomaly_counts": v.anomaly_counts, "failing": v.failing,
            "examples": {n: v.anomalies[n][0].get("explanation") for n in v.failing if v.anomalies.get(n)},
            "unknown_reasons": [r[:300] for r in v.unknown_reasons[:3]], **facts}


def read_meta(meta: str | Path | None, history: str | Path) -> tuple[RunMeta, list[str]]:
    """(RunMeta, problems) of the window child: a run folder's meta.json as
    ``RunDir.read_meta`` reads it (absent: the defaults, so no pipeline mapping; unreadable:
    the defaults and a problem). ``meta``: the run folder or its meta.json; None: the folder
    of ``history``."""
    path = Path(history).parent if meta is None else Path(meta)
    if path.name == RunDir.META and not path.is_dir():
        path = path.parent
    return RunDir(path).read_meta()


def main(argv: list[str] | None = None) -> int:
    """The child process of a window check: prints ``summary`` as one JSON line. Exit 0
    whatever the verdict; non-zero only when the slice could not be checked."""
    ap = argparse.ArgumentParser(prog="python -m checkers.engines.windows", description=main.__doc__)
    ap.add_argument("history")
    ap.add_argument("--start", type=int, required=True, help="first byte of the slice")
    ap.add_argument("--end", type=int, required=True, help="byte after the slice's last line")
    ap.add_argument("--allowed", nargs="*", default=[], help="the scenario's expected names")
    ap.add_argument("--meta", help="the run's meta.json or its folder (the pipeline mapping, for "
                                   "eos-duplicate; default: the meta.json beside HISTORY, if any)")
    a = ap.parse_args(argv)
    t0 = time.process_time()
    meta, problems = read_meta(a.meta, a.history)
    v, facts = check_slice(a.history, (a.start, a.end), allowed=a.allowed, meta=meta)
    v.mark_unknown(*problems)
    out = summary(v, facts)
    out["cpu_s"] = round(time.process_time() - t0, 2)
    sys.stdout.write(orjson.dumps(out).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
