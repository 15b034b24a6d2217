"""``eos-chaos bench eos-cost``: what exactly-once costs a producer, on the harness's own cluster.

The claim measured: transactions committed every 100 ms with 1 KB records cost about 3% of a
non-transactional producer's throughput (KIP-98's performance section; Confluent's
"Transactions in Apache Kafka", 2017). On one 3-node cluster (harness.bench.perf_test), five
producer modes (cells): plain (acks=all, no idempotence), idempotent, and transactional with
commit intervals 10, 100 and 1000 ms, each measured with the harness's producer
(harness.bench.producer, confluent-kafka) and with Kafka's kafka-producer-perf-test as the
reference. Rounds run every cell in turn (A B C D E, A B C D E, ...) so that the machine's
noise falls on all of them alike; a cell's figure is its best round, with the spread of its
rounds; the overhead of a mode is its best against plain's best, per tool.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable

#: (mode, commit interval ms): the five cells, in round order
CELLS: list[tuple[str, int | None]] = [("plain", None), ("idempotent", None), ("txn", 10), ("txn", 100), ("txn", 1000)]
TOOLS = ("harness", "perf-test")
TOPIC = "eos-cost"
PARTITIONS = 6


@dataclass
class Sample:
    mode: str
    commit_interval_ms: int | None
    tool: str
    round: int
    records_per_s: float
    mb_per_s: float
    p50_ms: float | None
    p99_ms: float | None
    records: int


def _java_props(mode: str) -> dict[str, str]:
    """The Java producer's settings for a mode, as harness.bench.producer.conf sets librdkafka's."""
    return {"acks": "all", "linger.ms": "5", "enable.idempotence": "false" if mode == "plain" else "true"}


def measure_harness(bc, mode: str, interval: int | None, record_bytes: int, seconds: float,
                    warmup_s: float, tid: str) -> dict:
    cfg = {"bootstrap": bc.bootstrap, "topic": TOPIC, "mode": mode, "commit_interval_ms": interval,
           "record_bytes": record_bytes, "seconds": seconds, "warmup_s": warmup_s, "transactional_id": tid}
    proc = subprocess.run(bc.client_cmd([sys.executable, "-m", "harness.bench.producer", json.dumps(cfg)]),
                          capture_output=True, text=True, timeout=seconds + warmup_s + 180)
    if proc.returncode != 0:
        raise RuntimeError(f"harness producer ({mode}) failed: {proc.stderr.strip()[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_perf_test(bc, mode: str, interval: int | None, record_bytes: int, seconds: float,
                      warmup_s: float, tid: str, rate_guess: float) -> dict:
    """perf-test has no time limit: it sends a record count, sized from ``rate_guess`` (records/s)."""
    from harness.bench.perf_test import run_perf_test

    warm = max(1000, int(rate_guess * warmup_s))
    n = warm + max(2000, int(rate_guess * seconds))
    txn = mode == "txn"
    return run_perf_test(bc, TOPIC, n, record_bytes, _java_props(mode), warmup_records=warm,
                         transactional_id=tid if txn else None, transaction_ms=interval if txn else None,
                         timeout=max(300, 20 * seconds))


def perf_rate_guess(rate: dict[tuple, float], cell: tuple, prev: tuple) -> float:
    """perf-test's records/s for ``cell``, to size its record count: its own last figure, else
    the previous cell's perf-test figure scaled as the harness's rate went from that cell to
    this one (the two clients differ by far more than the modes do). Pure."""
    own = rate.get((*cell, "perf-test"))
    if own:
        return own
    base = rate.get((*prev, "perf-test"), 3000.0)
    h_now, h_prev = rate.get((*cell, "harness")), rate.get((*prev, "harness"))
    return base * (h_now / h_prev) if h_now and h_prev else base


def run_eos_cost(record_bytes: int = 1024, seconds: float = 10.0, rounds: int = 3, warmup_s: float = 2.0,
                 kafka_version: str | None = None, log: Callable[[str], None] = lambda s: None,
                 cluster=None) -> dict:
    """Measure every (cell, tool) ``rounds`` times on one fresh cluster; return summarize()'s dict
    plus "samples" (every measurement), "seconds", "record_bytes", "rounds", "kafka_version".
    Takes the machine's cluster lock, unless ``cluster`` (a BenchCluster already up) is given.
    Raises what bench_cluster and the measurements raise."""
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.bench.perf_test import bench_cluster

    version = kafka_version or DEFAULT_KAFKA_VERSION
    samples: list[Sample] = []
    rate: dict[tuple, float] = {}  # (mode, interval, tool) -> last measured records/s
    with (nullcontext(cluster) if cluster else
          bench_cluster(version, overrides={"log.retention.check.interval.ms": "10000"})) as bc:
        # retention keeps the disk from filling with what the rounds write
        bc.create_topic(TOPIC, PARTITIONS, {"retention.bytes": str(256 * 2**20), "segment.bytes": str(32 * 2**20)})
        # perf-test sends a record count, not for a time: one short uncounted run sizes the first
        calib = measure_perf_test(bc, "plain", None, record_bytes, 1.0, 0.0, "calibration", 3000)
        rate[("plain", None, "perf-test")] = calib["records_per_s"]
        log(f"perf-test calibration: {calib['records_per_s']:.0f} records/s plain")
        prev = ("plain", None)
        for r in range(rounds):
            for mode, interval in CELLS:
                for tool in TOOLS:
                    tid = f"eosc-bench-{tool}-{interval}-r{r}"
                    t = time.monotonic()
                    if tool == "harness":
                        res = measure_harness(bc, mode, interval, record_bytes, seconds, warmup_s, tid)
                    else:
                        res = measure_perf_test(bc, mode, interval, record_bytes, seconds, warmup_s, tid,
                                                perf_rate_guess(rate, (mode, interval), prev))
                    rate[(mode, interval, tool)] = float(res["records_per_s"]) or 1.0
                    s = Sample(mode, interval, tool, r, float(res["records_per_s"]), float(res["mb_per_s"]),
                               res["p50_ms"], res["p99_ms"], int(res["records"]))
                    samples.append(s)
                    log(f"round {r + 1}/{rounds} {mode:<10} {interval or '':>5} {tool:<9} "
                        f"{s.records_per_s:10.0f} rec/s {s.mb_per_s:7.2f} MB/s p50 {s.p50_ms} p99 {s.p99_ms} ms "
                        f"({time.monotonic() - t:.0f} s)")
                prev = (mode, interval)
    out = summarize(samples)
    out.update(samples=[s.__dict__ for s in samples], seconds=seconds, record_bytes=record_bytes,
               rounds=rounds, kafka_version=version)
    return out


def summarize(samples: list[Sample]) -> dict:
    """Best of the rounds per (cell, tool), with the spread, and the overhead against plain.

    Returns {"rows": [{"mode", "commit_interval_ms", "tool", "records_per_s" (best round),
    "mb_per_s", "p50_ms", "p99_ms" (of that round), "min_records_per_s", "spread_pct"
    ((best - worst) / best, %), "rounds", "overhead_pct" (1 - best / plain's best, %; positive
    = slower than plain), "overhead_pct_paired" (median over rounds of the same round's
    1 - rate / plain rate: noise that hits a whole round cancels)}], "overhead_pct_100ms":
    {tool: overhead_pct of txn at 100 ms}}. Pure."""
    import statistics

    rows = []
    by_key: dict[tuple, list[Sample]] = {}
    for s in samples:
        by_key.setdefault((s.mode, s.commit_interval_ms, s.tool), []).append(s)
    best_plain = {tool: max((s.records_per_s for s in by_key.get(("plain", None, tool), [])), default=None)
                  for tool in TOOLS}
    plain_round = {(s.tool, s.round): s.records_per_s for s in samples if s.mode == "plain"}
    for mode, interval in CELLS:
        for tool in TOOLS:
            ss = by_key.get((mode, interval, tool))
            if not ss:
                continue
            best = max(ss, key=lambda s: s.records_per_s)
            worst = min(s.records_per_s for s in ss)
            base = best_plain[tool]
            paired = [100 * (1 - s.records_per_s / plain_round[(tool, s.round)]) for s in ss
                      if plain_round.get((tool, s.round))]
            rows.append({
                "mode": mode, "commit_interval_ms": interval, "tool": tool,
                "records_per_s": round(best.records_per_s, 1), "mb_per_s": round(best.mb_per_s, 2),
                "p50_ms": best.p50_ms, "p99_ms": best.p99_ms,
                "min_records_per_s": round(worst, 1),
                "spread_pct": round(100 * (best.records_per_s - worst) / best.records_per_s, 1) if best.records_per_s else None,
                "rounds": len(ss),
                "overhead_pct": round(100 * (1 - best.records_per_s / base), 1) if base else None,
                "overhead_pct_paired": round(statistics.median(paired), 1) if paired else None,
            })
    o100 = {r["tool"]: r["overhead_pct"] for r in rows if r["mode"] == "txn" and r["commit_interval_ms"] == 100}
    return {"rows": rows, "overhead_pct_100ms": o100}


def table(result: dict):
    """A rich Table of summarize()'s rows."""
    from rich.table import Table

    t = Table("mode", "commit ms", "tool", "records/s", "MB/s", "p50 ms", "p99 ms", "spread %",
              "overhead %", "paired %",
              title=f"eos-cost: {result.get('record_bytes')} B records, best of {result.get('rounds')} "
                    f"x {result.get('seconds')} s, Kafka {result.get('kafka_version')}")
    for r in result["rows"]:
        t.add_row(r["mode"], str(r["commit_interval_ms"] or "-"), r["tool"], f"{r['records_per_s']:.0f}",
                  f"{r['mb_per_s']:.2f}", str(r["p50_ms"]), str(r["p99_ms"]), str(r["spread_pct"]),
                  str(r["overhead_pct"]), str(r["overhead_pct_paired"]))
    return t
