"""The report from the checkers' History: one reader of history.jsonl, the per-process timeline,
cycle graphs, the run folder's files, and `eos-chaos report RUN_DIR`."""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from checkers.history import load_history
import harness.cli.main as cli
from harness.report import ops, render_report
from harness.report.analysis import fault_windows
from harness.report.cycle_graph import cycle_svg
from harness.report.lanes import lanes_svg
from harness.report.render import run_files
from tests.unit.test_report import INVALID, SCENARIO, small_history

CYCLE = {"anomaly": "G1c", "ops": [
    {"op": 0, "invoke_index": 0, "complete_index": 1, "process": 0, "f": "txn", "type": "ok"},
    {"op": 1, "invoke_index": 2, "complete_index": 3, "process": 1, "f": "poll", "type": "ok"},
    {"op": 3, "invoke_index": 12, "complete_index": 13, "process": 1, "f": "poll", "type": "ok"}],
    "steps": [{"from": 0, "to": 2, "kind": "wr", "key": "t0/0", "value": 1, "explanation": "op 2 polled 1"},
              {"from": 2, "to": 12, "kind": "process", "explanation": "process 1 ran op 12 after op 2"},
              {"from": 12, "to": 0, "kind": "ww", "explanation": "op 12 wrote before op 0 <x>"}],
    "explanation": "G1c cycle of 3 ops"}


def run_folder(tmp_path: Path, truncated: bool = False) -> Path:
    lines = [json.dumps(e) for e in small_history()]
    text = "\n".join(lines) + ("\n{\"index\": 15, \"time\": 6" if truncated else "\n")
    (tmp_path / "history.jsonl").write_text(text)
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump({**SCENARIO, "expected": ["G0"]}))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "n1.log").write_text("[2026-11-23] started\n")
    (tmp_path / "nodes" / "n1").mkdir(parents=True)
    (tmp_path / "nodes" / "n1" / "server.properties").write_text("node.id=1\n")
    return tmp_path


def test_the_report_reads_the_history_once_through_the_checkers(tmp_path, monkeypatch):
    run = run_folder(tmp_path)
    (run / "verdict.json").write_text(json.dumps(INVALID))
    calls = []
    real = ops.load_history
    monkeypatch.setattr(ops, "load_history", lambda src: calls.append(src) or real(src))
    html = render_report(run).read_text()
    assert calls == [run / "history.jsonl"]
    assert 'id="op-14"' in html and "INVALID" in html


def test_history_rows_are_rebuilt_from_the_frames():
    h = load_history(small_history())
    assert ops.op_value(h, 0, completion=False) == [["send", "t0/0", 1]]
    assert ops.op_value(h, 0, completion=True) == [["send", "t0/0", [0, 1]]]
    assert ops.op_value(h, 3, completion=True) == [["poll", {"t0/0": [[0, 1], [0, 2]]}]]
    assert ops.op_value(h, 2, completion=True) == [["send", "t0/0", 2]]  # failed: no offset
    assert ops.run_end(h) == int(5.5e9)


def test_lanes_draw_every_op_linked_with_fault_windows():
    h = load_history(small_history())
    windows = fault_windows(h.nemesis)
    lanes = lanes_svg(h, windows, ops.run_end(h), {1: "consumer-0"}, linked={0, 2, 6, 12, 14})
    svg = str(lanes.svg)
    assert (lanes.lanes, lanes.ops, lanes.bars) == (2, 5, 5)
    for i in (0, 2, 6, 12, 14):
        assert f'href="#op-{i}"' in svg
    assert svg.count('class="fault"') == 2 and "kill n2" in svg and "pause n1" in svg
    assert "#c62828" in svg  # the failed txn
    assert 'fill-opacity="0.45"' in svg and "pending (never completed)" in svg  # op 14
    assert "p1 consumer-0" in svg
    # an op the table does not show is not linked
    assert 'href="#op-12"' not in str(lanes_svg(h, windows, ops.run_end(h), {}, linked={0}).svg)


def test_lanes_merge_ops_narrower_than_a_few_pixels():
    events, i = [], 0
    for n in range(20_000):  # 20,000 back-to-back 1 ms sends on one process
        events += [{"index": i, "time": n * 1_000_000, "process": 0, "type": "invoke", "f": "send",
                    "value": [["send", "t0/0", n]]},
                   {"index": i + 1, "time": n * 1_000_000 + 900_000, "process": 0, "type": "ok", "f": "send",
                    "value": [["send", "t0/0", [n, n]]]}]
        i += 2
    h = load_history(events)
    lanes = lanes_svg(h, [], ops.run_end(h), {})
    assert lanes.ops == 20_000 and lanes.bars < 600  # about WIDTH / MIN_BAR, not 20,000
    assert "ops 0.." in str(lanes.svg)


def test_cycle_graph_nodes_edges_and_labels():
    svg = str(cycle_svg(CYCLE, "u1", known={0, 2, 12}))
    assert svg.count('class="node"') == 3 and svg.count('class="edge') == 3
    for kind in ("wr", "process", "ww"):
        assert f'class="edge edge-{kind}"' in svg and f'url(#u1-{kind})' in svg
    assert 'href="#op-12"' in svg and "&lt;x&gt;" in svg and "<x>" not in svg
    assert 'href="#op-0"' not in str(cycle_svg(CYCLE, "u2", known={2, 12}))
    assert cycle_svg({"anomaly": "G0", "ops": []}, "u3") is None


def test_report_draws_cycle_examples_and_links_run_files(tmp_path):
    run = run_folder(tmp_path)
    verdict = {"valid": False, "anomalies": {"G1c": [CYCLE]}, "anomaly_counts": {"G1c": 1}, "failing": ["G1c"]}
    (run / "verdict.json").write_text(json.dumps(verdict))
    html = render_report(run).read_text()
    assert html.count('class="cycle-graph"') == 1 and 'id="lanes"' in html
    assert [f["path"] for f in run_files(run)] == ["logs/n1.log", "nodes/n1/server.properties"]
    assert 'href="logs/n1.log"' in html and 'href="nodes/n1/server.properties"' in html
    assert not re.findall(r'(?:src|href)="(?:https?:)?//', html)


def test_eos_chaos_report_rechecks_a_killed_run(tmp_path):
    run = run_folder(tmp_path, truncated=True)  # the controller died: no verdict.json, no meta
    res = CliRunner().invoke(cli.app, ["report", str(run)])
    assert res.exit_code in (0, 1, 2) and "report:" in res.output
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["valid"] in (True, False, "unknown") and verdict["allowed"] == ["G0"]
    assert res.exit_code == cli.EXIT.get(verdict["valid"], 2)
    html = (run / "report.html").read_text()
    assert "truncated" in html and 'id="op-14"' in html


def test_eos_chaos_report_needs_a_run_folder(tmp_path):
    res = CliRunner().invoke(cli.app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "has no history.jsonl" in res.output


def test_report_shows_the_liveness_bounds_and_fail_on(tmp_path):
    run = run_folder(tmp_path)
    (run / "meta.json").write_text(json.dumps(
        {"fail_on": ["realtime-lag"], "liveness": {"realtime_lag_bound_s": 2.5}}))
    res = CliRunner().invoke(cli.app, ["report", str(run)])
    assert "report:" in res.output
    html = (run / "report.html").read_text()
    assert "realtime lag 2.5 s" in html and "stalled LSO 30.0 s" in html
    assert "Fail the run: realtime-lag" in html
