"""The HTML verdict report of one run: one self-contained file that opens offline.

`render_report(run_dir)` renders report.html from a run's results folder: the history as the
checkers' loader reads it (checkers.history, the one reader of history.jsonl), verdict.json,
scenario.yaml and meta.json. `render_report_html(...)` does the same from in-memory data;
`render.check_and_render(run_dir)` re-checks first (`eos-chaos report RUN_DIR`). See docs/report.md.
"""
from .render import check_and_render, render_report, render_report_html

__all__ = ["check_and_render", "render_report", "render_report_html"]
