"""The report's plots and what they are made from: records, realtime lag, unseen count over time,
per-key offset plots with marked records, stalled-lso windows, per-f latency, op references."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import checkers
from checkers.history import load_history
from harness.report import render_report, render_report_html
from harness.report import analysis as an
from harness.report.charts import timeline_svg
from harness.report.ops import op_columns, process_labels
from harness.report.orders import (MAX_KEY_PLOTS, MAX_POINTS, Mark, key_plots, marks_of,
                                   stall_windows)
from harness.report.records import (FAIL, POLL, SEND, extract_records, realtime_lags,
                                    unseen_over_time)

S = 1_000_000_000
DATA = Path(__file__).resolve().parents[1] / "data"


def ev(index, time_s, process, type_, f, value=None, **extra):
    e = {"index": index, "time": int(time_s * S), "process": process, "type": type_, "f": f,
         "value": value}
    e.update(extra)
    return e


def history():
    """p0 writes 1 (ok, offset 0), 2 (aborted, offset 1), 3 (ok, offset 2), 4 (pending);
    p1 polls 1 then 2 and 3 (an aborted read); the final reader p2 reads 1 and 3."""
    return [
        ev(0, 0.0, 1, "invoke", "assign", ["t0/0"], meta={"worker": "consumer-0"}),
        ev(1, 0.1, 1, "ok", "assign", ["t0/0"], meta={"worker": "consumer-0"}),
        ev(2, 1.0, 0, "invoke", "txn", [["send", "t0/0", 1]], meta={"worker": "producer-0"}),
        ev(3, 1.5, 0, "ok", "txn", [["send", "t0/0", [0, 1]]], meta={"worker": "producer-0"}),
        ev(4, 1.6, 1, "invoke", "poll", [["poll"]]),
        ev(5, 2.0, 1, "ok", "poll", [["poll", {"t0/0": [[0, 1]]}]]),
        ev(6, 2.0, 0, "invoke", "txn", [["send", "t0/0", 2]]),
        ev(7, 3.0, 0, "fail", "txn", [["send", "t0/0", [1, 2]]]),
        ev(8, 3.0, 0, "invoke", "txn", [["send", "t0/0", 3]]),
        ev(9, 4.0, 0, "ok", "txn", [["send", "t0/0", [3, 3]]]),
        ev(10, 3.5, 1, "invoke", "poll", [["poll"]]),
        ev(11, 4.5, 1, "ok", "poll", [["poll", {"t0/0": [[1, 2], [3, 3]]}]]),
        ev(12, 5.0, 0, "invoke", "txn", [["send", "t0/0", 4]]),
        ev(13, 6.0, 2, "invoke", "poll", [["poll"]], meta={"final": True}),
        ev(14, 6.5, 2, "ok", "poll", [["poll", {"t0/0": [[0, 1], [3, 3]]}]], meta={"final": True}),
    ]


G1A = {"anomaly": "G1a", "key": "t0/0", "value": 2, "offset": 1,
       "writer": {"op": 3, "invoke_index": 6, "complete_index": 7, "process": 0, "f": "txn",
                  "type": "fail", "transactional_id": "eosc-txn-0"},
       "reader": {"op": 5, "invoke_index": 10, "complete_index": 11, "process": 1, "f": "poll",
                  "type": "ok", "transactional_id": None},
       "explanation": "value 2 of key t0/0, written by txn op 6 of process 0 which aborted, was "
                      "returned at offset 1 by poll op 10 of process 1 (ok)"}
VERDICT = {"valid": False, "anomalies": {"G1a": [G1A]}, "anomaly_counts": {"G1a": 3},
           "allowed": [], "failing": ["G1a"],
           "stats": {"realtime_lag_ms": {"n": 2, "p50": 500.0, "p90": 500.0, "p99": 500.0,
                                         "max": 500.0}}}


def rec_of(events):
    """The report's records, from the checkers' History of ``events``."""
    h = load_history(events)
    return extract_records(h, process_labels(h))


def records():
    return rec_of(history())


def test_records_hold_sends_and_polls_with_outcomes_and_unknown_offsets():
    rec = records()
    assert rec.keys == ["t0/0"]
    sends = rec.kind == SEND
    assert sorted(rec.value[sends].tolist()) == [1, 2, 3, 4]
    by_value = {int(v): (int(o), int(oc)) for v, o, oc in
                zip(rec.value[sends], rec.offset[sends], rec.outcome[sends])}
    assert by_value[2] == (1, FAIL)
    assert by_value[4][0] == -1  # never completed: offset unknown, op info
    polls = rec.kind == POLL
    assert int(polls.sum()) == 5 and int(rec.final[polls].sum()) == 2
    # meta.worker of an op the History keeps whole (assign, init, ...)
    assert rec.process_label(rec.processes.index(1)) == "p1 consumer-0"


def test_realtime_lag_pairs_ok_writes_with_first_non_final_reads():
    h = load_history(history())
    lags = realtime_lags(h, extract_records(h))
    # value 1: committed 1.5, read by p1 at 2.0; value 3: committed 4.0, read by p1 at 4.5;
    # the aborted 2 and the final reader do not count
    assert sorted(lags.lag_ns.tolist()) == [S // 2, S // 2]
    assert lags.commit_ns.tolist() == [int(1.5 * S), 4 * S]


def test_unseen_counts_committed_writes_until_their_first_read():
    u = unseen_over_time(load_history(history()))
    assert (u.total, u.never) == (2, 0)  # 1 and 3; the aborted 2 and the pending 4 never count
    t = np.array([1.0, 1.6, 2.0, 4.2, 4.6]) * S
    assert u.count_at(t.astype(np.int64)).tolist() == [0, 1, 0, 1, 0]


def test_unseen_counts_an_info_write_only_once_read_and_a_never_read_write_at_the_end():
    h = history()[:12] + [
        ev(12, 5.0, 0, "invoke", "txn", [["send", "t0/0", 5]]),
        ev(13, 5.5, 0, "info", "txn", [["send", "t0/0", [4, 5]]]),
        ev(14, 5.6, 0, "invoke", "txn", [["send", "t0/0", 6]]),
        ev(15, 5.8, 0, "ok", "txn", [["send", "t0/0", [5, 6]]]),
        ev(16, 6.0, 2, "invoke", "poll", [["poll"]], meta={"final": True}),
        ev(17, 6.5, 2, "ok", "poll", [["poll", {"t0/0": [[4, 5]]}]], meta={"final": True}),
    ]
    u = unseen_over_time(load_history(h))
    assert (u.total, u.never) == (4, 1)  # 1, 3, the info 5 (read), the ok 6 (never read)
    assert u.count_at(np.array([7 * S])).tolist() == [1]


def test_unseen_plot_counts_what_the_checkers_count_as_committed():
    """An info send whose delivery report gave an offset must have committed (checkers.history.log);
    the plot counted only ok writes and read info writes before it used the checkers' model,
    so its 'never read' disagreed with the verdict's unseen."""
    h = history()[:12] + [
        ev(12, 5.0, 0, "invoke", "send", [["send", "t0/0", 7]]),
        ev(13, 5.5, 0, "info", "send", [["send", "t0/0", [4, 7]]]),
        ev(14, 6.0, 2, "invoke", "poll", [["poll"]], meta={"final": True}),
        ev(15, 6.5, 2, "ok", "poll", [["poll", {"t0/0": [[0, 1], [3, 3]]}]], meta={"final": True}),
    ]
    u = unseen_over_time(load_history(h))
    v = checkers.check(h)
    assert u.never == v.anomaly_counts.get("unseen") == 1
    assert (u.total, u.never) == (3, 1)


def test_latency_is_plotted_per_f():
    series = an.time_series(op_columns(load_history(history())), 7 * S)
    assert set(series.latency) == {"assign", "poll", "txn"}
    assert ("txn", "fail") in series.odd_points  # the aborted txn as its own point
    svg, legend = timeline_svg(series, [], 7 * S)
    assert 'class="lat lat-txn"' in svg and 'class="lat lat-poll"' in svg
    assert {e.label for e in legend} >= {"txn latency p50 / p99", "poll latency p50 / p99"}


def test_marks_come_from_values_offsets_and_nested_records():
    assert [(m.key, m.value, m.offset) for m in marks_of("G1a", G1A, False)] == [("t0/0", 2, 1)]
    lost = {"key": "t0/1", "value": 7, "offset": 4, "pos": 3,
            "max_read": {"pos": 5, "offset": 6, "value": 9, "op": 40, "process": 2}}
    got = [(m.value, m.role) for m in marks_of("lost-write", lost, False)]
    assert got == [(7, ""), (9, "later read")]
    cycle = {"ops": [], "steps": [
        {"from": 1, "to": 2, "kind": "ww", "key": "t1/2", "value": 5, "next_value": 6},
        {"from": 2, "to": 1, "kind": "ww", "key": "t0/3", "value": 8, "next_value": 9}]}
    assert {(m.key, m.value) for m in marks_of("G0", cycle, True)} == {
        ("t1/2", 5), ("t1/2", 6), ("t0/3", 8), ("t0/3", 9)}
    stall = {"key": "t0/0", "process": 1, "stuck_at": {"pos": 0, "offset": 0},
             "next": {"pos": 1, "offset": 3, "value": 3, "available_ns": 4 * S}}
    assert {(m.value, m.offset, m.role) for m in marks_of("stalled-lso", stall, True)} == {
        (None, 0, "stuck at"), (3, 3, "waited for")}
    dup = {"key": "t0/0", "value": 1, "offsets": [0, 7], "observed_by": {"0": [3], "7": [9]}}
    assert [(m.value, m.offset) for m in marks_of("duplicate", dup, False)] == [(1, None)]


def test_key_plot_rings_the_aborted_read_and_marks_the_aborted_write():
    rec = records()
    plots, rest = key_plots(rec, marks_of("G1a", G1A, False), [], 7 * S)
    assert rest == [] and [p.key for p in plots] == ["t0/0"]
    svg = str(plots[0].svgs[0][1])
    # value 2: the aborted send and p1's poll of it are ringed
    assert svg.count('class="mark"') == 2
    assert "G1a: value 2 @ offset 1" in svg
    assert "aborted write by p0: value 2 at offset 1" in svg
    assert 'class="pts s-3"' in svg and 'class="pts s-0"' in svg  # polls and ok sends
    assert [label for label, _ in plots[0].processes] == ["p0", "p1 consumer-0", "p2"]


def test_key_plots_put_failing_anomalies_first_and_cap_their_number():
    rec = records()
    marks = [Mark("G0", f"t9/{i}", i, None, True) for i in range(MAX_KEY_PLOTS + 2)]
    marks.append(Mark("G1a", "t0/0", 2, 1, False))
    plots, rest = key_plots(rec, marks, [], 7 * S)
    assert plots[0].key == "t0/0" and len(plots) == MAX_KEY_PLOTS and len(rest) == 3
    assert plots[1].notes == ["No client op sent to or polled this key."]


def test_big_key_is_thinned_and_zoomed_and_says_so():
    h, i = [], 0
    for n in range(30_000):
        t = n * 0.01
        h.append(ev(i, t, 0, "invoke", "send", [["send", "t0/0", n]]))
        h.append(ev(i + 1, t + 0.001, 0, "ok", "send", [["send", "t0/0", [n, n]]]))
        h.append(ev(i + 2, t + 0.002, 1 + n % 3, "invoke", "poll", [["poll"]]))
        h.append(ev(i + 3, t + 0.004, 1 + n % 3, "ok", "poll",
                    [["poll", {"t0/0": [[n, n]] if n != 20_000 else []}]]))
        i += 4
    rec = rec_of(h)
    mark = marks_of("lost-write", {"key": "t0/0", "value": 20_000, "offset": 20_000}, False)
    plots, _ = key_plots(rec, mark, [], h[-1]["time"])
    captions = [c for c, _ in plots[0].svgs]
    assert captions == ["t0/0: whole run", "t0/0: zoom"]
    full, zoom = (str(s) for _, s in plots[0].svgs)
    # drawn points: one "M" per dot/triangle; far fewer than the 60,000 records
    assert full.count("M") < 2 * MAX_POINTS
    assert "zoom on offsets 19980–20020" in zoom and 'class="mark"' in zoom
    assert any("merged" in n for n in plots[0].notes)


def test_stall_window_ends_at_the_consumers_first_read_of_what_it_waited_for():
    rec = records()
    ex = {"anomaly": "stalled-lso", "key": "t0/0", "process": 1,
          "stuck_at": {"pos": 0, "offset": 0},
          "next": {"pos": 1, "offset": 3, "value": 3, "available_ns": 4 * S},
          "stalled_ms": 500.0, "explanation": "process 1 did not read position 1 ..."}
    (w,) = stall_windows([ex], rec, 7 * S, True)
    assert (w.start_ns, w.end_ns) == (4 * S, int(4.5 * S))
    never = {**ex, "next": {**ex["next"], "value": 99}, "stalled_ms": 1000.0}
    (w2,) = stall_windows([never], rec, 7 * S, True)
    assert (w2.start_ns, w2.end_ns) == (6 * S, 7 * S)  # never read: up to the end of the run


def test_report_has_key_plots_liveness_and_linked_op_references():
    stall = {"anomaly": "stalled-lso", "key": "t0/0", "process": 1,
             "stuck_at": {"pos": 0, "offset": 0},
             "next": {"pos": 1, "offset": 3, "value": 3, "available_ns": 4 * S},
             "stalled_ms": 500.0, "explanation": "process 1 waited"}
    verdict = {**VERDICT, "anomalies": {**VERDICT["anomalies"], "stalled-lso": [stall]},
               "anomaly_counts": {"G1a": 3, "stalled-lso": 1}}
    html = render_report_html(history(), verdict, {"name": "x"}, None)
    assert 'id="keys"' in html and 'class="orders"' in html and 'id="key-t0-0"' in html
    assert html.index('id="anomalies"') < html.index('id="keys"') < html.index('id="timeline"')
    assert 'id="liveness"' in html and 'class="liveness"' in html and 'class="lag-hist"' in html
    assert "stalled-lso p1 t0/0 (0.5 s)" in html
    assert "liveness report: does not fail this run" in html  # stalled-lso is not in failing
    # writer/reader op references link to both events; the explanation's op numbers too
    for i in (6, 7, 10, 11):
        assert f'href="#op-{i}"' in html and f'id="op-{i}"' in html
    assert "txn fail p0" in html
    assert '<a class="key-link" href="#key-t0-0"' in html  # the example's key leads to its plot
    assert "The verdict counts 3 and lists 1 example" in html
    # the lag quantiles of the verdict and of the report side by side
    assert re.search(r"<td>p50</td><td class=\"num\">500 ms</td><td class=\"num\">500 ms</td>",
                     html)
    assert "http://" not in html and "https://" not in html


def test_cycle_steps_and_observed_by_render_as_links():
    verdict = {"valid": False, "failing": ["G0", "inconsistent-offsets"], "anomalies": {
        "G0": [{"ops": [], "steps": [
            {"from": 2, "to": 8, "kind": "ww", "key": "t0/0", "value": 1, "next_value": 3,
             "explanation": "op 2 wrote 1 to t0/0 just before op 8's 3"}],
            "explanation": "G0 cycle"}],
        "inconsistent-offsets": [{"key": "t0/0", "offset": 1, "values": [2, 9],
                                  "observed_by": {"2": [{"op": 10, "source": "poll"}]},
                                  "explanation": "offset 1 holds 2 and 9"}]}}
    html = render_report_html(history(), verdict, {}, None)
    assert '<ol class="steps"><li>op <a class="op-link" href="#op-2">2</a> wrote' in html
    assert '2: <a class="op-link" href="#op-10">#10</a>' in html
    for i in (2, 8, 10):  # referenced rows get the red edge
        assert re.search(rf'id="op-{i}" class="[^"]*\bref\b', html)


def test_real_aborted_read_run_plots_the_aborted_records(tmp_path: Path):
    src = DATA / "real-read-uncommitted-s2"
    for f in ("history.jsonl", "meta.json", "scenario.yaml"):
        shutil.copy(src / f, tmp_path / f)
    meta = json.loads((src / "meta.json").read_text())
    verdict = checkers.check(tmp_path / "history.jsonl", meta=meta,
                             allowed=["G0", "G0-process", "G0-realtime"])
    (tmp_path / "verdict.json").write_text(verdict.to_json())
    html = render_report(tmp_path).read_text()
    assert 'class="banner invalid"' in html and "G1a" in html
    first = verdict.anomalies["G1a"][0]
    key = first["key"]
    plot = html[html.index(f'id="key-{key.replace("/", "-")}"'):]
    plot = plot[:plot.index('class="keyplot"', 10) if 'class="keyplot"' in plot[10:] else None]
    assert f"G1a: value {first['value']} @ offset {first['offset']}" in plot
    assert plot.count('class="mark"') >= 2 and "aborted write by" in plot
    w = first["writer"]
    assert f'href="#op-{w["invoke_index"]}"' in html and f'href="#op-{w["complete_index"]}"' in html
    lag = verdict.stats.get("realtime_lag_ms")
    if lag:  # the verdict's quantiles next to the report's own
        assert an.fmt_duration(lag["p99"] * 1e6) in html
    assert 'class="lag-hist"' in html and "this report's count" in html


@pytest.mark.parametrize("n_events", [0, 1])
def test_degenerate_histories_still_render(n_events):
    h = history()[:n_events]
    html = render_report_html(h, {"valid": "unknown"}, {}, None)
    assert 'class="liveness"' in html and "UNKNOWN" in html


def test_unavailable_windows_are_shaded_in_the_liveness_chart():
    verdict = {"valid": True, "failing": [], "anomalies": {"unavailable": [
        {"anomaly": "unavailable", "f": "txn", "start_ns": 1 * S, "end_ns": 4 * S,
         "seconds": 3.0, "nemesis": [], "explanation": "no txn op completed ok for 3.0 s"}]}}
    html = render_report_html(history(), verdict, {}, None)
    assert 'class="stall unavailable"' in html and "unavailable txn (3.0 s)" in html
    assert "liveness report: does not fail this run" in html
