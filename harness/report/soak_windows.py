"""The report's "Windows" section: the window checks of a soak run (run_dir/windows.jsonl,
harness/run/soak.py), a small table, and the stop reason of meta.json."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_ROWS = 40  # a 4-hour soak at 300 s has 48 windows; longer runs show the failing and the last ones


def windows_section(run_dir: Path | None, meta: dict | None) -> dict[str, Any] | None:
    """None without windows.jsonl; else {"rows": [...], "total", "invalid", "errors",
    "hidden", "stopped": meta's stop sentence or None, "peak_rss_mib"}. Unreadable lines are
    counted as errors, never raised."""
    if run_dir is None or not (Path(run_dir) / "windows.jsonl").is_file():
        return None
    rows = []
    for line in (Path(run_dir) / "windows.jsonl").read_text(errors="replace").splitlines():
        try:
            r = json.loads(line)
            if not isinstance(r, dict):
                raise ValueError
        except ValueError:
            r = {"error": "unreadable line"}
        counts = r.get("anomaly_counts") if isinstance(r.get("anomaly_counts"), dict) else {}
        rows.append({"k": r.get("k", ""), "span": _span(r), "events": r.get("events", ""),
                     "ops": r.get("ops", ""), "valid": "error" if r.get("error") else r.get("valid"),
                     "anomalies": ", ".join(f"{n} {c}" for n, c in sorted(counts.items())),
                     "note": r.get("error") or "; ".join(r.get("unknown_reasons") or [])[:200],
                     "check_s": r.get("check_s", ""), "rss": r.get("controller_rss_mib", "")})
    shown = rows
    if len(rows) > MAX_ROWS:  # the ones that matter first: not valid, then the latest
        keep = [i for i, r in enumerate(rows) if r["valid"] is not True][:MAX_ROWS // 2]
        kept = set(keep)
        rest = [i for i in range(len(rows)) if i not in kept]  # the latest fill the table
        shown = [rows[i] for i in sorted(keep + rest[len(rest) - (MAX_ROWS - len(keep)):])]
    rss = [r["rss"] for r in rows if isinstance(r["rss"], (int, float))]
    return {"rows": shown, "total": len(rows), "hidden": len(rows) - len(shown),
            "invalid": sum(r["valid"] is False for r in rows), "errors": sum(r["valid"] == "error" for r in rows),
            "stopped": (meta or {}).get("stopped_at_window"), "peak_rss_mib": max(rss) if rss else None}


def _span(r: dict) -> str:
    try:
        return f"{float(r['start_s']):g}-{float(r['end_s']):g} s"
    except (KeyError, TypeError, ValueError):
        return ""
