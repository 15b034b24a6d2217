"""The report's Application section: the ``app`` workload's instances and counts
(docs/your-pipeline.md). Pure functions of the checkers' History, the verdict's ``stats["app"]``
(checkers.finders.app_end_to_end.app_stats) and meta.json's ``app``: plain data and one inline SVG out.

An *instance lane* is one app worker name (``app-0`` .. ``app-<N-1>``, a zombie's replacement
``app-0.z1`` its own lane): the worker's history processes change when the nemesis kills and
restarts it, its name does not. On a lane:

* a *segment* per run of the application, from its ``app-start`` ok to its ``app-exit`` ok
  (exit code, ``by``: self | stop | restart); a worker SIGKILLed by ``kill-client`` records
  no ``app-exit``, so its segment ends at the kill (``end == "killed"``); one still running
  when the history ends runs to the end (``end == "running"``);
* *marks*: the nemesis's client faults on this worker (kill-client, restart-client,
  stop-client, start-client, pause-client, resume-client, zombie, resume-zombie) and failed
  starts, at the time of the nemesis action (a kill: when it was done, the others: when begun);
* *pauses*: SIGSTOP windows (pause-client to resume-client, zombie to resume-zombie, or to
  the final heal, which ends every fault still active).

The per-partition counts are the checker's own (``app_cases``, ``checkers.history.log.writes``) so the
report and the verdict agree.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl
from markupsafe import Markup, escape

from .analysis import FaultWindow, fmt_duration, fmt_seconds
from .charts import fault_color
from .svgplot import Panel

if TYPE_CHECKING:
    from checkers.history import History

#: the nemesis's client fault fs -> the mark's kind
CLIENT_FS = {"kill-client": "kill", "restart-client": "restart", "stop-client": "stop",
             "start-client": "start", "pause-client": "pause", "resume-client": "resume",
             "zombie": "zombie", "resume-zombie": "resume-zombie"}
PAUSE_OPENERS = {"pause-client": "resume-client", "zombie": "resume-zombie"}
LIFECYCLE_FS = ("app-start", "app-exit")

LANE_PITCH, BAR_H = 24, 12  # px per lane, px of a segment bar
SEG_COLOR = "#4a7fb5"
EXIT_COLORS = {"ok": "#2e7d32", "failed": "#c62828", "stopped": "#6e7781", "killed": "#c62828",
               "running": "#4a7fb5"}
MARK_COLORS = {"kill": "#c62828", "stop": "#d97706", "restart": "#1f5fa8", "start": "#1f5fa8",
               "pause": "#b26a00", "resume": "#b26a00", "zombie": "#7b3fb5",
               "resume-zombie": "#7b3fb5", "start-failed": "#c62828"}
PAUSE_COLORS = {"pause-client": "#d97706", "zombie": "#7b3fb5"}


@dataclass
class Segment:
    """One run of the application: ns since the run's start; ``end_ns`` None when it was still
    running at the end of the history. ``end``: exit | killed | running | unknown (a new start
    with no exit before it); ``code`` (negative: a signal) and ``by`` only for an exit."""

    start_ns: int
    end_ns: int | None
    process: int
    start_index: int  # the app-start's invoke index: its history row's anchor
    pid: Any = None
    end: str = "running"
    code: int | None = None
    by: str | None = None
    end_index: int | None = None

    @property
    def outcome(self) -> str:
        """ok (exited 0 by itself), failed (non-zero by itself), stopped (by the harness),
        killed, running or unknown."""
        if self.end != "exit":
            return self.end
        if self.by in ("stop", "restart"):
            return "stopped"
        return "ok" if self.code == 0 else "failed"

    def describe(self, run_end_ns: int) -> str:
        end = self.end_ns if self.end_ns is not None else run_end_ns
        how = {"exit": f"exited with code {self.code} ({self.by})",
               "killed": "killed (SIGKILL, no exit recorded)",
               "running": "still running when the history ends",
               "unknown": "no exit recorded before the next start"}.get(self.end, self.end)
        return (f"process {self.process}, pid {self.pid}: {fmt_seconds(self.start_ns)} to "
                f"{fmt_seconds(end)} ({fmt_duration(end - self.start_ns)}), {how}")


@dataclass
class Mark:
    """A nemesis action on an instance (or a failed start) at ``t_ns``; ``index`` the history
    index of its first event."""

    t_ns: int
    kind: str  # a value of CLIENT_FS, or start-failed
    label: str
    index: int | None = None


@dataclass
class Pause:
    """A SIGSTOP window on an instance: ``end_ns`` None when never resumed."""

    start_ns: int
    end_ns: int | None
    f: str  # pause-client | zombie
    label: str


@dataclass
class InstanceLane:
    name: str  # the worker: app-0, app-0.z1, ...
    instance: int | None
    segments: list[Segment] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)

    @property
    def restarts(self) -> int:
        return max(0, len(self.segments) - 1)


def _instance_of(name: str) -> int | None:
    m = re.match(r"app-(\d+)", name)
    return int(m.group(1)) if m else None


def _lifecycle(h: "History") -> list[tuple[int, int, str, str, str, dict, int, str | None]]:
    """(time ns, index, worker, f, type, value, process, error name) of every app-start / app-exit op's
    completion (its invoke when never completed), in time order."""
    o = h.ops.filter(pl.col("f").cast(pl.Utf8).is_in(LIFECYCLE_FS))
    out = []
    for r in o.iter_rows(named=True):
        x = h.extras.get(int(r["op"])) or {}
        worker = str((x.get("meta") or {}).get("worker") or f"p{r['process']}")
        value = x.get("completion_value") if r["complete_index"] is not None else None
        if not isinstance(value, dict):  # a failed start's, or a malformed completion value
            value = x.get("value") if isinstance(x.get("value"), dict) else {}
        t = r["complete_time"] if r["complete_time"] is not None else r["invoke_time"]
        out.append((int(t or 0), int(r["invoke_index"]), worker, str(r["f"]), str(r["type"]),
                    value, int(r["process"]), r["error"]))
    return sorted(out, key=lambda e: (e[0], e[1]))


def _client_actions(nemesis: list[dict]) -> list[tuple[str, str, dict, dict | None]]:
    """(f, client, begin event, end event or None) of the nemesis's client faults: each action
    is two info events of one f and client (docs/history.md "Nemesis")."""
    out: list[tuple[str, str, dict, dict | None]] = []
    pending: dict[tuple[str, str], dict] = {}
    for ev in nemesis:
        f, v = str(ev.get("f")), ev.get("value")
        if f not in CLIENT_FS or not isinstance(v, dict) or not isinstance(v.get("client"), str):
            continue
        k = (f, v["client"])
        if k in pending:
            out.append((f, v["client"], pending.pop(k), ev))
        else:
            pending[k] = ev
    out += [(f, c, ev, None) for (f, c), ev in pending.items()]
    return out


def _t(ev: dict | None) -> int | None:
    t = (ev or {}).get("time")
    return int(t) if isinstance(t, (int, float)) else None


def instance_lanes(h: "History", run_end_ns: int) -> list[InstanceLane]:
    """The app's instances as lanes (module docstring), ordered by instance number then name;
    [] when the history has no app lifecycle op and no client fault on an ``app-*`` worker."""
    lanes: dict[str, InstanceLane] = {}

    def lane(name: str) -> InstanceLane:
        if name not in lanes:
            lanes[name] = InstanceLane(name, _instance_of(name))
        return lanes[name]

    # (time, order, index, worker, kind, payload): a kill sorts at its end, when it was done,
    # so an app-exit the supervisor saw first (a container's 137) closes the segment itself
    events: list[tuple[int, int, int, str, str, Any]] = []
    for t, idx, worker, f, typ, value, proc, err in _lifecycle(h):
        events.append((t, 0, idx, worker, f"{f}:{typ}", (value, proc, err)))
    for f, client, begin, end in _client_actions(h.nemesis):
        # the incarnation the fault hit (a zombie's replacement), where the completion names it:
        # ``worker`` (client faults), ``paused`` / ``resumed`` (zombie, resume-zombie)
        done = (end or {}).get("value") or {}
        hit = done.get("worker") or done.get("paused") or done.get("resumed")
        client = hit if isinstance(hit, str) and hit else client
        if not client.startswith("app-"):
            continue
        t0, t1 = _t(begin), _t(end)
        at = (t1 if f == "kill-client" and t1 is not None else t0) or 0
        events.append((at, 1, int(begin.get("index") or 0), client, f, (begin, end)))
    for t, _o, idx, worker, kind, payload in sorted(events, key=lambda e: e[:3]):
        ln = lane(worker)
        open_seg = ln.segments[-1] if ln.segments and ln.segments[-1].end_ns is None else None
        if kind == "app-start:ok":
            value, proc, _err = payload
            if open_seg:
                open_seg.end_ns, open_seg.end = t, "unknown"
            ln.segments.append(Segment(t, None, proc, idx, value.get("pid")))
        elif kind.startswith("app-start:"):  # fail: could not start; info: never completed
            err = payload[2]
            what = "could not be started" if kind.endswith(":fail") else "start never completed"
            ln.marks.append(Mark(t, "start-failed", f"the application {what}" + (f": {err}" if err else ""), idx))
        elif kind.startswith("app-exit:"):
            value, proc, _err = payload
            if open_seg is None:  # an exit with no start seen: a zero-length run at the exit
                open_seg = Segment(t, None, proc, idx, value.get("pid"))
                ln.segments.append(open_seg)
            code = value.get("code")
            open_seg.end_ns, open_seg.end, open_seg.end_index = t, "exit", idx
            open_seg.code = code if isinstance(code, int) else None
            open_seg.by = str(value.get("by")) if value.get("by") is not None else None
        else:
            begin, end = payload
            result = (end or {}).get("value", {}).get("result")
            label = f"{kind} {worker} at {fmt_seconds(t)}" + (f": {result}" if result else "")
            ln.marks.append(Mark(t, CLIENT_FS[kind], label, idx))
            if kind == "kill-client" and open_seg is not None:
                open_seg.end_ns, open_seg.end = t, "killed"
            if kind in PAUSE_OPENERS:
                # paused when the action is done; the zombie's replacement is its own lane
                repl = ((end or {}).get("value") or {}).get("replacement")
                lbl = (f"paused ({kind})" + (f"; replacement {repl}" if repl else ""))
                ln.pauses.append(Pause(_t(end) or t, None, kind, lbl))
            elif kind in PAUSE_OPENERS.values():
                for p in ln.pauses:
                    if p.end_ns is None and PAUSE_OPENERS[p.f] == kind:
                        p.end_ns = _t(end) or t
    heal = _load_end(h.nemesis)
    for ln in lanes.values():  # the final heal ends every fault still active (nemesis teardown)
        for p in ln.pauses:
            if p.end_ns is None and heal is not None and heal >= p.start_ns:
                p.end_ns, p.label = heal, p.label + ", resumed by the final heal"
    return sorted(lanes.values(), key=lambda ln: (ln.instance is None, ln.instance or 0, ln.name))


def _fmt_ms(v: Any) -> str:
    return fmt_duration(v * 1e6) if isinstance(v, (int, float)) and not isinstance(v, bool) else "–"


def partition_rows(h: "History", stats_app: dict, app_meta: dict) -> dict[str, list[dict]]:
    """Per-partition counts: ``{"inputs": [{"key", "committed", "aborted", "lost", "duplicated",
    "missing", "stalled"}], "outputs": [{"key", "records", "aborted_reads", "phantoms"}]}``, each list with
    a last row of totals (key "all") when it has rows. committed / records come from
    ``stats_app`` (``inputs`` / ``outputs``: key -> count); aborted (a write of a failed txn no
    reader saw), lost, duplicated, missing (no output, and the app never caught up: loss or
    stall), stalled (in the output later than lag_bound_s, or only in the final drain) and the
    output-side anomalies are counted on ``h`` with the checker's definitions
    (``app_meta``: meta.json's ``app``, its input_keys, semantics, caught_up)."""
    from checkers.finders.app_end_to_end import app_cases
    from checkers.history.log import writes

    in_keys = list(app_meta.get("input_keys") or []) or sorted((stats_app.get("inputs") or {}))
    out_keys = list(app_meta.get("output_keys") or []) or sorted((stats_app.get("outputs") or {}))
    ins = {k: {"key": k, "committed": int((stats_app.get("inputs") or {}).get(k, 0)), "aborted": 0,
               "lost": 0, "duplicated": 0, "missing": 0, "stalled": 0} for k in in_keys}
    outs = {k: {"key": k, "records": int((stats_app.get("outputs") or {}).get(k, 0)),
                "aborted_reads": 0, "phantoms": 0} for k in out_keys}
    if app_meta and not app_meta.get("match_error"):
        kid = [i for i, k in enumerate(h.keys) if k in ins]
        w = writes(h).filter(pl.col("key").is_in(kid) & (pl.col("type") == "fail") & ~pl.col("read"))
        for k, n in w.group_by("key").len().iter_rows():
            ins[h.keys[k]]["aborted"] = int(n)
        column = {"eos-loss": "lost", "eos-duplicate": "duplicated"}
        named = _named_inputs(h)
        for c in app_cases(h, app_meta):
            a = c.get("anomaly")
            row = ins.get(c.get("key")) if c.get("key") is not None else None
            if row is not None and a in column:
                row[column[a]] += 1
            elif row is not None and a == "app-stalled":
                # never in the output: loss or stall (the checker cannot tell); else late
                row["missing" if c.get("value") not in named else "stalled"] += 1
            elif a in ("eos-aborted-read", "eos-phantom"):
                col = "aborted_reads" if a == "eos-aborted-read" else "phantoms"
                for okey, _off in c.get("outputs") or []:
                    outs.setdefault(okey, {"key": okey, "records": 0, "aborted_reads": 0,
                                           "phantoms": 0})[col] += 1

    def with_total(rows: list[dict]) -> list[dict]:
        if not rows:
            return rows
        total = {k: sum(r[k] for r in rows) for k in rows[0] if k != "key"}
        return [*rows, {"key": "all", **total}]
    return {"inputs": with_total(list(ins.values())), "outputs": with_total(list(outs.values()))}


def _named_inputs(h: "History") -> set[int]:
    """The input values some output record names: every ok ``app-poll``'s
    ``[["poll", {key: [[offset, value], ...]}]]`` (docs/history.md), final drain included."""
    out: set[int] = set()
    f, typ = h.ops["f"].cast(pl.Utf8), h.ops["type"].cast(pl.Utf8)
    for op, x in h.extras.items():
        if f[op] != "app-poll" or typ[op] != "ok" or not isinstance(x.get("completion_value"), list):
            continue
        for mop in x["completion_value"]:
            if isinstance(mop, list) and len(mop) == 2 and isinstance(mop[1], dict):
                out.update(p[1] for recs in mop[1].values() if isinstance(recs, list)
                           for p in recs if isinstance(p, list) and len(p) == 2 and isinstance(p[1], int))
    return out


def catch_up_summary(app_meta: dict) -> dict[str, Any] | None:
    """meta.json's ``app.catch_up`` (harness.workloads.app settle) for the template:
    ``{"caught_up": bool | None, "ended": "covered" | "quiet" | "bound" | ..., "waited":
    "1.62 s", "covered", "inputs", "text"}``; None when the run recorded none."""
    cu = app_meta.get("catch_up")
    if not isinstance(cu, dict):
        return None
    ended = str(cu.get("ended") or "?")
    why = {"covered": "every committed input was in the output",
           "quiet": "no new output for quiet_s", "bound": "catch_up_s ran out"}.get(ended, ended)
    waited = cu.get("waited_s")
    waited_txt = f"{waited:g} s" if isinstance(waited, (int, float)) else "?"
    return {"caught_up": cu.get("caught_up"), "ended": ended, "waited": waited_txt,
            "covered": cu.get("covered"), "inputs": cu.get("inputs"),
            "text": f"{cu.get('covered', '?')} of {cu.get('inputs', '?')} committed inputs in the "
                    f"output after {waited_txt}: ended '{ended}' ({why})"}


def lag_rows(stats_app: dict, app_meta: dict) -> list[tuple[str, str]]:
    """``stats_app["lag_ms"]`` (p50, p99, max: ms from an input's commit to its first
    observation in the output; n: inputs measured) as (name, text) rows, and the bound."""
    q = stats_app.get("lag_ms") or {}
    rows = [(name, _fmt_ms(q.get(name))) for name in ("p50", "p99", "max")]
    rows.append(("n", f"{q['n']:,}" if isinstance(q.get("n"), int) else "–"))
    bound = app_meta.get("lag_bound_s")
    rows.append(("bound (lag_bound_s)", f"{bound:g} s" if isinstance(bound, (int, float)) else "none"))
    return rows


def _mark_glyph(kind: str, x: float, y: float) -> str:
    """A mark's glyph centred at (x, y): a cross for a kill, a square for a stop, a triangle
    for a (re)start, a bar for pause/zombie and their resumes."""
    c = MARK_COLORS.get(kind, "#555")
    if kind in ("kill", "start-failed"):
        return (f'<path d="M{x - 4:.1f},{y - 4:.1f} l8,8 m0,-8 l-8,8" stroke="{c}" '
                f'stroke-width="2.2"/>')
    if kind == "stop":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{c}"/>'
    if kind in ("restart", "start"):
        return f'<path d="M{x - 3.5:.1f},{y - 4.5:.1f} l7,4.5 l-7,4.5 z" fill="{c}"/>'
    return (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 6:.1f}" y2="{y + 6:.1f}" stroke="{c}" '
            f'stroke-width="2"/>')


def lanes_svg(lanes: list[InstanceLane], windows: list[FaultWindow], run_end_ns: int,
              load_end_ns: int | None = None) -> Markup:
    """The instance lanes on the run's time axis (svgplot.Panel: the same width, margins and
    ticks as the report's other time plots); the other fault windows (brokers, network)
    shaded behind every lane; a dashed line where the load ended (the final heal). A segment
    links to its app-start's history row."""
    n = max(len(lanes), 1)
    p = Panel(top=18, height=n * LANE_PITCH, t0=0, t1=max(run_end_ns, 1), y0=0, y1=n)
    out = [f'<svg class="app-lanes" width="{p.right + 24:.0f}" height="{p.bottom + 30:.0f}" '
           'role="img" aria-label="application instances over time"><g font-size="11">']
    out += p.frame("")  # the section's heading names the plot; its top edge holds fault labels
    # faults on the app's own workers are drawn on their lanes; the rest behind every lane
    other = [w for w in windows if not str(w.target).startswith("app-")]
    out += p.fault_shading(other, run_end_ns)
    out += [f'<text x="{p.x(w.start_ns) + 2:.1f}" y="{p.top - 4}" font-size="10" '
            f'fill="{fault_color(w.f)}">{escape(w.label[:20])}</text>' for w in other]
    for i, ln in enumerate(lanes):
        y = p.top + i * LANE_PITCH + (LANE_PITCH - BAR_H) / 2
        mid = y + BAR_H / 2
        out.append(f'<text x="{p.left - 6}" y="{mid + 4:.1f}" text-anchor="end" fill="#333">'
                   f'{escape(ln.name)}</text>')
        for pz in ln.pauses:
            end = pz.end_ns if pz.end_ns is not None else run_end_ns
            x0, x1 = p.x(pz.start_ns), p.x(end)
            out.append(f'<rect x="{x0:.1f}" y="{y - 3:.1f}" width="{max(x1 - x0, 1.5):.1f}" '
                       f'height="{BAR_H + 6}" fill="{PAUSE_COLORS.get(pz.f, "#b26a00")}" '
                       f'fill-opacity="0.35"><title>{escape(pz.label)}: {fmt_seconds(pz.start_ns)} to '
                       f'{fmt_seconds(pz.end_ns) if pz.end_ns is not None else "end of run"}'
                       f'</title></rect>')
        for s in ln.segments:
            end = s.end_ns if s.end_ns is not None else run_end_ns
            x0, x1 = p.x(s.start_ns), p.x(end)
            title = escape(s.describe(run_end_ns))
            out.append(f'<a href="#op-{s.start_index}"><rect x="{x0:.1f}" y="{y:.1f}" '
                       f'width="{max(x1 - x0, 1.5):.1f}" height="{BAR_H}" fill="{SEG_COLOR}" '
                       f'fill-opacity="{0.45 if s.end == "running" else 0.8}"><title>{title}</title>'
                       f'</rect></a>')
            if s.end == "exit":
                c = EXIT_COLORS[s.outcome]
                out.append(f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="{y - 2:.1f}" y2="{y + BAR_H + 2:.1f}" '
                           f'stroke="{c}" stroke-width="3"><title>{title}</title></line>')
                if s.outcome == "failed":
                    out.append(f'<text x="{x1 + 3:.1f}" y="{y - 1:.1f}" fill="{c}" font-size="10">'
                               f'exit {s.code}</text>')
        for m in ln.marks:
            out.append(f'<g><title>{escape(m.label)}</title>{_mark_glyph(m.kind, p.x(m.t_ns), mid)}</g>')
    if load_end_ns is not None:
        x = p.x(load_end_ns)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{p.top}" y2="{p.bottom}" stroke="#333" '
                   f'stroke-dasharray="4 3"><title>the load ends (final heal) at '
                   f'{fmt_seconds(load_end_ns)}: catch-up, then the app is stopped</title></line>'
                   f'<text x="{x + 3:.1f}" y="{p.top - 4}" fill="#333" font-size="10">load ends</text>')
    out += p.time_ticks()
    out.append("</g></svg>")
    return Markup("".join(out))


def _load_end(nemesis: list[dict]) -> int | None:
    """The time of the final heal's completion: the end of the load (docs/history.md)."""
    heals = [e for e in nemesis if e.get("f") == "heal"]
    return _t(heals[-1]) if heals else None


def app_section(h: "History", stats_app: dict | None, app_meta: dict | None,
                windows: list[FaultWindow], run_end_ns: int) -> dict[str, Any] | None:
    """Everything the template's Application section shows, or None for a run that is not
    an app run (no ``stats_app``, no ``app_meta`` and no app lifecycle op in ``h``).

    stats_app: the verdict's ``stats["app"]`` ({"inputs", "outputs", "lag_ms"}); app_meta:
    meta.json's ``app``; windows: the report's fault windows (analysis.fault_windows);
    run_end_ns: the history's last time. Returns {"svg", "lanes" (a row per instance: name,
    starts, restarts, exits "code (by)" list, kills, stops, pauses), "inputs", "outputs"
    (partition_rows), "catch_up" (catch_up_summary), "lag" (lag_rows), "semantics",
    "drain_complete", "match_error"}."""
    stats_app, app_meta = stats_app or {}, app_meta or {}
    lanes = instance_lanes(h, run_end_ns)
    if not stats_app and not app_meta.get("input_keys") and not lanes:
        return None
    rows = []
    for ln in lanes:
        kinds = defaultdict(int)
        for m in ln.marks:
            kinds[m.kind] += 1
        rows.append({"name": ln.name, "starts": len(ln.segments), "restarts": ln.restarts,
                     "exits": [f"{s.code} ({s.by})" for s in ln.segments if s.end == "exit"],
                     "killed": sum(s.end == "killed" for s in ln.segments),
                     "faults": ", ".join(f"{k} ×{v}" for k, v in sorted(kinds.items())),
                     "running": any(s.end == "running" for s in ln.segments)})
    parts = partition_rows(h, stats_app, app_meta)
    return {"svg": lanes_svg(lanes, windows, run_end_ns, _load_end(h.nemesis)) if lanes else None,
            "lanes": rows, "inputs": parts["inputs"], "outputs": parts["outputs"],
            "catch_up": catch_up_summary(app_meta), "lag": lag_rows(stats_app, app_meta),
            "semantics": app_meta.get("semantics"), "drain_complete": app_meta.get("drain_complete"),
            "match_error": app_meta.get("match_error"), "batch": batch_rows(app_meta)}


def unfinished_state(name: str, last_exit: Any) -> str:
    """``name`` and, when meta ``app.batch.last_exit`` knows it, how that instance last exited:
    ``app-1 (last exit code 3, running again)``, ``app-1 (as app-1.z1, running, no exit)``."""
    e = last_exit.get(name) if isinstance(last_exit, dict) and isinstance(last_exit.get(name), dict) else None
    if e is None:
        return name
    parts = [f"as {e['worker']}"] if e.get("worker") and e.get("worker") != name else []
    code = e.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        parts.append(f"last exit code {code}" + (", running again" if e.get("running") else ""))
    else:
        parts.append("running, no exit" if e.get("running") else "not running, no exit seen")
    return f"{name} ({', '.join(parts)})"


def batch_rows(app_meta: dict) -> list[tuple[str, str]]:
    """(name, text) rows of meta.json's ``app.preload`` (input.preload), ``app.batch`` (done:
    exit: did every instance exit 0) and ``app.verify`` (the user's verifier), those present."""
    rows = []
    pre = app_meta.get("preload")
    if isinstance(pre, dict):
        rows.append(("preload", f"{pre.get('records', '?'):,} records by {pre.get('producers', '?')} producer(s) in "
                                f"{pre.get('s', '?')} s before any instance started"
                                + ("" if pre.get("complete", True) else " (did not complete)")))
    b = app_meta.get("batch")
    if isinstance(b, dict):
        rows.append(("done: exit", f"every instance exited 0 ({b.get('waited_s')} s after the load)" if b.get("done")
                     else f"not done after {b.get('waited_s')} s: "
                          + ", ".join(unfinished_state(n, b.get("last_exit")) for n in b.get("not_done") or [])))
    v = app_meta.get("verify")
    if isinstance(v, dict):
        what = (f"could not judge: {v['error']}" if v.get("error") else
                f"{v.get('count', 0)} finding(s) in {v.get('seconds', '?')} s on {v.get('inputs', '?')} committed "
                f"inputs and {v.get('outputs', '?')} output records" + (f"; stats {v['stats']}" if v.get("stats") else ""))
        rows.append(("output.verify", f"{' '.join(map(str, v.get('command') or []))}: {what}"))
    return rows
