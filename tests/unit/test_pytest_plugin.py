"""The eos_chaos pytest plugin in inner pytest sessions (pytester), with the run function
replaced by a stand-in that writes a run folder: collection rules, item names, options,
failure messages, JUnit properties, fixtures and ordering. No cluster; the real run is in
tests/integration/test_suite_pytest_plugin.py."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import harness.pytest_plugin as plugin
from harness.run.runner import RunResult

pytest_plugins = ["pytester"]

SCENARIO = "name: {name}\nduration: 60\nworkload: {{name: txn-queue, producers: 2}}\nexpected: [G0]\n"
INVALID = {"valid": False, "anomaly_counts": {"G1a": 2, "G0": 1}, "failing": ["G1a"], "allowed": ["G0"],
           "anomalies": {"G1a": [{"explanation": "poll read 5 of an aborted transaction"},
                                 {"explanation": "poll read 6 of an aborted transaction"}],
                         "G0": [{"explanation": "write cycle"}]},
           "unknown_reasons": []}


class StandInRun:
    """Stands in for harness.run.runner.run_scenario: records the scenario, writes a run folder."""

    def __init__(self, verdict=None):
        self.verdict = verdict or {"valid": True, "anomalies": {}, "anomaly_counts": {}}
        self.calls = []

    def __call__(self, scn, results_root, *, source=None, progress=None, stop=None):
        self.calls.append({"seed": scn.seed, "kafka": scn.cluster.kafka_version, "duration": scn.duration,
                           "results": Path(results_root), "source": source, "name": scn.name})
        run_dir = Path(results_root) / scn.name / f"run-{len(self.calls)}-s{scn.seed}"
        (run_dir / "logs").mkdir(parents=True)
        (run_dir / "scenario.yaml").write_text(json.dumps({"name": scn.name, "seed": scn.seed or 77}))
        (run_dir / "report.html").write_text("<html></html>")
        return RunResult(run_dir, self.verdict, run_dir / "report.html", [])


#: inner sessions skip hypothesis's plugin: pytester re-imports it each time (3 s)
FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")


@pytest.fixture
def project(pytester):
    """A project like this one: tests/ as testpaths, scenarios/ with a scenario, a suite, other YAML,
    and a results run folder's scenario.yaml."""
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    sc = pytester.mkdir("scenarios")
    (sc / "alpha.yaml").write_text(SCENARIO.format(name="alpha"))
    (sc / "nightly.yaml").write_text("suite: nightly\nscenarios: [alpha.yaml]\nseeds: [1, 2]\n"
                                     "kafka_versions: [4.3.1, 3.9.1]\nduration: 30\n")
    (sc / "notes.yaml").write_text("owner: someone\nname: not-a-scenario\n")
    run_dir = sc / "old-results" / "alpha" / "run-1"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "scenario.yaml").write_text(SCENARIO.format(name="alpha") + "source: scenarios/alpha.yaml\n")
    tests = pytester.mkdir("tests")
    (tests / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    (tests / "data").mkdir()  # a scenario used as test data is not a scenario to run
    (tests / "data" / "fixture.yaml").write_text(SCENARIO.format(name="fixture"))
    (sc / "more").mkdir()
    (sc / "more" / "beta.yaml").write_text(SCENARIO.format(name="beta"))
    return pytester


@pytest.fixture
def stand_in(monkeypatch):
    run = StandInRun()
    monkeypatch.setattr(plugin, "run_scenario", run)
    return run


def collected(result) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def test_a_named_folder_collects_its_scenarios_only(project):
    res = project.runpytest(*FAST, "--collect-only", "-q", "scenarios")
    assert collected(res) == ["scenarios/alpha.yaml::alpha", "scenarios/more/beta.yaml::beta"]
    res = project.runpytest(*FAST, "--collect-only", "-q", "scenarios/more")
    assert collected(res) == ["scenarios/more/beta.yaml::beta"]
    res = project.runpytest(*FAST, "--collect-only", "-q", "tests/data/fixture.yaml")
    assert collected(res) == ["tests/data/fixture.yaml::fixture"], "a file named itself always counts"


def test_the_projects_own_test_run_never_collects_scenarios(project):
    for args in ([], ["tests"]):
        res = project.runpytest(*FAST, "--collect-only", "-q", *args)
        assert collected(res) == ["tests/test_plain.py::test_plain"], args
    res = project.runpytest(*FAST, "--collect-only", "-q", ".")
    assert collected(res) == ["scenarios/alpha.yaml::alpha", "scenarios/more/beta.yaml::beta",
                              "tests/test_plain.py::test_plain"], "only YAML inside a scenarios folder"
    project.makeini("[pytest]\n")  # no testpaths: pytest searches the invocation folder, not named
    res = project.runpytest(*FAST, "--collect-only", "-q")
    assert collected(res) == ["tests/test_plain.py::test_plain"]


def test_a_named_suite_file_gives_one_item_per_cell(project):
    res = project.runpytest(*FAST, "--collect-only", "-q", "scenarios/nightly.yaml")
    assert collected(res) == [f"scenarios/nightly.yaml::alpha/s{s}/kafka-{v}"
                              for s in (1, 2) for v in ("4.3.1", "3.9.1")]


def test_options_make_a_matrix_and_reach_the_run(project, stand_in, tmp_path):
    res = project.runpytest(*FAST, "-v", "scenarios/alpha.yaml", "--eos-seed", "3", "--eos-seed", "4",
                            "--eos-kafka-version", "3.9.1", "--eos-duration", "12", "--eos-results", str(tmp_path))
    res.assert_outcomes(passed=2)
    assert "scenarios/alpha.yaml::alpha[s3-kafka-3.9.1] PASSED" in res.stdout.str()
    assert [(c["seed"], c["kafka"], c["duration"], c["results"]) for c in stand_in.calls] == [
        (3, "3.9.1", 12.0, tmp_path), (4, "3.9.1", 12.0, tmp_path)]
    assert stand_in.calls[0]["source"].endswith("scenarios/alpha.yaml")
    res.stdout.fnmatch_lines(["*eos-chaos runs*", "VALID    alpha (seed 3, Kafka 3.9.1, 12 s)*report.html"])


def test_without_options_the_scenario_decides_and_results_go_under_rootdir(project, stand_in):
    project.runpytest(*FAST, "scenarios/alpha.yaml").assert_outcomes(passed=1)
    c = stand_in.calls[0]
    assert (c["seed"], c["kafka"], c["duration"]) == (None, "4.3.1", 60.0)
    assert c["results"] == project.path / "results"


def test_an_invalid_run_fails_with_anomalies_examples_and_report_in_message_and_junit(project, monkeypatch):
    monkeypatch.setattr(plugin, "run_scenario", StandInRun(INVALID))
    xml = project.path / "junit.xml"
    res = project.runpytest(*FAST, "scenarios/alpha.yaml", "--eos-seed", "5", f"--junitxml={xml}")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    for expected in ("alpha (seed 5, Kafka 4.3.1, 60 s): INVALID", "G1a: 2 case(s)",
                     "e.g. poll read 5 of an aborted transaction", "G0: 1 case(s) (allowed)",
                     "report: " + str(project.path / "results" / "alpha" / "run-1-s5" / "report.html")):
        assert expected in out, expected
    assert "poll read 6" not in out, "first example only"
    assert "Traceback" not in out and "def runtest" not in out, "the message, not the plugin's code"
    case = ET.parse(xml).getroot().find(".//testcase")
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props["report"].endswith("alpha/run-1-s5/report.html") and props["verdict"] == "invalid"
    assert case.find("failure") is not None


def test_an_unknown_verdict_fails_and_gives_its_reasons(project, monkeypatch):
    monkeypatch.setattr(plugin, "run_scenario", StandInRun({"valid": "unknown", "unknown_reasons": ["no final drain"]}))
    res = project.runpytest(*FAST, "scenarios/alpha.yaml")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*: UNKNOWN", "*unknown: no final drain"])


def test_a_broken_scenario_is_a_collection_error_naming_the_field(project):
    (project.path / "scenarios" / "typo.yaml").write_text("name: typo\nworkload: {producer: 3}\n")
    res = project.runpytest(*FAST, "--collect-only", "scenarios")
    res.stdout.fnmatch_lines(["*ERROR collecting scenarios/typo.yaml*", "*workload.txn-queue.producer*"])


FIXTURE_TESTS = '''
import yaml
from checkers.synthetic.build import HistoryBuilder
from harness.pytest_plugin import VerdictFailure, assert_valid
import pytest


def g1a_events():
    b = HistoryBuilder()
    b.init(0, "eosc-txn-0")
    b.txn(0, [("t/0", 1, 0)], "fail", tid="eosc-txn-0")
    b.assign(1, ["t/0"])
    b.poll(1, {"t/0": [(0, 1)]})
    return b


def test_eos_run(eos_run, eos_results):
    res = eos_run("scenarios/alpha.yaml", duration=7)
    assert res.run_dir.parent.parent == eos_results
    assert_valid(res)


def test_eos_check(eos_check, tmp_path):
    b = g1a_events()
    verdict = eos_check(b.events)
    assert verdict.valid is False and "G1a" in verdict.anomalies
    with pytest.raises(VerdictFailure, match="G1a: 1 case"):
        assert_valid(verdict, "handmade")
    assert eos_check(b.events, allowed=["G1a"]).valid is True
    b.write(tmp_path / "history.jsonl")
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump({"name": "x", "expected": ["G1a"]}))
    assert eos_check(tmp_path).valid is True, "a run folder's expected list is used"
'''


def test_fixtures_run_and_check(project, stand_in):
    project.makepyfile(test_fixtures=FIXTURE_TESTS)
    res = project.runpytest(*FAST, "test_fixtures.py", "--eos-seed", "9")
    res.assert_outcomes(passed=2)
    assert [(c["seed"], c["duration"]) for c in stand_in.calls] == [(9, 7.0)]


CLUSTER_CONFTEST = '''
import pytest
from harness import pytest_plugin

@pytest.fixture(scope="session")
def eos_cluster(pytestconfig):
    """Stands in for the real session cluster: only marks it up, as the real one does."""
    pytestconfig.stash[pytest_plugin._CLUSTER_UP] = True
    yield "cluster"
    pytestconfig.stash[pytest_plugin._CLUSTER_UP] = False
'''


def test_cluster_tests_run_after_scenarios_and_block_runs_while_up(project, stand_in):
    project.makeconftest(CLUSTER_CONFTEST)
    project.makepyfile(test_mixed='''
def test_uses_cluster(eos_cluster):
    assert eos_cluster == "cluster"

def test_plain_after():
    pass

def test_runs_while_cluster_up(eos_cluster, eos_run):
    eos_run("scenarios/alpha.yaml")
''')
    res = project.runpytest(*FAST, "-v", "test_mixed.py", "scenarios/alpha.yaml")
    order = [line.split(" ")[0] for line in res.outlines if " PASSED" in line or " FAILED" in line]
    assert order == ["test_mixed.py::test_plain_after", "scenarios/alpha.yaml::alpha",
                     "test_mixed.py::test_uses_cluster", "test_mixed.py::test_runs_while_cluster_up"]
    res.assert_outcomes(passed=3, failed=1)
    assert "holds the machine's cluster lock" in res.stdout.str()
    assert len(stand_in.calls) == 1, "the guarded run never started"


def test_collection_rule_is_pure_on_paths(project):
    config = project.parseconfig(*FAST, "scenarios")
    sc = project.path / "scenarios"
    assert plugin.wants(config, sc / "alpha.yaml") == "scenario"
    assert plugin.wants(config, sc / "nightly.yaml") == "skip"
    assert plugin.wants(config, sc / "notes.yaml") is None
    assert plugin.wants(config, sc / "old-results" / "alpha" / "run-1" / "scenario.yaml") is None
    assert plugin.wants(project.parseconfig(*FAST, "scenarios/nightly.yaml"), sc / "nightly.yaml") == "suite"
    assert plugin.wants(project.parseconfig(*FAST, "tests"), sc / "alpha.yaml") is None
    data = project.path / "tests" / "data" / "fixture.yaml"
    assert plugin.wants(project.parseconfig(*FAST, "tests"), data) is None
    assert plugin.wants(project.parseconfig(*FAST, "."), data) is None


def zoo_project(project):
    """The project plus a zoo folder (a mutant, a control, a release entry) and a zoo selection."""
    sc = project.path / "scenarios"
    (sc / "zoo").mkdir()
    (sc / "zoo" / "mutant.yaml").write_text("base: ../alpha.yaml\nname: mutant\nmust_find: [G1a]\n")
    (sc / "zoo" / "control-alpha.yaml").write_text("base: ../alpha.yaml\nname: control-alpha\ncontrol: true\n")
    (sc / "zoo" / "kafka-1.yaml").write_text(SCENARIO.format(name="kafka-1") + "must_find: [G1a]\nupstream: {}\n")
    (sc / "releases.yaml").write_text("suite: releases\nzoo: zoo\nentries: [kafka-1]\nruns: 2\n")
    return project


def skip_lines(res) -> dict[str, str]:
    return dict(line.removeprefix("SKIPPED [1] ").split(": ", 1) for line in res.outlines
                if line.startswith("SKIPPED [1] "))


def test_zoo_files_selections_and_suites_in_a_folder_are_skipped_with_one_line_each(project, stand_in):
    zoo_project(project)
    res = project.runpytest(*FAST, "--collect-only", "-q", "-rs", "scenarios")
    assert res.ret == 0
    assert collected(res) == ["scenarios/alpha.yaml::alpha", "scenarios/more/beta.yaml::beta"]
    assert skip_lines(res) == {
        "scenarios/nightly.yaml": "suite file, its scenarios are collected from their own files: "
                                  "eos-chaos suite scenarios/nightly.yaml (or name only suite files for one item per cell)",
        "scenarios/releases.yaml": "zoo selection (suite + zoo keys), not a scenario: eos-chaos zoo --zoo scenarios/releases.yaml",
        "scenarios/zoo/control-alpha.yaml": "zoo file (base/control), not a scenario to run alone: "
                                            "eos-chaos zoo --zoo scenarios/zoo --only control-alpha",
        "scenarios/zoo/kafka-1.yaml": "zoo file (must_find/upstream), not a scenario to run alone: "
                                      "eos-chaos zoo --zoo scenarios/zoo --only kafka-1",
        "scenarios/zoo/mutant.yaml": "zoo file (base/must_find), not a scenario to run alone: "
                                     "eos-chaos zoo --zoo scenarios/zoo --only mutant"}
    assert "error" not in res.outlines[-1]
    res = project.runpytest(*FAST, "scenarios")  # a run: the scenarios pass, the rest is skipped
    res.assert_outcomes(passed=2, skipped=5)
    assert sorted(c["name"] for c in stand_in.calls) == ["alpha", "beta"]


def test_named_files_as_a_shell_glob_names_them_skip_suites_zoo_files_and_selections(project):
    zoo_project(project)
    res = project.runpytest(*FAST, "--collect-only", "-q", "-rs", "scenarios/alpha.yaml", "scenarios/nightly.yaml",
                            "scenarios/releases.yaml", "scenarios/zoo/mutant.yaml")
    assert res.ret == 0
    assert collected(res) == ["scenarios/alpha.yaml::alpha"]
    assert sorted(skip_lines(res)) == ["scenarios/nightly.yaml", "scenarios/releases.yaml", "scenarios/zoo/mutant.yaml"]
    res = project.runpytest(*FAST, "--collect-only", "-q", "-rs", "scenarios/zoo/")
    assert res.ret == 5 and collected(res) == []  # no item, no error
    assert len(skip_lines(res)) == 3
    # suite files named with nothing else: one item per cell, as docs/pytest.md shows
    res = project.runpytest(*FAST, "--collect-only", "-q", "scenarios/nightly.yaml", "scenarios/more/../nightly.yaml")
    assert len(collected(res)) == 4 and not skip_lines(res)

