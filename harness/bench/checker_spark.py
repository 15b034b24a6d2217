"""The parts path on the polars engine against the same path on Spark (docs/benchmarks.md
"Checker on Spark"): ``python -m harness.bench.checker_spark HISTORY [--parts N] [--master URL]
[--rounds R]``, or ``--ops N`` to simulate a correct history of N ops first
(``checkers.synthetic.simulate``, seed 0).

Each measurement runs in a fresh Python process: ``check_parts(HISTORY, n_parts=N,
cross="skip")`` with ``run_local`` (polars) or with ``checkers.engines.parts_spark``'s engine, rounds
alternating polars, spark. Figures per run (JSON, one object a line, then a summary):

* ``wall_s``: the check's wall clock (for spark without the session start, ``start_s``);
* ``cpu_s``: user + system CPU seconds of the check (the session start's, with the imports, is
  ``start_cpu_s``): of the driver process (getrusage) plus, for spark, of every process under
  it (the JVM, pyspark's daemon and its Python workers; psutil sampled every 0.2 s and once
  before the session stops, so a process that exits between samples loses at most 0.2 s);
  the executors' share is ``executor_cpu_s`` (the workers' own getrusage at the end of each
  task, the largest per worker);
* ``driver_peak_rss_bytes`` (the driver Python's ru_maxrss), ``jvm_peak_rss_bytes`` (sampled),
  ``executor_peak_rss_bytes`` (the largest ru_maxrss of a Python worker, read in the task);
* ``valid``, ``anomaly_counts``, ``anomalies``, ``unknown_reasons``: the verdict, compared
  between the engines (``same_verdict`` in the summary).

Needs pyspark and Java for the spark runs; raises RuntimeError when a measuring process fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.bench.checker import checkers_root

_CHILD = r"""
import json, os, resource, sys, threading, time
import psutil
from checkers.engines.parts import check_parts, run_local

path, n_parts, engine_name, master = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
me = psutil.Process()
seen = {}  # pid -> [name, last cpu s, peak rss]
stop = threading.Event()

def sample():
    for p in me.children(recursive=True):
        try:
            with p.oneshot():
                t, rss, name = p.cpu_times(), p.memory_info().rss, p.name()
        except psutil.Error:
            continue
        s = seen.setdefault(p.pid, [name, 0.0, 0])  # the name as last seen: bash execs java
        s[0], s[1], s[2] = name, t.user + t.system, max(s[2], rss)

def sampler():
    while not stop.wait(0.2):
        sample()

threading.Thread(target=sampler, daemon=True).start()
tasks = {}  # python worker pid -> (cpu s, peak rss) at the end of its last task

class Measured:
    def __init__(self, fn):
        self.fn = fn
    def __call__(self, x):
        import os, resource
        r = self.fn(x)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return r, (os.getpid(), ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024)

start_s = 0.0
if engine_name == "spark":
    from checkers.engines.parts_spark import spark_engine
    t0 = time.perf_counter()
    spark = spark_engine(master)
    start_s = time.perf_counter() - t0
    def engine(fn, items):
        out = spark(Measured(fn), items)
        for _, (pid, cpu, rss) in out:
            old = tasks.get(pid, (0.0, 0))
            tasks[pid] = (max(old[0], cpu), max(old[1], rss))
        return [r for r, _ in out]
else:
    engine = run_local
sample()
base = {pid: x[1] for pid, x in seen.items()}
ru0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
v = check_parts(path, n_parts=n_parts, cross="skip", engine=engine)
wall = time.perf_counter() - t0
sample()
stop.set()
if engine_name == "spark":
    spark.close()
ru = resource.getrusage(resource.RUSAGE_SELF)
for pid, (cpu, rss) in tasks.items():  # the workers' own figures, when later than the last sample
    s = seen.setdefault(pid, ["python", 0.0, 0])
    s[1], s[2] = max(s[1], cpu), max(s[2], rss)
jvm = [s for s in seen.values() if s[0] == "java"]
print(json.dumps({
    "engine": engine_name, "master": master if engine_name == "spark" else None, "n_parts": n_parts,
    "start_s": round(start_s, 2), "wall_s": round(wall, 2),
    "driver_cpu_s": round(ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime, 2),
    "children_cpu_s": round(sum(s[1] - base.get(pid, 0.0) for pid, s in seen.items()), 2),
    "cpu_s": round(ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime
                   + sum(s[1] - base.get(pid, 0.0) for pid, s in seen.items()), 2),
    "start_cpu_s": round(ru0.ru_utime + ru0.ru_stime + sum(base.values()), 2),
    "executor_cpu_s": round(sum(c - base.get(pid, 0.0) for pid, (c, _) in tasks.items()), 2),
    "driver_peak_rss_bytes": ru.ru_maxrss * 1024,
    "jvm_peak_rss_bytes": max((s[2] for s in jvm), default=0),
    "executor_peak_rss_bytes": max((r for _, r in tasks.values()), default=0),
    "python_workers": len(tasks),
    "valid": v.valid, "anomaly_counts": v.anomaly_counts, "anomalies": v.anomalies,
    "unknown_reasons": v.unknown_reasons}))
"""


def measure(history: str | Path, engine: str, n_parts: int = 8, master: str = "local[2]") -> dict:
    """One run of ``check_parts(history, cross="skip")`` on ``engine`` ("polars" or "spark") in
    a fresh process (see the module docstring for the figures). Raises RuntimeError if it fails."""
    root = checkers_root()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(history), str(n_parts), engine, master],
                          capture_output=True, text=True, cwd=root, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"the {engine} run failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_spark_bench(history: str | Path, n_parts: int = 8, master: str = "local[2]", rounds: int = 1,
                    report=None) -> dict:
    """``rounds`` of (polars, spark) on ``history``; returns {"runs": [...], "load_avg":
    [before, after], "same_verdict": every run's verdict equal to the first's, "ratios": spark
    over polars of the medians of wall_s, cpu_s and driver_peak_rss_bytes}. ``report(run)`` is
    called after each run."""
    runs, load0 = [], os.getloadavg()[0]
    for _ in range(rounds):
        for engine in ("polars", "spark"):
            r = measure(history, engine, n_parts, master)
            runs.append(r)
            if report:
                report(r)
    key = ("valid", "anomaly_counts", "anomalies", "unknown_reasons")
    same = all(tuple(r[k] for k in key) == tuple(runs[0][k] for k in key) for r in runs)

    def med(engine: str, k: str) -> float:
        xs = sorted(r[k] for r in runs if r["engine"] == engine)
        return xs[len(xs) // 2]

    ratios = {k: round(med("spark", k) / med("polars", k), 2)
              for k in ("wall_s", "cpu_s", "driver_peak_rss_bytes") if med("polars", k)}
    return {"runs": runs, "load_avg": [round(load0, 2), round(os.getloadavg()[0], 2)],
            "same_verdict": same, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.bench.checker_spark", description=__doc__.split("\n\n")[0])
    ap.add_argument("history", nargs="?", help="a history.jsonl (or --ops)")
    ap.add_argument("--ops", type=int, help="simulate a correct history of this many ops first")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args(argv)
    if not a.history and not a.ops:
        ap.error("give a HISTORY or --ops N")
    with tempfile.TemporaryDirectory(prefix="eosc-bench-spark-") as d:
        history = a.history
        if a.ops:
            from checkers.synthetic.simulate import simulate

            history = Path(d) / "history.jsonl"
            t = time.perf_counter()
            simulate(a.ops, seed=0, path=history)
            print(json.dumps({"simulated_ops": a.ops, "simulate_s": round(time.perf_counter() - t, 1),
                              "history_bytes": history.stat().st_size}), flush=True)

        def show(r: dict) -> None:
            print(json.dumps({k: v for k, v in r.items() if k != "anomalies"}), flush=True)

        res = run_spark_bench(history, a.parts, a.master, a.rounds, report=show)
    print(json.dumps({k: v for k, v in res.items() if k != "runs"}), flush=True)
    return 0 if res["same_verdict"] else 1


if __name__ == "__main__":
    sys.exit(main())
