"""Issue 23: bad input never crashes, hangs or passes silently. One regression test (at least)
per failure the issue lists; the fuzz suite (test_fuzz.py) generalises them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from checkers import load_history
from checkers.verdict import check_run
from harness.report import check_and_render

DATA = Path(__file__).resolve().parents[1] / "data"
SMOKE = DATA / "real-smoke-s1"


def _get(verdict, key, default=None):
    """A verdict field, whether check_run returns a dict or a model."""
    return verdict.get(key, default) if isinstance(verdict, dict) else getattr(verdict, key, default)


def _run_folder(tmp_path: Path, lines: list[str], src: Path = SMOKE) -> Path:
    d = tmp_path / "run"
    d.mkdir(parents=True)
    for name in ("meta.json", "scenario.yaml"):
        if (src / name).is_file():
            shutil.copy(src / name, d / name)
    (d / "history.jsonl").write_text("".join(line + "\n" for line in lines))
    return d


def _smoke_lines() -> list[str]:
    return (SMOKE / "history.jsonl").read_text().splitlines()


def _judged(d: Path):
    """check_run and `eos-chaos report`'s check_and_render on a folder: the same verdict, a
    report written, no finder crashed."""
    v = check_run(d)
    v2, report = check_and_render(d)
    assert json.dumps(v2, sort_keys=True, default=str) == json.dumps(v, sort_keys=True, default=str)
    assert report.is_file() and "<html" in report.read_text()[:500].lower()
    reasons = _get(v, "unknown_reasons") or []
    assert not [r for r in reasons if "crashed" in r], reasons
    return v, reasons


# ---------------------------------------------------------------- 1. killed runs, broken histories

def test_a_prefix_with_writes_and_no_completed_read_is_unknown_and_renders(tmp_path):
    # the first 10 lines of a real run: inits, assigns, one txn in flight; 15: one txn ok
    for n in (10, 15):
        v, reasons = _judged(_run_folder(tmp_path / str(n), _smoke_lines()[:n]))
        assert _get(v, "valid") == "unknown"
        assert any("no completed" in r for r in reasons), reasons


def _mutate(lines: list[str], i: int, fn) -> list[str]:
    e = json.loads(lines[i])
    fn(e)
    return [*lines[:i], json.dumps(e), *lines[i + 1:]]


@pytest.mark.parametrize("how", ["missing", "string", "float", "bool"])
def test_an_op_without_an_integer_time_is_unknown_and_renders(tmp_path, how):
    def edit(e):
        if how == "missing":
            del e["time"]
        else:
            e["time"] = {"string": str(e["time"]), "float": e["time"] + 0.5, "bool": True}[how]
    for i in (99, 100):  # an invoke and a completion
        v, reasons = _judged(_run_folder(tmp_path / f"{how}{i}", _mutate(_smoke_lines(), i, edit)))
        assert _get(v, "valid") == "unknown"
        assert any(f"event {i} has no integer time" in r for r in reasons), reasons


def test_a_nemesis_event_without_time_is_unknown_and_renders(tmp_path):
    lines = _smoke_lines()
    i = next(k for k, line in enumerate(lines) if '"nemesis"' in line)
    v, reasons = _judged(_run_folder(tmp_path, _mutate(lines, i, lambda e: e.pop("time"))))
    assert _get(v, "valid") == "unknown"
    assert any("has no integer time" in r for r in reasons)


def test_two_swapped_lines_are_unknown_and_render(tmp_path):
    lines = _smoke_lines()
    lines[100], lines[101] = lines[101], lines[100]
    v, reasons = _judged(_run_folder(tmp_path, lines))
    assert _get(v, "valid") == "unknown"
    assert any("disorder" in r for r in reasons)


def test_a_key_that_is_not_topic_partition_is_unknown(tmp_path):
    lines = [line.replace('"t0/3"', '"t0x3"') for line in _smoke_lines()]
    v, reasons = _judged(_run_folder(tmp_path, lines))
    assert _get(v, "valid") == "unknown"
    assert any("'t0x3' is not topic/partition" in r for r in reasons), reasons


def test_a_negative_offset_is_unknown(tmp_path):
    lines = _smoke_lines()
    i = next(k for k, line in enumerate(lines) if '"type":"ok","f":"poll"' in line)
    e = json.loads(lines[i])
    k = next(iter(e["value"][0][1]))

    def edit(ev):
        ev["value"][0][1][k][0][0] = -5
    v, reasons = _judged(_run_folder(tmp_path, _mutate(lines, i, edit)))
    assert _get(v, "valid") == "unknown"
    assert any("negative offset -5" in r for r in reasons), reasons


def test_the_loader_reads_the_problems_the_same_from_a_file_and_from_events(tmp_path):
    """The fast (file) and exact (event dicts) paths report a missing time alike."""
    lines = _mutate(_smoke_lines()[:60], 30, lambda e: e.update(time="soon"))
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join(lines) + "\n")
    a, b = load_history(p), load_history([json.loads(x) for x in lines])
    assert [x.split(": ", 1)[1] for x in a.problems] == [x.split(": ", 1)[1] for x in b.problems]
    assert any("no integer time" in x for x in a.problems)


def test_a_meta_json_of_an_older_run_renders(tmp_path):
    """real-f2-leaderless-marker's meta.json: broker_events from before they carried "first"."""
    src = DATA / "real-f2-leaderless-marker"
    d = _run_folder(tmp_path, (src / "history.jsonl").read_text().splitlines(), src)
    _, report = check_and_render(d)
    assert "skipped-txn-markers" in report.read_text()
