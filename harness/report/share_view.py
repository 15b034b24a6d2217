"""The report's share-group section (the share workload, KIP-932): each record's deliveries on
a lane of its own.

A lane is one record (key@offset). On it: each acquisition, a dot in the acquiring process's
colour with the delivery count Kafka reported above it, and a pale bar to where that
delivery ended (its acknowledgement, or the lock's expiry); each processing, a blue square;
each acknowledgement, a triangle: accept green, release orange, reject red, filled when the
broker took it (``ok``), hollow when it refused it (``fail``) or the outcome is unknown
(``info``). Fault windows are shaded. Records named by a share-* case come first, then the
most-delivered ones, at most ``MAX_LANES``. Drawn with jinja2 (templates/share_lanes.svg.j2),
from the checkers' own per-record facts (checkers.finders.share_group.facts).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from markupsafe import Markup

from checkers.finders.share_group import facts

from .svgplot import process_color

if TYPE_CHECKING:
    from checkers.history import History

MAX_LANES = 40
LEFT, WIDTH, LANE_H, TOP = 150, 1100, 26, 16
ACK_COLOR = {"accept": "#2e7d32", "release": "#e08a00", "reject": "#c62828"}
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
                          autoescape=True)


def _picks(fx, verdict) -> tuple[list[tuple], set[tuple]]:
    named: list[tuple] = []
    failing = set(getattr(verdict, "failing", None) or ())
    found = getattr(verdict, "anomalies", None) or {}
    # failing names first, the allowed duplicates last
    for name in sorted(found, key=lambda n: (n not in failing, n == "share-duplicate", n)):
        cases = found[name]
        if not name.startswith("share-"):
            continue
        for c in cases:
            rec = (c.get("key"), c.get("offset"))
            if rec[0] is not None and rec not in named:
                named.append(rec)
    recs = set(fx.acquires) | set(fx.processed) | set(fx.acks)
    rest = sorted(recs - set(named), key=lambda r: (-len(fx.acquires.get(r, ())), r))
    return (named + rest)[:MAX_LANES], set(named)


def share_section(h: "History", verdict: Any, share_meta: dict | None, windows: list, run_end: int) -> dict | None:
    """What the template's share section shows, or None for a run that is not the share
    workload: ``svg`` (Markup), ``shown``/``records`` (lanes drawn / records delivered),
    ``stats`` (the verdict's ``stats.share``)."""
    if not share_meta:
        return None
    fx = facts(h)
    picks, named = _picks(fx, verdict)
    end = max(int(run_end or 0), 1)
    lock = int(share_meta.get("lock_duration_ms") or 0) * 1_000_000

    def x(t: int | None) -> float:
        return round(LEFT + (WIDTH - LEFT - 10) * max(0, min(int(t or 0), end)) / end, 1)

    lanes = []
    for i, rec in enumerate(picks):
        key, off = rec
        y = TOP + i * LANE_H
        marks, spans = [], []
        acks = sorted(fx.acks.get(rec, ()), key=lambda a: a["invoke_time"])
        for a in fx.acquires.get(rec, ()):
            t = a["complete_time"] or a["invoke_time"]
            own = [k for k in acks if k["process"] == a["process"] and k["invoke_time"] >= a["invoke_time"]]
            stop = own[0]["complete_time"] or own[0]["invoke_time"] if own else a["invoke_time"] + lock
            spans.append({"x1": x(t), "x2": x(stop), "color": process_color(int(a["process"])),
                          "title": f"held by process {a['process']}"})
            marks.append({"shape": "acquire", "x": x(t), "color": process_color(int(a["process"])),
                          "text": "" if a["delivery_count"] is None else a["delivery_count"],
                          "title": f"acquired by process {a['process']} at {t / 1e9:.3f} s (acquire op {a['op']}), "
                                   f"delivery count {a['delivery_count']}"})
        for p in fx.processed.get(rec, ()):
            marks.append({"shape": "process", "x": x(p["time"]),
                          "title": f"processed by process {p['process']} at {(p['time'] or 0) / 1e9:.3f} s (op {p['op']})"})
        for k in acks:
            t = k["complete_time"] or k["invoke_time"]
            c = ACK_COLOR[k["kind"]]
            marks.append({"shape": "ack", "x": x(t), "color": c if k["type"] == "ok" else "#ffffff", "stroke": c,
                          "title": f"{k['kind']} by process {k['process']} at {t / 1e9:.3f} s: {k['type']}"
                                   + (f" ({k['error']})" if k["error"] else "") + f" (ack op {k['op']})"})
        value = fx.value_of.get(rec) or next((p["value"] for p in fx.processed.get(rec, ())), "")
        lanes.append({"y": y, "label": f"{key}@{off}", "case": rec in named, "marks": marks, "spans": spans,
                      "title": f"value {value}" + (" (named by a case)" if rec in named else "")})
    height = TOP + max(1, len(lanes)) * LANE_H + 18
    wins = [{"x": x(w.start_ns), "w": max(1.0, x(w.end_ns if w.end_ns is not None else end) - x(w.start_ns)),
             "label": w.label} for w in windows]
    ticks = [{"x": x(t * 1_000_000_000), "label": f"{t} s"} for t in range(0, int(end / 1e9) + 1, 10)]
    svg = _env.get_template("share_lanes.svg.j2").render(
        lanes=lanes, windows=wins, ticks=ticks, width=WIDTH, height=height, left=LEFT)
    return {"svg": Markup(svg), "shown": len(lanes), "records": len(set(fx.acquires) | set(fx.processed)),
            "stats": (getattr(verdict, "stats", None) or {}).get("share")}
