"""run_bench and simulate: the benchmark wiring works end to end on a small history."""

import polars as pl
import pytest

from harness.bench.checker import run_bench
from checkers.synthetic.simulate import simulate
from checkers import load_history
from checkers.history.log import log


def test_run_bench_small_history_is_valid_and_measured():
    r = run_bench(2000, seed=3)
    assert r["valid"] is True
    assert r["anomaly_counts"] == {}
    assert r["ops"] >= 2000
    assert r["seconds"] > 0 and r["ops_per_s"] > 0
    assert r["peak_rss_bytes"] > 10_000_000


def test_simulate_to_file_matches_in_memory(tmp_path):
    p = simulate(300, seed=9, path=tmp_path / "history.jsonl")
    h1 = load_history(p)
    h2 = load_history(simulate(300, seed=9))
    assert h1.ops.equals(h2.ops) and h1.mops.equals(h2.mops)
    # the simulated log has aborted data and markers: its committed logs have offset gaps
    lg = log(h1)
    per_key = lg.group_by("key").agg(n=pl.len(), top=pl.col("offset").max())
    assert (per_key["top"] + 1 > per_key["n"]).all()


def test_run_bench_times_each_finder_at_n_and_half_on_the_long_transaction_shape():
    r = run_bench(1500, seed=2, shape="long-txn")
    assert r["valid"] is True and r["shape"] == "long-txn" and r["half_ops"] == 750
    assert r["anomaly_counts"].get("G0-realtime", 0) > 0  # the shape's possible cycles, allowed
    f = r["finders"]["impossible_cycle_cases"]
    assert f["cpu_s"] >= 0 and f["cpu_s_half"] >= 0 and f["cases"] == 0
    assert set(r["finders"]) >= {"cycle_cases", "duplicate_cases", "unavailable_cases"}
    assert r["finders_cpu_s"] == pytest.approx(sum(v["cpu_s"] for v in r["finders"].values()), abs=0.01)
