"""check(): verdict shape, allowed anomalies, liveness, crashing finders."""

import json

from checkers import check, load_history, verdict
from checkers.build import HistoryBuilder


def _replace_finder(monkeypatch, name, finder):
    """check() with ``finder`` in place of the finder called ``name`` (checkers.verdict.FINDERS)."""
    assert name in [n for n, _, _ in verdict.FINDERS]
    monkeypatch.setattr(verdict, "FINDERS", tuple((n, finder if n == name else f, kw)
                                                  for n, f, kw in verdict.FINDERS))


def _g1a_history(n: int = 1) -> HistoryBuilder:
    b = HistoryBuilder()
    b.init(0, "eosc-txn-0")
    for i in range(n):
        b.txn(0, [("t/0", i, i)], "fail", tid="eosc-txn-0")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(i, i) for i in range(n)]})
    return b


def test_verdict_shape_and_json():
    v = check(_g1a_history().events)
    assert set(v) >= {"valid", "anomalies", "anomaly_counts", "allowed", "unknown_reasons", "stats"}
    assert v["valid"] is False
    assert list(v["anomalies"]) == ["G1a"]
    assert v["anomaly_counts"] == {"G1a": 1}
    assert v["stats"]["ops_by_f"]["txn"] == {"fail": 1}
    assert v["stats"]["ops_by_f"]["init"] == {"ok": 1}
    json.loads(json.dumps(v))


def test_allowed_anomaly_keeps_the_run_valid_but_reports_it():
    v = check(_g1a_history().events, allowed=["G1a"])
    assert v["valid"] is True
    assert v["anomaly_counts"] == {"G1a": 1}
    assert v["allowed"] == ["G1a"]


def test_max_examples_caps_examples_not_counts():
    v = check(_g1a_history(7).events, max_examples=3)
    assert len(v["anomalies"]["G1a"]) == 3
    assert v["anomaly_counts"]["G1a"] == 7


def test_crashing_finder_makes_verdict_unknown_and_names_it(monkeypatch):
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})

    def boom(h):
        raise RuntimeError("kaboom")

    _replace_finder(monkeypatch, "g1a_cases", boom)
    v = check(b.events)
    assert v["valid"] == "unknown"
    assert any("g1a_cases" in r and "kaboom" in r for r in v["unknown_reasons"])


def test_crashing_finder_does_not_hide_a_real_anomaly(monkeypatch):
    _replace_finder(monkeypatch, "g1a_cases", lambda h: 1 / 0)
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    b.poll(1, {"t/0": [(0, 1)]})  # re-read without a seek: nonmonotonic-poll
    v = check(b.events)
    assert v["valid"] is False
    assert "nonmonotonic-poll" in v["anomalies"]


def test_realtime_lag_is_liveness_failing_only_when_listed():
    b = HistoryBuilder(step_ns=2_000_000_000)  # 2 s per event
    b.send(0, [("t/0", 1, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    h = load_history(b.events)
    v = check(h, meta={"realtime_lag_bound_s": 1.0})
    assert v["anomaly_counts"] == {"realtime-lag": 1}
    assert v["valid"] is True
    assert v["stats"]["realtime_lag_ms"]["max"] == 8000.0  # send completes at 4 s, poll at 12 s
    v2 = check(h, meta={"realtime_lag_bound_s": 1.0, "fail_on": ["realtime-lag"]})
    assert v2["valid"] is False
    assert check(h)["anomaly_counts"] == {}


def test_valid_history_reports_stats():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0), ("t/1", 2, 0)], tid="x")
    b.nemesis("kill", ["n1"])
    b.assign(1, ["t/0", "t/1"])
    b.poll(1, {"t/0": [(0, 1)], "t/1": [(0, 2)]}, final=True)
    v = check(b.events)
    assert v["valid"] is True
    s = v["stats"]
    assert s["log_lengths"] == {"t/0": 1, "t/1": 1}
    assert s["nemesis_events"] == 1
    assert s["realtime_lag_ms"] is None  # a final drain is late by design: not lag
