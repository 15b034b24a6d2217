"""The parts path (checkers.engines.parts, issue 25 section 1) gives the verdict of ``check``: the same
anomaly names, counts and ``valid`` on the recorded real runs, on simulated histories, on
Hypothesis-built histories with one injected anomaly, and on tiny histories whose cases sit on
a multi-key op, where a cut by key could lose or double them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from checkers import check
from checkers.synthetic.build import HistoryBuilder
from checkers.engines.parts import check_parts, check_run_parts, part_of, write_parts
from checkers.synthetic.simulate import simulate
from checkers.verdict import check_run

from .test_checkers_model import KINDS, SETTINGS, inject, programs, run

DATA = Path(__file__).parent.parent / "data"
REAL = sorted(d for d in DATA.glob("real-*") if (d / "history.jsonl").is_file())


def same(a, b) -> None:
    assert (b.valid, b.anomaly_counts) == (a.valid, a.anomaly_counts), (a.unknown_reasons, b.unknown_reasons)


@pytest.mark.parametrize("run_dir", REAL, ids=lambda d: d.name)
def test_recorded_real_runs_get_the_same_verdict(run_dir):
    same(check_run(run_dir), check_run_parts(run_dir, 3))


@pytest.mark.parametrize("seed, kw, allowed", [
    (0, {}, []),
    (1, {"long_txn_rate": 0.2, "crash_rate": 0.01}, ["G0", "G0-process", "G0-realtime", "G1c-realtime"]),
    (2, {"n_keys": 3, "crash_rate": 0.05, "abort_rate": 0.3}, []),
])
def test_simulated_histories_get_the_same_verdict(tmp_path, seed, kw, allowed):
    p = simulate(2000, seed, tmp_path / "history.jsonl", **kw)
    same(check(p, allowed=allowed), check_parts(p, allowed=allowed, n_parts=4))


@settings(SETTINGS, max_examples=20)
@given(programs, st.sampled_from(KINDS), st.integers(0, 1000), st.integers(1, 4))
def test_an_injected_anomaly_gets_the_same_verdict(tmp_path_factory, program, kind, pick, n):
    broken = inject(run(program), kind, pick)
    assume(broken is not None)
    p = tmp_path_factory.mktemp("h") / "history.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in broken))
    same(check(p), check_parts(p, n_parts=n))


def _two_parts() -> tuple[str, str]:
    """Two keys that fall in different parts when cut in two."""
    keys = [f"t/{i}" for i in range(8)]
    a = keys[0]
    return a, next(k for k in keys if part_of(k, 2) != part_of(a, 2))


def test_a_multi_key_info_txn_read_on_one_key_is_committed_on_the_other(tmp_path):
    # an info txn writes a and b (different parts); its value on a is read, so it committed
    # (atomic), and its value on b, never read below a read position of b, is a lost write:
    # the part of b must learn from the part of a that the op was read
    a, b = _two_parts()
    hb = HistoryBuilder()
    hb.assign(10, [a, b])
    hb.txn(1, [(a, 1, 0), (b, 2, 0)], tid="t1")
    hb.txn(2, [(a, 3, 1), (b, 4, 1)], type_="info", tid="t2")
    hb.txn(1, [(b, 5, 2)], tid="t1")
    hb.poll(10, {a: [(0, 1), (1, 3)]})
    hb.poll(10, {b: [(0, 2), (2, 5)]})
    p = hb.write(tmp_path / "history.jsonl")
    full = check(p)
    assert full.anomaly_counts.get("lost-write") == 1, full.anomaly_counts
    parts = check_parts(p, n_parts=2)
    same(full, parts)
    assert parts.stats["parts"]["checked_again"] == 1


def test_cases_on_each_key_of_a_multi_key_op_are_found_once(tmp_path):
    # an aborted txn on a and b, both values read: one G1a per key, not lost at the cut
    # (the op is in both parts) and not doubled (each part keeps its own keys' cases)
    a, b = _two_parts()
    hb = HistoryBuilder()
    hb.assign(10, [a, b], isolation="read_uncommitted")
    hb.txn(1, [(a, 1, 0), (b, 2, 0)], type_="fail", tid="t1")
    hb.txn(1, [(a, 3, 2), (b, 4, 2)], tid="t1")
    hb.poll(10, {a: [(0, 1), (2, 3)], b: [(0, 2), (2, 4)]})
    p = hb.write(tmp_path / "history.jsonl")
    full = check(p)
    assert full.anomaly_counts.get("G1a") == 2, full.anomaly_counts
    for n in (1, 2, 5):
        same(full, check_parts(p, n_parts=n))


def test_the_cut_puts_an_op_in_every_part_it_touches(tmp_path):
    a, b = _two_parts()
    hb = HistoryBuilder()
    hb.assign(10, [a, b])
    hb.txn(1, [(a, 1, 0), (b, 2, 0)], tid="t1")
    hb.txn(1, [(b, 3, 1)], tid="t1")
    hb.poll(10, {a: [(0, 1)]})
    hb.nemesis("kill")
    parts = write_parts(hb.write(tmp_path / "history.jsonl"), tmp_path / "parts", 2)
    pa, pb = part_of(a, 2), part_of(b, 2)
    # assign (2 lines) and nemesis (1) everywhere; the 2-key txn in both; each other op in one
    assert parts.lines[pa] == 2 + 1 + 2 + 2
    assert parts.lines[pb] == 2 + 1 + 2 + 2
    assert parts.events == 2 + 2 + 2 + 2 + 1 and parts.n_gaps == 0


def test_cross_skip_is_never_valid_and_says_why(tmp_path):
    p = simulate(1000, 0, tmp_path / "history.jsonl")
    v = check_parts(p, n_parts=2, cross="skip")
    assert v.valid == "unknown"
    assert any("cross-key finders not run" in r for r in v.unknown_reasons)
    with pytest.raises(ValueError):
        check_parts(p, cross="nope")


def test_a_multi_key_op_is_cut_to_each_part_s_own_micro_ops(tmp_path):
    # a txn on a and b and a poll of both: part a's copy holds only a's send and records
    a, b = _two_parts()
    hb = HistoryBuilder()
    hb.assign(10, [a, b])
    hb.txn(1, [(a, 1, 0), (b, 2, 0)], tid="t1")
    hb.poll(10, {a: [(0, 1)], b: [(0, 2)]})
    parts = write_parts(hb.write(tmp_path / "history.jsonl"), tmp_path / "parts", 2)
    for mine, other in ((a, b), (b, a)):
        import polars as pl

        text = b"\n".join(pl.read_parquet(parts.files(part_of(mine, 2))).sort("line")["text"].to_list())
        assert mine.encode() in text
        ops = [json.loads(t) for t in text.split(b"\n") if b'"f":"txn"' in t or b'"f":"poll"' in t]
        assert ops and all(other not in json.dumps(o["value"]) for o in ops), ops


def test_a_multi_key_op_whose_completion_has_no_value_is_cut(tmp_path):
    # an info completion may carry no value (docs/history.md): the cut keeps its line as it is
    # (it crashed on `for m in None` when the op spanned parts)
    a, b = _two_parts()
    evs = [{"index": 0, "time": 1, "process": 5, "type": "invoke", "f": "assign", "value": [a, b]},
           {"index": 1, "time": 2, "process": 5, "type": "ok", "f": "assign", "value": [a, b]},
           {"index": 2, "time": 3, "process": 1, "type": "invoke", "f": "txn",
            "value": [["send", a, 1], ["send", b, 2]], "meta": {"transactional_id": "x"}},
           {"index": 3, "time": 4, "process": 1, "type": "info", "f": "txn", "value": None,
            "meta": {"transactional_id": "x"}},
           {"index": 4, "time": 5, "process": 5, "type": "invoke", "f": "poll", "value": [["poll"]]},
           {"index": 5, "time": 6, "process": 5, "type": "ok", "f": "poll", "value": [["poll", {a: [[0, 1]]}]]}]
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in evs))
    same(check(p), check_parts(p, n_parts=2))
