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


# ---------------------------------------------------------------- 2. hostile YAML and JSON

def _within(seconds: float, fn):
    """``fn()``, failing the test when it is still running after ``seconds`` (a hang)."""
    import threading

    box: dict = {}

    def go():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["result"]


BOMB = "".join([
    'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n',
    *(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")),
])


def test_yaml_limits_refuse_bombs_deep_nesting_recursion_and_size():
    import yaml

    from checkers.safe_load import MAX_YAML_BYTES, YAMLLimitError, load_yaml

    for doc, why in [(BOMB, "alias"), ("a: &a [*a]\n", "recursive"), ("[" * 5000 + "]" * 5000, "deeper"),
                     ("".join("  " * i + "- x:\n" for i in range(200)), "deeper"),
                     ("description: " + "[" * 5000, "deeper"), ("x: " + "y" * MAX_YAML_BYTES, "bytes")]:
        with pytest.raises(YAMLLimitError, match=why):
            _within(10, lambda doc=doc: load_yaml(doc))
        assert issubclass(YAMLLimitError, yaml.YAMLError) and issubclass(YAMLLimitError, ValueError)
    # what the shipped files use still loads: anchors, merge keys, a few aliases
    assert load_yaml("x: &x {a: 1}\ny: *x\nz: {<<: *x, b: 2}\n") == {
        "x": {"a": 1}, "y": {"a": 1}, "z": {"a": 1, "b": 2}}
    for f in Path(__file__).resolve().parents[2].glob("scenarios/**/*.yaml"):
        load_yaml(f.read_text())


def test_json_depth_limit():
    from checkers.safe_load import JSONLimitError, json_depth, load_json

    with pytest.raises(JSONLimitError, match="nested 3000 levels"):
        load_json("[" * 3000 + "]" * 3000)
    assert json_depth(b'{"a": "[[[[", "b": [[1]]}') == 3
    assert load_json('{"a": [1, {"b": "]]}"}]}') == {"a": [1, {"b": "]]}"}]}


def test_a_billion_laughs_scenario_yaml_beside_a_history_is_said_not_hung(tmp_path):
    d = _run_folder(tmp_path, _smoke_lines())
    (d / "scenario.yaml").write_text(BOMB + "expected: [G0, G0-process, G0-realtime]\n")
    v = _within(60, lambda: check_run(d))
    assert any("scenario.yaml is unreadable" in r and "alias" in r for r in _get(v, "unknown_reasons")), \
        _get(v, "unknown_reasons")
    _, report = _within(60, lambda: check_and_render(d))
    assert "scenario.yaml could not be read" in report.read_text()


def test_a_meta_json_nested_3000_deep_is_said_not_raised(tmp_path):
    d = _run_folder(tmp_path, _smoke_lines())
    (d / "meta.json").write_text('{"drain": ' + "[" * 3000 + "]" * 3000 + "}")
    v, reasons = _judged(d)
    assert _get(v, "valid") == "unknown"
    assert any("meta.json is unreadable" in r and "3000" in r for r in reasons), reasons


def test_a_garbled_scenario_yaml_beside_a_history_is_said(tmp_path):
    """It used to be ignored: the expected anomalies were dropped and VALID became INVALID
    with nothing said."""
    d = _run_folder(tmp_path, _smoke_lines())
    (d / "scenario.yaml").write_text("name: smoke\nexpected: [G0, {{\n")
    v, reasons = _judged(d)
    assert any("scenario.yaml is unreadable" in r and "no anomaly is taken as expected" in r
               for r in reasons), reasons
    (d / "scenario.yaml").write_bytes(b"name: smoke\nexpected: [G0]\n\xff\n")
    assert any("UnicodeDecodeError" in r for r in _get(check_run(d), "unknown_reasons"))
    (d / "scenario.yaml").write_text("name: smoke\nexpected: [G0, G0-proces]\n")
    reasons = _get(check_run(d), "unknown_reasons")
    assert any("'G0-proces' (did you mean 'G0-process'?)" in r for r in reasons), reasons


def test_a_scenario_nested_5000_deep_or_with_an_alias_bomb_is_one_error(tmp_path):
    from harness.run.scenario import ScenarioError, load_scenario

    deep = tmp_path / "deep.yaml"
    deep.write_text("name: deep\ndescription: " + "[" * 5000 + "]" * 5000 + "\n")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB.replace("\n", "\n", 1) + "name: bomb\nnemesis:\n  faults:\n"
                    "  - {fault: toxic, toxic: latency, latency: *i}\n")
    for p, why in [(deep, "deeper than"), (bomb, "alias")]:
        with pytest.raises(ScenarioError, match=why) as exc:
            _within(30, lambda p=p: load_scenario(p))
        assert len(str(exc.value).splitlines()) <= 2


def test_non_utf8_files_through_suite_and_zoo_dry_run_are_one_line(tmp_path):
    from typer.testing import CliRunner

    from harness.cli.main import app

    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "a.yaml").write_bytes(b"name: z\nmust_find: [G1a]\n\xff\n")
    (tmp_path / "bad.yaml").write_bytes(b"name: s\nduration: 5\n\xff\n")
    (tmp_path / "suite.yaml").write_text('suite: s\nscenarios: ["*.yaml"]\n')
    runner = CliRunner()
    for args in (["zoo", "--dry-run", "--zoo", str(tmp_path / "zoo")],
                 ["suite", str(tmp_path / "suite.yaml"), "--dry-run"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, res.output
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert "is not UTF-8 text (byte 0xff on line 3)" in res.output


def test_the_catalogue_holds_every_name_the_checkers_emit_and_docs_list():
    import re

    import checkers
    from checkers.catalogue import check_names, suggest

    root = Path(__file__).resolve().parents[2]
    emitted = set()
    for f in (root / "checkers").glob("*.py"):
        emitted |= set(re.findall(r'"anomaly": *"([^"]+)"', f.read_text()))
    assert emitted and emitted <= checkers.ANOMALIES, emitted - checkers.ANOMALIES
    table = (root / "docs" / "checkers.md").read_text().split("| anomaly | finder (module)")[1]
    documented = {n.strip() for row in re.findall(r"^\| ([^|`]+) \| `", table, re.M)
                  for n in re.split(r"[,/]| with ", row) if n.strip()}
    # the app workload's names are in docs/your-pipeline.md's table
    app = (root / "docs" / "your-pipeline.md").read_text().split("| anomaly | meaning |")[1].split("\n\n")[0]
    documented |= set(re.findall(r"^\| `([^`]+)`", app, re.M))
    assert documented == set(checkers.ANOMALIES), documented ^ set(checkers.ANOMALIES)
    assert suggest("g1a") == "G1a" and suggest("lost-writes") == "lost-write"
    with pytest.raises(ValueError, match=r"'not-an-anomaly'.*docs/checkers.md"):
        check_names(["G0", "not-an-anomaly"], "expected")
