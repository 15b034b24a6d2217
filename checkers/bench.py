"""Checker benchmark: simulate a correct history, then time ``load_history`` + ``check``.

``run_bench(n_ops, seed)`` writes a simulated history.jsonl (``checkers.simulate``) to a
temporary directory, then loads and checks it in a fresh Python process so that the peak
RSS measured is the checker's alone (the simulator's memory is not counted). Wired to
``eos-chaos bench checker --ops N [--json]`` by the harness CLI.

The same run measures a parse floor, in another fresh process: reading every line of the
history with orjson into Python objects (a list of dicts), the least any checker written in
Python must do. ``seconds / parse_floor_s`` is then a figure that compares across machines of
different speeds (a slower machine slows both alike).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from checkers import check, load_history
t1 = time.perf_counter()
c1 = time.process_time()
h = load_history(sys.argv[1])
t2 = time.perf_counter()
v = check(h)
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
t0 = time.perf_counter()
with open(sys.argv[1], "rb") as fh:
    events = [orjson.loads(line) for line in fh]
t1 = time.perf_counter()
print(json.dumps({"parse_s": t1 - t0, "events": len(events),
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

#: the peak RSS the checker must stay under (issue 12)
RSS_LIMIT_BYTES = 2 * 2**30


def _child(code: str, path: Path, root: str, what: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=root)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} process failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_bench(n_ops: int, seed: int = 0) -> dict:
    """Benchmark the checker on a simulated correct history of ``n_ops`` ops.

    Returns {"n_ops", "ops" (parsed), "events", "micro_ops", "history_bytes", "simulate_s",
    "load_s", "check_s", "seconds" (load + check, wall clock; the process's interpreter and
    import time, "import_s", is not in it), "ops_per_s", "cpu_s" (user + sys CPU of the
    checking process, steadier than wall time on a busy machine; the checker runs on all
    cores, so it can exceed seconds; imports included), "cpu_seconds_s" (CPU of load + check
    alone), "cpu_user_s", "cpu_sys_s", "page_faults",
    "peak_rss_bytes" (of the checking process), "rss_under_2gib" (peak_rss_bytes < 2 GiB),
    "parse_floor_s" (orjson reading every line into Python objects, in its own process, after
    the check), "parse_floor_rss_bytes", "floor_ratio" (seconds / parse_floor_s), "load_avg" (1-minute load average before and
    after), "valid" (must be True), "anomaly_counts", "unknown_reasons"}.
    Raises RuntimeError if the checking process fails.
    """
    from .simulate import simulate

    with tempfile.TemporaryDirectory(prefix="eosc-bench-") as d:
        path = Path(d) / "history.jsonl"
        t = time.perf_counter()
        simulate(n_ops, seed=seed, path=path)
        sim_s = time.perf_counter() - t
        size = path.stat().st_size
        root = str(Path(__file__).resolve().parent.parent)
        load_before = os.getloadavg()[0]
        r = _child(_CHILD, path, root, "checker")
        floor = _child(_FLOOR, path, root, "parse floor")
        load_after = os.getloadavg()[0]
    seconds = r["load_s"] + r["check_s"]
    return {
        "n_ops": n_ops,
        "seed": seed,
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
        "load_avg": [round(load_before, 2), round(load_after, 2)],
        "valid": r["valid"],
        "anomaly_counts": r["anomaly_counts"],
        "unknown_reasons": r["unknown_reasons"],
    }


if __name__ == "__main__":  # python -m checkers.bench N
    print(json.dumps(run_bench(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000), indent=2))
