"""Assembling the report: gather what the template shows, render it with jinja2 (autoescape on)."""
from __future__ import annotations

import datetime as _dt
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import numpy as np
import yaml
from markupsafe import Markup

from checkers.run import RunDir, Verdict

from . import analysis as an
from .app_view import app_section
from .charts import bin_label_of, timeline_svg
from . import examples as ex
from .liveness import lag_histogram_svg, liveness_svg
from . import ops
from .cycle_graph import cycle_svg
from .history_table import history_table
from .lanes import lanes_svg
from .share_view import share_section
from .loading import gc_paused, read_json, read_yaml
from .soak_windows import windows_section
from .orders import (MAX_KEY_PLOTS, STYLE_NAMES, key_plots, marks_from_verdict, stall_windows,
                     unavailable_windows)
from .records import extract_records, realtime_lags, unseen_over_time
from .svgplot import process_color

if TYPE_CHECKING:
    from checkers.history import History

MAX_EXAMPLES = ex.MAX_EXAMPLES  # examples rendered per anomaly
OPEN_EXAMPLES = 5  # of which shown unfolded

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("harness.report", "templates"),
    autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render_report(run_dir: Path, history: "History | None" = None) -> Path:
    """Render run_dir/report.html from the run's history (read by the checkers' loader, or
    ``history`` when the caller has it), verdict, scenario and meta files."""
    run_dir = Path(run_dir)
    with gc_paused():
        html = _render_dir(run_dir, history)
    out = run_dir / "report.html"
    tmp = run_dir / "report.html.tmp"
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out


def check_and_render(run_dir: Path, max_examples: int = 10) -> tuple[Verdict, Path]:
    """Re-check a run folder and re-render its report: ``eos-chaos report RUN_DIR``. Works on
    any run folder, also one whose controller was killed (a history prefix, no verdict.json,
    maybe no meta.json). The history is read once (checkers.history) for both. Writes
    verdict.json (with meta.json's ``versions``) and report.html; returns (verdict, report).
    Raises FileNotFoundError when run_dir has no history.jsonl."""
    from checkers.verdict import check_run

    d = RunDir(run_dir)
    if not d.history.is_file():
        raise FileNotFoundError(f"{run_dir} has no {d.HISTORY}: not a run folder")
    h, _ = ops.read(d.history)
    verdict = check_run(d.path, max_examples=max_examples, history=h)
    d.write_verdict(verdict)
    return verdict, render_report(d.path, h)


def _render_dir(run_dir: Path, history: "History | None" = None) -> str:
    warnings: list[str] = []
    h, w = ops.read(history if history is not None else run_dir / "history.jsonl")
    warnings += w
    verdict, w = read_json(run_dir / "verdict.json")
    warnings += w
    scenario, w = read_yaml(run_dir / "scenario.yaml")
    warnings += w
    meta = None
    if (run_dir / "meta.json").exists():
        meta, w = read_json(run_dir / "meta.json")
        warnings += w
    if verdict is None:
        verdict = Verdict(unknown_reasons=["verdict.json is missing or unreadable: no checker verdict "
                                           f"(`eos-chaos report {run_dir}` re-checks the history)."])
    return render_report_html(h, Verdict.coerce(verdict), scenario or {}, meta, warnings=warnings,
                              run_dir=run_dir)


def render_report_html(history: "History | Path | list[dict]", verdict: "Verdict | dict", scenario: dict,
                       meta: dict | None, *, warnings: list[str] | None = None,
                       run_dir: Path | None = None) -> str:
    """The report as one self-contained HTML document.

    history: the checkers' History, or what checkers.history.load_history reads (a
    history.jsonl path, event dicts). warnings: problems met while reading the run's files,
    shown at the top. run_dir: where the run's files are (details, links to logs/ and nodes/).
    """
    with gc_paused():
        h, w = ops.read(history)
        h, w_time = ops.timed(h)  # for drawing only: the verdict is the checkers' already
        ctx = _context(h, verdict, scenario, meta, [*(warnings or []), *w, *w_time], run_dir)
        return _env.get_template("report.html.j2").render(**ctx)


def _broker_events(meta: dict) -> list[dict]:
    """meta["broker_events"] (harness.cluster.broker_events) as rows, with each event's description."""
    from harness.cluster.broker_events import DESCRIPTIONS

    evs = meta.get("broker_events")
    if not isinstance(evs, dict):
        return []

    def strs(v: Any) -> list[str]:
        return [str(x) for x in v] if isinstance(v, list) else []

    # every field the template shows, whatever an older or hand-edited meta.json holds
    return [{"name": str(name), "description": DESCRIPTIONS.get(name, str(name)),
             "count": ev.get("count") if isinstance(ev.get("count"), int) else "?",
             "partitions": strs(ev.get("partitions")),
             "transactional_ids": strs(ev.get("transactional_ids")),
             "node": str(ev.get("node", "?")), "first": str(ev.get("first", ""))}
            for name, ev in sorted(evs.items(), key=lambda kv: str(kv[0])) if isinstance(ev, dict)]


def _open_txns(h: "History") -> dict | None:
    """The runner's open-transactions record (harness.cluster.open_txns, the history's
    ``open-transactions`` event) as the report shows it: one row per holder of a key's last
    stable offset when the writers stopped, the wait, the keys left out of the drain."""
    from checkers.finders.stalled_lso import holder_phrase, open_transactions

    ot = open_transactions(h)
    if ot is None:
        return None
    rows = [{"key": k, "lso_hw": "/".join(str(x) for x in (ot.get("held") or {}).get(k) or []),
             "status": hd.get("status") or "", "text": holder_phrase(h, hd)}
            for k, hs in sorted((ot.get("holders") or {}).items()) for hd in hs]
    return {"rows": rows, "held": sorted(ot.get("held") or {}), "waited_s": ot.get("waited_s"),
            "bound_s": ot.get("bound_s"), "unjudged": ot.get("unjudged") or {}, "notes": ot.get("notes") or [],
            "open_at_end": ot.get("open_at_end") or []}


def _context(h: "History", verdict: "Verdict | dict | None", scenario: dict, meta: dict | None,
             warnings: list[str] | None, run_dir: Path | None) -> dict[str, Any]:
    meta = meta or {}
    verdict = Verdict.coerce(verdict or {})
    scenario = scenario or {}
    cols = ops.op_columns(h)
    run_end = ops.run_end(h)
    windows = an.fault_windows(h.nemesis)
    series = an.time_series(cols, run_end)
    svg, legend = timeline_svg(series, windows, run_end)
    labels = ops.process_labels(h)

    state, banner = _state(verdict.valid)
    index, op_of, what = ops.event_order(h)
    known = set(h.ops["invoke_index"].to_list()) | set(h.ops["complete_index"].drop_nulls().to_list()) \
        | {int(i) for i, w_ in zip(index, what) if w_ == 2}
    anomalies = _anomalies(verdict, known)
    # ops the shown examples link to (not all examples: a verdict may hold thousands)
    referenced = {i for a in anomalies for ex in a["all_examples"][:MAX_EXAMPLES]
                  for i in _op_refs(ex)} & known
    table = history_table(h, index, op_of, what, referenced)
    shown = {r["index"] for r in table["rows"] if "gap" not in r}
    lanes = lanes_svg(h, windows, run_end, labels, shown)

    rec = extract_records(h, labels)
    lags = realtime_lags(h, rec)
    unseen = unseen_over_time(h)
    stalls = [st for a in anomalies if a["name"] == "stalled-lso"
              for st in stall_windows(a["all_examples"], rec, run_end, a["status"] != "fails")]
    plots, unplotted = key_plots(rec, marks_from_verdict(anomalies), windows, run_end, stalls)
    stalls += [w for a in anomalies if a["name"] == "unavailable"
               for w in unavailable_windows(a["all_examples"], a["status"] != "fails")]
    links = {p.key: p.anchor for p in plots if p.svgs}
    anomalies = ex.anomalies(verdict, known, links or None)
    for a in anomalies:  # each cycle example drawn as a graph (Elle)
        for j, e in enumerate(a["examples"]):
            src = a["all_examples"][j] if j < len(a["all_examples"]) else None
            e["graph"] = cycle_svg(src, f"cyc-{a['anchor']}-{j}", known) if isinstance(src, dict) else None
    found = [a for a in anomalies if a["status"] == "fails"]
    others = [a for a in anomalies if a["status"] != "fails"]
    live_svg, live_notes = liveness_svg(lags, unseen, rec, stalls, windows, run_end)
    lag_stats = verdict.stats.get("realtime_lag_ms")
    own_lag = None
    if lags.lag_ns.size:
        q = np.percentile(lags.lag_ns / 1e6, (50, 90, 99))
        own_lag = {"n": int(lags.lag_ns.size), "p50": q[0], "p90": q[1], "p99": q[2],
                   "max": float(lags.lag_ns.max() / 1e6)}

    return {
        "title": _title(scenario, meta),
        "state": state,
        "banner": banner,
        "verdict": verdict,
        "unknown_reasons": list(verdict.unknown_reasons),
        "known_bugs": list(verdict.known_bugs),  # checkers/known_bugs/bugs.py
        # signatures seen where nothing they rest on fails the run: never "looks like"
        "known_bugs_seen": list(getattr(verdict, "known_bugs_seen", None) or []),
        "found": found,
        "open_examples": OPEN_EXAMPLES,
        "allowed_found": others,
        "allowed_names": list(verdict.allowed),
        "scenario_rows": _scenario_rows(scenario, {"run_dir": str(run_dir) if run_dir else None,
                                                   **meta}),
        "versions": _versions(scenario, meta, verdict),
        "replay": _replay_command(scenario),
        "scenario_yaml": yaml.safe_dump(scenario, sort_keys=False, default_flow_style=False,
                                        allow_unicode=True) if scenario else "",
        "meta_rows": _flatten({k: v for k, v in meta.items() if k not in ("broker_events", "open_transactions")}),
        "broker_events": _broker_events(meta),
        "open_txns": _open_txns(h),  # beside stalled-lso: who held which key before the final drain
        # the reprocessed ranges have their own table in the eos-duplicate section
        "stats_rows": _flatten({k: v for k, v in verdict.stats.items() if k != "reprocessed_ranges"}),
        "counts": ops.op_counts(h),
        "latencies": [
            {**r, "p50": an.fmt_duration(r["p50"]), "p99": an.fmt_duration(r["p99"]),
             "max": an.fmt_duration(r["max"])} for r in an.latency_summary(cols)],
        "svg": svg,
        "legend": legend,
        "bin": bin_label_of(series.bin_ns),
        "windows": [_window_row(w, run_end) for w in windows],
        "key_plots": plots,
        "unplotted_keys": unplotted,
        "max_key_plots": MAX_KEY_PLOTS,
        "shape_legend": _shape_legend(),
        "liveness_svg": live_svg,
        "liveness_notes": live_notes,
        "lag_hist": lag_histogram_svg(lags, lag_stats),
        "lag_rows": _lag_rows(lag_stats, own_lag),
        "unseen": {"never": unseen.never, "total": unseen.total,
                   "verdict": verdict.anomaly_counts.get("unseen")},
        "lag_legend": [(rec.process_label(int(p)), process_color(int(p)))
                       for p in np.unique(lags.process)][:24],
        "stalls": [{"label": st.label, "key": st.key,
                    "process": "" if st.process is None else st.process,
                    "start": an.fmt_seconds(st.start_ns), "end": an.fmt_seconds(st.end_ns),
                    "length": an.fmt_duration(st.end_ns - st.start_ns)} for st in stalls],
        "table": table,
        "lanes": lanes,
        "app": app_section(h, verdict.stats.get("app"), meta.get("app"), windows, run_end),
        "share": share_section(h, verdict, meta.get("share"), windows, run_end),
        "files": run_files(run_dir) if run_dir else [],
        "check_windows": windows_section(run_dir, meta),
        "n_events": h.n_events,
        "n_clients": h.ops["process"].n_unique(),
        "run_end": an.fmt_seconds(run_end),
        "warnings": list(warnings or []),
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }




# ---------------------------------------------------------------------------------------------


def _state(valid: Any) -> tuple[str, str]:
    if valid is True:
        return "valid", "VALID"
    if valid is False:
        return "invalid", "INVALID"
    return "unknown", "UNKNOWN"


def _title(scenario: dict, meta: dict) -> str:
    name = scenario.get("name") or meta.get("scenario") or "run"
    run_id = meta.get("run_id") or meta.get("id")
    return f"{name} · {run_id}" if run_id else str(name)


def _compact(v: Any, limit: int | None = None) -> str:
    return ex.compact(v, limit)


def _op_refs(example: Any) -> set[int]:
    return ex.op_refs(example)


def _anomalies(verdict: dict, known: set[int] | None = None) -> list[dict[str, Any]]:
    return ex.anomalies(verdict, known)


def _lag_rows(verdict_ms: Any, own: dict[str, Any] | None) -> list[dict[str, str]]:
    rows = []
    for name in ("n", "p50", "p90", "p99", "max"):
        v = verdict_ms.get(name) if isinstance(verdict_ms, dict) else None
        o = own.get(name) if own else None

        def fmt(x: Any) -> str:
            if not isinstance(x, (int, float)):
                return "–"
            return f"{int(x):,}" if name == "n" else an.fmt_duration(x * 1e6)
        rows.append({"name": name, "verdict": fmt(v), "own": fmt(o)})
    return rows


def _shape_legend() -> list[tuple[str, Markup]]:
    """The point shapes of the key plots, as small inline SVGs."""
    shapes = {
        "send (ok)": '<path d="M9,2 l4,7 h-8 z" fill="#555" stroke="#555"/>',
        "send, outcome unknown (info)": '<path d="M9,2 l4,7 h-8 z" fill="#fff" stroke="#555"/>',
        "aborted write (txn fail)": '<path d="M5,2 l8,8 m0,-8 l-8,8" stroke="#555" '
                                    'stroke-width="2.2"/>',
        "poll": '<path d="M9,6 h0" stroke="#555" stroke-width="4.4" stroke-linecap="round"/>',
        "final-drain poll": '<path d="M9,6 h0" stroke="#555" stroke-width="5" '
                            'stroke-opacity="0.35" stroke-linecap="square"/>',
        "record an anomaly example names": '<circle cx="9" cy="6" r="5" fill="none" '
                                           'stroke="#d00000" stroke-width="1.8"/>',
        "stalled-lso window": '<rect x="1" y="1" width="16" height="10" fill="#b26a00" '
                              'fill-opacity="0.25"/>',
    }
    assert set(shapes) >= set(STYLE_NAMES.values())
    return [(label, Markup('<svg width="18" height="12">' + svg + "</svg>"))
            for label, svg in shapes.items()]


def _scenario_rows(scenario: dict, meta: dict) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []

    def add(label: str, v: Any, unit: str = "") -> None:
        if v is None or v == "":
            return
        if isinstance(v, list) and all(isinstance(x, (str, int, float)) for x in v):
            text = ", ".join(str(x) for x in v) or "none"
        else:
            text = v if isinstance(v, str) else _compact(v, 300)
        if unit and isinstance(v, (int, float)) and not isinstance(v, bool):
            text = f"{v:g} {unit}"
        rows.append((label, text))

    add("Scenario", scenario.get("name"))
    add("Scenario file", scenario.get("source"))
    add("Description", scenario.get("description"))
    add("Seed", scenario.get("seed"))
    add("Duration", scenario.get("duration"), "s")
    add("Kafka version", scenario.get("kafka_version"))
    add("Workload", _summary(scenario.get("workload")))
    add("Cluster", _summary(scenario.get("cluster")))
    nemesis = scenario.get("nemesis")
    add("Faults", scenario.get("faults") or (nemesis.get("faults") if isinstance(nemesis, dict)
                                             else nemesis))
    add("Expected anomalies", scenario.get("expected") or scenario.get("expect"))
    add("Allowed anomalies", scenario.get("allowed") or scenario.get("allow"))
    add("Run id", meta.get("run_id"))
    add("Run directory", meta.get("run_dir"))
    add("Started", meta.get("started_at") or meta.get("start_time"))
    return rows


def _summary(v: Any) -> Any:
    """A scenario section in one line: its name, then its scalar settings as k=v."""
    if not isinstance(v, dict):
        return v
    name = v.get("name")
    settings = ", ".join(f"{k}={x}" for k, x in v.items()
                         if k != "name" and isinstance(x, (str, int, float, bool)))
    if name and settings:
        return f"{name} ({settings})"
    return str(name or settings or _compact(v, 300))


def _versions(scenario: dict, meta: dict, verdict: Verdict | None = None) -> list[tuple[str, str]]:
    """What exactly was tested: meta.json's / verdict.json's ``versions`` (harness.run.versions),
    in their order, then the scenario's Kafka version and other ``*_version`` keys."""
    found: dict[str, str] = {}
    for src in (meta.get("versions"), verdict.versions if verdict is not None else None):
        if isinstance(src, dict):
            for k, v in src.items():
                found.setdefault(str(k), v if isinstance(v, str) else _compact(v))
    if scenario.get("kafka_version") is not None:
        found.setdefault("kafka", str(scenario["kafka_version"]))
    for src in (scenario.get("versions"),):
        if isinstance(src, dict):
            for k, v in src.items():
                found.setdefault(str(k), v if isinstance(v, str) else _compact(v))
    for k, v in meta.items():
        if k.endswith("_version") and isinstance(v, (str, int, float)):
            found.setdefault(k[: -len("_version")], str(v))
    return list(found.items())


def _replay_command(scenario: dict) -> str:
    target = scenario.get("source") or scenario.get("name") or "<scenario>"
    parts = ["eos-chaos", "run", str(target)]
    for flag, key in (("--seed", "seed"), ("--duration", "duration"),
                      ("--kafka-version", "kafka_version")):
        if scenario.get(key) is not None:
            parts += [flag, str(scenario[key])]
    return " ".join(p if p == "<scenario>" else shlex.quote(p) for p in parts)


def _flatten(d: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if isinstance(d, dict) and depth < 3:
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v and depth < 2:
                rows += _flatten(v, key, depth + 1)
            else:
                rows.append((key, _fmt_stat(key, v)))
    elif prefix:
        rows.append((prefix, _fmt_stat(prefix, d)))
    return rows


def _fmt_stat(key: str, v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool) or v is None:
        return _compact(v)
    if isinstance(v, (int, float)):
        # the unit comes from the innermost key part that names one: realtime_lag_ms.p99 is in ms
        leaf = key.lower().split(".")[-1]
        if leaf in ("n", "count", "events", "ops") or leaf.endswith(("_count", "_n")):
            return f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"  # a count, whatever its parent
        parts = [p for p in key.lower().split(".") if p.endswith(("_ns", "_ms", "_s", "seconds"))]
        k = parts[-1] if parts else key.lower()
        if k.endswith("_ns"):
            return an.fmt_duration(v)
        if k.endswith("_ms"):
            return an.fmt_duration(v * 1e6)
        if k.endswith("_s") or k.endswith("seconds"):
            return f"{v:,g} s"
        return f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"
    return _compact(v, 400)


def _window_row(w: an.FaultWindow, run_end: int) -> dict[str, Any]:
    end = w.end_ns if w.end_ns is not None else run_end
    return {
        "label": w.label,
        "f": w.f,
        "start": an.fmt_seconds(w.start_ns),
        "end": "–" if w.instant else (an.fmt_seconds(w.end_ns) if w.end_ns is not None
                                      else f"end of run ({an.fmt_seconds(run_end)})"),
        "duration": "instant" if w.instant else an.fmt_duration(end - w.start_ns),
        "closed_by": w.closed_by or ("" if w.instant else "never closed"),
        "detail": "\n".join(w.detail),
    }


def run_files(run_dir: Path, cap: int = 300) -> list[dict[str, Any]]:
    """The run folder's logs/ and nodes/ files (broker and client logs, configs, kept log
    segments) as {"path" (relative to run_dir, the link), "size"}; at most ``cap``."""
    out: list[dict[str, Any]] = []
    for top in ("logs", "nodes"):
        base = run_dir / top
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if p.is_file() and len(out) < cap:
                size = p.stat().st_size
                out.append({"path": p.relative_to(run_dir).as_posix(), "size": _fmt_bytes(size)})
    return out


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
