"""eos-duplicate as a window finder (checkers.finders.pipeline.pipeline_window_cases, checkers/engines/windows.py).

* By hand: two processor transactions that completed ``ok`` and carry outputs of one input
  value make the window invalid with eos-duplicate, through the window child
  (``python -m checkers.engines.windows``, meta.json beside the history) as the soak runs it, and the
  whole history's check reports the same input value under the same name; with the second
  ``info``, ``fail``, cut by the slice's end or begun before its start, the window is valid;
  so it is without the pipeline mapping, with eos-duplicate expected, or for an app that
  declares at-least-once.
* Simulated pipelines (checkers.synthetic.simulate with processors: aborts, rewinds, crashes with and
  without an ``info`` completion, rebalances) are valid as a whole; random slices of them are
  never invalid (the Hypothesis property of test_checkers_windows.py); counting the writers
  of ``fail`` or ``info`` txns would make them so (the property can fail); with a zombie copy
  of an ok transaction injected, every input a window reports is reported by the whole
  history's check under eos-duplicate, and the windows together report all of them.
* Real data: tests/data/real-soak-s1-excerpt, lines 49,600-51,600 (gzip) of the recorded
  soak's history (docs/soak-runs/2026-11-25-soak-s1: its meta.json and scenario.yaml; verdict
  INVALID eos-duplicate 90,443), which hold both ok transactions of 50 of those duplicated
  inputs: found; cut one line before the second one's completion: valid. No pipeline
  history with a valid verdict is recorded in the repository.
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.synthetic import simulate as sim
from checkers.engines import windows
from checkers.history import as_history
from checkers.finders.pipeline import pipeline_cases
from checkers.verdict import check
from checkers.engines.windows import NS, WindowTracker, check_slice

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PIPE = {"pipeline": {"keys": {"in/0": "out/0"}, "group_id": "eosc-proc", "value_divisor": 1_000_000}}
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "real-soak-s1-excerpt"  # history.jsonl.gz: lines 49,600-51,600
SOAK = ROOT / "docs" / "soak-runs" / "2026-11-25-soak-s1"  # its meta.json and scenario.yaml


def _ev(i, t, p, typ, f, value, **meta):
    e = {"index": i, "time": t * NS // 100, "process": p, "type": typ, "f": f, "value": value}
    if meta:
        e["meta"] = meta
    return e


def _lines(events: list[dict]) -> list[bytes]:
    return [json.dumps(e, separators=(",", ":")).encode() for e in events]


def _dup_history(second: str = "ok") -> list[dict]:
    """Input value 7 (in/0 offset 0) processed by processor 1, then by processor 2, whose txn
    completed ``second``: output values 7_000_000 and 7_001_000 (7 * 1e6 + attempt tag)."""
    proc = {"group_id": "eosc-proc"}
    return [
        _ev(0, 1, 0, "invoke", "txn", [["send", "in/0", 7]], transactional_id="eosc-in-0"),
        _ev(1, 2, 0, "ok", "txn", [["send", "in/0", [0, 7]]], transactional_id="eosc-in-0"),
        _ev(2, 3, 1, "invoke", "txn", [["poll"], ["send", "out/0", 7_000_000]], transactional_id="eosc-proc-0", **proc),
        _ev(3, 4, 1, "ok", "txn", [["poll", {"in/0": [[0, 7]]}], ["send", "out/0", [0, 7_000_000]]],
            transactional_id="eosc-proc-0", **proc),
        _ev(4, 5, 2, "invoke", "txn", [["poll"], ["send", "out/0", 7_001_000]], transactional_id="eosc-proc-1", **proc),
        _ev(5, 6, 2, second, "txn", [["poll", {"in/0": [[0, 7]]}], ["send", "out/0", [2, 7_001_000]]],
            transactional_id="eosc-proc-1", **proc),
    ]


def _child(folder: Path, lines: list[bytes], meta: dict | None, *args: str) -> dict:
    """What the soak's window child prints for the whole of ``folder``/history.jsonl (with
    ``meta`` written to meta.json beside it)."""
    folder.mkdir(exist_ok=True)
    hist = folder / "history.jsonl"
    hist.write_bytes(b"\n".join(lines) + b"\n")
    if meta is not None:
        (folder / "meta.json").write_text(json.dumps(meta))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert windows.main([str(hist), "--start", "0", "--end", str(hist.stat().st_size), *args]) == 0
    return json.loads(buf.getvalue().strip().splitlines()[-1])


def _dups(cases: list[dict]) -> list[tuple]:
    return sorted((c["input"]["key"], c["input"]["value"]) for c in cases if c["anomaly"] == "eos-duplicate")


# -- by hand -----------------------------------------------------------------------------------

def test_two_ok_txns_with_outputs_of_one_input_make_the_window_invalid(tmp_path):
    lines = _lines(_dup_history("ok"))
    out = _child(tmp_path, lines, PIPE)
    assert out["valid"] is False and out["failing"] == ["eos-duplicate"], out
    assert out["anomaly_counts"] == {"eos-duplicate": 1}
    assert out["examples"]["eos-duplicate"].startswith("input value 7 at offset 0 of in/0 yields committed "
                                                       "records on out/0 from 2 ops that completed ok")
    # the whole history's check: the same input, the same name
    whole = check(tmp_path / "history.jsonl", meta=PIPE)
    assert "eos-duplicate" in whole.failing and _dups(whole.anomalies["eos-duplicate"]) == [("in/0", 7)]
    # a slice without the input producer's txn: the processors' polls hold the input record
    v, facts = check_slice(lines[2:], meta=PIPE)
    assert v.valid is False and _dups(v.anomalies["eos-duplicate"]) == [("in/0", 7)]
    # the example names the file's lines and both writers
    ex = v.anomalies["eos-duplicate"][0]
    assert [w["invoke_index"] for w in ex["outputs"]["writers"]] == [2, 4]
    assert ex["outputs"]["offsets"] == [0, 2] and ex["output_key"] == "out/0"


@pytest.mark.parametrize("second", ["info", "fail"])
def test_an_info_or_fail_second_txn_is_no_duplicate(tmp_path, second):
    lines = _lines(_dup_history(second))
    out = _child(tmp_path, lines, PIPE)
    assert out["valid"] is True and out["anomaly_counts"] == {}, out
    assert "eos-duplicate" not in check(tmp_path / "history.jsonl", meta=PIPE).anomaly_counts


def test_a_txn_cut_by_the_slice_is_not_counted():
    lines = _lines(_dup_history("ok"))
    # the second txn's completion lies after the slice: it reads info
    v, _ = check_slice(lines[:5], meta=PIPE)
    assert v.valid is True and not v.anomaly_counts, v.anomaly_counts
    # the first txn's invoke lies before the slice: its completion is dropped
    v, facts = check_slice(lines[3:], meta=PIPE)
    assert facts["dropped"] == 1 and v.valid is True and not v.anomaly_counts, v.anomaly_counts


def test_without_the_mapping_or_when_expected_the_window_does_not_fail(tmp_path):
    lines = _lines(_dup_history("ok"))
    assert check_slice(lines)[0].valid is True  # no meta: no pipeline mapping, nothing to find
    assert _child(tmp_path / "no-meta", lines, None)["valid"] is True
    v, _ = check_slice(lines, meta=PIPE, allowed=["eos-duplicate"])
    assert v.valid is True and v.anomaly_counts == {"eos-duplicate": 1}
    # an app that declares at-least-once allows eos-duplicate, as the final check does
    alo = {**PIPE, "app": {"semantics": "at-least-once"}}
    assert check_slice(lines, meta=alo)[0].valid is True
    assert "eos-duplicate" in check([json.loads(x) for x in lines], meta=alo).allowed
    # --meta names the run folder (as harness/run/soak.py passes it) or its meta.json
    d = tmp_path / "run"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps(PIPE))
    other = tmp_path / "elsewhere"
    assert _child(other, lines, None, "--meta", str(d))["failing"] == ["eos-duplicate"]
    assert _child(other, lines, None, "--meta", str(d / "meta.json"))["failing"] == ["eos-duplicate"]


def test_a_broken_meta_json_is_an_unknown_reason(tmp_path):
    (tmp_path / "meta.json").write_text("{not json")
    out = _child(tmp_path, _lines(_dup_history("info")), None)
    assert out["valid"] == "unknown" and "meta.json is unreadable" in out["unknown_reasons"][0], out


# -- simulated pipelines ---------------------------------------------------------------------------

def _pipeline(seed, n, aborts, crashes, processors, n_keys=4):
    return sim.simulate(n, seed=seed, n_keys=n_keys, n_producers=2, abort_rate=aborts, crash_rate=crashes,
                        n_processors=processors)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_simulated_pipeline_has_what_a_real_one_has(seed):
    events = _pipeline(seed, 600, 0.3, 0.05, 3)
    fs = {(e["f"], e["type"]) for e in events}
    assert {("txn", "fail"), ("rewind", "ok"), ("txn", "info"), ("assign", "ok"), ("init", "ok"),
            ("committed-offsets", "ok")} <= fs
    # some input processed more than once (aborted, or lost with its processor), then once ok
    outs: dict = {}
    for e in events:
        if e["f"] == "txn" and e["type"] != "invoke" and e["value"][0][0] == "poll":
            for m in e["value"][1:]:
                outs.setdefault(m[2][1] // sim.PIPELINE_FACTOR, []).append(e["type"])
    assert any(len(ts) > 1 for ts in outs.values())
    assert all(ts.count("ok") == 1 for ts in outs.values())


@settings(SETTINGS, max_examples=15)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 400), aborts=st.sampled_from([0.1, 0.3, 0.6]),
       crashes=st.sampled_from([0.002, 0.05, 0.2]), processors=st.integers(1, 4))
def test_a_simulated_pipeline_is_valid_as_a_whole(seed, n, aborts, crashes, processors):
    v = check(_pipeline(seed, n, aborts, crashes, processors), meta=sim.pipeline_meta(4))
    assert v.valid is True and not v.anomaly_counts, (v.anomaly_counts, v.unknown_reasons)


@pytest.mark.parametrize("counted", ["fail", "info"])
def test_the_property_fails_if_fail_or_info_writers_counted(counted):
    # a finder that counted the writers of aborted (fail) or unknown (info) processor txns: the
    # same finder on the history with those completions read as ok. A batch aborted or lost
    # with its processor, then processed again, would be eos-duplicate
    events = _pipeline(5, 600, 0.3, 0.2, 3)
    naive = [dict(e, type="ok") if e["f"] == "txn" and e["type"] == counted and e["value"][0][0] == "poll"
             else e for e in events]
    assert naive != events
    meta = sim.pipeline_meta(4)
    assert check_slice(_lines(events), meta=meta)[0].valid is True
    v, _ = check_slice(_lines(naive), meta=meta)
    assert "eos-duplicate" in v.failing, v.anomaly_counts


def _zombie_copy(events: list[dict], at: int) -> list[dict]:
    """A zombie processor (a new process) commits the batch of the ok txn completed at event
    ``at`` again, right after it: new output values, offsets beyond every partition's end."""
    done = events[at]
    inv = next(e for e in reversed(events[:at]) if e["process"] == done["process"] and e["type"] == "invoke")
    proc = max(e["process"] for e in events if isinstance(e["process"], int)) + 1
    sends = [[m[0], m[1], [10**6 + j, m[2][1] // sim.PIPELINE_FACTOR * sim.PIPELINE_FACTOR + 999_000]]
             for j, m in enumerate(done["value"][1:])]
    meta = {"transactional_id": "eosc-proc-zombie", "group_id": sim.PIPELINE_GROUP}
    added = [dict(copy.deepcopy(inv), process=proc, time=done["time"] + 1, meta=meta,
                  value=[["poll"]] + [[m[0], m[1], m[2][1]] for m in sends]),
             dict(copy.deepcopy(done), process=proc, time=done["time"] + 2, meta=meta,
                  value=[copy.deepcopy(done["value"][0])] + sends)]
    out = events[:at + 1] + added + events[at + 1:]
    for i, e in enumerate(out):
        e["index"] = i
    return out


@settings(SETTINGS, max_examples=12)
@given(seed=st.integers(0, 10_000), pick=st.randoms(use_true_random=False), every=st.sampled_from([0.05, 0.2]))
def test_every_input_a_window_reports_is_reported_by_the_whole_check(seed, pick, every):
    events = _pipeline(seed, 500, 0.3, 0.05, 3)
    ok = [i for i, e in enumerate(events) if e["f"] == "txn" and e["type"] == "ok" and e["value"][0][0] == "poll"]
    events = _zombie_copy(events, pick.choice(ok))
    meta = sim.pipeline_meta(4)
    whole = set(_dups(pipeline_cases(as_history(events), meta["pipeline"])))
    assert whole
    lines = _lines(events)
    data = b"\n".join(lines) + b"\n"
    t, pos, ws = WindowTracker(every), 0, []
    for line in lines:
        pos += len(line) + 1
        t.feed(line, pos)
        ws += t.closed()
    found = set()
    for w in ws + t.finish():
        v, _ = check_slice(data[w.slice_start:w.slice_end], meta=meta, max_examples=10**6)
        cases = set(_dups(v.anomalies.get("eos-duplicate", [])))
        assert cases <= whole, (w.k, cases - whole)
        found |= cases
    assert found == whole  # the copy follows its original at once: some slice holds both


# -- real data: an excerpt of the recorded soak ------------------------------------------------

def _excerpt() -> tuple[list[bytes], dict, list[str]]:
    lines = gzip.decompress((DATA / "history.jsonl.gz").read_bytes()).splitlines()
    meta = json.loads((SOAK / "meta.json").read_text())
    expected = yaml.safe_load((SOAK / "scenario.yaml").read_text())["expected"]
    return lines, meta, expected


def test_the_recorded_soaks_duplicates_are_found_in_its_excerpt():
    lines, meta, expected = _excerpt()
    assert len(lines) == 2001 and json.loads(lines[0])["index"] == 49600
    v, facts = check_slice(lines, meta=meta, allowed=expected, max_examples=100)
    assert v.valid is False and v.failing == ["eos-duplicate"], (v.anomaly_counts, v.unknown_reasons)
    cases = v.anomalies["eos-duplicate"]
    # 50 inputs of in/0 (among the 90,443 of the whole soak's verdict, checked by hand): written
    # by eosc-proc-1's txn invoked at line 49,614 and again by eosc-proc-0's at 51,563 (done at
    # 51,584), after a rebalance started in/0 again from offset 0
    assert v.anomaly_counts["eos-duplicate"] == 50 and {c["input"]["key"] for c in cases} == {"in/0"}
    assert {tuple(w["invoke_index"] for w in c["outputs"]["writers"]) for c in cases} == {(49614, 51563)}
    assert {w["transactional_id"] for c in cases for w in c["outputs"]["writers"]} == {"eosc-proc-0", "eosc-proc-1"}
    assert cases[0]["input"] == {"key": "in/0", "value": 300000001, "offset": 0, "pos": 0}


def test_the_excerpt_cut_before_the_second_commit_returned_is_valid():
    lines, meta, expected = _excerpt()
    cut = next(i for i, x in enumerate(lines) if json.loads(x)["index"] == 51584)
    assert json.loads(lines[cut])["type"] == "ok"
    v, _ = check_slice(lines[:cut], meta=meta, allowed=expected)
    # real processor txns: aborted (fail), unknown (info), after kills, crashes and rebalances
    fs = {(json.loads(x)["f"], json.loads(x)["type"]) for x in lines[:cut]}
    assert {("txn", "fail"), ("txn", "info"), ("crash", "info"), ("assign", "ok"), ("rewind", "ok")} <= fs
    assert v.valid is True, (v.anomaly_counts, v.unknown_reasons)
    assert "eos-duplicate" not in v.anomaly_counts
