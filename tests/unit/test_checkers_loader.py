"""The columnar loader and the fast paths of the derived data agree with the exact paths.

The file reader parses regular lines natively (polars) and tokenizes micro-ops with one
regex; odd lines (and lists of event dicts) go through the exact per-event code. These
tests hold the two to the same result, on files cut into many small parts so that part
boundaries, bisection around garbled lines and line numbering across parts are exercised.
"""

import copy
import json
import random
import re

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import checkers.history.reader as HR
import checkers.verdict as V
from checkers import check, load_history
from checkers.synthetic.build import HistoryBuilder
from checkers.finders.cycles import _build_log_writers, cycle_cases, log, writers
from checkers.history.log import index
from checkers.finders.realtime_lag import _lags_by_value, lags
from checkers.synthetic.simulate import simulate

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _norm(h):
    ops = h.ops.with_columns(pl.col("f").cast(pl.String), pl.col("type").cast(pl.String))
    mops = h.mops.with_columns(
        key=pl.Series([h.keys[k] for k in h.mops["key"]], dtype=pl.String),
        kind=pl.col("kind").cast(pl.String))
    probs = sorted(re.sub(r"^line (\d+):", lambda m: f"@{int(m[1]) - 1}:",
                          re.sub(r"^event #(\d+):", r"@\1:", p)) for p in h.problems)
    return ops, mops, probs


def _same(a, b):
    oa, ma, pa = _norm(a)
    ob, mb, pb = _norm(b)
    assert oa.equals(ob)
    assert ma.equals(mb)
    assert a.keys == b.keys
    assert a.extras == b.extras
    assert a.nemesis == b.nemesis
    assert (a.n_events, a.n_problems, a.truncated, a.garbled_lines) == \
        (b.n_events, b.n_problems, b.truncated, b.garbled_lines)
    assert pa == pb


def _mangle(events, rnd):
    """Odd but JSON-valid events: wrong types, missing fields, orphans, unknown fs, escapes,
    echoed values, huge integers (never floats: polars reads 17.0 as 17, see docs)."""
    ev = copy.deepcopy(events)
    for _ in range(rnd.randint(1, 8)):
        i = rnd.randrange(len(ev))
        e = ev[i]
        r = rnd.random()
        if r < 0.08:
            del ev[i]
        elif r < 0.16:
            e["value"] = "junk"
        elif r < 0.24 and isinstance(e.get("value"), list) and e["value"]:
            e["value"][0] = ["send", 7, 1]
        elif r < 0.30:
            e["process"] = "p1"
        elif r < 0.36:
            e["type"] = rnd.choice(["weird", None, 5])
        elif r < 0.40:
            e.pop("index")
        elif r < 0.43:
            e["meta"] = {"transactional_id": 'x"y', "final": True}
        elif r < 0.46:
            e["meta"] = {**(e.get("meta") or {}), "commit_ns": rnd.choice([7, "7", True, 2.5, None])}
        elif r < 0.52:
            e["error"] = ["_FENCED", 'fenced "epoch" \\ 7']
        elif r < 0.56:
            e["error"] = "PLAIN"
        elif r < 0.62:
            e["value"] = None
        elif r < 0.66:
            e["f"] = "assign"
        elif r < 0.74:
            ev.insert(i, copy.deepcopy(e))  # in flight twice / orphan completion
        elif r < 0.80 and e.get("f") == "txn" and e.get("type") == "invoke":
            e["value"] = [["send", "t0/0", [5, 99]]] + (e.get("value") or [])
        elif r < 0.86:
            e["value"] = [["send", "t\u00e9/0", [1, 2]], ["poll", {"t\u00e9/0": [[1, 2]]}]]
        elif r < 0.92:
            e["value"] = [["poll", {"t0/0": [[1, 12345678901234567890123]]}]]
        else:
            e["index"] = 2 ** 70
    return ev


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(20, 400), mangled=st.booleans(),
       part=st.sampled_from([300, 2000, 1 << 26]))
def test_file_and_event_list_read_the_same(tmp_path, monkeypatch, seed, n, mangled, part):
    rnd = random.Random(seed)
    ev = simulate(n, seed=seed, n_keys=rnd.randint(3, 6), abort_rate=0.3, crash_rate=0.05)
    if mangled:
        ev = _mangle(ev, rnd)
    p = tmp_path / f"h{seed}.jsonl"
    sep = (",", ":") if rnd.random() < 0.7 else (", ", ": ")  # spaced JSON reads the same
    p.write_text("".join(json.dumps(e, separators=sep) + "\n" for e in ev))
    monkeypatch.setattr(HR, "_PART_BYTES", part)
    # the same content as the file holds (a huge integer reads back from JSON as a float)
    _same(load_history(p), load_history([HR._loads(json.dumps(e)) for e in ev]))


def test_garbled_lines_and_truncation_across_many_small_parts(tmp_path, monkeypatch):
    ev = simulate(300, seed=4, n_keys=4)
    lines = [json.dumps(e, separators=(",", ":")) for e in ev]
    for at in (40, 41, 300, 500):
        lines.insert(at, '{"index": 99, "garbage": ')
    lines.insert(200, "\x0c")  # blank to Python, an error to polars
    lines.insert(201, "   ")
    text = "\n".join(lines) + "\n" + lines[-1][:30]
    p = tmp_path / "history.jsonl"
    p.write_text(text)
    monkeypatch.setattr(HR, "_PART_BYTES", 1500)
    h = load_history(p)
    monkeypatch.setattr(HR, "_PART_BYTES", 1 << 26)
    h1 = load_history(p)
    assert h.garbled_lines == h1.garbled_lines == 4
    assert h.truncated and h1.truncated
    assert h.problems == h1.problems
    assert h.ops.equals(h1.ops) and h.mops.equals(h1.mops)
    assert sum("garbled line skipped" in x for x in h.problems) == 4
    assert any(x.startswith(f"line {len(lines) + 1}: truncated") for x in h.problems)
    assert check(p).valid == "unknown"


def test_far_apart_offsets_use_sparse_slots_and_keep_positions():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 1, 0), ("t/1", 2, 7)])
    b.txn(0, [("t/0", 3, 10**12)])
    b.txn(0, [("t/0", 4, 10**12 + 5)])
    b.assign(1, ["t/0", "t/1"])
    b.poll(1, {"t/0": [(0, 1), (10**12, 3), (10**12 + 5, 4)], "t/1": [(7, 2)]}, final=True)
    h = load_history(b.events)
    assert index(h).n_slots == 4  # distinct (key, offset) pairs, not the offset span
    lg = log(h)
    assert lg.filter(pl.col("key") == h.keys.index("t/0"))["pos"].to_list() == [0, 1, 2]
    v = check(h)
    assert v.valid is True and v.anomalies == {}


def test_check_gives_the_same_verdict_on_one_thread(monkeypatch):
    ev = simulate(2500, seed=11, n_keys=4, abort_rate=0.3)
    # make a write cycle: swap the offsets of two transactions' first sends on one key
    tx = [e for e in ev if e["f"] == "txn" and e["type"] == "ok" and len(e["value"]) >= 2]
    tx[10]["value"][0][2][0], tx[30]["value"][0][2][0] = tx[30]["value"][0][2][0], tx[10]["value"][0][2][0]
    meta = {"realtime_lag_bound_s": 0.001, "unavailable_bound_s": 0.001}
    monkeypatch.setattr(V, "WORKERS", 1)
    one = check(copy.deepcopy(ev), meta=meta, max_examples=10**6)
    monkeypatch.setattr(V, "WORKERS", 2)
    two = check(copy.deepcopy(ev), meta=meta, max_examples=10**6)
    assert one == two
    assert one.anomaly_counts  # something was found


def test_fast_lags_and_log_writers_equal_the_by_value_paths():
    h = load_history(simulate(3000, seed=5, n_keys=5, abort_rate=0.2, crash_rate=0.01))
    assert index(h).dup_kv.is_empty()  # the fast paths apply
    cols = ["key", "value", "writer", "process", "op", "lag_ns"]
    fast = lags(h).select(cols).sort(cols)
    slow = _lags_by_value(h).select(cols).with_columns(pl.col("writer").cast(pl.UInt32)).sort(cols)
    assert fast.equals(slow)
    by_value = (log(h).select("key", "value")
                .join(writers(h), on=["key", "value"], how="left", maintain_order="left")["writer"]
                .fill_null(-1).cast(pl.Int64).to_list())
    assert _build_log_writers(h).tolist() == by_value
    assert cycle_cases(h) == []


def test_integers_out_of_64_bit_range_are_reported_not_raised(tmp_path):
    evs = [{"index": 2 ** 70, "time": 1, "process": 1, "type": "invoke", "f": "txn", "value": []},
           {"index": 1, "time": 2 ** 70, "process": 2 ** 70, "type": "invoke", "f": "txn", "value": []},
           {"index": 2, "time": 5, "process": 3, "type": "invoke", "f": "txn",
            "value": [["send", "t/0", 2 ** 64]]},
           {"index": 3, "time": 6, "process": 3, "type": "ok", "f": "txn",
            "value": [["send", "t/0", [2 ** 64, 1]]]}]
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in evs))
    for h in (load_history(evs), load_history(p)):
        assert h.ops.height == 1 and h.mops.height == 0
        assert any("lacks an int index" in x for x in h.problems)
        assert any("non-integer process" in x for x in h.problems)
        assert any("malformed micro-op" in x for x in h.problems)


@pytest.mark.parametrize("n", [1, 2])
def test_tiny_files(tmp_path, n):
    ev = simulate(n, seed=1, n_keys=2)[:n]
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in ev))
    _same(load_history(p), load_history(ev))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_fences_by_suffix_minimum_equal_the_pairwise_definition(seed):
    """_fences: per older instance, the earliest ok init of any newer instance of its id."""
    from checkers.finders.zombie_write import _fences, _instances
    h = load_history(simulate(600, seed=seed, n_keys=3, n_producers=2, crash_rate=0.08))
    inst = _instances(h)
    inits = (h.ops.filter((pl.col("f") == "init") & (pl.col("type") == "ok")
                          & pl.col("complete_time").is_not_null())
             .select("transactional_id", new_process="process", fence_time="complete_time",
                     fence_op="op")
             .join(inst.rename({"process": "new_process", "first": "new_first"}),
                   on=["transactional_id", "new_process"]))
    pairwise = (inst.join(inits, on="transactional_id")
                .filter(pl.col("new_first") > pl.col("first"))
                .group_by("transactional_id", "process").agg(pl.col("fence_time").min()))
    got = _fences(h).select("transactional_id", "process", "fence_time")
    key = ["transactional_id", "process"]
    assert got.sort(key).equals(pairwise.sort(key).select(got.columns))
