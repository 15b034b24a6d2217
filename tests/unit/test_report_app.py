"""The report's Application section (harness/report/app_view.py, issue 22): instance lanes,
per-partition counts, catch-up and lag, on tiny hand-built app histories, a non-app run
(no section) and a recorded run.

tests/data/real-app-streams-s1: `eos-chaos run scenarios/app-streams.yaml --seed 1` on Kafka
4.3.1 (the Kafka Streams example, exactly_once_v2): 3 instances killed, stopped, restarted and
one made a zombie; valid (history.jsonl, meta.json, scenario.yaml, verdict.json of the run).
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from checkers.finders.app_end_to_end import app_stats
from checkers.history import load_history
from harness.report import render_report, render_report_html
from harness.report.analysis import fault_windows
from harness.report.app_view import (app_section, catch_up_summary, instance_lanes, lag_rows,
                                     lanes_svg, partition_rows)

S = 1_000_000_000
DATA = Path(__file__).resolve().parents[1] / "data"


class Events:
    """A history being written: ``add`` numbers the events in order."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def add(self, t_s: float, process, type_: str, f: str, value=None, **extra) -> int:
        e = {"index": len(self.events), "time": int(t_s * S), "process": process, "type": type_,
             "f": f, "value": value, **extra}
        self.events.append(e)
        return e["index"]

    def start(self, t_s: float, process: int, worker: str, pid: int, n: int = 1) -> int:
        i = _instance(worker)
        first = self.add(t_s - 0.01, process, "invoke", "app-start", {"instance": i}, meta={"worker": worker})
        self.add(t_s, process, "ok", "app-start", {"instance": i, "pid": pid, "start": n},
                 meta={"worker": worker})
        return first

    def exit(self, t_s: float, process: int, worker: str, pid: int, code: int, by: str) -> None:
        i = _instance(worker)
        self.add(t_s - 0.01, process, "invoke", "app-exit", {"instance": i}, meta={"worker": worker})
        self.add(t_s, process, "ok", "app-exit", {"instance": i, "pid": pid, "code": code, "by": by},
                 meta={"worker": worker})

    def nemesis(self, t0_s: float, t1_s: float, f: str, client: str, **done) -> None:
        self.add(t0_s, "nemesis", "info", f, {"client": client})
        self.add(t1_s, "nemesis", "info", f, {"client": client, **done})


def _instance(worker: str) -> int:
    return int(re.match(r"app-(\d+)", worker).group(1))


def _lanes(ev: Events):
    h = load_history(ev.events)
    return {ln.name: ln for ln in instance_lanes(h, max(e["time"] for e in ev.events))}


def test_a_killed_instance_ends_at_the_kill_and_its_restart_is_a_new_run():
    ev = Events()
    ev.start(1.0, 1, "app-0", 100)
    ev.nemesis(5.0, 5.1, "kill-client", "app-0", result="killed pid 99")
    ev.nemesis(7.0, 7.1, "restart-client", "app-0", result="restarted as pid 120")
    second = ev.start(7.5, 2, "app-0", 121)  # a restarted worker is a new history process
    ev.exit(20.0, 2, "app-0", 121, 0, "stop")
    lanes = _lanes(ev)
    assert list(lanes) == ["app-0"]
    ln = lanes["app-0"]
    got = [(s.start_ns / S, s.end_ns / S, s.end, s.process, s.outcome) for s in ln.segments]
    assert got == [(1.0, 5.1, "killed", 1, "killed"), (7.5, 20.0, "exit", 2, "stopped")]
    assert ln.segments[1].start_index == second and ln.segments[1].code == 0
    assert [(m.kind, m.t_ns / S) for m in ln.marks] == [("kill", 5.1), ("restart", 7.0)]
    assert "killed pid 99" in ln.marks[0].label
    assert ln.restarts == 1 and ln.pauses == []


def test_a_zombie_is_a_pause_on_its_lane_and_its_replacement_a_lane_of_its_own():
    ev = Events()
    ev.start(1.0, 1, "app-0", 100)
    ev.start(1.2, 2, "app-1", 101)
    ev.nemesis(5.0, 5.2, "zombie", "app-0", paused="app-0", replacement="app-0.z1", fresh_id=False)
    ev.start(5.5, 3, "app-0.z1", 130)
    ev.nemesis(8.0, 8.1, "resume-zombie", "app-0", resumed="app-0", result="resumed pid 99")
    ev.exit(9.0, 1, "app-0", 100, 3, "self")  # the resumed zombie is fenced and exits
    ev.start(10.0, 1, "app-0", 140, n=2)  # restart: on-failure, the same worker and process
    for t, p, w, pid in ((20.0, 1, "app-0", 140), (20.1, 3, "app-0.z1", 130), (20.2, 2, "app-1", 101)):
        ev.exit(t, p, w, pid, 0, "stop")
    lanes = _lanes(ev)
    assert list(lanes) == ["app-0", "app-0.z1", "app-1"]
    z = lanes["app-0"]
    assert [(p.start_ns / S, p.end_ns / S, p.f) for p in z.pauses] == [(5.2, 8.1, "zombie")]
    assert "replacement app-0.z1" in z.pauses[0].label
    assert [m.kind for m in z.marks] == ["zombie", "resume-zombie"]
    assert [(s.code, s.by, s.outcome) for s in z.segments] == [(3, "self", "failed"), (0, "stop", "stopped")]
    assert [(s.start_ns / S, s.end_ns / S) for s in lanes["app-0.z1"].segments] == [(5.5, 20.1)]
    assert lanes["app-0.z1"].marks == [] and lanes["app-1"].restarts == 0


def test_a_kill_that_hit_a_zombies_replacement_is_drawn_on_the_replacements_lane():
    ev = Events()
    ev.start(1.0, 1, "app-0", 100)
    ev.nemesis(5.0, 5.2, "zombie", "app-0", paused="app-0", replacement="app-0.z1", fresh_id=False)
    ev.start(5.5, 3, "app-0.z1", 130)
    ev.nemesis(6.0, 6.1, "kill-client", "app-0", worker="app-0.z1", result="killed pid 131")
    ev.nemesis(8.0, 8.1, "restart-client", "app-0", worker="app-0.z1", result="restarted as pid 140")
    ev.start(8.5, 4, "app-0.z1", 141)
    lanes = _lanes(ev)
    assert [m.kind for m in lanes["app-0"].marks] == ["zombie"]
    z1 = lanes["app-0.z1"]
    assert [m.kind for m in z1.marks] == ["kill", "restart"]
    assert [(s.start_ns / S, s.end) for s in z1.segments][0] == (5.5, "killed")


def test_an_exit_code_3_is_drawn_red_with_its_code_and_a_run_left_open_reaches_the_end():
    ev = Events()
    ev.start(1.0, 1, "app-0", 100)
    ev.exit(4.0, 1, "app-0", 100, 3, "self")
    ev.start(5.0, 1, "app-0", 101, n=2)
    ev.nemesis(6.0, 6.1, "pause-client", "app-0", result="paused")
    ev.nemesis(9.0, 9.1, "resume-client", "app-0", result="resumed")
    ev.add(12.0, "nemesis", "info", "heal", None)
    ev.add(12.1, "nemesis", "info", "heal", {"result": []})
    h = load_history(ev.events)
    run_end = int(12.1 * S)
    (ln,) = instance_lanes(h, run_end)
    assert [(s.end, s.code, s.end_ns) for s in ln.segments] == [("exit", 3, 4 * S), ("running", None, None)]
    assert [(p.f, p.start_ns / S, p.end_ns / S) for p in ln.pauses] == [("pause-client", 6.1, 9.1)]
    svg = str(lanes_svg([ln], fault_windows(h.nemesis), run_end, int(12.1 * S)))
    assert "exit 3" in svg and "#c62828" in svg  # the code beside a red exit tick
    assert "exited with code 3 (self)" in svg and "still running when the history ends" in svg
    assert 'href="#op-0"' in svg  # a run links to its app-start's history row
    assert "load ends" in svg


def _pipeline_history() -> tuple[Events, dict]:
    """Input in/0 (values 1, 2, 3 committed, 4 aborted) and in/1 (5 committed); the app's
    output: 2 twice (a duplicate), 3 never (a loss), 4 (an aborted read) and 5."""
    ev = Events()
    ev.add(0.5, 10, "invoke", "txn", [["send", "in/0", 1], ["send", "in/0", 2], ["send", "in/0", 3]])
    ev.add(0.6, 10, "ok", "txn", [["send", "in/0", [0, 1]], ["send", "in/0", [1, 2]], ["send", "in/0", [2, 3]]])
    ev.add(0.7, 10, "invoke", "txn", [["send", "in/0", 4]])
    ev.add(0.8, 10, "fail", "txn", [["send", "in/0", [3, 4]]], error=["_ABORTED", "chosen"])
    ev.add(0.9, 10, "invoke", "txn", [["send", "in/1", 5]])
    ev.add(1.0, 10, "ok", "txn", [["send", "in/1", [0, 5]]])
    ev.start(0.2, 1, "app-0", 100)
    ev.add(2.0, 20, "invoke", "app-poll", [["poll"]], meta={"worker": "consumer-0"})
    ev.add(2.5, 20, "ok", "app-poll", [["poll", {"out/0": [[0, 1], [1, 2], [2, 2]], "out/1": [[0, 5], [1, 4]]}]],
           meta={"worker": "consumer-0"})
    ev.exit(3.0, 1, "app-0", 100, 0, "stop")
    app = {"input_keys": ["in/0", "in/1"], "output_keys": ["out/0", "out/1"], "semantics": "exactly-once",
           "order": "none", "lag_bound_s": 60.0, "drain_complete": True, "caught_up": True,
           "catch_up": {"caught_up": True, "inputs": 4, "covered": 3, "waited_s": 1.5, "ended": "quiet"}}
    return ev, app


def test_the_partition_table_counts_a_loss_a_duplicate_and_an_aborted_read():
    ev, app = _pipeline_history()
    h = load_history(ev.events)
    stats = app_stats(h, app)
    assert stats["inputs"] == {"in/0": 3, "in/1": 1} and stats["outputs"] == {"out/0": 3, "out/1": 2}
    rows = partition_rows(h, stats, app)
    assert rows["inputs"] == [
        {"key": "in/0", "committed": 3, "aborted": 1, "lost": 1, "duplicated": 1, "missing": 0, "stalled": 0},
        {"key": "in/1", "committed": 1, "aborted": 0, "lost": 0, "duplicated": 0, "missing": 0, "stalled": 0},
        {"key": "all", "committed": 4, "aborted": 1, "lost": 1, "duplicated": 1, "missing": 0, "stalled": 0}]
    assert rows["outputs"] == [
        {"key": "out/0", "records": 3, "aborted_reads": 0, "phantoms": 0},
        {"key": "out/1", "records": 2, "aborted_reads": 1, "phantoms": 0},
        {"key": "all", "records": 5, "aborted_reads": 1, "phantoms": 0}]


def test_an_input_missing_when_the_app_never_caught_up_is_missing_not_lost():
    ev, app = _pipeline_history()
    app = {**app, "caught_up": False}
    h = load_history(ev.events)
    rows = partition_rows(h, app_stats(h, app), app)
    assert rows["inputs"][0] == {"key": "in/0", "committed": 3, "aborted": 1, "lost": 0, "duplicated": 1,
                                 "missing": 1, "stalled": 0}


def test_an_input_first_seen_after_the_lag_bound_is_stalled():
    ev, app = _pipeline_history()
    app = {**app, "lag_bound_s": 1.0}  # 2 and 5 were committed at 0.6 s and 1.0 s, seen at 2.5 s
    h = load_history(ev.events)
    rows = partition_rows(h, app_stats(h, app), app)
    assert [(r["key"], r["stalled"], r["lost"]) for r in rows["inputs"]] == [
        ("in/0", 2, 1), ("in/1", 1, 0), ("all", 3, 1)]


def test_catch_up_and_lag_rows():
    _ev, app = _pipeline_history()
    cu = catch_up_summary(app)
    assert cu["ended"] == "quiet" and cu["waited"] == "1.5 s"
    assert "3 of 4 committed inputs" in cu["text"] and "no new output for quiet_s" in cu["text"]
    assert catch_up_summary({}) is None
    rows = dict(lag_rows({"lag_ms": {"p50": 1366.3, "p99": 13413.6, "max": 15927.4, "n": 333}}, app))
    assert rows == {"p50": "1.37 s", "p99": "13.41 s", "max": "15.93 s", "n": "333",
                    "bound (lag_bound_s)": "60 s"}
    assert dict(lag_rows({}, {}))["p50"] == "–"


def test_the_report_of_an_app_run_has_the_application_section():
    ev, app = _pipeline_history()
    h = load_history(ev.events)
    verdict = {"valid": False, "anomalies": {}, "anomaly_counts": {}, "stats": {"app": app_stats(h, app)}}
    html = render_report_html(ev.events, verdict, {"name": "app-x"}, {"app": app})
    sec = html[html.index('<section id="application">'):html.index('<section id="run">')]
    assert 'href="#application"' in html
    assert '<svg class="app-lanes"' in sec and "app-0" in sec
    assert re.search(r'<td class="mono">in/0</td><td class="num">3</td><td class="num">1</td>'
                     r'<td class="num">1</td><td class="num">1</td>', sec)
    assert "3 of 4 committed inputs" in sec


def test_a_report_without_the_app_workload_has_no_application_section():
    ev = Events()
    ev.add(0.1, 0, "invoke", "txn", [["send", "t0/0", 1]])
    ev.add(0.2, 0, "ok", "txn", [["send", "t0/0", [0, 1]]])
    ev.add(1.0, "nemesis", "info", "kill-client", {"client": "producer-0"})
    ev.add(1.1, "nemesis", "info", "kill-client", {"client": "producer-0", "result": "killed"})
    h = load_history(ev.events)
    assert app_section(h, None, None, fault_windows(h.nemesis), int(1.1 * S)) is None
    html = render_report_html(ev.events, {"valid": True, "stats": {}}, {"name": "txn"}, {"app": None})
    assert 'id="application"' not in html and 'href="#application"' not in html
    assert "app-lanes" not in html


def test_a_recorded_streams_run_renders_its_instances_and_partitions(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "real-app-streams-s1", run)
    html = render_report(run).read_text()
    sec = html[html.index('<section id="application">'):html.index('<section id="run">')]
    names = re.findall(r'<tr><td class="mono">(app-[0-9.z]+)</td>', sec)
    assert names == ["app-0", "app-0.z1", "app-1", "app-2"]
    h = load_history(run / "history.jsonl")
    meta = json.loads((run / "meta.json").read_text())
    verdict = json.loads((run / "verdict.json").read_text())
    lanes = {ln.name: ln for ln in instance_lanes(h, max(h.ops["complete_time"].max(), 1))}
    # 3 kill-client, 2 stop-client, 1 zombie in the history; Streams exits 143 on SIGTERM
    assert sum(m.kind == "kill" for ln in lanes.values() for m in ln.marks) == 3
    assert sum(s.end == "killed" for ln in lanes.values() for s in ln.segments) == 3
    assert [m.kind for m in lanes["app-0"].marks if "zombie" in m.kind] == ["zombie", "resume-zombie"]
    assert {(s.code, s.by) for ln in lanes.values() for s in ln.segments if s.end == "exit"} == {(143, "stop")}
    part = app_section(h, verdict["stats"]["app"], meta["app"], fault_windows(h.nemesis), 79 * S)
    assert part["inputs"][-1] == {"key": "all", "committed": 360, "aborted": 40, "lost": 0,
                                  "duplicated": 0, "missing": 0, "stalled": 0}
    assert part["outputs"][-1]["records"] == 360
    assert "360 of 360 committed inputs" in part["catch_up"]["text"]


def test_a_pause_never_resumed_ends_at_the_final_heal():
    ev = Events()
    ev.start(1.0, 1, "app-0", 100)
    ev.nemesis(3.0, 3.1, "pause-client", "app-0", result="paused")
    ev.add(10.0, "nemesis", "info", "heal", None)
    ev.add(10.2, "nemesis", "info", "heal", {"result": [], "problems": []})
    ev.exit(12.0, 1, "app-0", 100, 0, "stop")
    (p,) = _lanes(ev)["app-0"].pauses
    assert (p.start_ns / S, p.end_ns / S) == (3.1, 10.2) and "final heal" in p.label


def test_a_failed_start_is_a_mark_and_malformed_values_do_not_break_the_lanes():
    ev = Events()
    ev.add(0.9, 1, "invoke", "app-start", {"instance": 0}, meta={"worker": "app-0"})
    ev.add(1.0, 1, "fail", "app-start", {"instance": 0}, error=["ChildError", "no such file"],
           meta={"worker": "app-0"})
    ev.add(2.0, 2, "invoke", "app-start", "garbage", meta={"worker": "app-1"})
    ev.add(2.1, 2, "ok", "app-start", ["not", "a", "dict"], meta={"worker": "app-1"})
    ev.exit(3.0, 3, "app-2", 7, -9, "self")  # an exit with no start seen
    ev.add(4.0, "nemesis", "info", "kill-client", None)  # no client: not an instance's fault
    lanes = _lanes(ev)
    assert list(lanes) == ["app-0", "app-1", "app-2"]
    assert [(m.kind, m.t_ns / S) for m in lanes["app-0"].marks] == [("start-failed", 1.0)]
    assert "could not be started" in lanes["app-0"].marks[0].label
    assert "ChildError" in lanes["app-0"].marks[0].label  # the error's name
    assert lanes["app-0"].segments == []
    assert [(s.pid, s.end) for s in lanes["app-1"].segments] == [(None, "running")]
    (s,) = lanes["app-2"].segments
    assert (s.start_ns, s.end_ns, s.code, s.outcome) == (3 * S, 3 * S, -9, "failed")


def test_input_side_cycles_have_their_own_section(tmp_path):
    """Issue 36: the recorded Streams run re-checked without its expected line is valid, and
    the report lists its G0 cases under the input side, not as allowed by the scenario."""
    import yaml

    from harness.report.render import check_and_render

    run = tmp_path / "run"
    shutil.copytree(DATA / "real-app-streams-s1", run)
    sc = yaml.safe_load((run / "scenario.yaml").read_text())
    sc.pop("expected", None)
    (run / "scenario.yaml").write_text(yaml.safe_dump(sc))
    v, report = check_and_render(run)
    assert v.valid is True and v.input_side == ["G0"] and v.allowed == []
    html = report.read_text()
    assert 'id="input-side"' in html and "input side (the harness&#39;s input producers)" in html
    side = html[html.index('id="input-side"'):]
    assert 'id="g0"' in side.lower() or "G0" in side


def test_batch_rows_say_how_the_preload_the_batch_and_the_verifier_went():
    from harness.report.app_view import batch_rows

    rows = dict(batch_rows({"preload": {"records": 15000, "producers": 1, "s": 9.8, "complete": True},
                            "batch": {"done": False, "waited_s": 120.0, "not_done": ["app-1"]},
                            "verify": {"command": ["python", "v.py"], "count": 2, "seconds": 0.4, "inputs": 10,
                                       "outputs": 12, "error": None}}))
    assert rows["preload"].startswith("15,000 records by 1 producer(s)")
    assert rows["done: exit"] == "not done after 120.0 s: app-1"
    assert rows["output.verify"].startswith("python v.py: 2 finding(s)")
    exits = dict(batch_rows({"batch": {"done": False, "waited_s": 30.0, "not_done": ["app-0", "app-1", "app-2"],
                                       "last_exit": {"app-0": {"code": 3, "by": "self", "running": True, "worker": "app-0"},
                                                     "app-1": {"code": None, "running": True, "worker": "app-1.z1"},
                                                     "app-2": {"code": -9, "by": "stop", "running": False}}}}))
    assert exits["done: exit"] == ("not done after 30.0 s: app-0 (last exit code 3, running again), "
                                   "app-1 (as app-1.z1, running, no exit), app-2 (last exit code -9)")
    bad = dict(batch_rows({"verify": {"command": ["v"], "error": "output.verify exited with code 1"}}))
    assert bad["output.verify"] == "v: could not judge: output.verify exited with code 1"
    assert batch_rows({}) == []
