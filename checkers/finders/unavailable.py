"""unavailable: windows with no successful op of a kind."""

from __future__ import annotations

import polars as pl

from ..history import History

DEFAULT_FS = ("txn", "send")
#: the nemesis-process info events around the app workload's input.preload (its start and end)
PRELOAD = "preload"
DEFAULT_BOUND_S = 10.0


def load_end(h: History) -> int | None:
    """When the load ended (ns): the first nemesis ``heal`` event, which the runner records as
    the load's time is up (harness.run.runner); None in a history without one."""
    for e in h.nemesis:
        if e.get("f") == "heal" and isinstance(e.get("time"), int):
            return e["time"]
    return None


def load_start(h: History) -> int | None:
    """When the load started (ns), if something ran before it: the last ``preload`` event
    (the app workload's input.preload ends there, before any instance starts); None without."""
    t = [e["time"] for e in h.nemesis if e.get("f") == PRELOAD and isinstance(e.get("time"), int)]
    return max(t) if t else None


def gaps(h: History, fs=DEFAULT_FS) -> pl.DataFrame:
    """Per f: the windows between consecutive ok completions (plus from the f's first
    invoke and up to the load's end: the first ``heal`` event, else the history's end); ops
    invoked before ``load_start`` (an app's input.preload) are left out.
    After the load ends the producers stop and the harness heals, drains and (app workload)
    waits for the application to catch up: no outage. Columns: f, start, end (ns), gap_ns."""
    def build(h: History):
        ops = h.ops.filter(pl.col("f").is_in(list(fs)))
        ends = [t for t in (h.ops["complete_time"].max(), h.ops["invoke_time"].max()) if t is not None]
        if ops.is_empty() or not ends:  # no op with a time (a history whose times are not ns integers)
            return pl.DataFrame(schema={"f": pl.Utf8, "start": pl.Int64, "end": pl.Int64,
                                        "gap_ns": pl.Int64})
        end = max(ends)
        stop = load_end(h)
        if stop is not None:
            end = min(end, stop)
            ops = ops.filter(pl.col("invoke_time") < end)
        begin = load_start(h)
        if begin is not None:  # the preload's ops came before the load: not counted
            ops = ops.filter(pl.col("invoke_time") >= begin)
        if ops.is_empty():  # no live op of these fs (a pure batch run): nothing to be unavailable
            return pl.DataFrame(schema={"f": pl.Utf8, "start": pl.Int64, "end": pl.Int64, "gap_ns": pl.Int64})
        first = ops.group_by("f").agg(t=pl.col("invoke_time").min())
        oks = ops.filter(pl.col("type") == "ok").select("f", t="complete_time")
        tail = first.select("f", t=pl.lit(end, dtype=pl.Int64))
        pts = pl.concat([first, oks.drop_nulls(), tail]).sort("f", "t")
        pts = pts.with_columns(t=pl.min_horizontal("t", pl.lit(end, dtype=pl.Int64)))  # an ok after the load's end
        return (
            pts.with_columns(start=pl.col("t").shift(1).over("f"))
            .drop_nulls("start")
            .filter(pl.col("start") < pl.col("t"))
            .select("f", "start", end="t", gap_ns=pl.col("t") - pl.col("start"))
        )
    return h.cached(("gaps", tuple(fs)), build)


def unavailable_cases(h: History, bound_s: float | None = None, fs=None) -> list[dict]:
    """unavailable: windows with no successful op of a kind (docs/anomalies.md, liveness).

    For each f in ``fs`` (``meta.liveness.unavailable_fs``, default txn and send: empty polls are
    not recorded, so poll gaps only mean nothing was written), a window longer than
    ``bound_s`` (``meta.liveness.unavailable_bound_s``, default 10 s) with no ok completion,
    counted from the f's first invoke to the load's end (the first ``heal`` event; the
    history's end without one). Fails a run only when listed in ``meta["fail_on"]``.

    Example: {"anomaly": "unavailable", "f", "start_ns", "end_ns", "seconds",
    "nemesis": [nemesis events in the window, first 5], "explanation"}.
    """
    bound = DEFAULT_BOUND_S if bound_s is None else bound_s
    g = gaps(h, tuple(fs or DEFAULT_FS)).filter(pl.col("gap_ns") > int(bound * 1e9)).sort("f", "start")
    out = []
    for f, start, end, gap in g.iter_rows():
        nem = [e for e in h.nemesis if isinstance(e.get("time"), int) and start <= e["time"] <= end]
        out.append({
            "anomaly": "unavailable",
            "f": f,
            "start_ns": start,
            "end_ns": end,
            "seconds": gap / 1e9,
            "nemesis": [{"index": e.get("index"), "f": e.get("f"), "value": e.get("value")}
                        for e in nem[:5]],
            "explanation": (
                f"no {f} op completed ok for {gap / 1e9:.1f} s "
                f"({start / 1e9:.1f} s to {end / 1e9:.1f} s into the run; bound {bound} s)"
            ),
        })
    return out
