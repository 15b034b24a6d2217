"""Liveness charts: realtime lag over time and its distribution, the unseen count over time, and
stalled-lso windows, on the same time axis as the timeline."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from markupsafe import Markup, escape

from .analysis import FaultWindow, _binned_percentiles, fmt_duration, fmt_seconds
from .analysis import choose_bin_ns as choose_bin_ns_for
from .charts import LEFT, RIGHT, WIDTH, _decade, _nice_max, _path
from .orders import Stall
from .records import Lags, Records, Unseen
from .svgplot import Panel, dedupe_pixels, lanes, process_color

LAG_H = 200
UNSEEN_H = 160
LANE_H = 20
STRIP_H = 24  # under the lag panel: lags <= 0 (read before the writer's ack)
STRIP_GAP = 6
GAP = 50
MAX_LAG_POINTS = 4000
STALL_COLOR = "#b26a00"
UNAVAILABLE_COLOR = "#6e40aa"


def liveness_svg(lags: Lags, unseen: Unseen, rec: Records, stalls: list[Stall],
                 windows: list[FaultWindow], run_end_ns: int) -> tuple[Markup, list[str]]:
    """Stalled-lso lanes, the lag panel and the unseen panel; and notes on what was thinned."""
    run_end_ns = max(run_end_ns, 1)
    notes: list[str] = []
    probe = Panel(0, 1, 0, run_end_ns, 0, 1)
    spans = []
    for s in stalls:
        x0, x1 = float(probe.x(s.start_ns)), float(probe.x(s.end_ns))
        w = len(s.label) * 6.6 + 8
        spans.append((x0, max(x1, x0 + w)) if x0 + w <= WIDTH - 4 else (WIDTH - 4 - w, WIDTH - 4))
    lane_of, n_lanes = lanes(spans)
    lanes_top = 26
    lag_top = lanes_top + max(n_lanes, 1) * LANE_H + 34
    unseen_top = lag_top + LAG_H + GAP
    height = unseen_top + UNSEEN_H + 40
    out = [f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" class="liveness" '
           f'aria-label="realtime lag, unseen count and stalled-lso windows" '
           f'font-family="system-ui, sans-serif" font-size="12">']
    out.append(f'<text x="{LEFT}" y="16" font-weight="600" fill="#333">stalled-lso and '
               f'unavailable windows</text>')
    if not stalls:
        out.append(f'<text x="{LEFT + 250}" y="16" fill="#777">none reported by the checkers'
                   f'</text>')

    # realtime lag, log scale
    lag = lags.lag_ns.astype(np.float64)
    pos = lag[lag > 0]
    if pos.size:
        lo = math.floor(math.log10(float(pos.min())))
        hi = max(lo + 1, math.ceil(math.log10(float(pos.max()) * 1.05)))
    else:
        lo, hi = 6, 9
    neg = int((lag <= 0).sum())
    strip_h = STRIP_H if neg else 0
    lag_p = Panel(lag_top, LAG_H - strip_h, 0, run_end_ns, lo, hi, log=True)
    strip_y = lag_p.bottom + STRIP_GAP + (STRIP_H - STRIP_GAP) / 2

    def y_lag(v: np.ndarray) -> np.ndarray:
        """Positive lags on the log scale, the others on the strip under it."""
        return np.where(v > 0, lag_p.y(np.maximum(v, 1.0)), strip_y)

    unseen_p = Panel(unseen_top, UNSEEN_H, 0, run_end_ns, 0, 1)
    for p in (lag_p, unseen_p):
        out += p.fault_shading(windows, run_end_ns)
    for i, (s, lane) in enumerate(zip(stalls, lane_of)):
        color = UNAVAILABLE_COLOR if s.kind == "unavailable" else STALL_COLOR
        title = (f"{s.label}: {fmt_seconds(s.start_ns)} → {fmt_seconds(s.end_ns)}"
                 + ("" if not s.allowed else " (does not fail this run)"))
        out.append(f'<g class="stall {s.kind}"><title>{escape(title)}</title>')
        for p in (lag_p, unseen_p):
            out.append(p.shade(s.start_ns, s.end_ns, color, title, opacity=0.2))
        x0, x1 = float(probe.x(s.start_ns)), float(probe.x(s.end_ns))
        ly = lanes_top + lane * LANE_H
        out.append(f'<rect x="{x0:.1f}" y="{ly}" width="{max(x1 - x0, 3):.1f}" '
                   f'height="{LANE_H - 4}" rx="3" fill="{color}" fill-opacity="0.35" '
                   f'stroke="{color}"/>')
        tx, anchor = (x0 + 4, "start") if spans[i][0] == x0 else (WIDTH - 4, "end")
        out.append(f'<text x="{tx:.1f}" y="{ly + LANE_H - 8}" text-anchor="{anchor}" fill="#222">'
                   f'{escape(s.label)}</text></g>')

    title = "Realtime lag: commit of a write to its first read by each consumer (log scale)"
    if neg:
        title += f"; {neg:,} read before the writer's ack (lag ≤ 0) on the strip below"
    out += lag_p.frame(title)
    out += lag_p.log_ticks("lag")
    if neg:
        out.append(f'<rect x="{lag_p.left}" y="{lag_p.bottom + STRIP_GAP}" '
                   f'width="{lag_p.right - lag_p.left}" height="{STRIP_H - STRIP_GAP}" '
                   f'fill="#f3f3f3" stroke="#bbb"/>')
        out.append(f'<text x="{lag_p.left - 6}" y="{strip_y + 4:.1f}" text-anchor="end" '
                   f'fill="#555">≤ 0</text>')
    if lag.size:
        xs = lag_p.x(lags.commit_ns.astype(np.float64))
        ys = y_lag(lag)
        keep = dedupe_pixels(xs, ys, lags.process, cell=2.0)
        if keep.size > MAX_LAG_POINTS:
            step = int(np.ceil(keep.size / MAX_LAG_POINTS))
            keep = keep[::step]
            notes.append(f"Realtime lag: {lag.size:,} (write, consumer) pairs; points on the same "
                         f"2-pixel cell merged, then every {step}th drawn ({keep.size:,}).")
        for p in np.unique(lags.process[keep]):
            pts = keep[lags.process[keep] == p]
            seg = "".join(f"M{x:.1f},{y:.1f}h0" for x, y in zip(xs[pts], ys[pts]))
            who = rec.process_label(int(p))
            out.append(f'<path class="lag-pts" d="{seg}" stroke="{process_color(int(p))}" '
                       f'stroke-width="4.2" stroke-linecap="round" stroke-opacity="0.6">'
                       f'<title>read by {escape(who)}</title></path>')
        bin_ns = choose_bin_ns_for(run_end_ns)
        n_bins = max(1, int(np.ceil(run_end_ns / bin_ns)))
        b = np.clip(lags.commit_ns // bin_ns, 0, n_bins - 1)
        bx = lag_p.x((np.arange(n_bins) + 0.5) * bin_ns)
        p50, p99 = _binned_percentiles(b, lag, n_bins)
        for arr, dash, name in ((p50, "", "p50"), (p99, "6 3", "p99")):
            ys_q = np.where(np.isnan(arr), np.nan, y_lag(np.nan_to_num(arr)))
            out.append(f'<path class="lag-{name}" d="{_path(bx, ys_q)}" '
                       f'fill="none" stroke="#222" stroke-width="1.6"'
                       + (f' stroke-dasharray="{dash}"' if dash else "")
                       + f'><title>lag {name} per window</title></path>')
    else:
        out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{lag_top + LAG_H / 2}" '
                   f'text-anchor="middle" fill="#777">no committed write was read by a '
                   f'consumer outside the final drain</text>')
    out += Panel(lag_top, LAG_H, 0, run_end_ns, 0, 1).time_ticks()

    # unseen count, a step function, drawn as its maximum per pixel column
    ut = unseen.change_points()
    counts = unseen.count_at(ut) if ut.size else np.zeros(0, dtype=np.int64)
    ymax = _nice_max(float(counts.max()) if counts.size else 1.0)
    unseen_p.y1 = ymax
    out += unseen_p.frame("Unseen: committed writes that no poll had read yet (final drain "
                          f"included); at the end {unseen.never:,} of {unseen.total:,}")
    out += unseen_p.int_ticks("writes", target=4)
    if ut.size:
        cols = np.floor(unseen_p.x(ut.astype(np.float64))).astype(np.int64)
        starts = np.flatnonzero(np.r_[True, np.diff(cols) != 0])
        peak = np.maximum.reduceat(counts, starts)
        last = counts[np.r_[starts[1:] - 1, counts.size - 1]]
        xs, ys = [float(unseen_p.x(0.0))], [unseen_p.bottom]
        for c, pk, ls in zip(cols[starts], peak, last):
            y_pk, y_ls = float(unseen_p.y(float(pk))), float(unseen_p.y(float(ls)))
            xs += [c, c, c + 0.5]
            ys += [ys[-1], y_pk, y_ls]
        xs.append(float(unseen_p.x(run_end_ns)))
        ys.append(ys[-1])
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))
        out.append(f'<polyline class="unseen" points="{pts}" fill="none" stroke="#0b5cad" '
                   f'stroke-width="1.5"><title>unseen committed writes</title></polyline>')
    out += unseen_p.time_ticks()
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{height - 4}" text-anchor="middle" '
               f'fill="#555">time since run start</text>')
    out.append("</svg>")
    return Markup("".join(out)), notes


def lag_histogram_svg(lags: Lags, quantiles_ms: dict[str, Any] | None) -> Markup:
    """The lag distribution: counts in log-spaced bins, with the verdict's quantiles marked."""
    w, h, left, right, top, bottom = 620, 220, 56, 16, 24, 40
    lag = lags.lag_ns.astype(np.float64)
    pos = lag[lag > 0]
    out = [f'<svg viewBox="0 0 {w} {h}" width="{w}" role="img" class="lag-hist" '
           f'aria-label="realtime lag distribution" font-family="system-ui, sans-serif" '
           f'font-size="12">']
    head = f"Lag distribution ({lag.size:,} pairs"
    if (lag <= 0).any():
        head += f"; {int((lag <= 0).sum()):,} with lag ≤ 0 not in the bars"
    out.append(f'<text x="{left}" y="14" font-weight="600" fill="#333">{escape(head)})</text>')
    if not pos.size:
        out.append(f'<text x="{w / 2}" y="{h / 2}" text-anchor="middle" fill="#777">no lags'
                   f'</text></svg>')
        return Markup("".join(out))
    lo = math.floor(math.log10(float(pos.min())))
    hi = max(lo + 1, math.ceil(math.log10(float(pos.max()) * 1.05)))
    edges = np.linspace(lo, hi, (hi - lo) * 8 + 1)
    hist, _ = np.histogram(np.log10(pos), bins=edges)
    ymax = _nice_max(float(hist.max()))
    pw, ph = w - left - right, h - top - bottom

    def x_of(e: float) -> float:
        return left + pw * (e - lo) / (hi - lo)

    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#bbb"/>')
    for i, c in enumerate(hist):
        if c:
            x0, x1 = x_of(edges[i]), x_of(edges[i + 1])
            bh = ph * c / ymax
            out.append(f'<rect x="{x0 + 0.5:.1f}" y="{top + ph - bh:.1f}" width="{x1 - x0 - 1:.1f}" '
                       f'height="{bh:.1f}" fill="#6b8fbf"><title>{fmt_duration(10 ** edges[i])}'
                       f" – {fmt_duration(10 ** edges[i + 1])}: {c:,}</title></rect>")
    for e in range(lo, hi + 1):
        x = x_of(e)
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#555">'
                   f'{escape(_decade(e))}</text>')
    out.append(f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" fill="#555">'
               f'{int(ymax):,}</text>')
    out.append(f'<text x="{left - 6}" y="{top + ph}" text-anchor="end" fill="#555">0</text>')
    if isinstance(quantiles_ms, dict):
        for i, name in enumerate(("p50", "p90", "p99", "max")):
            v = quantiles_ms.get(name)
            if isinstance(v, (int, float)) and v > 0:
                x = x_of(min(max(math.log10(v * 1e6), lo), hi))
                out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" '
                           f'stroke="#d62728" stroke-dasharray="3 2"/>')
                out.append(f'<text x="{x + 3:.1f}" y="{top + 12 + 12 * i}" fill="#d62728">'
                           f'{name}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{h - 4}" text-anchor="middle" fill="#555">lag '
               f'(log scale); dashed: the verdict\'s quantiles</text></svg>')
    return Markup("".join(out))
