"""Shards (harness.detect.shards), tiers (harness.detect.tiers), a cell's outcome and cause
(harness.detect.suite_records) and zoo entries judged over nights (harness.detect.nights): the
split, the merge of shard folders written by the real suite loop with a stand-in runner (no
cluster), bad input in one line, and the CLI's dry-runs of the shipped tiers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.detect import nights as nt
from harness.detect import shards as sh
from harness.detect import suite as st
from harness.detect import suite_run as sr
from harness.detect.suite_records import FAIL, PASS, cause, outcome
from harness.detect.tiers import expand_tier
from tests.unit.test_suite import StandInRunner

ROOT = Path(__file__).resolve().parents[2]
SC = ROOT / "scenarios"
INVALID = {"valid": False, "anomalies": {"lost-write": [{"explanation": "value 7 acknowledged, never read"}]},
           "anomaly_counts": {"lost-write": 1}, "failing": ["lost-write"], "allowed": []}


def wide_cells(seeds=None):
    spec = st.load_suite(SC / "ci-wide.yaml")
    return st.expand(spec, SC, seeds=seeds)


# ---------------------------------------------------------------- K/N

@pytest.mark.parametrize("text, why", [("0/4", "K must be from 1 to 4"), ("5/4", "K must be from 1 to 4"),
                                       ("1/0", "N must be at least 1"), ("x", "give K/N"), ("1/-2", "at least 1"),
                                       ("3", "give K/N")])
def test_bad_shard_is_one_line(text, why):
    with pytest.raises(sh.ShardError, match=why) as e:
        sh.parse_shard(text)
    assert "\n" not in str(e.value)


def test_shard_parses_one_based():
    assert sh.parse_shard("3/20") == (3, 20) and sh.parse_shard(" 1 / 1 ") == (1, 1)


# ---------------------------------------------------------------- the split

def test_split_covers_every_cell_once_and_is_deterministic():
    cells = wide_cells()
    parts = sh.split(cells, 4, 40.0)
    ids = [c.id for p in parts for c in p]
    assert sorted(ids) == sorted(c.id for c in cells) and len(ids) == len(set(ids)) == 8
    assert [[c.id for c in p] for p in parts] == [[c.id for c in p] for p in sh.split(wide_cells(), 4, 40.0)]
    # each shard keeps the suite's order (seed-major)
    order = {c.id: i for i, c in enumerate(cells)}
    assert all([order[c.id] for c in p] == sorted(order[c.id] for c in p) for p in parts)


def test_split_balances_longest_first():
    """LPT: one 3600 s cell and eight 220 s cells on 3 shards: the long one alone, the rest 4 + 4."""
    class C:
        def __init__(self, i, d):
            self.id, self.duration = f"c{i}", d
    cells = [C(0, 3600)] + [C(i, 180) for i in range(1, 9)]
    parts = sh.split(cells, 3, 40.0)
    assert [len(p) for p in parts] == [1, 4, 4] and parts[0][0].id == "c0"
    p = sh.plan(cells, 3, 40.0)
    assert p["slowest_s"] == 3640 and p["slowest_shard"] == 1 and p["machine_s"] == 3640 + 8 * 220


def test_more_shards_than_cells_leaves_empty_shards():
    parts = sh.split(wide_cells(), 10, 40.0)
    assert sum(len(p) for p in parts) == 8 and sum(1 for p in parts if not p) == 2


# ---------------------------------------------------------------- merge

def run_shards(tmp_path, n, verdicts, skip=()):
    cells = wide_cells()
    folders = []
    for k in range(1, n + 1):
        if k in skip:
            continue
        results = tmp_path / f"runner-{k}"
        d = st.default_suite_dir(results, f"ci-wide-shard-{k}-of-{n}")
        sr.run_suite(sh.shard_cells(cells, (k, n), 40.0), results, d, name="ci-wide", source="scenarios/ci-wide.yaml",
                     runner=StandInRunner(verdicts), meta=sh.shard_meta(cells, (k, n), 40.0))
        folders.append(d)
    return cells, folders


def test_merge_has_every_cell_with_its_verdict_and_rebased_paths(tmp_path):
    cells, folders = run_shards(tmp_path, 4, {5: INVALID})
    out = tmp_path / "merged"
    summary, missing = sh.merge(out, folders)
    assert missing == [] and [r["id"] for r in summary["runs"]] == [c.id for c in cells]
    by = {r["id"]: r for r in summary["runs"]}
    assert by["smoke/s5/kafka-4.3.1"]["status"] == "invalid" and by["smoke/s3/kafka-4.3.1"]["status"] == "valid"
    assert summary["exit_code"] == 1 and summary["totals"]["invalid"] == 2  # smoke and idempotent at seed 5
    for r in summary["runs"]:  # every run folder reachable from the merged folder
        assert (out / r["run_dir"] / "verdict.json").is_file() and (out / r["report"]).is_file()
    assert by["smoke/s5/kafka-4.3.1"]["cause"].startswith("invalid: lost-write x1; new")


def test_merge_lists_cells_no_shard_ran_and_exits_2(tmp_path):
    cells, folders = run_shards(tmp_path, 4, {}, skip=(2,))
    summary, missing = sh.merge(tmp_path / "m", folders)
    assert len(missing) == 2 and summary["exit_code"] == 2 and summary["merged"]["missing_shards"] == [2]
    res = CliRunner().invoke(app, ["suite", "merge", str(tmp_path / "m2"), *map(str, folders)])
    assert res.exit_code == 2 and "cells no shard ran (2)" in res.output


def test_merge_refuses_other_seeds_half_written_and_duplicates(tmp_path):
    _, folders = run_shards(tmp_path, 2, {})
    other = wide_cells(seeds=[9])
    d = tmp_path / "other" / "suites" / "x"
    sr.run_suite(sh.shard_cells(other, (1, 2), 40.0), tmp_path / "other", d, name="ci-wide",
                 runner=StandInRunner({}), meta=sh.shard_meta(other, (1, 2), 40.0))
    with pytest.raises(sh.ShardError, match="same seeds"):
        sh.merge(tmp_path / "m", [folders[0], d])
    with pytest.raises(sh.ShardError, match="both shard 1/2"):
        sh.merge(tmp_path / "m", [folders[0], folders[0]])
    (folders[1] / "summary.json").write_text('{"suite": "ci-wide", "runs": [')  # cut short
    with pytest.raises(sh.ShardError, match="not complete JSON.*run the same shard command again"):
        sh.merge(tmp_path / "m", folders)
    plain = tmp_path / "plain"
    sr.run_suite(wide_cells()[:1], tmp_path / "r", plain, name="ci-wide", runner=StandInRunner({}))
    with pytest.raises(sh.ShardError, match="no shard block"):
        sh.merge(tmp_path / "m", [plain])
    res = CliRunner().invoke(app, ["suite", "merge", str(tmp_path / "m"), str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and res.output.count("\n") <= 2 and "is not a folder" in res.output


def test_a_shard_cut_short_resumes_without_losing_a_finished_cell(tmp_path):
    cells = wide_cells()
    mine = sh.shard_cells(cells, (1, 2), 40.0)
    results, d = tmp_path / "r", tmp_path / "r" / "suites" / "s1"
    import threading
    stop = threading.Event()

    class StopsAtSecond(StandInRunner):
        def __call__(self, scn, *a, **k):
            if self.calls:
                stop.set()  # as Ctrl-C during the second run's load would
            return super().__call__(scn, *a, **k)

    first = StopsAtSecond({})
    sr.run_suite(mine, results, d, name="ci-wide", runner=first, stop=stop, meta=sh.shard_meta(cells, (1, 2), 40.0))
    done = {r["id"] for r in json.loads((d / "summary.json").read_text())["runs"] if r["status"] == "valid"}
    again = StandInRunner({})
    sr.run_suite(mine, results, d, name="ci-wide", runner=again, meta=sh.shard_meta(cells, (1, 2), 40.0))
    assert len(done) == 1 and len(mine) >= 2
    assert not done & {f"{n}/s{s}/kafka-{v}" for n, s, v, *_ in again.calls} and len(again.calls) == len(mine) - 1
    assert json.loads((d / "summary.json").read_text())["exit_code"] == 0


# ---------------------------------------------------------------- outcome, cause, flaky

def test_a_mutant_passes_when_caught_and_fails_when_missed():
    base = {"kind": "mutant", "must_find": ["G1a"], "status": "invalid", "failing": ["G1a"], "seed": 1}
    assert outcome(base) == PASS
    assert outcome(dict(base, failing=["lost-write"])) == FAIL
    assert outcome(dict(base, status="valid", failing=[])) == FAIL
    assert cause(dict(base, status="valid", failing=[])).startswith("missed: must find one of G1a; the run was valid")


def test_cause_names_a_known_bug_and_flaky_replays():
    rec = {"kind": "scenario", "status": "invalid", "failing": ["torn-transaction"], "seed": 4,
           "anomaly_counts": {"torn-transaction": 4},
           "known_bugs": [{"id": "KAFKA-20734", "title": "markers skipped", "match": "looks-like", "why": "w"}]}
    assert "torn-transaction x4" in cause(rec) and "KAFKA-20734" in cause(rec) and "new" not in cause(rec)
    resembles = dict(rec, known_bugs=[dict(rec["known_bugs"][0], match="resembles")])
    assert "new (no catalogued bug looks like it)" in cause(resembles)
    assert "[flaky:" in cause(dict(rec, replay={"status": "valid"}))
    assert "invalid again" in cause(dict(rec, replay={"status": "invalid"}))


def test_replay_failing_marks_a_cell_flaky_when_its_replay_is_valid(tmp_path):
    cells = wide_cells()[:2]

    class Once(StandInRunner):
        def __call__(self, scn, *a, **k):
            first = not any(c[0] == scn.name and c[1] == scn.seed for c in self.calls)
            self.verdicts = {scn.seed: INVALID} if first and scn.name == "smoke" else {}
            return super().__call__(scn, *a, **k)

    runner = Once({})
    res = sr.run_suite(cells, tmp_path / "r", tmp_path / "d", name="n", runner=runner, replay_failing=True)
    smoke = next(r for r in res.summary["runs"] if r["scenario"] == "smoke")
    assert smoke["flaky"] and smoke["replay"]["status"] == "valid" and len(runner.calls) == 3
    assert res.exit_code == 1  # still red, named flaky


# ---------------------------------------------------------------- nights

def night(entries):
    return {"night": "n", "entries": entries}


def test_one_miss_is_amber_and_a_broken_detection_goes_red():
    good = {"kafka-15653.affected": {"kind": "mutant", "runs": 1, "passed": 1, "bar": None}}
    miss = {"kafka-15653.affected": {"kind": "mutant", "runs": 1, "passed": 0, "bar": None}}
    nights = [night(good)] * 9 + [night(miss)]
    [j] = nt.judge(nights)
    assert j["judgement"] == nt.AMBER and j["runs"] == 10 and j["passed"] == 9
    [j] = nt.judge([night(good)] * 1 + [night(miss)] * 9)
    assert j["judgement"] == nt.RED and j["ci95"][1] < 0.5
    [j] = nt.judge([night(good)] * 3)
    assert j["judgement"] == nt.GREEN


def test_a_control_invalid_the_first_night_is_red_later_amber():
    bad = {"control-smoke": {"kind": "control", "runs": 1, "passed": 0, "bar": None}}
    ok = {"control-smoke": {"kind": "control", "runs": 1, "passed": 1, "bar": None}}
    assert nt.judge([night(bad)])[0]["judgement"] == nt.RED
    assert nt.judge([night(ok)] * 13 + [night(bad)])[0]["judgement"] == nt.AMBER


def test_night_verdict_judges_zoo_cells_over_nights_and_scenarios_tonight(tmp_path):
    runs = [{"id": "smoke/s1/kafka-4.3.1", "kind": "scenario", "outcome": PASS},
            {"id": "k/s1/kafka-3.5.2", "scenario": "k", "entry": "k", "kind": "mutant", "outcome": FAIL,
             "cause": "missed"}]
    summary = {"runs": runs}
    hist = tmp_path / "nights.jsonl"
    for i in range(5):
        nt.append_night(hist, f"night-{i}", {"runs": [dict(runs[1], outcome=PASS)]})
    nt.append_night(hist, "tonight", summary)
    nt.append_night(hist, "tonight", summary)  # a merge run again replaces its night
    assert len(nt.read_nights(hist)) == 6
    code, lines = nt.night_verdict(summary, nt.judge(nt.read_nights(hist)))
    assert code == 0 and lines[0].startswith("AMBER")
    code, lines = nt.night_verdict(summary, None)  # one run: the miss is red
    assert code == 1 and lines[0].startswith("RED")


# ---------------------------------------------------------------- tiers and the CLI

def test_nightly_tier_fits_20_runners_of_90_min():
    spec = st.load_suite(SC / "tiers" / "nightly.yaml")
    cells = expand_tier(spec, SC / "tiers")
    kinds = {c.kind for c in cells}
    assert kinds == {"scenario", "mutant", "control"}
    zoo = [c for c in cells if c.kind != "scenario"]
    assert {c.entry for c in zoo} >= {"kafka-14402.affected", "kafka-14402.fixed"}
    p = sh.plan(cells, spec.budget.runners, st.DEFAULT_OVERHEAD_S)
    assert p["slowest_s"] <= spec.budget.wall_min * 60, p


def test_tier_dry_run_prints_machine_time_slowest_shard_and_budget():
    res = CliRunner().invoke(app, ["suite", str(SC / "tiers" / "nightly.yaml"), "--dry-run", "--shards", "20"])
    assert res.exit_code == 0, res.output
    assert "in 20 shards: machine time" in res.output and "within budget" in res.output
    res = CliRunner().invoke(app, ["suite", str(SC / "tiers" / "pr.yaml"), "--dry-run"])
    assert res.exit_code == 0 and "budget: 1 runner, 10 min" in res.output


def test_setup_args_name_what_a_shard_needs():
    spec = st.load_suite(SC / "tiers" / "nightly.yaml")
    cells = expand_tier(spec, SC / "tiers")
    spark = [c for c in cells if c.name == "spark"][:1]
    assert "--spark" in sh.setup_args(spark) and "--minimal" in sh.setup_args(spark)
    flink = [c for c in cells if c.name == "app-flink"][:1]
    assert "--flink" in sh.setup_args(flink)
    docker = [c for c in cells if c.name == "app-copy-service-docker"][:1]
    assert "--docker" in sh.setup_args(docker)
    links = [c for c in cells if c.name == "link-faults"][:1]
    assert "--minimal" not in sh.setup_args(links)
    smoke = [c for c in wide_cells() if c.name == "smoke"]
    assert sh.setup_args(smoke) == ["--kafka-version", "4.3.1", "--minimal"]
    # idempotent's held responses and resets are toxiproxy's: not --minimal
    assert sh.setup_args(wide_cells()) == ["--kafka-version", "4.3.1"]
    res = CliRunner().invoke(app, ["suite", str(SC / "ci-wide.yaml"), "--shard", "1/4", "--setup-args"])
    cells = sh.shard_cells(wide_cells(), (1, 4), st.DEFAULT_OVERHEAD_S)
    assert res.exit_code == 0 and res.output.split() == sh.setup_args(cells)


def test_cli_bad_shard_and_shards_without_dry_run_are_one_line():
    for args in (["--shard", "5/4"], ["--shards", "3"]):
        res = CliRunner().invoke(app, ["suite", str(SC / "ci-wide.yaml"), *args])
        assert res.exit_code == 2 and res.output.strip().count("\n") == 0, res.output


def test_docs_quote_the_shipped_workflow_and_every_shard_command_parses():
    """docs/nightly.md quotes .github/workflows/nightly.yml byte for byte (the file is what
    actionlint checks, tests/unit/test_workflows.py), and every `eos-chaos suite` line the page
    shows with a tier parses (as a dry run)."""
    text = (ROOT / "docs" / "nightly.md").read_text()
    quoted = text.split("<!-- nightly.yml: begin -->\n```yaml\n", 1)[1].split("```\n<!-- nightly.yml: end -->", 1)[0]
    assert quoted == (ROOT / ".github" / "workflows" / "nightly.yml").read_text()
    for line in ("suite scenarios/tiers/nightly.yaml --dry-run --shards 20",
                 "suite scenarios/tiers/weekly.yaml --dry-run --shards 40",
                 "suite scenarios/tiers/pr.yaml --dry-run"):
        assert ".venv/bin/eos-chaos " + line in text
        res = CliRunner().invoke(app, line.replace("scenarios/", str(SC) + "/", 1).split())
        assert res.exit_code == 0, (line, res.output)
    wf = (ROOT / ".github" / "workflows" / "nightly.yml").read_text()
    for flag in ("--shard", "--setup-args", "--replay-failing", "--nights", "--night", "merge"):
        assert flag in wf and flag in text


def test_shipped_workflow_shards_the_tiers_it_names():
    """The workflow's matrix sizes are the tiers' budgets (20 nightly, 40 weekly)."""
    import yaml

    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    plan = "\n".join(s.get("run", "") for s in wf["jobs"]["plan"]["steps"])
    for tier, n in (("nightly", 20), ("weekly", 40)):
        assert st.load_suite(SC / "tiers" / f"{tier}.yaml").budget.runners == n
    assert "count=20" in plan and "count=40" in plan


def test_readme_suite_and_zoo_lines_name_only_flags_the_commands_have():
    """Each flag the README's CLI block shows for `suite`, `suite merge`, `zoo` and `zoo merge`
    is in that command's --help, and the tier figures it quotes are the dry-run's."""
    import re

    text = (ROOT / "README.md").read_text()
    helps = {c: CliRunner().invoke(app, [c, "--help"], terminal_width=200).output for c in ("suite", "zoo")}
    lines = [l for l in text.splitlines() if re.match(r"\.venv/bin/eos-chaos (suite|zoo) ", l)]
    assert len(lines) == 4
    for line in lines:
        cmd = line.split()[1]
        for flag in re.findall(r"--[a-z][a-z-]*", line.split("#")[0]):
            assert flag in helps[cmd], (cmd, flag)
    spec = st.load_suite(SC / "tiers" / "nightly.yaml")
    cells = expand_tier(spec, SC / "tiers")
    p = sh.plan(cells, 20, st.DEFAULT_OVERHEAD_S)
    from harness.detect.suite import fmt_s
    assert f"{len(cells)} runs, ~{fmt_s(p['machine_s'])} of machine time" in " ".join(text.split())
    assert f"~{fmt_s(p['slowest_s'])}" in text


def test_suite_and_zoo_find_the_packaged_scenarios_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["suite", "scenarios/tiers/pr.yaml", "--dry-run"])
    assert res.exit_code == 0 and "1 runs, 1 to run" in res.output, res.output
    res = CliRunner().invoke(app, ["zoo", "--dry-run", "--runs", "1", "--only", "control-smoke"])
    assert res.exit_code == 0 and "control-smoke/s1" in res.output, res.output
    res = CliRunner().invoke(app, ["suite", "scenarios/nope.yaml", "--dry-run"])
    assert res.exit_code == 2 and "nor among the packaged scenarios" in res.output


def test_one_machine_nightly_suite_counts_its_comment_gives():
    from harness.detect.suite import fmt_s

    text = (SC / "nightly.yaml").read_text()
    cells = st.expand(st.load_suite(SC / "nightly.yaml"), SC)
    est = sum(sh.estimate_s(c, st.DEFAULT_OVERHEAD_S) for c in cells)
    assert f"{len(cells)} runs" in text and f"~{fmt_s(est)}" in text
    assert f"{len(cells)} runs, ~10 h on one machine" in " ".join((ROOT / "docs" / "nightly.md").read_text().split())


def test_a_cell_whose_preflight_fails_is_an_error_with_its_line_and_never_runs(tmp_path):
    cells = wide_cells()[:2]

    def check(scn):
        if scn.name == "idempotent":
            raise ValueError("toxiproxy is not cached and Go is not on PATH to build it: run `eos-chaos setup`")

    runner = StandInRunner({})
    res = sr.run_suite(cells, tmp_path / "r", tmp_path / "d", name="n", runner=runner, check=check)
    by = {r["scenario"]: r for r in res.summary["runs"]}
    assert by["idempotent"]["status"] == "error" and "preflight: toxiproxy is not cached" in by["idempotent"]["cause"]
    assert [c[0] for c in runner.calls] == ["smoke"] and res.exit_code == 2


def test_cells_not_run_are_one_unknown_line():
    runs = [{"id": f"c{i}", "kind": "scenario", "outcome": "not-run"} for i in range(3)]
    code, lines = nt.night_verdict({"runs": runs}, None)
    assert code == 2 and lines == ["UNKNOWN 3 cell(s) not run: no shard's folder holds their record (first: c0)"]


def test_the_tier_table_of_docs_nightly_md_gives_the_dry_run_figures():
    from harness.detect.suite import fmt_s

    text = " ".join((ROOT / "docs" / "nightly.md").read_text().split())
    for tier in ("nightly", "weekly"):
        spec = st.load_suite(SC / "tiers" / f"{tier}.yaml")
        cells = expand_tier(spec, SC / "tiers")
        p = sh.plan(cells, spec.budget.runners, st.DEFAULT_OVERHEAD_S)
        row = next(line for line in text.split("| `")[1:] if line.startswith(f"{tier}.yaml`"))
        assert f"{len(cells)} runs, machine time ~{fmt_s(p['machine_s'])}, slowest shard ~{fmt_s(p['slowest_s'])}" \
            in row, (tier, row)
        assert f"{spec.budget.runners} runners, {spec.budget.wall_min:g} min a shard" in row
