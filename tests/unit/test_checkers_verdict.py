"""check(): verdict shape, allowed anomalies, liveness, crashing finders."""

import json

from checkers import Verdict, check, load_history, verdict
from checkers.synthetic.build import HistoryBuilder


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
    assert set(v.model_dump()) >= {"format_version", "valid", "anomalies", "anomaly_counts", "allowed",
                                   "unknown_reasons", "stats"}
    assert v.valid is False
    assert list(v.anomalies) == ["G1a"]
    assert v.anomaly_counts == {"G1a": 1}
    assert v.stats["ops_by_f"]["txn"] == {"fail": 1}
    assert v.stats["ops_by_f"]["init"] == {"ok": 1}
    # verdict.json round trip: written, read back, the same verdict
    assert Verdict.coerce(json.loads(v.to_json())) == v


def test_allowed_anomaly_keeps_the_run_valid_but_reports_it():
    v = check(_g1a_history().events, allowed=["G1a"])
    assert v.valid is True
    assert v.anomaly_counts == {"G1a": 1}
    assert v.allowed == ["G1a"]


def test_max_examples_caps_examples_not_counts():
    v = check(_g1a_history(7).events, max_examples=3)
    assert len(v.anomalies["G1a"]) == 3
    assert v.anomaly_counts["G1a"] == 7


def test_crashing_finder_makes_verdict_unknown_and_names_it(monkeypatch):
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})

    def boom(h):
        raise RuntimeError("kaboom")

    _replace_finder(monkeypatch, "g1a_cases", boom)
    v = check(b.events)
    assert v.valid == "unknown"
    assert any("g1a_cases" in r and "kaboom" in r for r in v.unknown_reasons)


def test_crashing_finder_does_not_hide_a_real_anomaly(monkeypatch):
    _replace_finder(monkeypatch, "g1a_cases", lambda h: 1 / 0)
    b = HistoryBuilder()
    b.send(0, [("t/0", 1, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    b.poll(1, {"t/0": [(0, 1)]})  # re-read without a seek: nonmonotonic-poll
    v = check(b.events)
    assert v.valid is False
    assert "nonmonotonic-poll" in v.anomalies


def test_realtime_lag_is_liveness_failing_only_when_listed():
    b = HistoryBuilder(step_ns=2_000_000_000)  # 2 s per event
    b.send(0, [("t/0", 1, 0)])
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    h = load_history(b.events)
    v = check(h, meta={"realtime_lag_bound_s": 1.0})
    assert v.anomaly_counts == {"realtime-lag": 1}
    assert v.valid is True
    assert v.stats["realtime_lag_ms"]["max"] == 8000.0  # send completes at 4 s, poll at 12 s
    v2 = check(h, meta={"realtime_lag_bound_s": 1.0, "fail_on": ["realtime-lag"]})
    assert v2.valid is False
    assert check(h).anomaly_counts == {}


def test_valid_history_reports_stats():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0), ("t/1", 2, 0)], tid="x")
    b.nemesis("kill", ["n1"])
    b.assign(1, ["t/0", "t/1"])
    b.poll(1, {"t/0": [(0, 1)], "t/1": [(0, 2)]}, final=True)
    v = check(b.events)
    assert v.valid is True
    s = v.stats
    assert s["log_lengths"] == {"t/0": 1, "t/1": 1}
    assert s["nemesis_events"] == 1
    assert s["realtime_lag_ms"] is None  # a final drain is late by design: not lag


# ---------------------------------------------------------------- the Verdict model (verdict.json)

def test_verdict_json_of_before_the_format_version_reads_as_version_1():
    # a verdict.json written before format_version (and before "failing"): read, not refused
    old = {"valid": False, "anomalies": {"G1a": [{"anomaly": "G1a"}]}, "anomaly_counts": {"G1a": 1},
           "allowed": ["G0"], "unknown_reasons": [], "stats": {"ops": 3}}
    v = Verdict.coerce(old)
    assert v.format_version == 1 and v.valid is False and v.stats == {"ops": 3}
    assert v.failing_names == {"G1a"}  # no "failing" field: every found name not allowed fails
    assert v.status == "invalid" and v.label == "INVALID"


def test_a_verdict_field_that_does_not_validate_is_dropped_and_said():
    # "yes" is not a verdict: lax bool parsing would have read it as True (a silent pass)
    v = Verdict.coerce({"valid": "yes", "anomaly_counts": {"G1a": "many"}})
    assert v.valid == "unknown"
    assert any(r.startswith("verdict.valid") for r in v.unknown_reasons)
    assert any(r.startswith("verdict.anomaly_counts") for r in v.unknown_reasons)
    assert Verdict.coerce(None).valid == "unknown" and Verdict.coerce([1, 2]).unknown_reasons


def test_mark_unknown_never_turns_invalid_into_unknown():
    v = Verdict(valid=False, failing=["G1a"])
    v.mark_unknown("meta.json is unreadable")
    assert v.valid is False and v.unknown_reasons == ["meta.json is unreadable"]
    ok = Verdict(valid=True)
    ok.mark_unknown()
    assert ok.valid is True
    ok.mark_unknown("scenario.yaml is unreadable")
    assert ok.valid == "unknown"


def test_run_dir_writes_and_reads_the_verdict(tmp_path):
    from checkers import RunDir

    v = check(_g1a_history().events)
    d = RunDir(tmp_path)
    assert d.read_verdict() is None
    d.write_verdict(v)
    assert d.read_verdict() == v and not (tmp_path / "verdict.json.tmp").exists()
    (tmp_path / "verdict.json").write_text("[1, 2")
    assert d.read_verdict() is None
