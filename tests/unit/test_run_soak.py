"""harness.run.soak: the window loop of a run, on a history written by a HistoryWriter
(no cluster): windows.jsonl rows, the stop on an invalid window (G1a; eos-duplicate, with the
pipeline mapping of the run folder's meta.json), a crashing child."""
from __future__ import annotations

import json
import threading
import time

import pytest

import harness.run.soak as hw
from checkers.synthetic.simulate import PIPELINE_FACTOR, pipeline_meta, simulate
from harness.run.history_writer import HistoryWriter
from harness.run.scenario import Scenario


def _history(tmp_path, g1a_at: float | None = None):
    """A simulated correct history (about 1.5 s of history time) through a HistoryWriter;
    with ``g1a_at`` (s) the first ok poll after it also returns an aborted value."""
    events = simulate(1500, seed=4, n_keys=4, abort_rate=0.3)
    if g1a_at is not None:
        aborted = [m for e in events if e["f"] == "txn" and e["type"] == "fail"
                   and e["time"] < g1a_at * 1e9 for m in e["value"] if m[2][0] is not None][-1]
        poll = next(e for e in events if e["f"] == "poll" and e["type"] == "ok" and e["time"] > g1a_at * 1e9)
        poll["value"][0][1].setdefault(aborted[1], []).append(list(aborted[2]))
    w = HistoryWriter(tmp_path / "history.jsonl")
    for e in events:
        w.append({k: v for k, v in e.items() if k != "index"})
    return w


def _rows(tmp_path):
    f = tmp_path / "windows.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []


def _run(w, tmp_path, stop, until):
    wc = hw.WindowChecks(w, tmp_path, 0.25, stop_on_invalid=True, allowed=[], stop=stop, poll_s=0.05).start()
    t0 = time.monotonic()
    while not until(wc) and time.monotonic() - t0 < 60:
        time.sleep(0.1)
    wc.close()
    return wc


def test_valid_windows_are_written_and_do_not_stop(tmp_path):
    w = _history(tmp_path)
    stop = threading.Event()
    wc = _run(w, tmp_path, stop, lambda wc: wc.checked >= 3)
    rows = _rows(tmp_path)
    assert wc.checked >= 3 and not stop.is_set() and wc.stopped is None
    assert [r["k"] for r in rows] == list(range(len(rows)))
    assert all(r["valid"] is True for r in rows), rows
    assert all(r["ops"] > 0 and r["controller_rss_mib"] > 0 and r["check_s"] >= 0 for r in rows)


def test_an_invalid_window_stops_the_load(tmp_path):
    w = _history(tmp_path, g1a_at=0.6)
    stop = threading.Event()
    wc = _run(w, tmp_path, stop, lambda wc: stop.is_set())
    assert stop.is_set() and wc.stopped["anomalies"] == ["G1a"]
    # the poll at about 0.6 s is in window 2 [0.5, 0.75); window 1 [0.25, 0.5) closes only once
    # its settle time (0.25 s) passed, so its slice reaches to about 0.75 s and may hold it too
    assert wc.stopped["window"] in (1, 2)
    bad = _rows(tmp_path)[-1]
    assert bad["valid"] is False and bad["anomaly_counts"] == {"G1a": 1} and "aborted" in bad["examples"]["G1a"]
    assert hw.stop_line(wc.stopped).startswith(f"stopped at window {wc.stopped['window']} (")


def test_a_duplicated_pipeline_batch_stops_the_load(tmp_path):
    # a simulated eos-pipeline; at about 0.6 s a second processor (a zombie, a new process)
    # commits a batch that an ok txn just committed, with outputs of its own (offsets unknown:
    # no place in the log, so no ww edge): eos-duplicate, which the window child finds with the
    # pipeline mapping of meta.json in the run folder
    events = simulate(1500, seed=4, n_keys=4, abort_rate=0.3, n_processors=3)
    at = next(i for i, e in enumerate(events) if e["f"] == "txn" and e["type"] == "ok"
              and e["value"][0][0] == "poll" and e["time"] > 0.6e9)
    done = events[at]
    sends = [[m[0], m[1], [None, m[2][1] // PIPELINE_FACTOR * PIPELINE_FACTOR + 999_000]]
             for m in done["value"][1:]]
    meta = {"transactional_id": "eosc-proc-zombie", "group_id": "eosc-proc"}
    zombie = [{"time": done["time"] + 1, "process": 10_000, "type": "invoke", "f": "txn", "meta": meta,
               "value": [["poll"]] + [[m[0], m[1], m[2][1]] for m in sends]},
              {"time": done["time"] + 2, "process": 10_000, "type": "ok", "f": "txn", "meta": meta,
               "value": [done["value"][0]] + sends}]
    (tmp_path / "meta.json").write_text(json.dumps(pipeline_meta(4)))
    w = HistoryWriter(tmp_path / "history.jsonl")
    for e in events[:at + 1] + zombie + events[at + 1:]:
        w.append({k: v for k, v in e.items() if k != "index"})
    stop = threading.Event()
    wc = _run(w, tmp_path, stop, lambda wc: stop.is_set())
    assert stop.is_set() and wc.stopped["anomalies"] == ["eos-duplicate"], _rows(tmp_path)
    assert wc.stopped["window"] in (1, 2, 3)
    bad = _rows(tmp_path)[-1]
    assert bad["anomaly_counts"]["eos-duplicate"] == len(sends)
    assert "from 2 ops that completed ok" in bad["examples"]["eos-duplicate"]
    assert all(r["valid"] is True for r in _rows(tmp_path)[:-1])


def test_a_crashing_check_is_written_and_the_loop_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(hw.sys, "executable", "/bin/false")
    w = _history(tmp_path)
    stop = threading.Event()
    wc = _run(w, tmp_path, stop, lambda wc: len(_rows(tmp_path)) >= 2)
    rows = _rows(tmp_path)
    assert len(rows) >= 2 and all("exit 1" in r["error"] for r in rows)
    assert wc.checked == 0 and not stop.is_set()


@pytest.mark.parametrize("every, why", [(2, "larger"), (120, "smaller")])
def test_a_bad_window_length_is_one_line(every, why):
    with pytest.raises(ValueError, match=f"windows.every_s {every} must be 0 .* make it {why}"):
        Scenario.model_validate({"name": "w", "duration": 60, "windows": {"every_s": every}})
    assert Scenario.model_validate({"name": "w", "duration": 60, "windows": {"every_s": 0}}).windows.every_s == 0
