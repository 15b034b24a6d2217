"""checkers.finders.app_end_to_end: the app workload's end-to-end anomalies on tiny histories, each a minimal
positive and a near miss (issue 22: each new anomaly fails before the change)."""

from checkers import app_cases, check, load_history
from checkers.synthetic.build import HistoryBuilder

APP = {"input_keys": ["in/0", "in/1"], "output_keys": ["out/0"], "semantics": "exactly-once",
       "order": "none", "lag_bound_s": None, "drain_complete": True}


def app_poll(b: HistoryBuilder, process: int, records: dict, final: bool = False, time: int | None = None):
    """An output observation: ``records`` {output key: [(offset, input value | None)]}."""
    meta = {"final": True} if final else None
    b.invoke(process, "app-poll", [["poll"]], meta, time=time)
    b.complete(process, "ok", [["poll", {k: [list(r) for r in rs] for k, rs in records.items()}]], meta)


def base(outputs: dict, aborted=(), final=True) -> HistoryBuilder:
    """Inputs 1, 2 committed on in/0 at offsets 0, 1 (and read), 3 aborted unless listed as
    committed; the final drain reads the input and then ``outputs``."""
    b = HistoryBuilder()
    b.txn(0, [("in/0", 1, 0), ("in/0", 2, 1)], tid="p")
    b.txn(0, [("in/1", 3, None)], type_="fail", tid="p")
    b.assign(1, ["in/0", "in/1", "out/0"])
    b.poll(1, {"in/0": [(0, 1), (1, 2)]}, final=final)
    app_poll(b, 1, outputs, final=final)
    return b


def names(cases):
    return sorted(((c["anomaly"], c.get("value")) for c in cases), key=lambda t: (t[0], t[1] is not None, t[1] or 0))


def test_exactly_once_copy_is_clean():
    h = load_history(base({"out/0": [(0, 1), (1, 2)]}).events)
    assert app_cases(h, APP) == []
    v = check(h, meta={"app": APP})
    assert v.valid is True, v.unknown_reasons
    assert v.stats["app"]["inputs"] == {"in/0": 2} and v.stats["app"]["outputs"] == {"out/0": 2}


def test_no_app_meta_no_cases():
    h = load_history(base({"out/0": [(0, 1)]}).events)
    assert app_cases(h, None) == []


def test_loss():
    h = load_history(base({"out/0": [(0, 1)]}).events)
    assert names(app_cases(h, APP)) == [("eos-loss", 2)]
    assert check(h, meta={"app": APP}).valid is False


def test_loss_not_judged_when_the_drain_did_not_finish():
    h = load_history(base({"out/0": [(0, 1)]}).events)
    assert app_cases(h, dict(APP, drain_complete=False)) == []


def test_duplicate_and_at_least_once_allows_it():
    h = load_history(base({"out/0": [(0, 1), (1, 2), (2, 1)]}).events)
    assert names(app_cases(h, APP)) == [("eos-duplicate", 1)]
    assert check(h, meta={"app": APP}).valid is False
    alo = dict(APP, semantics="at-least-once")
    v = check(h, meta={"app": alo})
    assert v.valid is True and v.anomaly_counts == {"eos-duplicate": 1}


def test_same_output_record_read_twice_is_not_a_duplicate():
    b = base({"out/0": [(0, 1), (1, 2)]})
    app_poll(b, 2, {"out/0": [(0, 1)]})  # a reader during the run saw offset 0 too
    assert app_cases(load_history(b.events), APP) == []


def test_aborted_read():
    h = load_history(base({"out/0": [(0, 1), (1, 2), (2, 3)]}).events)
    assert names(app_cases(h, APP)) == [("eos-aborted-read", 3)]


def test_phantom_value_and_unmatched_record():
    h = load_history(base({"out/0": [(0, 1), (1, 2), (2, 99), (3, None)]}).events)
    assert names(app_cases(h, APP)) == [("eos-phantom", None), ("eos-phantom", 99)]


def test_reorder_only_when_declared():
    h = load_history(base({"out/0": [(0, 2), (1, 1)]}).events)
    assert app_cases(h, APP) == []
    cs = app_cases(h, dict(APP, order="per-partition"))
    assert [c["anomaly"] for c in cs] == ["eos-reorder"] and cs[0]["outputs"] == [["out/0", 0], ["out/0", 1]]
    assert app_cases(load_history(base({"out/0": [(0, 1), (1, 2)]}).events), dict(APP, order="per-partition")) == []


def test_stalled_is_liveness():
    b = base({"out/0": [(0, 1), (1, 2)]})  # seen only by the final drain: never during the load
    h = load_history(b.events)
    stalled = dict(APP, lag_bound_s=5.0)
    assert names(app_cases(h, stalled)) == [("app-stalled", 1), ("app-stalled", 2)]
    v = check(h, meta={"app": stalled})
    assert v.valid is True and "app-stalled" in v.liveness_reports
    b2 = HistoryBuilder()
    b2.txn(0, [("in/0", 1, 0)], tid="p")
    app_poll(b2, 1, {"out/0": [(0, 1)]})  # seen during the load, 1 ms after the commit
    b2.assign(2, ["in/0"])
    b2.poll(2, {"in/0": [(0, 1)]}, final=True)
    assert app_cases(load_history(b2.events), stalled) == []


def test_match_error_is_unknown_not_loss():
    h = load_history(base({}).events)
    v = check(h, meta={"app": dict(APP, match_error="the match {json: id} mapped none of 12 output records")})
    assert v.valid == "unknown" and any("mapped none" in r for r in v.unknown_reasons)
    assert "eos-loss" not in v.anomaly_counts


def test_missing_output_when_the_app_did_not_catch_up_is_a_stall_and_unknown():
    h = load_history(base({"out/0": [(0, 1)]}).events)
    meta = dict(APP, caught_up=False)
    cs = app_cases(h, meta)
    assert [(c["anomaly"], c.get("unknown", False)) for c in cs] == [("app-stalled", False), ("eos-loss", True)]
    v = check(h, meta={"app": meta})
    assert v.valid == "unknown" and "eos-loss" not in v.anomaly_counts
    assert any("cannot be told from a stall" in r for r in v.unknown_reasons)


# -- the input side (issue 36): the harness's own input producers' cycles Kafka allows --------
def _input_g0(outputs: dict) -> HistoryBuilder:
    """Two input transactions write in/0 and in/1 in opposite orders (a G0 of the harness's own
    input producers, which Kafka allows), both committed and read; the final drain then reads
    ``outputs``."""
    b = HistoryBuilder()
    b.invoke(0, "txn", [["send", "in/0", 1], ["send", "in/1", 1]])
    b.invoke(2, "txn", [["send", "in/0", 2], ["send", "in/1", 2]])
    b.complete(0, "ok", [["send", "in/0", [0, 1]], ["send", "in/1", [1, 1]]])
    b.complete(2, "ok", [["send", "in/0", [1, 2]], ["send", "in/1", [0, 2]]])
    b.assign(1, ["in/0", "in/1", "out/0"])
    b.poll(1, {"in/0": [(0, 1), (1, 2)], "in/1": [(0, 2), (1, 1)]}, final=True)
    app_poll(b, 1, outputs, final=True)
    return b


def test_input_side_cycle_does_not_fail_the_users_verdict():
    """Failed before issue 36 (G0 failed the run: the user had to copy an expected line)."""
    h = load_history(_input_g0({"out/0": [(0, 1), (1, 2)]}).events)
    v = check(h, meta={"app": APP})
    assert v.anomaly_counts.get("G0") and v.input_side == ["G0"]
    assert v.valid is True and v.failing == [], (v.failing, v.unknown_reasons)
    assert v.failing_names == set()


def test_input_side_cycle_cannot_hide_a_pipeline_anomaly():
    h = load_history(_input_g0({"out/0": [(0, 1)]}).events)  # input 2 never reached the output
    v = check(h, meta={"app": APP})
    assert v.valid is False and v.failing == ["eos-loss"] and v.input_side == ["G0"]


def test_input_side_cycles_fail_when_the_scenario_asks():
    h = load_history(_input_g0({"out/0": [(0, 1), (1, 2)]}).events)
    v = check(h, meta={"app": dict(APP, input_cycles="fail")})
    assert v.valid is False and v.failing == ["G0"] and v.input_side == []


def test_input_side_is_only_the_app_workload():
    h = load_history(_input_g0({"out/0": [(0, 1), (1, 2)]}).events)
    v = check(h)
    assert v.valid is False and "G0" in v.failing and v.input_side == []


def test_real_streams_run_is_valid_without_an_expected_line():
    """tests/data/real-app-streams-s1 (scenarios/app-streams.yaml seed 1, Kafka 4.3.1, valid with
    its expected line): 3 G0 cycles of the harness's own input producers. Judged without the
    expected line it was invalid before issue 36; now valid, the G0 cases on the input side."""
    import json
    from pathlib import Path

    d = Path(__file__).resolve().parents[1] / "data" / "real-app-streams-s1"
    meta = json.loads((d / "meta.json").read_text())
    v = check(d / "history.jsonl", meta=meta, allowed=())
    assert v.anomaly_counts == {"G0": 3} and v.input_side == ["G0"]
    assert v.valid is True, (v.failing, v.unknown_reasons)
    strict = dict(meta, app=dict(meta["app"], input_cycles="fail"))
    assert check(d / "history.jsonl", meta=strict, allowed=()).failing == ["G0"]


def test_a_preloaded_input_waits_from_the_loads_start():
    """Issue 36: input.preload commits the input before any instance starts; its lag counted from
    its commit made every input of a batch copier app-stalled (tens of thousands in the first
    real run). It counts from the last preload event, when the load and the instances start."""
    S = 1_000_000_000
    b = HistoryBuilder()
    b.nemesis("preload")
    b.txn(0, [("in/0", 1, 0)], tid="pre")                # committed at ~0 s
    b.nemesis("preload")
    b.events[-1]["time"] = 50 * S                        # the preload (and so the load) ends at 50 s
    b.time = 50 * S
    b.assign(1, ["in/0", "out/0"])
    app_poll(b, 1, {"out/0": [(0, 1)]}, time=70 * S)     # seen 70 s after its commit, 20 s into the load
    b.poll(1, {"in/0": [(0, 1)]}, final=True)
    app_poll(b, 1, {"out/0": [(0, 1)]}, final=True)
    h = load_history(b.events)
    app = dict(APP, input_keys=["in/0"], lag_bound_s=60.0)
    assert [c["anomaly"] for c in app_cases(h, app)] == []
    assert 19_000 < check(h, meta={"app": app}).stats["app"]["lag_ms"]["max"] < 21_000
    assert [c["anomaly"] for c in app_cases(h, dict(app, lag_bound_s=10.0))] == ["app-stalled"]
