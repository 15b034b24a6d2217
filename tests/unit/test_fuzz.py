"""Fuzz suite (issue 23): bad input never crashes, hangs or passes silently.

Histories: well-formed programs (``checkers.synthetic.simulate`` plus a fault's nemesis events) with
exactly one corruption each, and raw byte mutations of the real histories in tests/data, go
through ``checkers.verdict.check_run`` and the report (``harness.report.check_and_render``).
Scenarios: valid ones with exactly one bad field go through the loader and ``eos-chaos run
--dry-run``. Properties: no exception escapes; no finder "crashed"; the verdict is unknown
with a reason whenever the history is not well-formed; the same input gives the same result.

The default budget is a few hundred examples in about a minute; ``--hypothesis-profile
nightly`` (tests/unit/conftest.py) multiplies every test's examples (``make fuzz-nightly``).
"""
from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from checkers.synthetic.simulate import simulate
from checkers.verdict import check_run
from harness.report import check_and_render

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = sorted(p for p in DATA.iterdir() if (p / "history.jsonl").is_file())
#: the loaded profile's examples against Hypothesis' default (100): 1 by default, more nightly
SCALE = max(1, settings.default.max_examples // 100)


def fuzz(n: int) -> settings:
    return settings(max_examples=n * SCALE, deadline=None, derandomize=SCALE == 1,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _get(verdict, key, default=None):
    """A verdict field, whether check_run returns a dict or a model (checkers.verdict)."""
    if isinstance(verdict, dict):
        return verdict.get(key, default)
    return getattr(verdict, key, default)


def _as_json(verdict) -> str:
    data = verdict if isinstance(verdict, dict) else verdict.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, default=str)


# ---------------------------------------------------------------- histories

def program(seed: int, n_ops: int) -> list[dict]:
    """A well-formed history: a simulated correct run with a broker kill and restart among
    its events (the report draws the fault window)."""
    ev = simulate(n_ops, seed=seed, n_keys=3, n_producers=2, n_consumers=2, abort_rate=0.2,
                  crash_rate=0.02)
    at = len(ev) // 3
    t0, t1 = ev[at]["time"], ev[2 * at]["time"]
    ev.insert(2 * at, {"time": t1, "process": "nemesis", "type": "info", "f": "start",
                       "value": {"node": 1}})
    ev.insert(at, {"time": t0, "process": "nemesis", "type": "info", "f": "kill",
                   "value": {"node": 1}})
    for i, e in enumerate(ev):
        e["index"] = i
    return ev


def _lines(ev: list[dict]) -> list[str]:
    return [json.dumps(e) for e in ev]


def _client(ev, rnd, pred=lambda e: True) -> int | None:
    cands = [i for i, e in enumerate(ev) if isinstance(e.get("process"), int) and pred(e)]
    return rnd.choice(cands) if cands else None


def _completion_with_mops(e) -> bool:
    return (e["type"] != "invoke" and e["f"] in ("send", "poll", "txn") and isinstance(e.get("value"), list)
            and any(m[0] == "send" or (m[0] == "poll" and len(m) > 1 and any(m[1].values()))
                    for m in e["value"]))


def _paired_completion(ev):
    """Completions whose process's previous event is their invoke."""
    last: dict = {}
    out = set()
    for i, e in enumerate(ev):
        p = e.get("process")
        if not isinstance(p, int):
            continue
        if e["type"] != "invoke" and last.get(p) is not None and ev[last[p]]["type"] == "invoke":
            out.add(i)
        last[p] = i
    return out


def _a_key(e, rnd):
    """(micro-op, key, record list or None) of a completion: a send, or a poll key with records."""
    mops = [(m, m[1], None) for m in e["value"] if m[0] == "send"]
    mops += [(m, k, recs) for m in e["value"] if m[0] == "poll" and len(m) > 1
             for k, recs in m[1].items() if recs]
    return rnd.choice(mops)


def c_drop_time(ev, rnd):
    i = _client(ev, rnd)
    del ev[i]["time"]
    return _lines(ev)


def c_string_time(ev, rnd):
    i = _client(ev, rnd)
    ev[i]["time"] = str(ev[i]["time"])
    return _lines(ev)


def c_float_time(ev, rnd):
    i = _client(ev, rnd)
    ev[i]["time"] = ev[i]["time"] + 0.5
    return _lines(ev)


def c_nemesis_time(ev, rnd):
    i = rnd.choice([i for i, e in enumerate(ev) if e["process"] == "nemesis"])
    ev[i]["time"] = rnd.choice([None, "later", 1.5])
    return _lines(ev)


def c_swap(ev, rnd):
    lines = _lines(ev)
    i = rnd.randrange(len(lines) - 1)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return lines


def c_drop_line(ev, rnd):
    lines = _lines(ev)
    del lines[rnd.randrange(len(lines) - 1)]  # not the last: a prefix is well-formed
    return lines


def c_duplicate_line(ev, rnd):
    lines = _lines(ev)
    i = rnd.randrange(len(lines))
    lines.insert(i + 1, lines[i])
    return lines


def c_bad_key(ev, rnd):
    e = ev[_client(ev, rnd, _completion_with_mops)]
    m, k, recs = _a_key(e, rnd)
    bad = rnd.choice(["nokey", "t0-1", "t0/", "/1", "t0/x"])
    if recs is None:
        m[1] = bad
    else:
        m[1][bad] = m[1].pop(k)
    return _lines(ev)


def c_negative_offset(ev, rnd):
    def has_offset(e):
        return _completion_with_mops(e) and any(
            (m[0] == "send" and isinstance(m[2], list) and m[2][0] is not None)
            or (m[0] == "poll" and len(m) > 1 and any(m[1].values())) for m in e["value"])
    e = ev[_client(ev, rnd, has_offset)]
    while True:
        m, k, recs = _a_key(e, rnd)
        if recs is not None:
            recs[0][0] = -1 - recs[0][0]
            break
        if isinstance(m[2], list) and m[2][0] is not None:
            m[2][0] = -1 - m[2][0]
            break
    return _lines(ev)


def c_process_string(ev, rnd):
    i = _client(ev, rnd)
    ev[i]["process"] = f"p{ev[i]['process']}"
    return _lines(ev)


def c_unknown_type(ev, rnd):
    i = _client(ev, rnd)
    ev[i]["type"] = rnd.choice(["weird", None, 5])
    return _lines(ev)


def c_index_not_int(ev, rnd):
    i = rnd.randrange(len(ev))
    ev[i]["index"] = rnd.choice([str(ev[i]["index"]), None, 1.5, [1]])
    return _lines(ev)


def c_value_not_list(ev, rnd):
    e = ev[_client(ev, rnd, _completion_with_mops)]
    e["value"] = rnd.choice(["junk", 7, {"poll": 1}])
    return _lines(ev)


def c_bad_micro_op(ev, rnd):
    e = ev[_client(ev, rnd, _completion_with_mops)]
    e["value"][0] = rnd.choice([["send", 7, 1], ["send", "t0/0", [0, "x"]], ["frobnicate"],
                                ["poll", {"t0/0": [[0]]}], ["send", "t0/0", [0, 2 ** 64]]])
    return _lines(ev)


def c_not_object(ev, rnd):
    lines = _lines(ev)
    lines[rnd.randrange(len(lines))] = rnd.choice(["[1, 2, 3]", '"text"', "17", "null"])
    return lines


def c_garbled(ev, rnd):
    lines = _lines(ev)
    i = rnd.randrange(len(lines) - 1)  # not the last: a truncated last line is a prefix
    lines[i] = rnd.choice([lines[i][: len(lines[i]) // 2], "{not json", "\x00\x01\x02", lines[i] + "}"])
    return lines


def c_f_mismatch(ev, rnd):
    i = rnd.choice(sorted(_paired_completion(ev)))
    ev[i]["f"] = {"poll": "txn", "txn": "poll", "send": "poll"}.get(ev[i]["f"], "poll")
    return _lines(ev)


def c_orphan(ev, rnd):
    paired = _paired_completion(ev)
    invokes = [i for i in range(len(ev)) if ev[i]["type"] == "invoke"
               and any(j in paired and ev[j]["process"] == ev[i]["process"] for j in range(i + 1, min(i + 40, len(ev))))]
    ev[rnd.choice(invokes)]["type"] = "ok"  # its completion now has no open invoke
    return _lines(ev)


def c_completion_first(ev, rnd):
    paired = sorted(_paired_completion(ev))
    i = rnd.choice(paired)
    inv = max(j for j in range(i) if ev[j].get("process") == ev[i]["process"])
    ev[i]["time"] = ev[inv]["time"] - 1 - rnd.randrange(10 ** 6)
    return _lines(ev)


CORRUPTIONS = [c_drop_time, c_string_time, c_float_time, c_nemesis_time, c_swap, c_drop_line,
               c_duplicate_line, c_bad_key, c_negative_offset, c_process_string, c_unknown_type,
               c_index_not_int, c_value_not_list, c_bad_micro_op, c_not_object, c_garbled,
               c_f_mismatch, c_orphan, c_completion_first]


def _run_dir(root: Path, lines: list[str] | bytes, meta: dict | None = None) -> Path:
    d = root / "run"
    d.mkdir()
    data = lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode()
    (d / "history.jsonl").write_bytes(data)
    if meta is not None:
        (d / "meta.json").write_text(json.dumps(meta))
    return d


def _judge(d: Path):
    """The verdict (check_run) and the report of a run folder, as `eos-chaos report` makes
    them: no exception, a report written, and no finder crashed on what the loader accepts."""
    v, report = check_and_render(d)
    assert report.is_file() and report.stat().st_size > 0
    crashed = [r for r in _get(v, "unknown_reasons") or [] if "crashed" in r]
    assert not crashed, crashed
    return v


@fuzz(130)
@given(seed=st.integers(0, 10_000), n_ops=st.integers(8, 60), which=st.sampled_from(CORRUPTIONS),
       rnd=st.randoms(use_true_random=False))
def test_one_corruption_is_unknown_with_a_reason(seed, n_ops, which, rnd):
    event(which.__name__)
    lines = which(program(seed, n_ops), rnd)
    with tempfile.TemporaryDirectory() as tmp:
        v = _judge(_run_dir(Path(tmp), lines))
    assert _get(v, "valid") == "unknown", (which.__name__, _get(v, "unknown_reasons"))
    assert _get(v, "unknown_reasons")


@fuzz(25)
@given(seed=st.integers(0, 10_000), n_ops=st.integers(8, 80), which=st.sampled_from(CORRUPTIONS),
       rnd=st.randoms(use_true_random=False))
def test_the_same_history_gets_the_same_verdict(seed, n_ops, which, rnd):
    lines = which(program(seed, n_ops), rnd)
    with tempfile.TemporaryDirectory() as tmp:
        d = _run_dir(Path(tmp), lines)
        first = _as_json(check_run(d))
        assert _as_json(check_run(d)) == first
        assert _as_json(check_and_render(d)[0]) == first


@fuzz(10)
@given(seed=st.integers(0, 10_000), n_ops=st.integers(8, 80))
def test_a_well_formed_program_is_valid(seed, n_ops):
    """The control: the programs the corruptions start from are judged valid as they are."""
    with tempfile.TemporaryDirectory() as tmp:
        v = _judge(_run_dir(Path(tmp), _lines(program(seed, n_ops))))
    assert _get(v, "valid") is True, _get(v, "unknown_reasons")


@fuzz(30)
@given(seed=st.integers(0, 10_000), n_ops=st.integers(8, 80), cut=st.floats(0, 1))
def test_a_prefix_checks_and_renders(seed, n_ops, cut):
    """What a killed run leaves: any prefix of the history, maybe cut mid-line."""
    data = ("\n".join(_lines(program(seed, n_ops))) + "\n").encode()
    with tempfile.TemporaryDirectory() as tmp:
        v = _judge(_run_dir(Path(tmp), data[: int(len(data) * cut)]))
    if _get(v, "valid") == "unknown":
        assert _get(v, "unknown_reasons")


def _real_prefix(i: int, n_lines: int) -> bytes:
    lines = (REAL[i % len(REAL)] / "history.jsonl").read_bytes().splitlines(keepends=True)
    return b"".join(lines[:n_lines])


@fuzz(40)
@given(which=st.integers(0, 3), n_lines=st.integers(10, 200),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 3), st.binary(max_size=8)),
                      min_size=1, max_size=6))
def test_byte_mutations_of_real_histories(which, n_lines, edits):
    """Raw byte flips, insertions and deletions in (a prefix of) a real run's history, judged
    with that run's meta.json and scenario.yaml beside it."""
    data = bytearray(_real_prefix(which, n_lines))
    for at, how, blob in edits:
        i = int(at * len(data))
        if how == 0 and data:  # flip a byte
            data[i] ^= (blob[0] if blob else 0x20) or 1
        elif how == 1:  # insert
            data[i:i] = blob
        elif how == 2:  # delete a run
            del data[i:i + 1 + len(blob)]
        else:  # replace a run with non-UTF-8
            data[i:i + len(blob)] = b"\xff\xfe" + blob
    src = REAL[which % len(REAL)]
    with tempfile.TemporaryDirectory() as tmp:
        d = _run_dir(Path(tmp), bytes(data))
        for name in ("meta.json", "scenario.yaml"):
            if (src / name).is_file():
                shutil.copy(src / name, d / name)
        v = _judge(d)
    if _get(v, "valid") == "unknown":
        assert _get(v, "unknown_reasons")


# ---------------------------------------------------------------- scenarios

ROOT = Path(__file__).resolve().parents[2]


def _shipped() -> list[Path]:
    from harness.detect.suite import is_suite_file

    files = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted((ROOT / "scenarios" / "java").glob("*.yaml"))
    return [f for f in files if not is_suite_file(f)]


SCENARIOS = _shipped()
#: mappings whose keys are the user's (client, broker, Spark settings, env): any key is valid there
FREE_KEYS = ("producer", "consumer", "broker", "conf", "kafka", "env", "client", "java_client", "value",
             "commands", "grudge")


def _paths(data, path=()):
    """(path, value) of every node of a YAML document."""
    yield path, data
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, (*path, i))


def _replace(data, path, value):
    data = copy.deepcopy(data)
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return data


def _numeric(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


#: numbers no scenario field takes (every one is bounded and finite)
EXTREME = [float("inf"), float("-inf"), float("nan"), 1e308, -1e308, 2 ** 70, -(2 ** 70)]
#: values of any type, good or bad, for a field anywhere
ANY = [*EXTREME, -5, -1, 0, 1, 0.5, 10 ** 6, True, None, "", "kill", "../../../etc/passwd", "x" * 300, [],
       {}, [1, [2, [3]]], {"a": {"b": [None]}}, "é\u0000", [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
BOMB = "".join(["lol: &a [x, x, x, x, x, x, x, x, x, x]\n",
                *(f"l{i}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(6))])


@st.composite
def bad_scenarios(draw):
    """(base file, YAML text, why it is bad or None when it may be valid): a shipped scenario
    with exactly one field changed."""
    import yaml

    base = draw(st.sampled_from(SCENARIOS))
    data = yaml.safe_load(base.read_text())
    nodes = [(p, v) for p, v in _paths(data) if p]
    kind = draw(st.sampled_from(["extreme-number", "version", "anomaly", "fault-name", "glob", "faults-string",
                                 "unknown-key", "alias-bomb", "anything"]))
    why = kind
    if kind == "extreme-number" and any(_numeric(v) for _, v in nodes):
        p, _ = draw(st.sampled_from([(p, v) for p, v in nodes if _numeric(v)]))
        data = _replace(data, p, draw(st.sampled_from(EXTREME)))
    elif kind == "version":
        data.setdefault("cluster", {})["kafka_version"] = draw(st.sampled_from(
            ["../../../etc/passwd", "4.3.1/x", "", "latest", "4", "4.3.1; rm -rf /", "4.3.1\n"]))
    elif kind == "anomaly":
        name = draw(st.sampled_from(sorted(__import__("checkers").ANOMALIES)))
        data["expected"] = [*(data.get("expected") or []), draw(st.sampled_from([name + "x", name.upper() + "S",
                                                                                  "not-an-anomaly"]))]
    elif kind == "fault-name" and isinstance((data.get("nemesis") or {}).get("faults"), list):
        data["nemesis"]["faults"] = [*data["nemesis"]["faults"], draw(st.sampled_from(["kil", "Kill", "pause-all"]))]
    elif kind == "glob" and isinstance((data.get("nemesis") or {}).get("faults"), list):
        data["nemesis"]["faults"] = [*data["nemesis"]["faults"], {"fault": "pause-client", "clients": ["zz-nobody-*"]}]
    elif kind == "faults-string":
        data.setdefault("nemesis", {})["faults"] = draw(st.sampled_from(["kill", "kill, pause"]))
    elif kind == "unknown-key":
        maps = [p for p, v in _paths(data) if isinstance(v, dict) and not (p and p[-1] in FREE_KEYS)
                and not any(k in FREE_KEYS for k in p)]
        p = draw(st.sampled_from(maps))
        data = _replace(data, (*p, "zz_typo"), 1) if p else {**data, "zz_typo": 1}
    elif kind == "alias-bomb":
        text = BOMB + yaml.safe_dump(data, sort_keys=False) + "description: *g\n"
        if "description" in data:
            text = text.replace("\ndescription:", "\nold_description:", 1)
        return base, text, why
    else:  # anything anywhere: it may even be valid
        p, _ = draw(st.sampled_from(nodes))
        data, why = _replace(data, p, draw(st.sampled_from(ANY))), None
    return base, yaml.safe_dump(data, sort_keys=False, allow_unicode=True), why


def _dry_run(path: Path):
    from typer.testing import CliRunner

    from harness.cli.main import app

    return CliRunner().invoke(app, ["run", str(path), "--dry-run", "--seed", "1"])


@fuzz(120)
@given(case=bad_scenarios())
def test_one_bad_scenario_field_is_one_clear_error(case, monkeypatch_maven):
    """The loader raises ScenarioError (never another exception, never a hang) when the field is
    bad, and the same for the same file; `run --dry-run` exits 2 with a few lines then, and 0
    or 2 (never a traceback) for a change that may be valid."""
    from harness.run.scenario import ScenarioError, load_scenario

    base, text, why = case
    event(why or "anything")
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / base.name
        p.write_text(text)
        outcomes = []
        for _ in range(2):
            try:
                outcomes.append(("ok", json.dumps(load_scenario(p).model_dump(mode="json"), sort_keys=True)))
            except ScenarioError as exc:
                outcomes.append(("error", str(exc)))
        assert outcomes[0] == outcomes[1]
        if why is not None:
            assert outcomes[0][0] == "error", (why, outcomes[0])
        res = _dry_run(p)
    assert res.exception is None or isinstance(res.exception, SystemExit), (res.exception, res.output)
    assert res.exit_code in (0, 2), res.output
    if outcomes[0][0] == "error":
        assert res.exit_code == 2 and res.output.startswith("error:"), res.output
        assert len(res.output.strip().splitlines()) <= 4, res.output


@pytest.fixture(scope="module")
def monkeypatch_maven():
    """No Maven in the fuzz suite: a version that is not cached reads as unknown to Maven."""
    import harness.run.preflight as pf
    from harness.cluster.artifacts import ArtifactError

    def unknown(group, artifact, version):
        raise ArtifactError(f"{group}:{artifact}:{version} is not on Maven Central (fuzz suite: Maven not asked)")
    saved, pf.maven_knows = pf.maven_knows, unknown
    yield
    pf.maven_knows = saved
