"""How eos-duplicate came about (checkers.finders.reprocessing): reprocessed ranges and restarts.

Tiny histories, each of which the checker before this module could not explain (its cases
had no ``range`` or ``restarts`` and came in (key, position) order only):

* processor A commits in/0 offsets 0-2, then processor B is assigned in/0 and reads it from
  offset 0 again: one range in/0 0-2, a restart of kind offset-reset behind committed
  offset 3; with a third processor's transaction open across the assign, the F4 signature;
* B reads from offset 1 (log start 0): behind-committed, the F5 signature;
* two ranges on two keys: the first example of each comes first;
* controls: B resumes at offset 3 (no duplicate, no restart); a duplicate with no assign
  before it (no restart named); offsets committed by the consumer (restarts not looked for);
  a consumer resuming at the offset a reprocessing consumer committed (lower than before: no
  restart; the first version took the highest commit ever and named 66 restarts in the soak,
  58 of them such resumptions);
* the app workload (a black box): duplicated inputs grouped into ranges of input positions,
  a range from the partition's first input said to be one.

Negative control: simulated correct pipelines (rebalances, aborts with rewinds, crashes, the
same transactional.id restarted) name no restart (a Hypothesis property), and a copy with one
first read after an assign moved back to offset 0 names one (the property can fail). An
explanation that raises leaves the cases, unexplained.

Real data: tests/data/real-soak-s1-excerpt (lines 49,600-51,600 of the recorded 90-minute
soak): processor-0 (process 102) re-read in/0 from offset 0 after its assign at event
51,110, though eosc-proc-1 had committed it up to offset 230: one range of 50 inputs.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers import app_cases
from checkers.synthetic import simulate as sim
from checkers.synthetic.build import HistoryBuilder
from checkers.history import as_history, load_history
from checkers.finders.pipeline import pipeline_cases, pipeline_window_cases
from checkers.finders.reprocessing import ranges, restarts
from checkers.verdict import check

NS = 1_000_000_000
APP = {"input_keys": ["in/0"], "output_keys": ["out/0"], "semantics": "exactly-once", "order": "none",
       "lag_bound_s": None, "drain_complete": True}
PIPE = {"keys": {"in/0": "out/0", "in/1": "out/1"}, "group_id": "g", "value_divisor": 1000}
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "real-soak-s1-excerpt" / "history.jsonl.gz"
SOAK_META = ROOT / "docs" / "soak-runs" / "2026-11-25-soak-s1" / "meta.json"


class H:
    """A history under construction: ``op`` appends an invoke and its completion."""

    def __init__(self):
        self.ev: list[dict] = []
        self.t = 0

    def op(self, p, f, value, done=None, typ="ok", tid=None, at=None, end=None):
        self.t = at if at is not None else self.t + 1
        meta = {"transactional_id": tid, "group_id": "g"} if tid else {}
        inv = {"index": len(self.ev), "time": self.t * NS, "process": p, "type": "invoke", "f": f,
               "value": value, "meta": meta}
        self.ev.append(inv)
        self.t = end if end is not None else self.t + 1
        self.ev.append({"index": len(self.ev), "time": self.t * NS, "process": p, "type": typ, "f": f,
                        "value": done if done is not None else value, "meta": meta})

    def close(self, p, f, value, typ, at):
        """A completion written later (an op open across others), for an invoke already added."""
        self.ev.append({"index": len(self.ev), "time": at * NS, "process": p, "type": typ, "f": f,
                        "value": value, "meta": {"transactional_id": f"proc-{p}", "group_id": "g"}})

    def reindex(self):
        self.ev.sort(key=lambda e: e["index"])
        return self.ev


def _inputs(h: H, key="in/0", n=3, base=1):
    vals = list(range(base, base + n))
    h.op(0, "txn", [["send", key, v] for v in vals], [["send", key, [i, v]] for i, v in enumerate(vals)],
         tid="in")
    return vals


def _process(h: H, p, key, recs, attempt, typ="ok", **kw):
    """Processor ``p`` polls ``recs`` ([(offset, value)]) of ``key`` and writes outputs."""
    out = key.replace("in", "out")
    h.op(p, "txn", [["poll"]] + [["send", out, v * 1000 + attempt] for _, v in recs],
         [["poll", {key: [list(r) for r in recs]}]] + [["send", out, [None, v * 1000 + attempt]] for _, v in recs],
         typ=typ, tid=f"proc-{p}", **kw)


def _assign(h: H, p, keys, **kw):
    h.op(p, "assign", keys, tid=f"proc-{p}", **kw)


def _base(restart_at=0, pending=False):
    """A: assign in/0, process 0-2 (ok). [C: a txn on in/0 open across B's assign.] B: assign
    in/0, read from ``restart_at``."""
    h = H()
    vals = _inputs(h)
    recs = list(enumerate(vals))
    _assign(h, 1, ["in/0"])
    _process(h, 1, "in/0", recs, attempt=1)
    if pending:  # C's txn: invoked before B's assign, completed after it
        h.t += 1
        h.ev.append({"index": len(h.ev), "time": h.t * NS, "process": 3, "type": "invoke", "f": "txn",
                     "value": [["poll"]], "meta": {"transactional_id": "proc-3", "group_id": "g"}})
        c_invoke = len(h.ev) - 1
    _assign(h, 2, ["in/0"])
    _process(h, 2, "in/0", recs[restart_at:], attempt=2)
    if pending:
        h.close(3, "txn", [["poll", {"in/0": [[2, vals[2]]]}]], "fail", h.t + 1)
        assert h.ev[c_invoke]["process"] == 3
    return h


def _cases(events, pipeline=PIPE):
    return [c for c in pipeline_cases(as_history(events), pipeline) if c["anomaly"] == "eos-duplicate"]


def test_reset_to_log_start_after_assign_is_one_range_with_its_restart():
    cases = _cases(_base().ev)
    assert [c["input"]["offset"] for c in cases] == [0, 1, 2]
    assert all(c["range"] == {"key": "in/0", "from_offset": 0, "to_offset": 2, "inputs": 3} for c in cases)
    head = cases[0]
    (r,) = head["restarts"]
    assert r["kind"] == "offset-reset" and r["first_read"]["offset"] == 0
    assert r["committed"]["offset"] == 3 and r["committed"]["op"]["process"] == 1
    assert r["assign"]["process"] == 2 and r["pending"] == []
    assert "reprocessed range in/0 offsets 0-2 (3 input(s))" in head["explanation"]
    assert "F4.md" in head["explanation"] and "F5.md" in head["explanation"]
    assert all("restarts" not in c for c in cases[1:])


def test_open_transaction_across_the_assign_is_the_f4_signature():
    h = _base(pending=True)
    (r,) = _cases(h.reindex())[0]["restarts"]
    assert r["kind"] == "offset-reset"
    assert [p["process"] for p in r["pending"]] == [3]
    head = _cases(h.reindex())[0]["explanation"]
    assert "signature of librdkafka's reset" in head and "F5.md" not in head


def test_killed_transaction_stays_pending_until_the_next_init():
    """An ``info`` txn (a killed processor's) is settled by its transactional.id's next ok
    init (initTransactions aborts it), not by its own completion line."""
    h = H()
    vals = _inputs(h)
    recs = list(enumerate(vals))
    _assign(h, 1, ["in/0"])
    _process(h, 1, "in/0", recs, attempt=1)
    _process(h, 3, "in/0", recs[2:], attempt=3, typ="info")  # killed: completion written at the kill
    _assign(h, 2, ["in/0"])
    _process(h, 2, "in/0", recs, attempt=2)
    h.op(4, "init", None, tid="proc-3")  # proc-3's restart aborts its open transaction only now
    (r,) = _cases(h.ev)[0]["restarts"]
    assert [p["process"] for p in r["pending"]] == [3]
    # the same init before B's assign: settled, nothing pending
    early = H()
    vals = _inputs(early)
    _assign(early, 1, ["in/0"])
    _process(early, 1, "in/0", recs, attempt=1)
    _process(early, 3, "in/0", recs[2:], attempt=3, typ="info")
    early.op(4, "init", None, tid="proc-3")
    _assign(early, 2, ["in/0"])
    _process(early, 2, "in/0", recs, attempt=2)
    (r,) = _cases(early.ev)[0]["restarts"]
    assert r["pending"] == []


def test_older_non_zero_offset_is_behind_committed():
    cases = _cases(_base(restart_at=1).ev)
    assert [c["input"]["offset"] for c in cases] == [1, 2]
    (r,) = cases[0]["restarts"]
    assert r["kind"] == "behind-committed" and r["first_read"]["offset"] == 1 and r["log_start"] == 0
    assert "old committed offset was fetched" in cases[0]["explanation"]


def test_first_example_of_each_range_comes_first():
    h = H()
    v0 = _inputs(h, "in/0")
    v1 = _inputs(h, "in/1", base=100)
    _assign(h, 1, ["in/0", "in/1"])
    _process(h, 1, "in/0", list(enumerate(v0)), attempt=1)
    _process(h, 1, "in/1", list(enumerate(v1)), attempt=1)
    _assign(h, 2, ["in/0", "in/1"])
    _process(h, 2, "in/0", list(enumerate(v0)), attempt=2)
    _process(h, 2, "in/1", list(enumerate(v1))[1:], attempt=2)
    cases = _cases(h.ev)
    assert [(c["input"]["key"], c["input"]["offset"]) for c in cases[:2]] == [("in/0", 0), ("in/1", 1)]
    assert [c["restarts"][0]["kind"] for c in cases[:2]] == ["offset-reset", "behind-committed"]
    v = check(h.ev, meta={"pipeline": PIPE}, max_examples=2)
    assert [c["range"]["key"] for c in v.anomalies["eos-duplicate"]] == ["in/0", "in/1"]
    assert v.anomaly_counts["eos-duplicate"] == 5


def test_controls():
    # B resumes where A committed: no duplicate, no restart
    h = _base(restart_at=3)
    hist = as_history(h.ev)
    assert _cases(h.ev) == []
    assert restarts(hist, [hist.keys.index("in/0")]) == []
    # a duplicate with no assign before B's read: the range is named, no restart
    h = H()
    vals = _inputs(h)
    _process(h, 1, "in/0", list(enumerate(vals)), attempt=1)
    _process(h, 2, "in/0", list(enumerate(vals)), attempt=2)
    cases = _cases(h.ev)
    assert cases[0]["restarts"] == [] and "no restart behind the committed offset" in cases[0]["explanation"]
    # offsets committed by the consumer, not the transaction: restarts are not looked for
    cases = _cases(_base().ev, dict(PIPE, offsets="consumer"))
    assert cases[0]["restarts"] == [] and "restart" not in cases[0]["explanation"].split("range")[1]


def test_ranges_break_at_position_gaps_and_keys():
    items = [("a", 0, 0), ("a", 2, 1), ("a", 9, 5), ("b", 0, 0)]
    assert [(r["key"], r["from_offset"], r["to_offset"], r["inputs"]) for r in ranges(items)] == [
        ("a", 0, 2, 2), ("a", 9, 9, 1), ("b", 0, 0, 1)]


def test_app_duplicates_form_ranges_and_a_run_from_the_first_input_is_named():
    """The app workload: in/0 offsets 0-1 duplicated (from the partition's first input) and
    in/0 offset 3 alone: two ranges, the run from the start said to be one."""
    b = HistoryBuilder()
    b.txn(0, [("in/0", v, o) for o, v in enumerate([1, 2, 3, 4])], tid="p")
    b.assign(1, ["in/0", "out/0"])
    b.poll(1, {"in/0": [(o, v) for o, v in enumerate([1, 2, 3, 4])]}, final=True)
    outs = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 1), (5, 2), (6, 4)]
    b.invoke(1, "app-poll", [["poll"]], {"final": True})
    b.complete(1, "ok", [["poll", {"out/0": [list(r) for r in outs]}]], {"final": True})
    cases = [c for c in app_cases(load_history(b.events), APP) if c["anomaly"] == "eos-duplicate"]
    assert [(c["value"], c["range"]["from_offset"], c["range"]["inputs"]) for c in cases] == [
        (1, 0, 2), (4, 3, 1), (2, 0, 2)]
    assert "from the partition's first input" in cases[0]["explanation"]
    assert "first of the duplicated range in/0 offset 3 (1 input(s))" in cases[1]["explanation"]
    assert "first input" not in cases[1]["explanation"] and "range" not in cases[2]["explanation"]


def test_window_cases_name_the_range_too():
    cases = pipeline_window_cases(as_history(_base().ev), PIPE)
    assert len(cases) == 3 and cases[0]["restarts"][0]["kind"] == "offset-reset"


def test_real_soak_excerpt_names_processor_0s_reset(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    meta = json.loads(SOAK_META.read_text())
    h = load_history(path, index_gaps=False)
    cases = [c for c in pipeline_cases(h, meta["pipeline"]) if c["anomaly"] == "eos-duplicate"]
    assert len(cases) == 50
    assert cases[0]["range"] == {"key": "in/0", "from_offset": 0, "to_offset": 110, "inputs": 50}
    (r,) = cases[0]["restarts"]
    assert (r["kind"], r["assign"]["invoke_index"], r["first_read"]["offset"]) == ("offset-reset", 51110, 0)
    assert r["committed"]["offset"] == 231 and r["committed"]["op"]["transactional_id"] == "eosc-proc-1"


def test_resuming_at_a_reprocessing_commit_is_no_restart():
    """After a reset, the reprocessing consumer commits lower offsets again: the next
    assignee that resumes there fetched the group's committed offset correctly (the committed
    offset is the last commit's, not the highest ever; the soak's history had 47 such false
    restarts before this was so)."""
    h = H()
    vals = _inputs(h)
    recs = list(enumerate(vals))
    _assign(h, 1, ["in/0"])
    _process(h, 1, "in/0", recs, attempt=1)  # commits 3
    _assign(h, 2, ["in/0"])
    _process(h, 2, "in/0", recs[:1], attempt=2)  # reset: reads 0 again, commits 1
    _assign(h, 4, ["in/0"])
    _process(h, 4, "in/0", recs[1:], attempt=4)  # resumes at 1: right
    hist = as_history(h.ev)
    rs = restarts(hist, [hist.keys.index("in/0")])
    assert [(r["assign"]["process"], r["first_read"]["offset"], r["committed"]["offset"]) for r in rs] == [(2, 0, 3)]


def test_report_shows_the_ranges_with_their_restart():
    from harness.report.render import render_report_html
    ev = _base(pending=True).reindex()
    v = check(ev, meta={"pipeline": PIPE})
    assert v.stats["reprocessed_ranges"][0]["restarts"][0]["kind"] == "offset-reset"
    html = render_report_html(ev, v, {"name": "tiny"}, {"pipeline": PIPE})
    assert "Reprocessed ranges" in html and "reset to the log start: assign op" in html
    assert "1 other transaction(s) open across the assign" in html
    assert "reprocessed_ranges" not in html  # not again, as raw JSON, in the checker stats table
    plain = render_report_html(ev, check(ev), {"name": "tiny"}, None)  # no pipeline: no eos-duplicate, no table
    assert "Reprocessed ranges" not in plain
    assert "restart behind it" in html
    # the app workload looks for no restart (restarts None): the column is left out (issue 36)
    app = v.model_copy(update={"stats": dict(v.stats, reprocessed_ranges=[
        {k: x for k, x in r.items() if k != "restarts"} | {"restarts": None} for r in v.stats["reprocessed_ranges"]])})
    html = render_report_html(ev, app, {"name": "tiny"}, {"pipeline": PIPE})
    assert "Reprocessed ranges" in html and "restart behind it" not in html


def test_a_failing_explanation_never_costs_the_cases(monkeypatch):
    """The explanation is auxiliary: if it raises, the eos-duplicate cases stay, unexplained,
    and say why (a crash inside pipeline_cases would turn an invalid verdict into unknown)."""
    import checkers.finders.reprocessing as rp

    def boom(*a, **k):
        raise RuntimeError("odd history")
    monkeypatch.setattr(rp, "restarts", boom)
    cases = _cases(_base().ev)
    assert len(cases) == 3 and all("not computed: RuntimeError: odd history" in c["explanation"] for c in cases)
    assert check(_base().ev, meta={"pipeline": PIPE}).failing == ["eos-duplicate"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), aborts=st.sampled_from([0.0, 0.3]), crashes=st.sampled_from([0.0, 0.05]),
       processors=st.integers(1, 3))
def test_negative_control_simulated_correct_pipelines_have_no_restart(seed, aborts, crashes, processors):
    """Correct pipelines (checkers.synthetic.simulate: rebalances, aborts with rewinds, crashes with and
    without an ``info`` completion, restarts under the same transactional.id) never start a
    partition behind the group's committed offset: no restart is named and no eos-duplicate
    found. The property can fail: ``test_restart_property_can_fail`` breaks one."""
    events = sim.simulate(600, seed=seed, n_keys=4, n_producers=2, abort_rate=aborts, crash_rate=crashes,
                          n_processors=processors)
    h = as_history(events)
    ins = [h.keys.index(k) for k in sim.pipeline_meta(4)["pipeline"]["keys"] if k in h.keys]
    assert restarts(h, ins) == []


def test_restart_property_can_fail():
    """The same simulated pipeline with one processor's first read after an assign moved back
    to offset 0 (its records re-read there): a restart is named."""
    for seed in range(20):
        events = sim.simulate(600, seed=seed, n_keys=4, n_producers=2, abort_rate=0.0, crash_rate=0.05,
                              n_processors=2)
        assigns = [i for i, e in enumerate(events) if e["f"] == "assign" and e["type"] == "ok"]
        for a in assigns[1:]:
            p, keys = events[a]["process"], events[a]["value"]
            first = next((j for j in range(a + 1, len(events)) if events[j]["process"] == p
                          and events[j]["f"] == "txn" and events[j]["type"] == "ok"
                          and any(m[0] == "poll" and m[1].get(keys[0]) for m in events[j]["value"]
                                  if isinstance(m[1], dict))), None)
            if first is None:
                continue
            poll = next(m for m in events[first]["value"] if m[0] == "poll")
            recs = poll[1][keys[0]]
            if recs[0][0] <= 0:
                continue
            poll[1][keys[0]] = [[0, recs[0][1]]] + recs[1:]  # the first record read at offset 0 instead
            h = as_history(events)
            found = restarts(h, [h.keys.index(k) for k in sim.pipeline_meta(4)["pipeline"]["keys"] if k in h.keys])
            if found:
                assert found[0]["first_read"]["offset"] == 0
                return
    pytest.fail("no simulated pipeline had a later assign whose first read could be moved back")
