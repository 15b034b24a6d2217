"""The ``eos-chaos bench`` commands (registered by harness.cli.main): benchmarks of the checker
and of the cluster, not tests; their figures, machine and command go in docs/benchmarks.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import console, out, require_root

bench_app = typer.Typer(help="Benchmarks (not tests): the checker's speed and memory (checker, parts, spark; no "
                             "cluster) and a real cluster's (cluster-ready, eos-cost, txn-rate; root). "
                             "Figures: docs/benchmarks.md.")




@bench_app.command("checker")
def bench_checker(ops: int = typer.Option(100_000, min=1, max=100_000_000, metavar="N",
                                         help="ops in the synthetic history"),
                  seed: int = typer.Option(0, metavar="N", help="seed of the simulated history"),
                  shape: str = typer.Option("default", metavar="SHAPE",
                                            help="history shape: default, long-txn (harness.bench.checker.SHAPES)"),
                  finders: bool = typer.Option(True, "--finders/--no-finders",
                                               help="also time each finder alone at N and N/2 ops (scaling)"),
                  as_json: bool = typer.Option(False, "--json", help="print the figures as JSON")) -> None:
    """Check a synthetic history of N ops from a simulated correct Kafka; print ops/s, peak RSS
    and each finder's CPU seconds with its scaling (CPU at N over CPU at N/2). No cluster.
    Exit codes: 0 measured, 2 a bad option."""
    from harness.bench.checker import SHAPES, run_bench

    if shape not in SHAPES:
        raise typer.BadParameter(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}", param_hint="--shape")
    res = run_bench(ops, seed=seed, shape=shape, finders=finders)
    if as_json:
        out.print_json(json.dumps(res))
        return
    per = res.pop("finders", {})
    for k, v in res.items():
        out.print(f"{k}: {v}")
    if per:
        out.print(f"{'finder':30s} {'cpu s':>8s} {'cpu s N/2':>10s} {'scaling':>8s}")
        for name, r in sorted(per.items(), key=lambda kv: -kv[1]["cpu_s"]):
            sc = "-" if r["scaling"] is None else f"{r['scaling']:.2f}"
            out.print(f"{name:30s} {r['cpu_s']:8.3f} {r['cpu_s_half']:10.3f} {sc:>8s}")


@bench_app.command("parts")
def bench_parts(ops: list[int] = typer.Option(None, "--ops", min=1, max=100_000_000, metavar="N",
                                              help="history sizes, in turn (repeatable; default: 300000 1000000)"),
                parts: int = typer.Option(8, "--parts", min=1, max=4096, metavar="N",
                                          help="Parquet parts the history is cut into"),
                memory: bool = typer.Option(True, "--memory/--no-memory",
                                            help="also time the in-memory check (needs ~1.7 GiB per million ops)"),
                workdir: Path = typer.Option(None, "--workdir", metavar="DIR", help="where the histories are written"),
                as_json: bool = typer.Option(False, "--json", help="print the figures as JSON")) -> None:
    """The parts path (check --parts N --cross skip) against the in-memory check on simulated
    correct histories of each size: CPU s, CPU s per million ops, peak RSS, same anomalies.
    No cluster. Exit codes: 0 measured, 2 a bad option."""
    from harness.bench.checker_parts import run_parts_bench

    res = run_parts_bench(ops or [300_000, 1_000_000], n_parts=parts, memory=memory, workdir=workdir)
    if as_json:
        out.print_json(json.dumps(res))
        return
    out.print(f"{'ops':>11s} {'path':8s} {'cpu s':>8s} {'cpu s/M':>8s} {'peak GiB':>9s} {'wall s':>8s}")
    for r in res["rows"]:
        for k in ("memory", "parts"):
            if r[k]:
                x = r[k]
                out.print(f"{r['n_ops']:>11,d} {k:8s} {x['cpu_s']:8.1f} {x['cpu_s_per_million_ops']:8.1f} "
                          f"{x['peak_rss_gib']:9.2f} {x['wall_s']:8.1f}")
    if "growth" in res:
        out.print(f"peak RSS growth over {res['growth']['ops']}x ops: "
                  + ", ".join(f"{k} {v}x" for k, v in res["growth"].items() if k != "ops"))


@bench_app.command("spark")
def bench_spark(history: Path = typer.Argument(None, metavar="HISTORY", help="a history.jsonl (or --ops)"),
                ops: int = typer.Option(None, "--ops", min=1, max=100_000_000, metavar="N",
                                        help="simulate a correct history of this many ops first"),
                parts: int = typer.Option(8, "--parts", min=1, max=4096, metavar="N",
                                          help="Parquet parts the history is cut into"),
                master: str = typer.Option("local[2]", "--master", metavar="URL", help="Spark master (default local[2])"),
                rounds: int = typer.Option(1, "--rounds", min=1, max=20, metavar="N", help="rounds of (polars, spark)")) -> None:
    """The parts path on polars against the same on Spark (harness.bench.checker_spark): wall s, CPU s
    of driver and executors, peak RSS of each, verdicts compared. One JSON line per run. No
    Kafka cluster. Exit codes: 0 the same verdict on both, 1 the verdicts differ or a run failed,
    2 a bad option (no HISTORY and no --ops)."""
    from harness.bench.checker_spark import main as bench_spark_main

    if history is None and ops is None:
        raise typer.BadParameter("give a HISTORY or --ops N", param_hint="HISTORY")
    argv = ([str(history)] if history else []) + (["--ops", str(ops)] if ops else []) + [
        "--parts", str(parts), "--master", master, "--rounds", str(rounds)]
    raise typer.Exit(bench_spark_main(argv))


@bench_app.command("cluster-ready")
def bench_cluster_ready(backend: list[str] = typer.Option(None, "--backend", metavar="BACKEND",
                                                          help="backends, in turn (repeatable; default: netns docker)"),
                        runs: int = typer.Option(3, min=1, metavar="N", help="counted rounds (one warm-up round first)"),
                        kafka_version: Optional[str] = typer.Option(None, metavar="VERSION",
                                                                    help="Kafka version (default 4.3.1)"),
                        as_json: bool = typer.Option(False, "--json", help="print the figures as JSON")) -> None:
    """Seconds until a 3-node cluster is ready, and to tear it down, per backend, interleaved
    (starts its own clusters; root). Exit codes: 0 measured, 2 no root or a cluster that did not come up."""
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.bench.cluster_ready import run_cluster_ready

    require_root()
    try:
        res = run_cluster_ready(backend or ["netns", "docker"], runs, kafka_version or DEFAULT_KAFKA_VERSION,
                                log=lambda s: console.print(s, highlight=False))
    except Exception as exc:  # a cluster that did not come up: one line
        console.print(f"[red]error:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(2)
    if as_json:
        out.print_json(json.dumps(res))
    else:
        for b, m in res["median"].items():
            out.print(f"{b}: ready {m['ready_s']} s, teardown {m['teardown_s']} s (median of {runs})")
        for b, r in res["ratio_ready"].items():
            out.print(f"ready {b} / {(backend or ['netns'])[0]}: {r} (median of per-round ratios)")


@bench_app.command("eos-cost")
def bench_eos_cost(record_bytes: int = typer.Option(1024, metavar="BYTES", help="record value size, bytes"),
                   seconds: float = typer.Option(10.0, metavar="SECONDS", help="measured seconds per cell (after a warm-up)"),
                   rounds: int = typer.Option(3, min=1, metavar="N", help="rounds; a cell's figure is its best round"),
                   warmup: float = typer.Option(2.0, metavar="SECONDS", help="warm-up seconds per cell, not counted"),
                   kafka_version: Optional[str] = typer.Option(None, metavar="VERSION",
                                                               help="Kafka 4.x version (default 4.3.1)"),
                   as_json: bool = typer.Option(False, "--json", help="print the figures as JSON")) -> None:
    """Producer throughput and latency: plain, idempotent, transactional (commit every 10/100/1000 ms),
    the harness's producer and kafka-producer-perf-test, interleaved on one real cluster it
    starts (root). Exit codes: 0 measured, 2 no root, a cluster that did not come up or a failed client."""
    from harness.bench.eos_cost import run_eos_cost, table

    require_root()
    try:
        res = run_eos_cost(record_bytes, seconds, rounds, warmup, kafka_version,
                           log=lambda s: console.print(s, highlight=False))
    except Exception as exc:  # a cluster that did not come up, a failed client: one line
        console.print(f"[red]error:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(2)
    if as_json:
        out.print_json(json.dumps({k: res[k] for k in ("rows", "overhead_pct_100ms")}))
    else:
        out.print(table(res))
        out.print(f"overhead of txn @ 100 ms against plain: {res['overhead_pct_100ms']} %")


@bench_app.command("txn-rate")
def bench_txn_rate(producers: int = typer.Option(32, min=1, max=64, metavar="N",
                                             help="transactional producers of the harness"),
                   producers_per_worker: int = typer.Option(16, min=1, max=64, metavar="N",
                                                        help="producers per worker process"),
                   partitions: int = typer.Option(4, min=1, metavar="N", help="partitions every transaction writes to"),
                   seconds: float = typer.Option(10.0, metavar="SECONDS", help="measured seconds per round"),
                   rounds: int = typer.Option(3, min=1, metavar="N", help="rounds, alternating harness and perf-test"),
                   kafka_version: Optional[str] = typer.Option(None, metavar="VERSION",
                                                               help="Kafka 4.x version (default 4.3.1)"),
                   as_json: bool = typer.Option(False, "--json", help="print the figures as JSON")) -> None:
    """Transactions/s of the busy txn-queue workload against kafka-producer-perf-test's, and the
    CPU the harness uses, alternating on one real cluster it starts (root).
    Exit codes: 0 measured, 2 no root, a cluster that did not come up or a failed client."""
    from harness.bench.txn_rate import run_txn_rate

    require_root()
    try:
        res = run_txn_rate(producers, producers_per_worker, partitions, seconds, rounds,
                           kafka_version=kafka_version, log=lambda s: console.print(s, highlight=False))
    except Exception as exc:  # a cluster that did not come up, a failed client: one line
        console.print(f"[red]error:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(2)
    if as_json:
        out.print_json(json.dumps(res))
    else:
        out.print(f"best txn/s: harness {res['best']['harness']}, perf-test {res['best']['perf_test']}; "
                  f"ratio {res['ratio']} (spread %: {res['spread_pct']})")
