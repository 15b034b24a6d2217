"""harness.bench.checker: the parse floor and the peak-RSS report measured in the same run (issue 12)."""
import pytest

from harness.bench.checker import RSS_LIMIT_BYTES, run_bench


def test_bench_reports_a_parse_floor_ratio_and_the_rss_limit():
    r = run_bench(3000, seed=1)
    assert r["valid"] is True
    assert r["parse_floor_s"] > 0 and r["parse_floor_rss_bytes"] > 10_000_000
    assert r["floor_ratio"] == pytest.approx(r["seconds"] / r["parse_floor_s"], rel=0.05)
    # the CPU ratio: the checker's CPU for load + check over the floor process's CPU for its parse
    assert r["parse_floor_cpu_s"] > 0
    assert r["floor_cpu_ratio"] == pytest.approx(r["cpu_seconds_s"] / r["parse_floor_cpu_s"], rel=0.05)
    assert r["rss_under_2gib"] is (r["peak_rss_bytes"] < RSS_LIMIT_BYTES) and RSS_LIMIT_BYTES == 2 * 2**30
