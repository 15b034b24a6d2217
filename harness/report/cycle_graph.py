"""A cycle example as a small graph in inline SVG, as Elle draws its cycles: the cycle's ops
as nodes on a circle, in cycle order, each edge an arrow labelled with its kind.

Input: a cycle example of the verdict (checkers/finders/cycles.py ``cycle_cases``): ``ops`` (op refs
with ``invoke_index``, ``process``, ``f``, ``type``, in cycle order) and ``steps`` (``from`` /
``to`` invoke indices, ``kind`` one of ww, wr, process, realtime, ``explanation``). Nodes link to
their history rows (``#op-<invoke index>``); an edge's tooltip is its step's explanation.
"""
from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup, escape

#: edge kind -> colour (the four of checkers/finders/cycles.py KINDS)
KIND_COLORS = {"ww": "#1f5fa8", "wr": "#c62828", "process": "#6a3d9a", "realtime": "#8a6d00"}
MAX_NODES = 16  # beyond this the example's steps list says it all


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def cycle_svg(example: dict, uid: str, known: set[int] | None = None) -> Markup | None:
    """The graph of one cycle example, or None when it is not a drawable cycle (no steps, or
    more than MAX_NODES ops). ``uid`` makes the SVG's marker ids unique in the page;
    ``known``: invoke indices present in the history (others are not linked)."""
    steps = [s for s in example.get("steps") or [] if isinstance(s, dict)
             and _int(s.get("from")) is not None and _int(s.get("to")) is not None]
    if not steps:
        return None
    order: list[int] = []
    for s in steps:
        for i in (s["from"], s["to"]):
            if i not in order:
                order.append(i)
    if len(order) > MAX_NODES:
        return None
    refs = {_int(r.get("invoke_index")): r for r in example.get("ops") or [] if isinstance(r, dict)}
    n = len(order)
    r_circle = 0 if n == 1 else max(70, 28 * n / math.pi)
    node_r = 22
    pad = 60
    size = 2 * (r_circle + node_r + pad)
    cx = cy = size / 2
    pos = {i: (cx + r_circle * math.sin(2 * math.pi * k / n), cy - r_circle * math.cos(2 * math.pi * k / n))
           for k, i in enumerate(order)}
    out = [f'<svg class="cycle-graph" width="{size:.0f}" '
           f'height="{size:.0f}" viewBox="0 0 {size:.0f} {size:.0f}" role="img" '
           f'aria-label="cycle of {n} ops">', "<defs>"]
    for kind, color in KIND_COLORS.items():
        out.append(f'<marker id="{uid}-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                   f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{color}"/>'
                   "</marker>")
    out.append("</defs>")
    pairs: dict[tuple[int, int], int] = {}
    for s in steps:
        a, b = s["from"], s["to"]
        kind = str(s.get("kind"))
        color = KIND_COLORS.get(kind, "#555")
        (x1, y1), (x2, y2) = pos[a], pos[b]
        dx, dy = x2 - x1, y2 - y1
        dist = math.hypot(dx, dy) or 1.0
        ux, uy = dx / dist, dy / dist
        # parallel edges between the same two ops bend apart; every edge bends a little so
        # that a -> b and b -> a do not overlap
        k = pairs.get((a, b), 0)
        pairs[(a, b)] = k + 1
        bend = (0.35 if n == 2 else 0.18) * dist * (1 + 0.8 * k)
        mx, my = (x1 + x2) / 2 - uy * bend, (y1 + y2) / 2 + ux * bend
        sx, sy = x1 + ux * node_r, y1 + uy * node_r
        ex, ey = x2 - ux * (node_r + 2), y2 - uy * (node_r + 2)
        title = escape(str(s.get("explanation") or kind))
        lx, ly = (x1 + x2) / 4 + mx / 2, (y1 + y2) / 4 + my / 2  # the curve's midpoint
        out.append(f'<g class="edge edge-{escape(kind)}"><title>{title}</title>'
                   f'<path d="M{sx:.1f},{sy:.1f} Q{mx:.1f},{my:.1f} {ex:.1f},{ey:.1f}" fill="none" '
                   f'stroke="{color}" stroke-width="1.8" marker-end="url(#{uid}-{escape(kind)})"/>'
                   f'<text x="{lx:.1f}" y="{ly:.1f}" fill="{color}" font-size="12" font-weight="600" '
                   f'text-anchor="middle" dominant-baseline="middle" paint-order="stroke" stroke="#fff" '
                   f'stroke-width="3">{escape(kind)}</text></g>')
    for i in order:
        x, y = pos[i]
        ref = refs.get(i) or {}
        sub = " ".join(str(ref[k]) for k in ("f", "type") if ref.get(k) is not None)
        proc = f"p{ref['process']}" if ref.get("process") is not None else ""
        title = escape(f"op {i}: process {ref.get('process', '?')}, {sub}".strip(", "))
        node = (f'<g class="node"><title>{title}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="{node_r}" '
                f'fill="#fff" stroke="#333" stroke-width="1.5"/><text x="{x:.1f}" y="{y - 3:.1f}" '
                f'font-size="11" font-weight="600" text-anchor="middle">{i}</text><text x="{x:.1f}" '
                f'y="{y + 10:.1f}" font-size="9" fill="#555" text-anchor="middle">{escape(proc)}</text></g>')
        if known is None or i in known:
            node = f'<a href="#op-{i}">{node}</a>'
        out.append(node)
    out.append("</svg>")
    return Markup("".join(out))
