"""Checker benchmark: simulate a correct history, then time ``load_history`` + ``check``.

``run_bench(n_ops, seed)`` writes a simulated history.jsonl (``checkers.synthetic.simulate``) to a
temporary directory, then loads and checks it in a fresh Python process so that the peak
RSS measured is the checker's alone (the simulator's memory is not counted). Wired to
``eos-chaos bench checker --ops N [--json]`` by the harness CLI.

The same run measures a parse floor, in another fresh process: reading every line of the
history with orjson into Python objects (a list of dicts), the least any checker written in
Python must do. ``seconds / parse_floor_s`` is then a figure that compares across machines of
different speeds (a slower machine slows both alike).

With ``finders`` (the default) it also times each finder of ``checkers.verdict.FINDERS`` alone,
one after another in a third fresh process (``time_finders``), on the history of N ops and on
one of N/2 simulated with the same seed and shape: a finder whose CPU grows faster than its
input (issue 20: a quadratic finder hid behind the others for months) shows a ``scaling``
(CPU at N over CPU at N/2) well above 2. ``shape`` picks a history shape (``SHAPES``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import checkers

#: history shapes: simulate's keyword arguments, and the anomalies the shape's correct
#: histories hold by design (the check's ``allowed``): long transactions make the G0-realtime
#: cycles of correct smoke runs (scenarios/smoke.yaml's ``expected``)
SHAPES = {
    "default": ({}, []),
    "long-txn": ({"long_txn_rate": 0.2, "crash_rate": 0.01}, ["G0", "G0-process", "G0-realtime", "G1c-realtime"]),
}
SCALING_MIN_S = 0.05  # CPU at N/2 below this: no scaling figure for the finder (noise)


def checkers_root() -> str:
    """The folder that holds the ``checkers`` package in use: the measuring processes'
    working directory, so that they import the same checkers."""
    return str(Path(checkers.__file__).resolve().parent.parent)


_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from checkers import check, load_history
t1 = time.perf_counter()
c1 = time.process_time()
h = load_history(sys.argv[1])
t2 = time.perf_counter()
v = check(h, allowed=json.loads(sys.argv[2]))
t3 = time.perf_counter()
c3 = time.process_time()
ru = resource.getrusage(resource.RUSAGE_SELF)
rss = ru.ru_maxrss * 1024  # Linux: KiB
print(json.dumps({"load_s": t2 - t1, "check_s": t3 - t2, "import_s": t1 - t0,
                  "peak_rss_bytes": rss, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime, "cpu_seconds_s": c3 - c1,
                  "page_faults": ru.ru_minflt, "valid": v.valid, "ops": h.ops.height,
                  "events": h.n_events, "micro_ops": h.mops.height,
                  "anomaly_counts": v.anomaly_counts, "unknown_reasons": v.unknown_reasons}))
"""

_FLOOR = r"""
import json, resource, sys, time
import orjson
t0, c0 = time.perf_counter(), time.process_time()
with open(sys.argv[1], "rb") as fh:
    events = [orjson.loads(line) for line in fh]
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps({"parse_s": t1 - t0, "parse_cpu_s": c1 - c0, "events": len(events),
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

# each finder alone on a fresh cache (but the shared index, which check builds first too);
# only names every version of checkers/ has, so that an older tree can be timed alike
_FINDERS = r"""
import json, sys, time
from checkers import load_history
from checkers.history.log import index
from checkers.run import RunMeta
from checkers.verdict import FINDERS
c0, w0 = time.process_time(), time.perf_counter()
h = load_history(sys.argv[1])
load = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}
index(h)
base = dict(h._cache)
meta, _ = RunMeta.coerce(None)
out = {}
for name, finder, kw in FINDERS:
    h._cache = dict(base)
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        cases = len(finder(h, **(kw(meta) if kw else {})))
    except Exception as e:
        cases = f"crashed: {type(e).__name__}: {e}"
    out[name] = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0, "cases": cases}
print(json.dumps({"load": load, "finders": out}))
"""

#: the peak RSS the checker must stay under (issue 12)
RSS_LIMIT_BYTES = 2 * 2**30


def _child(code: str, path: Path, root: str, what: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, str(path), *args], capture_output=True, text=True, cwd=root)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} process failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def time_finders(path: str | Path, root: str | Path | None = None) -> dict:
    """Each finder of ``checkers.verdict.FINDERS`` timed alone on the history at ``path``, one
    after another in a fresh process whose working directory is ``root`` (a tree holding a
    ``checkers`` package: this one by default, another version's for a before/after
    comparison). Each starts from the history's shared index alone, so it pays for every
    derived frame it uses. Returns {"load": {"cpu_s", "wall_s"} (``load_history``), "finders":
    {finder name: {"cpu_s" (CPU of the process, all threads), "wall_s", "cases" (how many it
    returned, or "crashed: ...")}}}. Raises RuntimeError if the process fails."""
    root = str(root or checkers_root())
    return _child(_FINDERS, Path(path), root, "finder timing")


def _scaling(full: dict, half: dict) -> tuple[dict, float | None]:
    """Per finder {cpu_s, wall_s, cases, cpu_s_half, scaling}, and the scaling of their sum."""
    out = {}
    for name, r in full.items():
        h = half.get(name, {}).get("cpu_s")
        out[name] = {"cpu_s": round(r["cpu_s"], 3), "wall_s": round(r["wall_s"], 3), "cases": r["cases"],
                     "cpu_s_half": None if h is None else round(h, 3),
                     "scaling": round(r["cpu_s"] / h, 2) if h and h >= SCALING_MIN_S else None}
    tf, th = sum(r["cpu_s"] for r in full.values()), sum(r["cpu_s"] for r in half.values())
    return out, (round(tf / th, 2) if th else None)


def run_bench(n_ops: int, seed: int = 0, shape: str = "default", finders: bool = True) -> dict:
    """Benchmark the checker on a simulated correct history of ``n_ops`` ops of ``shape``
    (a key of ``SHAPES``; KeyError otherwise).

    Returns {"n_ops", "seed", "shape", "ops" (parsed), "events", "micro_ops", "history_bytes", "simulate_s",
    "load_s", "check_s", "seconds" (load + check, wall clock; the process's interpreter and
    import time, "import_s", is not in it), "ops_per_s", "cpu_s" (user + sys CPU of the
    checking process, steadier than wall time on a busy machine; the checker runs on all
    cores, so it can exceed seconds; imports included), "cpu_seconds_s" (CPU of load + check
    alone), "cpu_user_s", "cpu_sys_s", "page_faults",
    "peak_rss_bytes" (of the checking process), "rss_under_2gib" (peak_rss_bytes < 2 GiB),
    "parse_floor_s" (orjson reading every line into Python objects, in its own process, after
    the check), "parse_floor_cpu_s" (that process's CPU for it), "parse_floor_rss_bytes",
    "floor_ratio" (seconds / parse_floor_s: wall clock, moved by the machine's load, since the
    checker runs on every core and the floor on one), "floor_cpu_ratio" (cpu_seconds_s /
    parse_floor_cpu_s: CPU against CPU, the figure that repeats on a busy machine), "load_avg" (1-minute load average before and
    after), "valid" (must be True), "anomaly_counts", "unknown_reasons"}; with ``finders``
    also "half_ops" (ops of the N/2 history), "finders" ({name: {"cpu_s", "wall_s", "cases",
    "cpu_s_half" (on the N/2 history), "scaling" (cpu_s / cpu_s_half; None when cpu_s_half <
    ``SCALING_MIN_S``)}}, ``time_finders``), "finders_cpu_s" (their sum at N) and
    "finders_scaling" (that sum over the sum at N/2).
    Raises RuntimeError if a measuring process fails.
    """
    from checkers.synthetic.simulate import simulate

    kw, allowed = SHAPES[shape]
    timed: dict = {}
    with tempfile.TemporaryDirectory(prefix="eosc-bench-") as d:
        path = Path(d) / "history.jsonl"
        t = time.perf_counter()
        simulate(n_ops, seed=seed, path=path, **kw)
        sim_s = time.perf_counter() - t
        size = path.stat().st_size
        root = checkers_root()
        load_before = os.getloadavg()[0]
        r = _child(_CHILD, path, root, "checker", json.dumps(allowed))
        floor = _child(_FLOOR, path, root, "parse floor")
        if finders:
            full = time_finders(path, root)["finders"]
            path.unlink()
            simulate(max(1, n_ops // 2), seed=seed, path=path, **kw)
            half = time_finders(path, root)["finders"]
            per, total = _scaling(full, half)
            timed = {"half_ops": max(1, n_ops // 2), "finders": per,
                     "finders_cpu_s": round(sum(v["cpu_s"] for v in full.values()), 3),
                     "finders_scaling": total}
        load_after = os.getloadavg()[0]
    seconds = r["load_s"] + r["check_s"]
    return {
        "n_ops": n_ops,
        "seed": seed,
        "shape": shape,
        "ops": r["ops"],
        "events": r["events"],
        "micro_ops": r["micro_ops"],
        "history_bytes": size,
        "simulate_s": round(sim_s, 3),
        "load_s": round(r["load_s"], 3),
        "check_s": round(r["check_s"], 3),
        "seconds": round(seconds, 3),
        "ops_per_s": round(r["ops"] / seconds) if seconds else None,
        "cpu_s": round(r["cpu_s"], 3),
        "cpu_seconds_s": round(r["cpu_seconds_s"], 3),
        "cpu_user_s": round(r["cpu_user_s"], 3),
        "cpu_sys_s": round(r["cpu_sys_s"], 3),
        "import_s": round(r["import_s"], 3),
        "page_faults": r["page_faults"],
        "peak_rss_bytes": r["peak_rss_bytes"],
        "rss_under_2gib": r["peak_rss_bytes"] < RSS_LIMIT_BYTES,
        "parse_floor_s": round(floor["parse_s"], 3),
        "parse_floor_rss_bytes": floor["peak_rss_bytes"],
        "floor_ratio": round(seconds / floor["parse_s"], 2) if floor["parse_s"] else None,
        "parse_floor_cpu_s": round(floor["parse_cpu_s"], 3),
        "floor_cpu_ratio": round(r["cpu_seconds_s"] / floor["parse_cpu_s"], 2) if floor["parse_cpu_s"] else None,
        "load_avg": [round(load_before, 2), round(load_after, 2)],
        "valid": r["valid"],
        "anomaly_counts": r["anomaly_counts"],
        "unknown_reasons": r["unknown_reasons"],
        **timed,
    }


if __name__ == "__main__":  # python -m harness.bench.checker N | python -m harness.bench.checker finders PATH [ROOT]
    if sys.argv[1:2] == ["finders"]:
        print(json.dumps(time_finders(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None), indent=2))
    else:
        print(json.dumps(run_bench(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000), indent=2))
