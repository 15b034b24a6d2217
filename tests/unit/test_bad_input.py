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
    assert v2.to_json() == v.to_json()
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
    for f in (root / "checkers").rglob("*.py"):  # the finders are in checkers/finders/
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


# ---------------------------------------------------------------- 3. bounded, checked scenario values

ROOT = Path(__file__).resolve().parents[2]


def _scenario_file(tmp_path: Path, edit, base: str = "smoke.yaml") -> Path:
    import yaml

    data = yaml.safe_load((ROOT / "scenarios" / base).read_text())
    edit(data)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def _refused(tmp_path: Path, edit, match: str, base: str = "smoke.yaml") -> str:
    from harness.run.scenario import ScenarioError, load_scenario

    p = _scenario_file(tmp_path, edit, base)
    with pytest.raises(ScenarioError, match=match) as exc:
        _within(10, lambda: load_scenario(p))
    return str(exc.value)


INF, NAN = float("inf"), float("nan")


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(d):
        for k in path[:-1]:
            d = d.setdefault(k, {})
        d[path[-1]] = value
    return edit


@pytest.mark.parametrize("value, match", [(INF, "finite"), (1e308, "less than or equal"), (1e9, "less than"),
                                          (-5, "greater than 0"), (NAN, "finite")])
def test_duration_is_bounded_and_finite(tmp_path, value, match):
    _refused(tmp_path, _set("duration", value), rf"duration: .*{match}")


@pytest.mark.parametrize("edit, match", [
    (_set("nemesis", "interval_s", [1, INF]), r"interval_s.1: .*finite"),
    (_set("nemesis", "fault_duration_s", [NAN, 3]), r"fault_duration_s.0: .*finite"),
    (_set("nemesis", "faults", [{"fault": "kill", "weight": INF}]), r"weight: .*finite"),
    (_set("nemesis", "faults", [{"fault": "kill", "weight": 1e300}]), r"weight: .*less than"),
    (_set("nemesis", "faults", [{"fault": "kill", "duration_s": [1, INF]}]), r"duration_s.1: .*finite"),
    (_set("nemesis", "first_fault_s", INF), "first_fault_s"),
    (_set("nemesis", "quiet_s", -1), "quiet_s"),
    (_set("seed", -5), "seed: .*greater than or equal to 0"),
    (_set("seed", 2**70), "seed: .*less than"),
    (_set("workload", "max_sends_per_txn", 10**12), "max_sends_per_txn"),
    (_set("workload", "producer", {"linger.ms": 10**30}), r"linger.ms: .*64 bits"),
    (_set("workload", "producer", {"linger.ms": 1.5}), r"linger.ms: a client setting is text"),
    (_set("cluster", "heap_mb", 10**12), "heap_mb"),
    (_set("liveness", {"stalled_lso_bound_s": INF}), "stalled_lso_bound_s: .*finite"),
    (_set("nemesis", "faults", [{"fault": "toxic", "type": "latency", "latency_ms": 10**40}]), "64 bits"),
    (_set("nemesis", "faults", [{"fault": "toxic", "type": "latency", "latency_ms": 100, "jitter_ms": INF}]),
     "jitter_ms: inf is not a finite number"),
    (_set("nemesis", "faults", [{"fault": "toxic", "type": []}]), r"toxic type must be one of .* got \[\]"),
    (_set("nemesis", "faults", [{"fault": "partition", "grudge": {"a": 1}}]), "unknown grudge"),
])
def test_every_numeric_field_is_bounded_and_finite(tmp_path, edit, match):
    _refused(tmp_path, edit, match)


def test_a_fault_schedule_without_gaps_is_refused_at_load_not_looped(tmp_path):
    def edit(d):
        d["nemesis"].update(interval_s=[0, 0], fault_duration_s=[0, 0])
    _refused(tmp_path, edit, "back to back")
    _refused(tmp_path, lambda d: d.update(duration=600000) or d["nemesis"].update(
        interval_s=[0.001, 0.002], fault_duration_s=[0.001, 0.001]), "more than 100,000")
    from nemesis.schedule import fault_schedule
    with pytest.raises(ValueError, match="more than"):
        _within(30, lambda: fault_schedule(1, [{"fault": "kill"}], [1, 2, 3], [], 600000.0, (0.0, 0.0),
                                           (0.0, 0.0)))


def test_every_numeric_scenario_and_suite_field_has_both_bounds():
    """Walks the models: an int or float field without a lower and an upper bound is how
    `duration: .inf` got in (client settings are checked by harness.workloads.base.Setting)."""
    import types
    import typing

    import annotated_types as at
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

    from harness.detect.suite import Suite
    from harness.run.scenario import Scenario

    missing = []

    def walk(model, path, seen):
        if model in seen:
            return
        seen.add(model)
        for name, f in model.model_fields.items():
            check(f.annotation, list(f.metadata), f"{path}.{name}", seen)

    def check(ann, meta, path, seen):
        origin, args = typing.get_origin(ann), typing.get_args(ann)
        if origin is typing.Annotated:  # Field(...) inside Annotated holds its bounds in .metadata
            extra = [x for a in args[1:] for x in (a.metadata if isinstance(a, FieldInfo) else [a])]
            return check(args[0], meta + extra, path, seen)
        if origin in (typing.Union, types.UnionType):
            return [check(a, meta, path, seen) for a in args]
        if origin is typing.Literal:
            return
        if origin is dict and path.endswith(("producer", "consumer")):
            return  # Setting
        if origin is not None:
            return [check(a, [], path + "[]", seen) for a in args if a is not Ellipsis]
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            return walk(ann, path, seen)
        if ann in (int, float):
            lo = any(isinstance(m, (at.Gt, at.Ge)) for m in meta)
            hi = any(isinstance(m, (at.Lt, at.Le)) for m in meta)
            if not (lo and hi) and not path.endswith(("suite.seeds", "suite.scenarios[].seeds")):
                missing.append(path)

    walk(Scenario, "scenario", set())
    walk(Suite, "suite", set())
    assert not missing, missing


@pytest.mark.parametrize("value", ["../../../etc/passwd", "4.3.1/../x", "", "latest", "4"])
def test_kafka_version_is_a_version(tmp_path, value):
    _refused(tmp_path, _set("cluster", "kafka_version", value), "is not a version like 4.3.1")


def test_fault_targets_and_globs_are_checked_against_the_scenario(tmp_path):
    _refused(tmp_path, _set("nemesis", "schedule", [{"at": 1, "duration": 2, "fault": "kill", "value": {"node": 9}}]),
             "names node 9, but the cluster's nodes are 1, 2, 3")
    _refused(tmp_path, _set("nemesis", "schedule", [{"at": 1, "duration": 2, "fault": "partition",
                                                     "value": {"kind": "isolate-one", "grudge": {"n4": ["n1"]}}}]),
             "names node 4")
    _refused(tmp_path, _set("nemesis", "faults", [{"fault": "kill-client", "clients": ["nobody-*"]}]),
             r"'nobody-\*' matches no client of this workload \(clients: consumer-0")
    _refused(tmp_path, _set("nemesis", "start_after_ok", ["sparky"]), "start_after_ok: 'sparky' matches no client")
    _refused(tmp_path, _set("nemesis", "schedule", [{"at": 1, "duration": 2, "fault": "kill-client",
                                                     "value": {"client": "producer-9"}}]),
             "no client is named 'producer-9'")


def test_faults_as_a_string_is_one_clear_error(tmp_path):
    msg = _refused(tmp_path, _set("nemesis", "faults", "kill"), r"write faults: \[kill\], not faults: kill")
    assert "'k'" not in msg


def test_anomaly_names_are_checked_against_the_catalogue(tmp_path):
    _refused(tmp_path, _set("expected", ["not-an-anomaly"]), "expected: unknown anomaly 'not-an-anomaly'")
    _refused(tmp_path, _set("expected", ["G0", "lost-writes"]), r"'lost-writes' \(did you mean 'lost-write'\?\)")
    from harness.detect.zoo import ZooError, load_entry

    p = tmp_path / "mutant.yaml"
    p.write_text(f"base: {ROOT / 'scenarios' / 'smoke.yaml'}\nname: m\nmust_find: [NOT-AN-ANOMALY, g1a]\n")
    with pytest.raises(ZooError, match=r"must_find: unknown anomaly 'NOT-AN-ANOMALY', 'g1a' \(did you mean 'G1a'\?\)"):
        load_entry(p)


def test_command_line_values_are_checked_like_the_file(tmp_path):
    from typer.testing import CliRunner

    from harness.cli.main import app
    from harness.detect import suite as st

    runner = CliRunner()
    smoke = str(ROOT / "scenarios" / "smoke.yaml")
    for args, match in [(["--duration", "-5"], "--duration: Input should be greater than 0"),
                        (["--duration", "nan"], "--duration: Input should be a finite number"),
                        (["--seed", "-1"], "--seed: Input should be greater than or equal to 0"),
                        (["--kafka-version", "../../x"], "--kafka-version: Kafka version '../../x' is not")]:
        res = runner.invoke(app, ["run", smoke, "--dry-run", *args])
        assert res.exit_code == 2 and match in res.output, (args, res.output)
    res = runner.invoke(app, ["suite", str(ROOT / "scenarios" / "ci.yaml"), "--dry-run", "--duration", "inf"])
    assert res.exit_code == 2 and "--duration: Input should be a finite number" in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    with pytest.raises(st.SuiteError, match="is not a version"):
        st.expand(st.load_suite(ROOT / "scenarios" / "ci.yaml"), ROOT / "scenarios", kafka_versions=["x/../y"])


# ---------------------------------------------------------------- run --dry-run

def _dry(args, monkeypatch=None):
    from typer.testing import CliRunner

    from harness.cli.main import app

    res = CliRunner().invoke(app, ["run", *args, "--dry-run"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def test_dry_run_prints_the_schedule_of_the_seed_without_root_or_lock(monkeypatch):
    import harness.cluster.lock as lock

    monkeypatch.setattr("os.geteuid", lambda: 1000)  # not root: a run would stop here

    def no_lock(*a, **k):
        raise AssertionError("the dry run took the cluster lock")
    monkeypatch.setattr(lock, "cluster_lock", no_lock)
    res = _dry([str(ROOT / "scenarios" / "partition.yaml"), "--seed", "3"])
    assert res.exit_code == 0, res.output
    assert "fault schedule of partition, seed 3" in res.output and "begins (s)" in res.output
    assert "ok  kafka 4.3.1" in res.output and "would start (nothing was started)" in res.output
    again = _dry([str(ROOT / "scenarios" / "partition.yaml"), "--seed", "3"])
    assert again.output == res.output  # the seed's schedule, as the run draws it
    from harness.run.preflight import preflight
    from harness.run.scenario import load_scenario, with_overrides
    scn = with_overrides(load_scenario(ROOT / "scenarios" / "partition.yaml"), seed=3)
    assert preflight(scn).steps == scn.nemesis.steps(3, scn.duration, [1, 2, 3], [])


def test_dry_run_without_a_seed_says_which_it_drew():
    res = _dry([str(ROOT / "scenarios" / "smoke.yaml")])
    assert res.exit_code == 0 and "a run draws one. This schedule is seed" in res.output, res.output


def test_dry_run_exits_2_with_one_error(monkeypatch, tmp_path):
    from harness.cluster.artifacts import ArtifactError

    def unknown(group, artifact, version):
        raise ArtifactError(f"Kafka {version} is not on Maven Central (no {group}:{artifact}:{version})")
    monkeypatch.setattr("harness.run.preflight.maven_knows", unknown)
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path / "empty-cache"))
    smoke = str(ROOT / "scenarios" / "smoke.yaml")
    for args, match in [([smoke, "--kafka-version", "9.9.9"], "Kafka 9.9.9 is not on Maven Central"),
                        ([smoke, "--duration", "inf"], "--duration: Input should be a finite number"),
                        ([str(tmp_path)], "is a directory")]:
        res = _dry(args)
        assert res.exit_code == 2 and match in res.output, (args, res.output)
        assert len(res.output.strip().splitlines()) <= 3, res.output
    monkeypatch.setattr("shutil.which", lambda tool: None if tool == "iptables" else "/bin/" + tool)
    res = _dry([str(ROOT / "scenarios" / "partition.yaml"), "--kafka-version", "4.3.1"])
    assert res.exit_code == 2 and "`iptables` is not on PATH" in res.output, res.output


def test_dry_run_refuses_what_the_run_would_only_meet_with_the_cluster_up(tmp_path):
    p = _scenario_file(tmp_path, _set("nemesis", "faults", [{"fault": "kill-client", "clients": ["procesor-*"]}]),
                       "eos-pipeline.yaml")
    res = _dry([str(p)])
    assert res.exit_code == 2 and "'procesor-*' matches no client" in res.output, res.output


# ---------------------------------------------------------------- 5. messages that said the wrong thing

def _cli(args):
    from typer.testing import CliRunner

    from harness.cli.main import app

    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def test_check_says_what_a_path_is(tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    run = _run_folder(tmp_path, _smoke_lines()[:40])
    for path, says in [(tmp_path, "is a directory, not a history file"), (fifo, "is a FIFO (named pipe)"),
                       (Path("/dev/null"), "is a character device"),
                       (tmp_path / "nope.jsonl", "does not exist")]:
        res = _within(20, lambda path=path: _cli(["check", str(path)]))
        assert res.exit_code == 2 and says in res.output, (path, res.output)
        assert "does not exist" not in res.output or path.name == "nope.jsonl"
    # a run folder is checked: its history.jsonl, with its meta.json
    res = _within(60, lambda: _cli(["check", str(run), "--json"]))
    assert res.exit_code in (0, 1, 2) and '"valid"' in res.output, res.output


def test_report_where_its_outputs_are_directories_is_one_line(tmp_path):
    for name in ("report.html", "verdict.json"):
        d = _run_folder(tmp_path / name, _smoke_lines())
        (d / name).mkdir()
        res = _cli(["report", str(d)])
        assert res.exit_code == 2, res.output
        assert f"{d / name} is a directory: `report` writes that file" in res.output
        assert len(res.output.strip().splitlines()) == 1, res.output


def test_negative_counts_are_refused_with_exit_2(tmp_path):
    d = _run_folder(tmp_path, _smoke_lines())
    for args in (["check", "--max-examples", "-1", str(d / "history.jsonl")],
                 ["report", "--max-examples", "-1", str(d)], ["bench", "checker", "--ops", "-1"],
                 ["bench", "checker", "--ops", "0"]):
        res = _cli(args)
        assert res.exit_code == 2, (args, res.output)
        assert "greater than or equal" in res.output, res.output
    assert not (d / "verdict.json").exists()


# ---------------------------------------------------------------- a killed run keeps its run contract

def test_meta_json_is_written_when_the_load_starts_and_completed_at_the_end(tmp_path, monkeypatch):
    """_execute with a fake cluster: meta.json is on disk (keys, liveness bounds, versions,
    finished false) before the load's first step; the end completes it (finished true)."""
    import threading

    import harness.run.runner as runner
    from harness.run.scenario import load_scenario, with_overrides

    class Service:
        bootstrap, client_config, client_host = "127.0.0.1:9", {}, None
        backend = type("Backend", (), {"name": "netns"})()  # the session takes the (private) lock

        def __init__(self, *a, **k): ...
        def clean_leftovers(self): return []
        def start(self, timeout): ...
        def meta(self): return {"nodes": {"1": "n1"}}
        def create_topics(self, *a, **k): ...
        def wait_ready(self, *a, **k): ...
        def warm_coordinators(self, broker): return []
        def nemesis_context(self, pool): return None
        def teardown(self): return []

    class Pool:
        def __init__(self, *a, **k): ...
        def spawn(self, spec):
            return type("W", (), {"name": spec.name, "control": [{"drained": True, "complete": True}],
                                  "wait": lambda self, timeout: True, "kill": lambda self: None})()
        def stop(self, names, timeout): return []
        def shutdown(self): return []

    seen = {}

    def load(scn, run_dir, ctx, history, progress, stop, service):
        seen["meta"] = json.loads((run_dir / "meta.json").read_text())
        return 0.0

    monkeypatch.setattr(runner, "ClusterService", Service)
    monkeypatch.setattr(runner, "make_backend", lambda *a, **k: None)
    monkeypatch.setattr(runner, "Pool", Pool)
    monkeypatch.setattr(runner, "_load", load)
    monkeypatch.setenv("EOS_CHAOS_LOCK", str(tmp_path / "lock"))  # never queue behind a real run
    scn = with_overrides(load_scenario(ROOT / "scenarios" / "smoke.yaml"), seed=5)
    run_dir = tmp_path / "run"
    (run_dir / "logs").mkdir(parents=True)
    runner._execute(scn, run_dir, runner.Progress(), threading.Event())
    start = seen["meta"]
    assert start["finished"] is False and start["keys"][:2] == ["t0/0", "t0/1"]
    assert start["liveness"]["stalled_lso_bound_s"] == 30.0 and start["versions"]["kafka"] == "4.3.1"
    assert start["seed"] == 5 and start["workload"] == "txn-queue"
    end = json.loads((run_dir / "meta.json").read_text())
    assert end["finished"] is True and "timings" in end
    assert not (run_dir / "meta.json.tmp").exists()


def test_a_killed_runs_folder_is_unknown_with_the_reason_and_renders(tmp_path):
    """What `report` meets in a folder whose controller was SIGKILLed during the load: a
    history prefix and the meta.json written when the load started."""
    from checkers.run import RunDir, RunMeta

    lines = _smoke_lines()
    for cut in (60, 300, len(lines) // 2):
        d = _run_folder(tmp_path / str(cut), lines[:cut] + [lines[cut][:25]])
        meta = json.loads((SMOKE / "meta.json").read_text())
        for k in ("drain", "final_reads_complete", "timings"):
            meta.pop(k)
        RunDir(d).write_meta(RunMeta.coerce({**meta, "finished": False})[0])
        v, reasons = _judged(d)
        assert _get(v, "valid") == "unknown"
        assert any("never finished (its controller was killed" in r for r in reasons), reasons
        res = _cli(["report", str(d)])
        assert res.exit_code == 2 and "never finished" in res.output and (d / "report.html").is_file()
    # a meta.json written before the field existed is a finished run's
    assert RunMeta.model_validate(json.loads((SMOKE / "meta.json").read_text())).finished is True
