"""Pure summaries of a history for the report: fault windows (from the nemesis events), time
series and latencies (from harness.report.ops's columns of the checkers' History).

Nothing here judges correctness; that is the checkers' job. These only describe what happened.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NEMESIS = "nemesis"
OUTCOMES = ("ok", "fail", "info")

# Which nemesis f opens a fault window, and which f closes it.
# The harness's fault kinds (nemesis/registry.py: start f -> end f) and older spellings; the
# final "heal" closes every window still open.
WINDOW_CLOSERS: dict[str, tuple[str, ...]] = {
    "kill": ("start", "heal"),
    "stop": ("start", "heal"),
    "crash": ("start", "heal"),
    "pause": ("resume", "heal"),
    "kill-client": ("restart-client", "heal"),
    "pause-client": ("resume-client", "heal"),
    "zombie": ("resume-zombie", "heal"),
    "partition": ("heal-partition", "heal"),
    "toxic": ("untoxic", "heal"),
    "lose-unsynced": ("power-on", "heal"),
    "clock-skew": ("clock-reset", "heal"),
    "clock": ("reset-clock", "heal"),
    "skew": ("reset-clock", "heal"),
}
CLOSER_FS = {c for closers in WINDOW_CLOSERS.values() for c in closers}


def is_client(event: dict[str, Any]) -> bool:
    p = event.get("process")
    if type(p) is int:
        return True
    return p != NEMESIS and not str("" if p is None else p).startswith(NEMESIS)


def _time(event: dict[str, Any]) -> int:
    t = event.get("time")
    if type(t) is int:
        return t
    return int(t) if isinstance(t, (int, float)) and t == t else 0


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return v
    except TypeError:
        return json.dumps(v, sort_keys=True)


def latency_summary(cols: "OpColumns") -> list[dict[str, Any]]:
    """p50/p99/max latency of completed ops per f, in nanoseconds."""
    rows = []
    for fi, f in enumerate(cols.fs):
        arr = cols.latency_ns[(cols.f == fi) & ~np.isnan(cols.latency_ns)]
        if not arr.size:
            continue
        p50, p99 = np.percentile(arr, (50, 99))
        rows.append({"f": f, "n": int(arr.size), "p50": float(p50), "p99": float(p99),
                     "max": float(arr.max())})
    return rows


# ---------------------------------------------------------------------------------------------
# Fault windows


@dataclass
class FaultWindow:
    f: str
    label: str
    start_ns: int
    end_ns: int | None  # None: never closed, extends to the run's end
    target: Any
    detail: list[str] = field(default_factory=list)
    closed_by: str | None = None
    instant: bool = False  # a nemesis action with no window (e.g. an unknown f)
    lane: int = 0

    @property
    def kind(self) -> str:
        return self.f


def _target(value: Any) -> Any:
    """What a nemesis action aimed at: a node, nodes, a process, ... or None for 'everything'."""
    if isinstance(value, dict):
        for key in ("node", "nodes", "client", "clients", "process", "processes", "target",
                    "targets", "proxy", "name"):
            if key in value and value[key] is not None:
                v = value[key]
                return tuple(v) if isinstance(v, list) else v
        return None
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if value is None:
        return None
    return _hashable(value)


def _fmt_target(t: Any) -> str:
    if t is None:
        return ""
    if isinstance(t, tuple):
        return ",".join(_fmt_target(x) for x in t)
    if isinstance(t, bool):
        return str(t)
    if isinstance(t, int):
        return f"n{t}"
    s = str(t)
    return s if len(s) <= 24 else s[:23] + "…"


def _label(f: str, value: Any) -> str:
    if f == "partition" and isinstance(value, dict):
        if isinstance(value.get("name"), str):
            return f"partition {value['name']}"
        grudge = value.get("grudge")
        kind = f"{value['kind']}: " if isinstance(value.get("kind"), str) else ""
        if isinstance(grudge, dict) and grudge:
            return f"partition {kind}" + partition_sides(grudge)
    if f == "toxic" and isinstance(value, dict):
        params = value.get("params") if isinstance(value.get("params"), dict) else {}
        kind = value.get("type") or value.get("toxic") or params.get("type") or ""
        tgt = _fmt_target(_target(value))
        return " ".join(x for x in ("toxic", str(kind), tgt) if x)
    t = _fmt_target(_target(value))
    return f"{f} {t}".strip()


def partition_sides(grudge: dict[Any, Any]) -> str:
    """A grudge (node -> nodes it must not reach) as its sides, e.g. "n3 | n1,n2"."""
    nodes: set[str] = set()
    blocked: set[tuple[str, str]] = set()
    for k, vs in grudge.items():
        nodes.add(str(k))
        for v in vs if isinstance(vs, list) else [vs]:
            nodes.add(str(v))
            blocked.add((str(k), str(v)))
            blocked.add((str(v), str(k)))
    sides: list[list[str]] = []
    seen: set[str] = set()
    for n in sorted(nodes, key=_node_key):
        if n in seen:
            continue
        comp, todo = [], [n]
        seen.add(n)
        while todo:
            a = todo.pop()
            comp.append(a)
            for b in nodes:
                if b not in seen and (a, b) not in blocked:
                    seen.add(b)
                    todo.append(b)
        sides.append(sorted(comp, key=_node_key))
    sides.sort(key=lambda c: (len(c), [_node_key(x) for x in c]))
    fmt = lambda n: f"n{n}" if n.isdigit() else n  # noqa: E731
    return " | ".join(",".join(fmt(n) for n in side) for side in sides)


def _node_key(n: str) -> tuple[int, Any]:
    return (0, int(n)) if n.isdigit() else (1, n)


def _matches(open_w: FaultWindow, closer_target: Any) -> bool:
    if closer_target is None or open_w.target is None:
        return True
    if open_w.target == closer_target:
        return True
    a = set(open_w.target) if isinstance(open_w.target, tuple) else {open_w.target}
    b = set(closer_target) if isinstance(closer_target, tuple) else {closer_target}
    return bool(a & b)


def _detail(ev: dict[str, Any]) -> str:
    v = ev.get("value")
    s = json.dumps(v, sort_keys=True, default=str) if v is not None else ""
    if ev.get("error"):
        s += " error: " + json.dumps(ev.get("error"), default=str)
    return s[:300]


def fault_windows(events: list[dict[str, Any]]) -> list[FaultWindow]:
    """Fault windows from nemesis events, robust to missing halves and unknown f.

    Each nemesis action is a pair of info events (start, end) with the same f. A window opens at
    the end of an opening action (kill, pause, partition, ...) and closes at the end of the next
    matching closing action (start, resume, heal, ...) for the same target; an action whose end
    is missing counts from its start. Windows never closed have end_ns None.
    """
    actions: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
    pending: dict[str, dict[str, Any]] = {}
    for ev in events:
        if is_client(ev):
            continue
        f = str(ev.get("f"))
        if f in pending:
            actions.append((f, pending.pop(f), ev))
        else:
            pending[f] = ev
    for f, ev in pending.items():
        actions.append((f, ev, None))
    actions.sort(key=lambda a: (_time(a[2] or a[1]), a[1].get("index", 0)))

    windows: list[FaultWindow] = []
    open_windows: list[FaultWindow] = []
    for f, begin, end in actions:
        at = _time(end if end is not None else begin)
        value = begin.get("value")
        if end is not None and isinstance(end.get("value"), dict) and isinstance(value, dict):
            value = {**value, **end["value"]}
        elif end is not None and value is None:
            value = end.get("value")
        detail = [f"{f} began at {fmt_seconds(_time(begin))}: {_detail(begin)}"]
        if end is not None:
            detail.append(f"{f} done at {fmt_seconds(_time(end))}: {_detail(end)}")
        else:
            detail.append(f"{f} never reported its end")
        if f in WINDOW_CLOSERS:
            w = FaultWindow(f, _label(f, value), at, None, _target(value), detail)
            windows.append(w)
            open_windows.append(w)
        elif f in CLOSER_FS:
            tgt = _target(value)
            for w in list(open_windows):
                if f in WINDOW_CLOSERS[w.f] and _matches(w, tgt):
                    w.end_ns = at
                    w.closed_by = f
                    w.detail.extend(detail)
                    open_windows.remove(w)
        else:
            windows.append(FaultWindow(f, _label(f, value), at, at, _target(value), detail,
                                       instant=True))
    windows.sort(key=lambda w: w.start_ns)
    return windows


# ---------------------------------------------------------------------------------------------
# Time series


@dataclass
class OpColumns:
    """The completed client ops as numpy columns (one row per completed op; ops.op_columns)."""

    fs: list[str]  # f code -> name, sorted
    f: np.ndarray  # int16 code into fs
    outcome: np.ndarray  # int8 index into OUTCOMES
    done_ns: np.ndarray  # int64 completion time
    latency_ns: np.ndarray  # float64, nan where the invoke is missing


@dataclass
class Series:
    bin_ns: int
    n_bins: int
    throughput: dict[tuple[str, str], np.ndarray]  # (f, outcome) -> completions per second
    # f -> (p50, p99) latency per window in ns, nan where the f completed nothing
    latency: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # (f, outcome) for fail and info -> (completion times, latencies) of those ops, at most
    # MAX_POINTS each (evenly thinned beyond), and how many there were in all
    odd_points: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, int]] = field(
        default_factory=dict)


NICE_BINS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600)
MAX_POINTS = 400


def choose_bin_ns(run_end_ns: int, max_bins: int = 600) -> int:
    for b in NICE_BINS_S:
        if run_end_ns / (b * 1e9) <= max_bins:
            return b * 1_000_000_000
    return int(np.ceil(run_end_ns / max_bins))


def thin(n: int, cap: int) -> np.ndarray:
    """Indices of at most cap of n items, evenly spread, first and last kept."""
    if n <= cap:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, cap).round().astype(np.int64))


def time_series(cols: OpColumns, run_end_ns: int) -> Series:
    """Completed ops per second (per f and outcome) and latency percentiles per f and window.

    Ops count in the window of their completion; invokes that never completed are not counted.
    Latency percentiles cover every completed op of an f (ok, fail and info alike); the fail and
    info ops are also kept as single points so that their latencies show on their own.
    """
    bin_ns = choose_bin_ns(run_end_ns)
    n_bins = max(1, int(np.ceil(max(run_end_ns, 1) / bin_ns)))
    b = np.clip(cols.done_ns // bin_ns, 0, n_bins - 1)
    seconds = bin_ns / 1e9
    throughput: dict[tuple[str, str], np.ndarray] = {}
    latency: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    odd: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, int]] = {}
    for fi, f in enumerate(cols.fs):
        in_f = cols.f == fi
        for oi, outcome in enumerate(OUTCOMES):
            sel = in_f & (cols.outcome == oi)
            if not sel.any():
                continue
            throughput[(f, outcome)] = np.bincount(b[sel], minlength=n_bins)[:n_bins] / seconds
            if outcome != "ok":
                has = sel & ~np.isnan(cols.latency_ns)
                t, lat = cols.done_ns[has], cols.latency_ns[has]
                keep = thin(t.size, MAX_POINTS)
                odd[(f, outcome)] = (t[keep], lat[keep], int(t.size))
        has = in_f & ~np.isnan(cols.latency_ns)
        if has.any():
            latency[f] = _binned_percentiles(b[has], cols.latency_ns[has], n_bins)
    return Series(bin_ns, n_bins, dict(sorted(throughput.items())), latency, odd)


def _binned_percentiles(bins: np.ndarray, values: np.ndarray, n_bins: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """p50 and p99 of values per bin (nan for empty bins)."""
    p50 = np.full(n_bins, np.nan)
    p99 = np.full(n_bins, np.nan)
    order = np.argsort(bins, kind="stable")
    bins, values = bins[order], values[order]
    cuts = np.flatnonzero(np.diff(bins)) + 1
    for chunk_b, chunk in zip(np.split(bins, cuts), np.split(values, cuts)):
        if chunk.size:
            p50[chunk_b[0]], p99[chunk_b[0]] = np.percentile(chunk, (50, 99))
    return p50, p99


# ---------------------------------------------------------------------------------------------
# Formatting with units


def fmt_seconds(ns: float | int | None) -> str:
    if ns is None:
        return "–"
    s = ns / 1e9
    if abs(s) >= 100:
        return f"{s:,.0f} s"
    if abs(s) >= 10:
        return f"{s:.1f} s"
    return f"{s:.2f} s"


def fmt_duration(ns: float | int | None) -> str:
    """A latency or span: µs, ms, s or min, whichever reads best."""
    if ns is None or (isinstance(ns, float) and np.isnan(ns)):
        return "–"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.0f} µs"
    if ns < 1_000_000_000:
        v = ns / 1e6
        return f"{v:.1f} ms" if v < 10 else f"{v:.0f} ms"
    if ns < 120_000_000_000:
        return f"{ns / 1e9:.2f} s"
    return f"{ns / 6e10:.1f} min"
