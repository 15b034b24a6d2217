"""The per-process timeline (Jepsen's timeline.html): each process a lane, each op a bar from its
invoke to its completion coloured by outcome (ok, fail, info; an op never completed runs to the
end of the run, paler), fault windows shaded across every lane. A bar links to its op's row in
the history table. Drawn from the checkers' History (``History.ops``) as one inline SVG.

Ops narrower than a few pixels would be thousands of invisible elements: such bars of one lane
with the same outcome that touch at the drawing's resolution merge into one bar, whose
tooltip says how many ops it holds and which link it keeps (the first op's). A lane holds at
most about WIDTH / MIN_BAR elements, whatever the history's length.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from markupsafe import Markup, escape

from checkers.history import History

from .analysis import FaultWindow, fmt_duration, fmt_seconds

COLORS = {"ok": "#2e7d32", "fail": "#c62828", "info": "#e0a000"}
WIDTH = 1100  # px of the time axis
LANE_H, LANE_GAP = 11, 3
LABEL_W = 150
MAX_LANES = 300
MIN_BAR = 3  # px


def nice_ticks(lo: float, hi: float, target: int = 10) -> list[float]:
    """Ticks at 1, 2 or 5 times a power of ten, about ``target`` of them, from lo to hi."""
    span = max(hi - lo, 1e-9)
    raw = span / target
    mag = 10 ** np.floor(np.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = np.ceil(lo / step) * step
    return [round(float(t), 9) for t in np.arange(first, hi + step / 2, step) if t <= hi + 1e-9]


@dataclass
class Lanes:
    svg: Markup
    lanes: int
    bars: int  # bars drawn (after merging)
    ops: int
    hidden_lanes: int  # processes beyond MAX_LANES, not drawn


def lanes_svg(h: History, windows: list[FaultWindow], run_end: int, labels: dict[int, str],
              linked: set[int] | None = None) -> Lanes:
    """The timeline of ``h``'s ops; ``labels``: process -> worker name; ``linked``: invoke
    indices whose rows the history table shows (a bar links only to a row that exists)."""
    ops = h.ops.select("invoke_index", "process", "f", "type", "invoke_time", "complete_time",
                       pending=pl.col("complete_index").is_null())
    procs = sorted(set(ops["process"].to_list()))
    hidden = max(0, len(procs) - MAX_LANES)
    procs = procs[:MAX_LANES]
    lane_of = {p: i for i, p in enumerate(procs)}
    end = max(run_end, 1)
    scale = WIDTH / end
    top = 22
    height = top + len(procs) * (LANE_H + LANE_GAP) + 24
    out = [f'<svg class="lanes" width="{LABEL_W + WIDTH + 10}" '
           f'height="{height}" role="img" aria-label="per-process timeline">',
           '<g font-size="10" fill="#444">']
    for w in windows:
        x0 = LABEL_W + w.start_ns * scale
        x1 = LABEL_W + (w.end_ns if w.end_ns is not None else end) * scale
        if w.instant:
            out.append(f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{top - 4}" y2="{height - 22}" stroke="#888" '
                       f'stroke-dasharray="2 2"><title>{escape(w.label)}</title></line>')
            continue
        out.append(f'<rect class="fault" x="{x0:.1f}" y="{top - 4}" width="{max(x1 - x0, 1):.1f}" '
                   f'height="{height - top - 18}" fill="#7b6fd6" fill-opacity="0.13"><title>'
                   f'{escape(w.label)}: {fmt_seconds(w.start_ns)} to '
                   f'{fmt_seconds(w.end_ns) if w.end_ns is not None else "end of run"}</title></rect>'
                   f'<text x="{x0 + 2:.1f}" y="{top - 8}" fill="#5a4fb0">{escape(w.label[:24])}</text>')
    for p, i in lane_of.items():
        y = top + i * (LANE_H + LANE_GAP)
        label = f"p{p} {labels[p]}" if p in labels else f"p{p}"
        out.append(f'<text x="{LABEL_W - 6}" y="{y + LANE_H - 2}" text-anchor="end">{escape(label[:26])}</text>')
    bars = 0
    for (p,), lane in ops.filter(pl.col("process").is_in(procs)).sort("invoke_index").group_by(
            ["process"], maintain_order=True):
        y = top + lane_of[p] * (LANE_H + LANE_GAP)
        inv = lane["invoke_time"].to_numpy().astype(np.int64)
        comp = lane["complete_time"].fill_null(end).to_numpy().astype(np.int64)
        x0 = np.floor(inv * scale).astype(np.int64)
        x1 = np.maximum(np.ceil(comp * scale).astype(np.int64), x0 + 1)
        types = lane["type"].cast(pl.Utf8).to_list()
        pend = lane["pending"].to_list()
        fs = lane["f"].cast(pl.Utf8).to_list()
        idx = lane["invoke_index"].to_list()
        j, n = 0, len(idx)
        while j < n:
            k = j + 1
            right = x1[j]
            # an op of MIN_BAR px or more is a bar of its own (1 px gap before the next);
            # narrower ones merge with their touching neighbours of the same outcome
            if right - x0[j] < MIN_BAR:
                while (k < n and types[k] == types[j] and pend[k] == pend[j] and x0[k] <= right
                       and x1[k] - x0[k] < MIN_BAR):
                    right = max(right, x1[k])
                    k += 1
            elif k < n and x0[k] <= right:
                right = max(x0[j] + 1, right - 1)
            color = COLORS.get(types[j], "#888")
            if k - j == 1:
                dur = fmt_duration(int(comp[j] - inv[j]))
                title = f"op {idx[j]}: {fs[j]} {'pending (never completed)' if pend[j] else types[j]}, {dur}"
            else:
                title = f"{k - j} ops {idx[j]}..{idx[k - 1]}: {types[j]} (first linked)"
            faded = ' fill-opacity="0.45"' if pend[j] else ""
            rect = (f'<rect x="{LABEL_W + x0[j]}" y="{y}" width="{right - x0[j]}" height="{LANE_H}" '
                    f'fill="{color}"{faded}><title>{escape(title)}</title></rect>')
            if linked is None or idx[j] in linked:
                rect = f'<a href="#op-{idx[j]}">{rect}</a>'
            out.append(rect)
            bars += 1
            j = k
    y_axis = height - 18
    out.append(f'<line x1="{LABEL_W}" x2="{LABEL_W + WIDTH}" y1="{y_axis}" y2="{y_axis}" stroke="#999"/>')
    for t in nice_ticks(0, end / 1e9, 10):
        x = LABEL_W + t * 1e9 * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y_axis}" y2="{y_axis + 4}" stroke="#999"/>'
                   f'<text x="{x:.1f}" y="{y_axis + 14}" text-anchor="middle">{t:g} s</text>')
    out.append("</g></svg>")
    return Lanes(Markup("".join(out)), len(procs), bars, ops.height, hidden)
