"""``eos-chaos bench parts`` (harness.bench.checker_parts): both paths measured at each size, the same
anomalies, growth figures between the sizes."""

from harness.bench.checker_parts import run_parts_bench


def test_the_parts_bench_measures_both_paths_at_two_sizes():
    res = run_parts_bench([1000, 2000], n_parts=2)
    assert [r["n_ops"] for r in res["rows"]] == [1000, 2000]
    for r in res["rows"]:
        assert r["same_anomalies"] is True
        assert r["memory"]["valid"] is True and r["parts"]["valid"] == "unknown"  # cross-key skipped
        assert r["parts"]["cpu_s"] > 0 and r["parts"]["peak_rss_gib"] > 0
    assert res["growth"]["ops"] == 2.0 and set(res["growth"]) == {"ops", "memory", "parts"}
