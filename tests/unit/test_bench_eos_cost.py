"""harness.bench: the pure parts of the eos-cost and txn-rate benchmarks (no cluster)."""
import pytest

from harness.bench.perf_test import parse_perf_test
from harness.bench.eos_cost import CELLS, TOOLS, Sample, perf_rate_guess, summarize
from harness.bench.producer import conf

PERF_OUT = """\
4998 records sent, 999.2 records/sec (0.98 MB/sec), 12.1 ms avg latency, 80.0 ms max latency.
10000 records sent, 1602.564103 records/sec (1.56 MB/sec), 14.27 ms avg latency, 351.00 ms max latency, 9 ms 50th, 40 ms 95th, 88 ms 99th, 300 ms 99.9th.
8000 records sent, 1700.0 records/sec (1.66 MB/sec), 13.50 ms avg latency, 200.00 ms max latency, 8 ms 50th, 35 ms 95th, 70 ms 99th, 150 ms 99.9th.
"""


def test_parse_perf_test_takes_the_last_summary_line():
    r = parse_perf_test(PERF_OUT)  # with --warmup-records the steady-state summary comes last
    assert r == {"records": 8000, "records_per_s": 1700.0, "mb_per_s": 1.66, "avg_ms": 13.5, "max_ms": 200.0,
                 "p50_ms": 8.0, "p95_ms": 35.0, "p99_ms": 70.0, "p999_ms": 150.0}


def test_parse_perf_test_without_summary_says_so():
    with pytest.raises(ValueError, match="no summary line"):
        parse_perf_test("4998 records sent, 999.2 records/sec (0.98 MB/sec), 12.1 ms avg latency, 80.0 ms max latency.")


@pytest.mark.parametrize("mode, idem, tid", [("plain", False, None), ("idempotent", True, None), ("txn", True, "t")])
def test_producer_settings_per_mode(mode, idem, tid):
    c = conf({"mode": mode, "bootstrap": "b:1", "transactional_id": "t"})
    assert c["acks"] == "all" and c["linger.ms"] == 5 and c["enable.idempotence"] is idem
    assert c.get("transactional.id") == tid
    assert c["queue.buffering.max.kbytes"] == 32768  # the Java producer's buffer.memory


def _samples(rates: dict, rounds=3):
    out = []
    for r in range(rounds):
        for (mode, interval), by_tool in rates.items():
            for tool, base in by_tool.items():
                out.append(Sample(mode, interval, tool, r, base * (1 + 0.1 * r), 1.0, 2.0, 9.0, 100))
    return out


def test_summarize_best_of_rounds_spread_and_overhead_against_plain():
    rates = {cell: {"harness": 1000.0, "perf-test": 500.0} for cell in CELLS}
    rates[("txn", 100)] = {"harness": 900.0, "perf-test": 485.0}
    res = summarize(_samples(rates))
    rows = {(r["mode"], r["commit_interval_ms"], r["tool"]): r for r in res["rows"]}
    assert len(rows) == len(CELLS) * len(TOOLS)
    plain = rows[("plain", None, "harness")]
    assert plain["records_per_s"] == 1200.0 and plain["min_records_per_s"] == 1000.0  # best 1.2x, worst 1.0x
    assert plain["spread_pct"] == pytest.approx(16.7) and plain["overhead_pct"] == 0.0
    assert rows[("txn", 100, "harness")]["overhead_pct"] == pytest.approx(10.0)
    assert res["overhead_pct_100ms"] == {"harness": pytest.approx(10.0), "perf-test": pytest.approx(3.0)}
    assert rows[("txn", 100, "perf-test")]["overhead_pct_paired"] == pytest.approx(3.0)
    assert set(plain) >= {"mode", "commit_interval_ms", "tool", "records_per_s", "p50_ms", "p99_ms"}


def test_paired_overhead_cancels_noise_that_hits_a_whole_round():
    s = [Sample("plain", None, "harness", 0, 1000, 1, 1, 1, 1), Sample("txn", 100, "harness", 0, 950, 1, 1, 1, 1),
         Sample("plain", None, "harness", 1, 500, 1, 1, 1, 1), Sample("txn", 100, "harness", 1, 475, 1, 1, 1, 1)]
    row = next(r for r in summarize(s)["rows"] if r["mode"] == "txn")
    assert row["overhead_pct_paired"] == pytest.approx(5.0) and row["overhead_pct"] == pytest.approx(5.0)


def test_perf_rate_guess_scales_the_previous_cell_by_the_harness_ratio():
    rate = {("plain", None, "perf-test"): 3000.0, ("plain", None, "harness"): 30000.0,
            ("idempotent", None, "harness"): 15000.0}
    assert perf_rate_guess(rate, ("idempotent", None), ("plain", None)) == pytest.approx(1500.0)
    rate[("idempotent", None, "perf-test")] = 2000.0
    assert perf_rate_guess(rate, ("idempotent", None), ("plain", None)) == 2000.0
