"""Small building blocks for the hand-written SVG plots: a panel with linear or log axes over any
data range, ticks, fault shading and point thinning. Every plot is WIDTH wide with the same left
and right margins as the timeline, so that time axes starting at zero line up on the page."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np
from markupsafe import escape

from .charts import LEFT, RIGHT, WIDTH, _decade, _nice_step, _num, fault_color
from .analysis import FaultWindow

TIME_STEPS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120,
                300, 600, 900, 1800, 3600)
INT_STEPS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 20_000,
             25_000, 50_000, 100_000, 200_000, 250_000, 500_000, 1_000_000)

PROCESS_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                  "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
                  "#3182bd", "#e6550d", "#31a354", "#756bb1")


def process_color(i: int) -> str:
    return PROCESS_COLORS[i % len(PROCESS_COLORS)]


@dataclass
class Panel:
    """A plot area: x from t0 to t1 (ns), y from y0 to y1 (data units, log10 of them if log)."""

    top: float
    height: float
    t0: float
    t1: float
    y0: float
    y1: float
    log: bool = False
    left: float = LEFT
    right: float = WIDTH - RIGHT

    def x(self, t: float | np.ndarray) -> float | np.ndarray:
        span = max(self.t1 - self.t0, 1.0)
        return self.left + (self.right - self.left) * (np.clip(t, self.t0, self.t1) - self.t0) / span

    def y(self, v: float | np.ndarray) -> float | np.ndarray:
        if self.log:
            v = np.log10(np.maximum(v, 10.0 ** self.y0))
        span = (self.y1 - self.y0) or 1.0
        frac = (np.clip(v, self.y0, self.y1) - self.y0) / span
        return self.top + self.height - self.height * frac

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def frame(self, title: str, *, cls: str = "") -> list[str]:
        c = f' class="{cls}"' if cls else ""
        return [
            f'<text x="{self.left}" y="{self.top - 8:.0f}" font-weight="600" fill="#333"{c}>'
            f'{escape(title)}</text>',
            f'<rect x="{self.left}" y="{self.top}" width="{self.right - self.left}" '
            f'height="{self.height}" fill="none" stroke="#bbb"/>',
        ]

    def time_ticks(self, relative_to_start: bool = False) -> list[str]:
        """Ticks in seconds since the run started along the bottom edge."""
        span_s = max((self.t1 - self.t0) / 1e9, 1e-3)
        step = _nice_step(span_s, 12, TIME_STEPS_S)
        first = math.ceil(self.t0 / 1e9 / step - 1e-9) * step
        out = []
        t = first
        while t <= self.t1 / 1e9 + 1e-9:
            x = self.x(t * 1e9)
            label = _fmt_tick_s(t, step)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.bottom}" y2="{self.bottom + 5}" '
                       f'stroke="#888"/>')
            out.append(f'<text x="{x:.1f}" y="{self.bottom + 18}" text-anchor="middle" '
                       f'fill="#555">{label}</text>')
            t = round(t + step, 6)
        return out

    def int_ticks(self, unit: str = "", target: int = 6) -> list[str]:
        span = max(self.y1 - self.y0, 1)
        step = _nice_step(span, target, INT_STEPS)
        v = math.ceil(self.y0 / step) * step
        out = []
        while v <= self.y1 + 1e-9:
            y = self.y(v)
            out.append(f'<line x1="{self.left}" x2="{self.right}" y1="{y:.1f}" y2="{y:.1f}" '
                       f'stroke="#eee"/>')
            out.append(f'<text x="{self.left - 6}" y="{y + 4:.1f}" text-anchor="end" '
                       f'fill="#555">{_num(v)}</text>')
            v += step
        if unit:
            out.append(self._unit(unit))
        return out

    def log_ticks(self, unit: str = "") -> list[str]:
        """Decades of nanoseconds (y0, y1 are log10 of ns) as readable durations."""
        out = []
        for e in range(math.ceil(self.y0), math.floor(self.y1) + 1):
            y = self.y(10.0 ** e)
            out.append(f'<line x1="{self.left}" x2="{self.right}" y1="{y:.1f}" y2="{y:.1f}" '
                       f'stroke="#eee"/>')
            out.append(f'<text x="{self.left - 6}" y="{y + 4:.1f}" text-anchor="end" '
                       f'fill="#555">{escape(_decade(e))}</text>')
        if unit:
            out.append(self._unit(unit))
        return out

    def _unit(self, unit: str) -> str:
        cy = self.top + self.height / 2
        return (f'<text x="14" y="{cy:.0f}" transform="rotate(-90 14 {cy:.0f})" '
                f'text-anchor="middle" fill="#555">{escape(unit)}</text>')

    def shade(self, start_ns: float, end_ns: float, color: str, title: str, *,
              opacity: float = 0.10, cls: str = "") -> str:
        if end_ns < self.t0 or start_ns > self.t1:
            return ""
        x0, x1 = self.x(start_ns), self.x(end_ns)
        c = f' class="{cls}"' if cls else ""
        return (f'<rect{c} x="{x0:.1f}" y="{self.top}" width="{max(x1 - x0, 1.5):.1f}" '
                f'height="{self.height}" fill="{color}" fill-opacity="{opacity}">'
                f'<title>{escape(title)}</title></rect>')

    def fault_shading(self, windows: Iterable[FaultWindow], run_end_ns: int) -> list[str]:
        out = []
        for w in windows:
            end = w.end_ns if w.end_ns is not None else run_end_ns
            if w.instant:
                x = self.x(w.start_ns)
                if self.t0 <= w.start_ns <= self.t1:
                    out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.top}" '
                               f'y2="{self.bottom}" stroke="{fault_color(w.f)}" '
                               f'stroke-dasharray="3 3"><title>{escape(w.label)}</title></line>')
                continue
            out.append(self.shade(w.start_ns, end, fault_color(w.f), w.label, opacity=0.08,
                                  cls="fault-shade"))
        return out


def _fmt_tick_s(t: float, step: float) -> str:
    if step >= 60 and t % 60 == 0:
        return f"{t / 60:g} min"
    if step < 1:
        digits = max(0, -math.floor(math.log10(step) + 1e-9))
        return f"{t:.{digits}f} s"
    return f"{t:g} s"


def dedupe_pixels(px: np.ndarray, py: np.ndarray, group: np.ndarray, cell: float = 1.5
                  ) -> np.ndarray:
    """Indices of the points to draw: one per pixel cell and group (points that would be drawn
    on top of each other in the same style), first occurrence kept, original order."""
    if px.size == 0:
        return np.zeros(0, dtype=np.int64)
    cx = np.clip(np.floor(px / cell), 0, 4095).astype(np.int64)
    cy = np.clip(np.floor(py / cell), 0, 4095).astype(np.int64)
    key = (group.astype(np.int64) * 4096 + cx) * 4096 + cy
    _, first = np.unique(key, return_index=True)
    return np.sort(first)


def lanes(spans: list[tuple[float, float]], gap: float = 6) -> tuple[list[int], int]:
    """Assign each (x0, x1) span a lane so that spans in one lane do not overlap."""
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    ends: list[float] = []
    lane = [0] * len(spans)
    for i in order:
        lo, hi = spans[i]
        for j, e in enumerate(ends):
            if e + gap <= lo:
                lane[i], ends[j] = j, hi
                break
        else:
            lane[i] = len(ends)
            ends.append(hi)
    return lane, len(ends)
