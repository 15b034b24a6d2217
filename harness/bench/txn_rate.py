"""``eos-chaos bench txn-rate``: transactions/s of the harness's busy workload against kafka-producer-perf-test.

On one 3-node cluster (harness.bench.perf_test), rounds alternate (A B, A B, ...):

A. kafka-producer-perf-test, transactional, ``--transaction-duration-ms 1`` (a commit as soon
   as a millisecond has passed since the transaction began: the most transactions one Java
   producer commits), 16-byte records, ``RoundRobinPartitioner`` on a topic of
   ``partitions`` partitions, so that every transaction touches every partition. It prints no
   transaction count: each commit writes one COMMIT marker per partition it touched, so
   transactions = (growth of the partitions' end offsets - records) / partitions (exact when
   every transaction has at least ``partitions`` records; its mean size is reported).
B. The txn-queue workload's producers as scenarios/busy.yaml runs them (harness.workers.
   txn_producers: ``producers`` transactional.ids, ``producers_per_worker`` threads per
   process), on a topic of the same partition count, every transaction sending one record to
   each partition (min = max sends = partitions), no aborts, no think time. Transactions/s
   are the ``ok`` txn completions of the measured window, read from the history it wrote;
   the CPU is the worker processes' own (user + sys, psutil), also as a share of the
   machine's CPU in the window.

The ratio is B's best round over A's best round (the goal: at least 0.5).
"""
from __future__ import annotations

import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

import orjson
import psutil

PERF_TOPIC = "rate-perf"
RECORD_BYTES = 16


def perf_test_round(bc, partitions: int, records: int, tid: str) -> dict:
    from harness.bench.perf_test import run_perf_test

    before = sum(bc.end_offsets(PERF_TOPIC, partitions))
    res = run_perf_test(bc, PERF_TOPIC, records, RECORD_BYTES,
                        {"acks": "all", "linger.ms": "5",
                         "partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"},
                        transactional_id=tid, transaction_ms=1)
    markers = sum(bc.end_offsets(PERF_TOPIC, partitions)) - before - res["records"]
    txns = markers / partitions
    elapsed = res["records"] / res["records_per_s"]
    return {"txn_per_s": round(txns / elapsed, 1), "records_per_txn": round(res["records"] / txns, 1) if txns else None,
            "records": res["records"], "seconds": round(elapsed, 2), "p50_ms": res["p50_ms"], "p99_ms": res["p99_ms"]}


def harness_round(bc, spec, seed: int, seconds: float, warmup_s: float) -> dict:
    """Run the busy workload's writers for warmup + seconds; count ok txns in the window."""
    from harness.run.history_writer import HistoryWriter
    from harness.run.pool import Pool
    from harness.workloads.txn_queue import TxnQueue

    workload = TxnQueue(spec, bc.bootstrap, seed)
    with tempfile.TemporaryDirectory(prefix="eosc-txn-rate-") as d:
        d = Path(d)
        history = HistoryWriter(d / "history.jsonl")
        pool = Pool(bc.client_host, history, d, respawn=workload.respawn)
        problems: list[str] = []
        try:
            names = [pool.spawn(w).name for w in workload.writers()]
            time.sleep(warmup_s)
            procs = [psutil.Process(pool.workers[n].pid) for n in names]
            cpu0 = [sum(p.cpu_times()[:2]) for p in procs]
            sys0 = psutil.cpu_times()
            t0 = history.now()
            time.sleep(seconds)
            t1 = history.now()
            cpu = sum(sum(p.cpu_times()[:2]) - c for p, c in zip(procs, cpu0))
            sys1 = psutil.cpu_times()
            problems = pool.stop(names, timeout=60)
        finally:
            problems += pool.shutdown()
            history.close()
        ok = fail = info = 0
        latencies = []
        invoked: dict = {}
        with open(d / "history.jsonl", "rb") as fh:
            for line in fh:
                ev = orjson.loads(line)
                if ev.get("f") != "txn":
                    continue
                if ev["type"] == "invoke":
                    invoked[ev["process"]] = ev["time"]
                elif t0 <= ev["time"] <= t1:
                    ok += ev["type"] == "ok"
                    fail += ev["type"] == "fail"
                    info += ev["type"] == "info"
                    if ev["type"] == "ok" and ev["process"] in invoked:
                        latencies.append((ev["time"] - invoked[ev["process"]]) / 1e6)
        window = (t1 - t0) / 1e9
        busy = sum(sys1) - sum(sys0) - (sys1.idle - sys0.idle) - (getattr(sys1, "iowait", 0) - getattr(sys0, "iowait", 0))
    latencies.sort()
    pct = lambda q: round(latencies[int(q * (len(latencies) - 1))], 1) if latencies else None  # noqa: E731
    return {"txn_per_s": round(ok / window, 1), "ok": ok, "fail": fail, "info": info, "seconds": round(window, 2),
            "records_per_txn": spec.max_sends_per_txn, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
            "harness_cpu_s": round(cpu, 2), "harness_cores": round(cpu / window, 2),
            "machine_busy_cores": round(busy / window, 2), "problems": problems}


def run_txn_rate(producers: int = 32, producers_per_worker: int = 16, partitions: int = 4,
                 seconds: float = 10.0, rounds: int = 3, warmup_s: float = 3.0,
                 kafka_version: str | None = None, log: Callable[[str], None] = lambda s: None,
                 cluster=None) -> dict:
    """Alternate perf-test and harness rounds on one fresh cluster (takes the cluster lock), or
    on ``cluster`` (a BenchCluster already up).

    Returns {"perf_test": [round dicts], "harness": [round dicts], "best": {"perf_test": txn/s,
    "harness": txn/s}, "ratio" (harness / perf-test, best rounds), "spread_pct": {tool: %},
    "producers", "producers_per_worker", "partitions", "seconds", "kafka_version"}."""
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.bench.perf_test import bench_cluster
    from harness.workloads.txn_queue import TxnQueueSpec

    version = kafka_version or DEFAULT_KAFKA_VERSION
    spec = TxnQueueSpec(producers=producers, producers_per_worker=producers_per_worker, consumers=0, topics=1,
                        partitions=partitions, max_sends_per_txn=partitions, min_sends_per_txn=partitions,
                        abort_probability=0.0)
    perf: list[dict] = []
    harness: list[dict] = []
    guess = 2000.0  # records/s of perf-test before its first round
    with nullcontext(cluster) if cluster else bench_cluster(version) as bc:
        bc.create_topic(PERF_TOPIC, partitions)
        bc.create_topic("t0", partitions)  # the workload's topic (TxnQueue.topics)
        for r in range(rounds):
            p = perf_test_round(bc, partitions, max(2000, int(guess * (seconds + warmup_s))), f"eosc-rate-perf-{r}")
            guess = p["records"] / p["seconds"]
            perf.append(p)
            log(f"round {r + 1}/{rounds} perf-test {p['txn_per_s']:8.1f} txn/s ({p['records_per_txn']} records/txn)")
            h = harness_round(bc, spec, seed=r + 1, seconds=seconds, warmup_s=warmup_s)
            harness.append(h)
            log(f"round {r + 1}/{rounds} harness   {h['txn_per_s']:8.1f} txn/s, harness CPU {h['harness_cores']} "
                f"cores of {h['machine_busy_cores']} busy")
    best = {"perf_test": max(x["txn_per_s"] for x in perf), "harness": max(x["txn_per_s"] for x in harness)}
    spread = {k: round(100 * (best[k] - min(x["txn_per_s"] for x in v)) / best[k], 1) if best[k] else None
              for k, v in (("perf_test", perf), ("harness", harness))}
    return {"perf_test": perf, "harness": harness, "best": best,
            "ratio": round(best["harness"] / best["perf_test"], 2) if best["perf_test"] else None,
            "spread_pct": spread, "producers": producers, "producers_per_worker": producers_per_worker,
            "partitions": partitions, "seconds": seconds, "kafka_version": version}
