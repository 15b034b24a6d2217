"""Per-key offset plots, after Jepsen's Kafka "orders" plots: for each key an anomaly example names,
every record sent to or polled from that key as a point at (time, offset), one colour per process,
sends and polls in different shapes, aborted writes as crosses, and the records the anomaly
examples name ringed in red and annotated. A duplicate shows as one value at two heights, a gap
as a missing height, an aborted read as a cross with poll dots at its height.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from markupsafe import Markup, escape

from .analysis import FaultWindow, fmt_seconds
from .charts import WIDTH
from .records import FAIL, INFO, POLL, SEND, Records
from .svgplot import Panel, dedupe_pixels, lanes, process_color

MAX_KEY_PLOTS = 6  # keys plotted; the others are listed
MAX_POINTS = 3000  # points per plot after merging those on the same pixel; beyond, thinned
MAX_RINGS = 400  # highlighted records per plot
MAX_LABELS = 8  # annotations per plot
MAX_LABEL_LANES = 4  # rows of annotations above a plot; labels that do not fit are left out
ZOOM_SPAN = 120  # offsets: a key whose log is longer than this also gets a zoomed plot
ZOOM_HALF = 20  # offsets either side of the first anomaly in the zoom
PLOT_H = 300
MAX_LEGEND = 24  # processes named under a plot
LABEL_H = 16
HIGHLIGHT = "#d00000"

# point styles
S_SEND, S_ABORT, S_INFO, S_POLL, S_FINAL = range(5)
STYLE_NAMES = {S_SEND: "send (ok)", S_ABORT: "aborted write (txn fail)",
               S_INFO: "send, outcome unknown (info)", S_POLL: "poll", S_FINAL: "final-drain poll"}
# op-ref fields and other fields whose values are not records of the example's key
_SKIP = {"writer", "reader", "ops", "op", "prev_op", "fence", "observed_by", "explanation",
         "anomaly", "nemesis", "steps_count", "from_op", "to_op", "lag_ms", "stalled_ms",
         "process", "pos", "component_size", "count", "skipped_count", "evidence",
         "transactional_id", "f", "seconds", "start_ns", "end_ns", "writers", "available_ns"}


@dataclass
class Mark:
    """A record an anomaly example names: by value, or by offset where it names no value."""

    anomaly: str
    key: str
    value: int | None
    offset: int | None
    allowed: bool
    role: str = ""  # context the example gives, e.g. "later read" for lost-write's max_read

    @property
    def label(self) -> str:
        return f"{self.anomaly} ({self.role})" if self.role else self.anomaly


# example fields that hold context records rather than the anomalous one, and how to call them
CONTEXT_FIELDS = {"max_read": "later read", "stuck_at": "stuck at", "next": "waited for"}


@dataclass
class KeyPlot:
    key: str
    anomalies: list[str]
    allowed_only: bool
    svgs: list[tuple[str, Markup]]  # (caption, svg)
    processes: list[tuple[str, str]]  # (label, colour)
    notes: list[str] = field(default_factory=list)
    anchor: str = ""


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def marks_of(anomaly: str, example: Any, allowed: bool) -> list[Mark]:
    """The (key, value | offset) records an example names, wherever they sit in it: its own key
    and value/values/offset, and nested from/to/next/stuck_at/skipped/visible/missing/steps
    entries (with their own key where they name one)."""
    out: list[Mark] = []

    def walk(d: Any, key: str | None, depth: int, role: str = "") -> None:
        if depth > 3:
            return
        if isinstance(d, list):
            for x in d[:50]:
                if isinstance(x, dict):
                    walk(x, key, depth + 1, role)
            return
        if not isinstance(d, dict):
            return
        k = d["key"] if isinstance(d.get("key"), str) else key
        values = [v for v in (_int(d.get("value")), _int(d.get("next_value"))) if v is not None]
        if isinstance(d.get("values"), list):
            values += [v for v in map(_int, d["values"]) if v is not None]
        offsets = [o for o in [_int(d.get("offset"))] if o is not None]
        if isinstance(d.get("offsets"), list):
            offsets += [o for o in map(_int, d["offsets"]) if o is not None]
        if k is not None:
            if values:
                off = offsets[0] if len(offsets) == 1 and len(values) == 1 else None
                out.extend(Mark(anomaly, k, v, off, allowed, role) for v in values)
            else:
                out.extend(Mark(anomaly, k, None, o, allowed, role) for o in offsets)
        for name, v in d.items():
            if name in _SKIP or name in ("key", "value", "values", "offset", "offsets",
                                         "next_value"):
                continue
            if isinstance(v, (dict, list)):
                walk(v, k, depth + 1, CONTEXT_FIELDS.get(name, role))

    walk(example, None, 0)
    return out


@dataclass
class Stall:
    """A stalled-lso window: a consumer waited on a key from start_ns to end_ns."""

    key: str
    process: Any
    start_ns: int
    end_ns: int
    label: str
    allowed: bool
    kind: str = "stalled-lso"  # or "unavailable" (no key, no process: a window of the whole run)


def unavailable_windows(examples: list[Any], allowed: bool) -> list[Stall]:
    """unavailable examples ({f, start_ns, end_ns, seconds}) as windows."""
    out = []
    for ex in examples:
        if not isinstance(ex, dict):
            continue
        a, b = _int(ex.get("start_ns")), _int(ex.get("end_ns"))
        if a is None or b is None:
            continue
        f = ex.get("f", "")
        out.append(Stall("", None, a, b, f"unavailable {f} ({(b - a) / 1e9:.1f} s)".replace(
            "  ", " "), allowed, "unavailable"))
    return out


def key_plots(rec: Records, marks: list[Mark], windows: list[FaultWindow], run_end_ns: int,
              stalls: list[Stall] | None = None) -> tuple[list[KeyPlot], list[str]]:
    """Plots for the keys the marks name, those with anomalies that fail the run first; and the
    keys left out beyond MAX_KEY_PLOTS."""
    by_key: dict[str, list[Mark]] = {}
    for m in marks:
        by_key.setdefault(m.key, []).append(m)
    order = sorted(by_key, key=lambda k: (all(m.allowed for m in by_key[k]), -len(by_key[k]), k))
    plots = []
    for key in order[:MAX_KEY_PLOTS]:
        kc = rec.key_code(key)
        ms = by_key[key]
        names = list(dict.fromkeys(m.anomaly for m in ms))
        anchor = "key-" + "".join(c if c.isalnum() else "-" for c in key)
        if kc is None:
            plots.append(KeyPlot(key, names, all(m.allowed for m in ms), [], [],
                                 ["No client op sent to or polled this key."], anchor))
            continue
        key_stalls = [s for s in (stalls or []) if s.key == key and s.kind == "stalled-lso"]
        plots.append(_plot_key(rec, kc, key, ms, names, windows, run_end_ns, key_stalls, anchor))
    return plots, order[MAX_KEY_PLOTS:]


def _plot_key(rec: Records, kc: int, key: str, marks: list[Mark], names: list[str],
              windows: list[FaultWindow], run_end_ns: int, stalls: list[Stall], anchor: str
              ) -> KeyPlot:
    sel = np.flatnonzero((rec.key == kc) & (rec.offset >= 0))
    unknown = int(((rec.key == kc) & (rec.offset < 0)).sum())
    t, off, val = rec.time[sel], rec.offset[sel], rec.value[sel]
    style = np.where(rec.kind[sel] == POLL, np.where(rec.final[sel], S_FINAL, S_POLL),
                     np.where(rec.outcome[sel] == FAIL, S_ABORT,
                              np.where(rec.outcome[sel] == INFO, S_INFO, S_SEND)))
    proc = rec.process[sel]
    mark_values = np.array(sorted({m.value for m in marks if m.value is not None}), dtype=np.int64)
    mark_offsets = np.array(sorted({m.offset for m in marks if m.value is None
                                    and m.offset is not None}), dtype=np.int64)
    hot = np.isin(val, mark_values) | np.isin(off, mark_offsets)
    notes = []
    if unknown:
        notes.append(f"{unknown:,} record(s) of this key have no known offset (sends whose op "
                     "never completed) and are not drawn.")
    data = dict(t=t, off=off, val=val, style=style, proc=proc, hot=hot, op=rec.op[sel])
    svgs = []
    if sel.size == 0:
        notes.append("No record of this key has a known offset.")
        return KeyPlot(key, names, all(m.allowed for m in marks), [], [], notes, anchor)
    o_lo, o_hi = int(off.min()), int(off.max())
    full, n_full = _svg(data, rec, marks, (0, max(run_end_ns, int(t.max()), 1)), (o_lo, o_hi),
                        windows, run_end_ns, stalls, f"{key}: every record, offsets "
                        f"{o_lo}–{o_hi}")
    svgs.append((f"{key}: whole run", full))
    notes += n_full
    live_hot = hot & (style != S_FINAL)
    if o_hi - o_lo > ZOOM_SPAN and live_hot.any():
        first = int(np.flatnonzero(live_hot)[np.argmin(t[live_hot])])
        c = int(off[first])
        z_lo = max(o_lo, c - ZOOM_HALF)
        z_hi = min(o_hi, z_lo + 2 * ZOOM_HALF)
        # the final drain reads everything at the end: it would stretch the zoom to the run's end
        in_band = (off >= z_lo) & (off <= z_hi) & (style != S_FINAL)
        if in_band.any():
            zt0, zt1 = int(t[in_band].min()), int(t[in_band].max())
            pad = max((zt1 - zt0) // 20, 50_000_000)
            zoom, n_zoom = _svg(data, rec, marks, (max(0, zt0 - pad), zt1 + pad), (z_lo, z_hi),
                                windows, run_end_ns, stalls,
                                f"{key}: zoom on offsets {z_lo}–{z_hi} around the first marked "
                                f"record ({_secs(zt0 - pad, zt1 + pad)})")
            svgs.append((f"{key}: zoom", zoom))
            notes += n_zoom
    procs = sorted({int(p) for p in np.unique(proc)}, key=lambda p: _sort_key(rec.processes[p]))
    legend = [(rec.process_label(p), process_color(p)) for p in procs[:MAX_LEGEND]]
    if len(procs) > MAX_LEGEND:
        legend.append((f"… and {len(procs) - MAX_LEGEND} more processes (colours repeat; hover "
                       "a point for its process)", "transparent"))
    return KeyPlot(key, names, all(m.allowed for m in marks), svgs, legend, notes, anchor)


def _secs(a: int, b: int) -> str:
    digits = 2 if b - a < 10e9 else 1 if b - a < 100e9 else 0
    return f"{max(a, 0) / 1e9:.{digits}f} s to {b / 1e9:.{digits}f} s"


def _sort_key(p: Any) -> tuple[int, Any]:
    return (0, p) if isinstance(p, int) else (1, str(p))


def _svg(d: dict[str, np.ndarray], rec: Records, marks: list[Mark], t_range: tuple[int, int],
         o_range: tuple[int, int], windows: list[FaultWindow], run_end_ns: int,
         stalls: list[Stall], title: str) -> tuple[Markup, list[str]]:
    t0, t1 = t_range
    o_lo, o_hi = o_range
    inside = np.flatnonzero((d["t"] >= t0) & (d["t"] <= t1) & (d["off"] >= o_lo)
                            & (d["off"] <= o_hi))
    pad = max(1, (o_hi - o_lo) // 25)
    notes: list[str] = []

    # annotations: one per (anomaly, value | offset) with records in view, in lanes above the plot
    hot_idx = inside[d["hot"][inside]]
    labels = _labels(d, hot_idx, marks)
    failing = {m.anomaly for m in marks if not m.allowed}
    labels.sort(key=lambda lab: not (set(lab["names"]) & failing))
    shown_labels = labels[:MAX_LABELS]
    probe = Panel(0, 1, t0, t1, 0, 1)
    spans = []
    for lab in shown_labels:
        x = float(probe.x(float(d["t"][lab["at"]])))
        w = len(lab["text"]) * 6.4 + 8
        x0 = min(max(x - 4, probe.left), WIDTH - 4 - w)
        lab["x0"], lab["px"] = x0, x
        spans.append((x0, x0 + w))
    lane_of, n_lanes = lanes(spans)
    if n_lanes > MAX_LABEL_LANES:
        fits = [i for i, ln in enumerate(lane_of) if ln < MAX_LABEL_LANES]
        shown_labels = [shown_labels[i] for i in fits]
        lane_of = [lane_of[i] for i in fits]
        n_lanes = MAX_LABEL_LANES
    labels_top = 38
    top = labels_top + n_lanes * LABEL_H + (4 if n_lanes else -10)
    panel = Panel(top, PLOT_H, t0, t1, o_lo - pad, o_hi + pad)
    height = top + PLOT_H + 42
    out = [f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" class="orders" '
           f'aria-label="{escape(title)}" font-family="system-ui, sans-serif" font-size="12">']
    out.append(f'<text x="{panel.left}" y="16" font-weight="600" fill="#333">{escape(title)}'
               f'</text>')
    out.append(f'<rect x="{panel.left}" y="{top}" width="{panel.right - panel.left}" '
               f'height="{PLOT_H}" fill="none" stroke="#bbb"/>')
    out += panel.int_ticks("offset")
    out += panel.fault_shading(windows, run_end_ns)
    for s in stalls:
        out.append(panel.shade(s.start_ns, s.end_ns, "#b26a00", s.label, opacity=0.16,
                               cls="stall-shade"))

    # ordinary points: merged per pixel and style, thinned beyond MAX_POINTS
    px = panel.x(d["t"][inside].astype(np.float64))
    py = panel.y(d["off"][inside].astype(np.float64))
    group = d["style"][inside].astype(np.int64) * 1_000_000 + d["proc"][inside]
    must = (d["style"][inside] == S_ABORT) | d["hot"][inside]
    keep = dedupe_pixels(px, py, group)
    keep = np.union1d(keep, np.flatnonzero(must))
    if keep.size > MAX_POINTS:
        ordinary = keep[~must[keep]]
        budget = max(MAX_POINTS - int(must.sum()), 100)
        step = max(1, int(np.ceil(ordinary.size / budget)))
        keep = np.union1d(ordinary[::step], np.flatnonzero(must))
        notes.append(f"{title}: {inside.size:,} records in view, points on the same pixel merged, "
                     f"then every {step}th ordinary point drawn ({keep.size:,} drawn); aborted and "
                     "marked records are always drawn.")
    for st in (S_POLL, S_FINAL, S_SEND, S_INFO, S_ABORT):
        sk = keep[d["style"][inside][keep] == st]
        for p in np.unique(d["proc"][inside][sk]):
            pts = sk[d["proc"][inside][sk] == p]
            color = process_color(int(p))
            out.append(_points(st, px[pts], py[pts], color, rec.process_label(int(p)),
                               d, inside[pts] if st == S_ABORT else None))

    # rings and annotations on top
    rings = hot_idx[:MAX_RINGS]
    if hot_idx.size > MAX_RINGS:
        notes.append(f"{title}: {hot_idx.size:,} marked records in view, the first {MAX_RINGS} "
                     "ringed.")
    for i in rings:
        x, y = float(panel.x(float(d["t"][i]))), float(panel.y(float(d["off"][i])))
        out.append(f'<circle class="mark" cx="{x:.1f}" cy="{y:.1f}" r="6.5" fill="none" '
                   f'stroke="{HIGHLIGHT}" stroke-width="1.8"><title>{escape(_describe(d, rec, i))}'
                   f'</title></circle>')
    for lab, lane in zip(shown_labels, lane_of):
        ly = labels_top + lane * LABEL_H
        py_at = float(panel.y(float(d["off"][lab["at"]])))
        out.append(f'<g class="annotation"><line x1="{lab["px"]:.1f}" x2="{lab["px"]:.1f}" '
                   f'y1="{ly + 3}" y2="{py_at - 7:.1f}" stroke="{HIGHLIGHT}" stroke-width="0.8" '
                   f'stroke-dasharray="2 2"/><text x="{lab["x0"] + 4:.1f}" y="{ly}" '
                   f'fill="{HIGHLIGHT}">{escape(lab["text"])}</text></g>')
    if len(labels) > len(shown_labels):
        notes.append(f"{title}: {len(labels)} marked values, {len(shown_labels)} annotated "
                     "(those of failing anomalies first, while they fit); all are ringed, hover "
                     "a ring for its record.")
    if not inside.size:
        out.append(f'<text x="{(panel.left + panel.right) / 2}" y="{top + PLOT_H / 2}" '
                   f'text-anchor="middle" fill="#777">no records in view</text>')
    out += panel.time_ticks()
    out.append(f'<text x="{(panel.left + panel.right) / 2}" y="{height - 4}" '
               f'text-anchor="middle" fill="#555">time since run start (op completion)</text>')
    out.append("</svg>")
    return Markup("".join(out)), notes


def _labels(d: dict[str, np.ndarray], hot_idx: np.ndarray, marks: list[Mark]
            ) -> list[dict[str, Any]]:
    """One annotation per marked value (or offset) in view: which anomalies name it, the value,
    the offsets it sits at, anchored at its earliest record (a send where there is one)."""
    by_value: dict[int, list[str]] = {}
    by_offset: dict[int, list[str]] = {}
    for m in marks:
        if m.value is not None:
            by_value.setdefault(m.value, []).append(m.label)
        elif m.offset is not None:
            by_offset.setdefault(m.offset, []).append(m.label)
    out = []
    seen: set[tuple[str, int]] = set()
    for i in hot_idx[np.argsort(d["t"][hot_idx], kind="stable")]:
        v, o = int(d["val"][i]), int(d["off"][i])
        if v in by_value and ("v", v) not in seen:
            seen.add(("v", v))
            grp = hot_idx[d["val"][hot_idx] == v]
            sends = grp[d["style"][grp] <= S_INFO]
            at = int(sends[np.argmin(d["t"][sends])]) if sends.size else int(i)
            offs = sorted({int(x) for x in d["off"][grp]})
            where = ",".join(map(str, offs[:3])) + ("…" if len(offs) > 3 else "")
            names = "/".join(dict.fromkeys(by_value[v]))
            out.append({"at": at, "text": f"{names}: value {v} @ offset {where}",
                        "names": by_value[v]})
        elif v not in by_value and o in by_offset and ("o", o) not in seen:
            seen.add(("o", o))
            names = "/".join(dict.fromkeys(by_offset[o]))
            out.append({"at": int(i), "text": f"{names}: offset {o}", "names": by_offset[o]})
    return out


def _describe(d: dict[str, np.ndarray], rec: Records, i: int) -> str:
    st = int(d["style"][i])
    return (f"{STYLE_NAMES[st]} by {rec.process_label(int(d['proc'][i]))}: value {int(d['val'][i])} "
            f"at offset {int(d['off'][i])}, {fmt_seconds(int(d['t'][i]))}, op #{int(d['op'][i])}")


def _points(style: int, xs: np.ndarray, ys: np.ndarray, color: str, who: str,
            d: dict[str, np.ndarray], idx: np.ndarray | None) -> str:
    """One path for a process's points of one style: dots, triangles or crosses."""
    if style in (S_POLL, S_FINAL):
        seg = "".join(f"M{x:.1f},{y:.1f}h0" for x, y in zip(xs, ys))
        if style == S_POLL:
            body = (f'<path d="{seg}" stroke="{color}" stroke-width="4.4" stroke-linecap="round" '
                    f'stroke-opacity="0.85"/>')
        else:
            body = (f'<path d="{seg}" stroke="{color}" stroke-width="5" stroke-linecap="square" '
                    f'stroke-opacity="0.35"/>')
    elif style in (S_SEND, S_INFO):
        seg = "".join(f"M{x:.1f},{y - 4:.1f}l4,7h-8z" for x, y in zip(xs, ys))
        fill = color if style == S_SEND else "#fff"
        body = f'<path d="{seg}" fill="{fill}" stroke="{color}" stroke-width="1.1"/>'
    else:  # aborted writes: crosses, each with its own title
        parts = []
        for j, (x, y) in enumerate(zip(xs, ys)):
            title = ""
            if idx is not None:
                title = (f"<title>aborted write by {escape(who)}: value {int(d['val'][idx[j]])} "
                         f"at offset {int(d['off'][idx[j]])}, op #{int(d['op'][idx[j]])}</title>")
            parts.append(f'<path d="M{x - 4:.1f},{y - 4:.1f}l8,8m0,-8l-8,8" stroke="{color}" '
                         f'stroke-width="2.2">{title}</path>')
        body = "".join(parts)
    return (f'<g class="pts s-{style}"><title>{escape(who)}: {escape(STYLE_NAMES[style])}</title>'
            f'{body}</g>')


def stall_windows(examples: list[Any], rec: Records, run_end_ns: int, allowed: bool
                  ) -> list[Stall]:
    """stalled-lso examples as time windows. The example gives the stall's length (stalled_ms)
    and what the consumer waited for (next.value); the window ends where that consumer first
    polled that value after it became available, or at the end of the run when it never did,
    and starts stalled_ms earlier."""
    out = []
    for ex in examples:
        if not isinstance(ex, dict) or not isinstance(ex.get("key"), str):
            continue
        ms = ex.get("stalled_ms")
        if not isinstance(ms, (int, float)):
            continue
        key, proc = ex["key"], ex.get("process")
        nxt = ex.get("next") if isinstance(ex.get("next"), dict) else {}
        avail = _int(nxt.get("available_ns"))
        end = run_end_ns
        kc = rec.key_code(key)
        pc = next((i for i, p in enumerate(rec.processes) if p == proc), None)
        if kc is not None and pc is not None and _int(nxt.get("value")) is not None:
            hit = ((rec.key == kc) & (rec.process == pc) & (rec.kind == POLL)
                   & (rec.value == nxt["value"]))
            if avail is not None:
                hit &= rec.time >= avail
            if hit.any():
                end = int(rec.time[hit].min())
        start = max(0, int(end - ms * 1e6))
        label = f"stalled-lso p{proc} {key} ({ms / 1000:.1f} s)"
        out.append(Stall(key, proc, start, end, label, allowed))
    return out


def marks_from_verdict(anomalies: list[dict[str, Any]]) -> list[Mark]:
    """Marks of the examples of every anomaly found (the render's anomaly dicts)."""
    out: list[Mark] = []
    for a in anomalies:
        for ex in a["all_examples"][:50]:
            out += marks_of(a["name"], ex, a["allowed"])
    return out


def process_of(rec: Records, process: Any) -> int | None:
    return next((i for i, p in enumerate(rec.processes) if p == process), None)


__all__ = ["Mark", "KeyPlot", "Stall", "marks_of", "key_plots", "stall_windows",
           "marks_from_verdict", "SEND", "STYLE_NAMES"]
