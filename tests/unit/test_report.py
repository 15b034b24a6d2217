"""The HTML report, on tiny handmade histories and verdicts."""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from harness.report import render_report, render_report_html
from checkers.history import load_history
from harness.report.analysis import fault_windows
from harness.report.ops import event_order, op_counts
from harness.report.render import _replay_command

S = 1_000_000_000


def ev(index, time_s, process, type_, f, value=None, **extra):
    e = {"index": index, "time": int(time_s * S), "process": process, "type": type_, "f": f,
         "value": value}
    e.update(extra)
    return e


def small_history():
    return [
        ev(0, 0.1, 0, "invoke", "txn", [["send", "t0/0", 1]]),
        ev(1, 0.2, 0, "ok", "txn", [["send", "t0/0", [0, 1]]]),
        ev(2, 0.3, 1, "invoke", "poll", [["poll"]]),
        ev(3, 0.4, 1, "ok", "poll", [["poll", {"t0/0": [[0, 1]]}]]),
        ev(4, 1.0, "nemesis", "info", "kill", {"node": 2}),
        ev(5, 1.1, "nemesis", "info", "kill", {"node": 2, "result": "killed pid 123"}),
        ev(6, 1.5, 0, "invoke", "txn", [["send", "t0/0", 2]]),
        ev(7, 2.5, 0, "fail", "txn", [["send", "t0/0", 2]], error=["_TIMED_OUT", "timed out"]),
        ev(8, 3.0, "nemesis", "info", "pause", {"node": 1}),
        ev(9, 3.0, "nemesis", "info", "pause", {"node": 1, "result": "SIGSTOP"}),
        ev(10, 4.0, "nemesis", "info", "start", {"node": 2}),
        ev(11, 4.2, "nemesis", "info", "start", {"node": 2, "result": "started"}),
        ev(12, 4.5, 1, "invoke", "poll", [["poll"]]),
        ev(13, 5.0, 1, "ok", "poll", [["poll", {"t0/0": [[0, 1], [0, 2]]}]]),
        ev(14, 5.5, 0, "invoke", "txn", [["send", "t0/0", 3]]),
    ]


INVALID = {
    "valid": False,
    "anomalies": {
        "G1a": [{"key": "t0/0", "value": 2, "ops": [7, 13], "process": 1,
                 "explanation": "Process 1 polled value 2 of t0/0, written by op 7 which aborted."}],
        "inconsistent-offsets": [{"key": "t0/0", "offset": 0, "values": [1, 2], "ops": [1, 13],
                                  "explanation": "Offset 0 of t0/0 holds 1 and 2 <b>bold</b>."}],
    },
    "anomaly_counts": {"G1a": 1, "inconsistent-offsets": 1},
    "allowed": [],
    "unknown_reasons": [],
    "stats": {"ops": {"ok": 3, "fail": 1, "info": 1}},
}

SCENARIO = {"name": "txn-kill", "source": "scenarios/txn-kill.yaml", "seed": 42, "duration": 60,
            "kafka_version": "4.3.1", "versions": {"confluent-kafka": "2.16.1"}}


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def external_refs(html: str) -> list[str]:
    return re.findall(r"""(?:src|href|xlink:href|action)\s*=\s*["']?\s*(?:https?:)?//""", html,
                      flags=re.I) + re.findall(r"url\(\s*['\"]?(?:https?:)?//", html, flags=re.I)


def test_invalid_report_shows_anomalies_first_with_links_and_faults():
    html = render_report_html(small_history(), INVALID, SCENARIO, {"run_id": "r1"})
    assert "INVALID" in html and 'class="banner invalid"' in html
    for name in ("G1a", "inconsistent-offsets"):
        assert f'id="anomaly-{name}"' in html
    assert "Process 1 polled value 2 of t0/0, written by op 7 which aborted." in text_of(html)
    assert 'op <a class="op-link" href="#op-7">7</a> which aborted' in html  # linked in the text
    assert "Aborted read" in html  # the definition
    # autoescape: data from the verdict never becomes markup
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    # anomalies come before the timeline, op links resolve to table rows
    assert html.index('id="anomalies"') < html.index('id="timeline"')
    for i in (7, 13, 1):
        assert f'href="#op-{i}"' in html and f'id="op-{i}"' in html
    assert "kill n2" in html and "pause n1" in html
    assert "<svg" in html
    assert "eos-chaos run scenarios/txn-kill.yaml --seed 42 --duration 60 --kafka-version 4.3.1" \
        in html
    assert 'id="filter"' in html
    assert not external_refs(html)
    assert "http://" not in html and "https://" not in html


def test_valid_and_unknown_banners():
    valid = render_report_html(small_history(), {"valid": True, "anomalies": {}}, SCENARIO, None)
    assert "VALID" in valid and 'class="banner valid"' in valid
    assert 'id="anomalies"' not in valid
    unknown = render_report_html(small_history(), {
        "valid": "unknown", "unknown_reasons": ["checker lost-write crashed: KeyError 't9/9'"]},
        SCENARIO, None)
    assert "UNKNOWN" in unknown and 'class="banner unknown"' in unknown
    assert "checker lost-write crashed: KeyError &#39;t9/9&#39;" in unknown


def test_allowed_anomaly_is_marked_and_run_stays_valid():
    verdict = {"valid": True, "anomalies": {"unseen": [
        {"key": "t0/0", "value": 3, "ops": [14], "explanation": "Value 3 was never read."}]},
        "anomaly_counts": {"unseen": 1}, "allowed": ["unseen"]}
    html = render_report_html(small_history(), verdict, SCENARIO, None)
    assert 'class="banner valid"' in html
    assert "allowed by the scenario" in html and "Value 3 was never read." in html


def test_fault_windows_pair_and_unclosed_extend_to_end():
    windows = fault_windows(small_history())
    by_label = {w.label: w for w in windows}
    kill = by_label["kill n2"]
    assert kill.start_ns == int(1.1 * S) and kill.end_ns == int(4.2 * S)
    assert kill.closed_by == "start"
    pause = by_label["pause n1"]
    assert pause.end_ns is None  # never resumed
    html = render_report_html(small_history(), {"valid": True}, SCENARIO, None)
    assert "pause n1 (never healed)" in html and "end of run" in html


def test_fault_windows_match_targets_and_tolerate_odd_events():
    hist = [
        ev(0, 1, "nemesis", "info", "kill", {"node": 1}),
        ev(1, 1, "nemesis", "info", "kill", {"node": 1}),
        ev(2, 2, "nemesis", "info", "kill", {"node": 3}),
        ev(3, 2, "nemesis", "info", "kill", {"node": 3}),
        ev(4, 3, "nemesis", "info", "start", {"node": 3}),
        ev(5, 3, "nemesis", "info", "start", {"node": 3}),
        ev(6, 4, "nemesis", "info", "partition", {"grudge": {"3": [1, 2], "1": [3], "2": [3]}}),
        ev(7, 4, "nemesis", "info", "partition", {"result": "ok"}),
        ev(8, 5, "nemesis", "info", "heal", None),
        ev(9, 5, "nemesis", "info", "heal", {"result": "healed"}),
        ev(10, 6, "nemesis", "info", "bump-clock", {"node": 2, "delta_ms": 500}),
        ev(11, 7, "nemesis", "info", "pause", {"node": 2}),  # its end never came
    ]
    ws = {w.label: w for w in fault_windows(hist)}
    assert ws["kill n1"].end_ns == 5 * S and ws["kill n1"].closed_by == "heal"  # heals all
    assert ws["kill n3"].end_ns == 3 * S
    assert ws["partition n3 | n1,n2"].end_ns == 5 * S
    assert ws["bump-clock n2"].instant
    assert ws["pause n2"].start_ns == 7 * S and ws["pause n2"].end_ns is None


def test_counts_from_the_checkers_history_read_open_invokes_as_info():
    h = load_history(small_history())
    rows = {r["f"]: r for r in op_counts(h)}
    assert rows["txn"] == {"f": "txn", "ok": 1, "fail": 1, "info": 1, "pending": 1, "total": 3}
    assert rows["poll"]["ok"] == 2
    assert rows["all"]["total"] == 5
    index, op, what = event_order(h)
    assert index.tolist() == list(range(15))  # every event once, in index order
    assert what.tolist().count(2) == 6  # the nemesis events


def test_render_report_tolerates_truncated_last_line(tmp_path: Path):
    lines = [json.dumps(e) for e in small_history()]
    (tmp_path / "history.jsonl").write_text("\n".join(lines) + '\n{"index": 15, "time": 60')
    (tmp_path / "verdict.json").write_text(json.dumps(INVALID))
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO))
    out = render_report(tmp_path)
    assert out == tmp_path / "report.html"
    html = out.read_text()
    assert "INVALID" in html and "truncated" in html
    assert 'id="op-14"' in html and 'id="op-15"' not in html
    assert not external_refs(html)


def test_render_report_without_verdict_or_meta(tmp_path: Path):
    (tmp_path / "history.jsonl").write_text("")
    out = render_report(tmp_path)
    html = out.read_text()
    assert "UNKNOWN" in html and "verdict.json is missing" in html
    assert "<svg" in html


def test_huge_history_shows_an_excerpt_with_referenced_ops():
    hist = []
    for i in range(0, 8000, 2):
        p = i % 7
        hist.append(ev(i, i / 1000, p, "invoke", "send", [["send", "t0/0", i]]))
        hist.append(ev(i + 1, i / 1000 + 0.0005, p, "ok", "send", [["send", "t0/0", [i, i]]]))
    verdict = {"valid": False, "anomalies": {"duplicate": [
        {"key": "t0/0", "value": 4001, "ops": [4001], "explanation": "Value 4001 twice."}]}}
    html = render_report_html(hist, verdict, SCENARIO, None)
    assert 'id="op-4001"' in html and 'id="op-4000"' in html  # the op and its invoke
    assert 'id="op-2000"' not in html
    assert "too many for one page" in html and "not shown" in html
    assert 'id="op-0"' in html and 'id="op-7999"' in html


def test_replay_command_uses_scenario_fields():
    assert _replay_command(SCENARIO) == (
        "eos-chaos run scenarios/txn-kill.yaml --seed 42 --duration 60 --kafka-version 4.3.1")
    assert _replay_command({"name": "x y", "seed": 1}) == "eos-chaos run 'x y' --seed 1"


def test_op_fields_given_as_op_dicts_become_links():
    verdict = {"valid": False, "anomalies": {"zombie-write": [
        {"ops": [{"index": 7, "type": "fail"}, {"index": 13}], "op": 1,
         "explanation": "An old instance's value became visible."}]}}
    html = render_report_html(small_history(), verdict, SCENARIO, None)
    for i in (7, 13, 1):
        assert f'href="#op-{i}"' in html
    assert 'id="anomaly-zombie-write"' in html and "transactional.id" in html


def test_nested_scenario_sections_and_stat_units():
    scenario = {**SCENARIO, "workload": {"name": "txn-queue", "producers": 4, "producer": {}},
                "nemesis": {"faults": ["kill", "pause"], "interval_s": [10.0, 15.0]}}
    verdict = {"valid": True, "stats": {"realtime_lag_ms": {"p99": 947.7, "n": 836}, "ops": 276}}
    html = render_report_html(small_history(), verdict, scenario, {"timings": {"load_s": 30.01}})
    assert "txn-queue (producers=4)" in html and "kill, pause" in html
    assert "948 ms" in html and "30.01 s" in html and "836 ms" not in html


def test_fault_windows_of_the_harness_fault_kinds():
    """The start/end fs of nemesis/registry.py, and the final heal closing what is left open."""
    grudge = {"n1": ["n3"], "n3": ["n1"]}
    hist = [
        ev(0, 1, "nemesis", "info", "partition", {"kind": "bridge", "grudge": grudge}),
        ev(1, 1.1, "nemesis", "info", "partition", {"kind": "bridge", "grudge": grudge,
                                                    "result": "n1 drops n3; n3 drops n1"}),
        ev(2, 5, "nemesis", "info", "heal-partition", {"kind": "bridge", "grudge": grudge}),
        ev(3, 5.1, "nemesis", "info", "heal-partition", {"kind": "bridge", "result": "removed"}),
        ev(4, 6, "nemesis", "info", "kill-client", {"client": "producer-1"}),
        ev(5, 6.1, "nemesis", "info", "kill-client", {"client": "producer-1", "result": "killed"}),
        ev(6, 7, "nemesis", "info", "toxic", {"node": 3, "params": {"type": "slicer"}}),
        ev(7, 7.1, "nemesis", "info", "toxic", {"node": 3, "params": {"type": "slicer"}}),
        ev(8, 8, "nemesis", "info", "restart-client", {"client": "producer-1"}),
        ev(9, 8.1, "nemesis", "info", "restart-client", {"client": "producer-1"}),
        ev(10, 9, "nemesis", "info", "pause-client", {"client": "consumer-0"}),
        ev(11, 9.1, "nemesis", "info", "pause-client", {"client": "consumer-0"}),
        ev(12, 10, "nemesis", "info", "heal", None),
        ev(13, 10.5, "nemesis", "info", "heal", {"result": [], "problems": []}),
    ]
    ws = {w.label: w for w in fault_windows(hist)}
    assert ws["partition bridge: n1 | n3"].end_ns == int(5.1 * S)
    assert ws["partition bridge: n1 | n3"].closed_by == "heal-partition"
    assert ws["kill-client producer-1"].end_ns == int(8.1 * S)
    assert ws["toxic slicer n3"].closed_by == "heal"
    assert ws["pause-client consumer-0"].end_ns == int(10.5 * S)
    assert not any(w.instant for w in ws.values()) and len(ws) == 4
