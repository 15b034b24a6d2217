"""Benchmark of the parts path against the in-memory check (issue 25 section 1).

``run_parts_bench(sizes, n_parts)`` simulates a correct history of each size (``checkers.synthetic.simulate``,
the default shape of ``harness.bench.checker``), then checks it in fresh processes, one after another:
the in-memory ``check`` (unless ``memory=False``: at 10M ops it needs ~17 GiB) and
``check_parts(..., cross="skip")``; each reports CPU seconds (user + sys, ``getrusage``), wall
seconds and peak RSS (``ru_maxrss``). The cross-key finders are left out of the parts row on
purpose: they still load the whole history (``checkers.engines.parts``), and what is measured is the
per-key path. Wired to ``eos-chaos bench parts --ops N --ops M``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from harness.bench.checker import _child, checkers_root
from harness.bench.checker_spark import measure

_MEMORY = r"""
import json, resource, sys, time
from checkers import check, load_history
t = time.perf_counter()
v = check(load_history(sys.argv[1]))
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_rss_bytes": ru.ru_maxrss * 1024, "valid": v.valid,
                  "anomaly_counts": v.anomaly_counts, "ops": v.stats.get("ops")}))
"""

def run_parts_bench(sizes: list[int], n_parts: int = 8, seed: int = 0, memory: bool = True,
                    workdir: str | Path | None = None) -> dict:
    """For each N of ``sizes`` (ops): {"n_ops", "history_bytes", "events", "memory": {...} or
    None, "parts": {...}, "same_anomalies" (the two paths' anomaly counts equal; None without
    the in-memory row)}, plus per-million-op CPU and RSS growth between the sizes. ``workdir``:
    where the history is written (a temporary folder by default; a 10M-op history is ~3.7 GB).
    Raises RuntimeError when a measuring process fails."""
    from checkers.synthetic.simulate import simulate

    root = checkers_root()
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="eosc-bench-parts-", dir=workdir) as d:
            path = Path(d) / "history.jsonl"
            t = time.perf_counter()
            simulate(n, seed=seed, path=path)
            row: dict = {"n_ops": n, "history_bytes": path.stat().st_size,
                         "simulate_s": round(time.perf_counter() - t, 1), "load_avg": round(os.getloadavg()[0], 2)}
            row["memory"] = _child(_MEMORY, path, root, "in-memory check") if memory else None
            parts = measure(path, "polars", n_parts)  # the parts path as the Spark bench runs it
            # imports counted, as in the in-memory row (measure keeps them in start_cpu_s)
            row["parts"] = {**parts, "peak_rss_bytes": parts["driver_peak_rss_bytes"],
                            "cpu_s": parts["cpu_s"] + parts["start_cpu_s"]}
            row["same_anomalies"] = (row["memory"]["anomaly_counts"] == row["parts"]["anomaly_counts"]
                                     if memory else None)
            for k in ("memory", "parts"):
                if row[k]:
                    row[k]["cpu_s_per_million_ops"] = round(row[k]["cpu_s"] / n * 1e6, 2)
                    row[k]["peak_rss_gib"] = round(row[k]["peak_rss_bytes"] / 2**30, 3)
            rows.append(row)
    out = {"n_parts": n_parts, "seed": seed, "rows": rows}
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        out["growth"] = {k: round(b[k]["peak_rss_bytes"] / a[k]["peak_rss_bytes"], 2)
                         for k in ("memory", "parts") if a[k] and b[k]}
        out["growth"]["ops"] = round(b["n_ops"] / a["n_ops"], 2)
    return out


if __name__ == "__main__":  # python -m harness.bench.checker_parts N [N ...]
    import sys

    print(json.dumps(run_parts_bench([int(x) for x in sys.argv[1:]] or [100_000, 300_000]), indent=2))
