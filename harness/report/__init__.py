"""The HTML verdict report of one run: one self-contained file that opens offline.

`render_report(run_dir)` reads history.jsonl, verdict.json, scenario.yaml and meta.json from a run's
results folder and writes report.html next to them; `render_report_html(...)` does the same from
in-memory data. See docs/report.md.
"""
from .render import render_report, render_report_html

__all__ = ["render_report", "render_report_html"]
