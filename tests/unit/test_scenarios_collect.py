"""The repository's own scenarios under pytest, collected exactly as the README and
docs/pytest.md write the commands (a subprocess from the repository root, --collect-only: no
cluster, no root): every runnable scenario is an item, zoo files, zoo selections and suite
files are skipped with a one-line reason, nothing is a collection error. That `pytest` and
`pytest tests` never collect a scenario is tested in test_pytest_plugin.py (pytester)."""
from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.pytest_plugin import kind_of

ROOT = Path(__file__).resolve().parents[2]
SC = ROOT / "scenarios"
#: the hypothesis plugin costs seconds per session and is not what is tested here
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def collect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", *args, "--collect-only", "-q", "-rs", *QUIET],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def at_once(*calls):
    """The results of ``calls`` (each a function of no argument that runs one pytest process),
    in order, the processes run side by side: each is mostly interpreter start-up and imports,
    one core's work, and the unit tests' own process leaves the other core idle."""
    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(c) for c in calls]
        return [f.result() for f in futures]


def kinds(files) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for f in sorted(files):
        out.setdefault(kind_of(f), []).append(f)
    return out


def items(res) -> set[str]:
    return {line.split("::")[0] for line in res.stdout.splitlines() if "::" in line}


def skipped(res) -> dict[str, str]:
    """file -> reason of each ``SKIPPED [1] FILE: REASON`` line of -rs."""
    out = {}
    for line in res.stdout.splitlines():
        m = re.match(r"SKIPPED \[\d+\] (\S+\.yaml): (.+)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def summary(res) -> str:
    return res.stdout.strip().splitlines()[-1]


def test_every_yaml_file_is_a_scenario_a_zoo_file_a_suite_or_a_selection():
    k = kinds(SC.rglob("*.yaml"))
    assert set(k) <= {"scenario", "zoo", "suite", "selection"}, {n: v for n, v in k.items() if n not in
                                                                ("scenario", "zoo", "suite", "selection")}
    assert len(k["scenario"]) >= 30 and len(k["zoo"]) >= 30
    assert SC / "releases.yaml" in k["selection"] and SC / "nightly.yaml" in k["suite"]


def test_pytest_scenarios_as_the_readme_writes_it_collects_without_errors():
    """`python -m pytest scenarios/ --collect-only -q` from the repository root, as written (the
    README's run, `sudo .venv/bin/python -m pytest scenarios/ --eos-duration 30`, collects the
    same), then with -rs: the skipped files and their reasons."""
    res, res_rs = at_once(
        lambda: subprocess.run([sys.executable, "-m", "pytest", "scenarios/", "--collect-only", "-q"],
                               cwd=ROOT, capture_output=True, text=True, timeout=600),
        lambda: collect("scenarios/", "--eos-duration", "30"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    k = kinds(SC.rglob("*.yaml"))
    assert summary(res).startswith(f"{len(k['scenario'])} tests collected in "), summary(res)  # no "N errors"
    assert items(res) == {str(p.relative_to(ROOT)) for p in k["scenario"]}
    res = res_rs
    assert res.returncode == 0 and summary(res).startswith(f"{len(k['scenario'])} tests collected in ")
    assert items(res) == {str(p.relative_to(ROOT)) for p in k["scenario"]}
    why = skipped(res)
    assert set(why) == {str(p.relative_to(ROOT)) for p in k["zoo"] + k["suite"] + k["selection"]}
    assert why["scenarios/zoo/acks1-unclean.yaml"] == (
        "zoo file (base/must_find), not a scenario to run alone: "
        "eos-chaos zoo --zoo scenarios/zoo --only acks1-unclean")
    assert why["scenarios/releases.yaml"] == (
        "zoo selection (suite + zoo keys), not a scenario: eos-chaos zoo --zoo scenarios/releases.yaml")
    assert why["scenarios/nightly.yaml"] == (
        "suite file, its scenarios are collected from their own files: eos-chaos suite scenarios/nightly.yaml "
        "(or name only suite files for one item per cell)")


def test_pytest_scenarios_star_yaml_and_subfolders():
    top = sorted(str(p.relative_to(ROOT)) for p in SC.glob("*.yaml"))  # what the shell makes of scenarios/*.yaml
    folders = ("scenarios/java/", "scenarios/zoo/")
    res, *in_folders = at_once(lambda: collect(*top), *[lambda f=f: collect(f) for f in folders])
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    k = kinds(SC.glob("*.yaml"))
    assert items(res) == {str(p.relative_to(ROOT)) for p in k["scenario"]}
    assert set(skipped(res)) == {str(p.relative_to(ROOT)) for p in k["suite"] + k["selection"]}
    for folder, res in zip(folders, in_folders):
        assert res.returncode in (0, 5), res.stdout[-3000:]  # 5: zoo/ has no item at all
        assert "error" not in summary(res), summary(res)
        k = kinds((ROOT / folder).glob("*.yaml"))
        assert items(res) == {str(p.relative_to(ROOT)) for p in k.get("scenario", [])}
        assert set(skipped(res)) == {str(p.relative_to(ROOT)) for p in k.get("zoo", []) + k.get("suite", [])}


def test_a_named_suite_file_alone_gives_its_cells():
    """docs/pytest.md: `pytest scenarios/nightly.yaml -v`: one item per cell."""
    res = collect("scenarios/ci.yaml")
    assert res.returncode == 0, res.stdout[-3000:]
    assert items(res) == {"scenarios/ci.yaml"} and not skipped(res)
    assert re.search(r"^scenarios/ci.yaml::smoke/s\d+/kafka-", res.stdout, re.M), res.stdout[:2000]


# ---------------------------------------------------------------- docs/pytest.md, command by command

DOC = ROOT / "docs" / "pytest.md"
#: prints what each collected scenario item would run, and the results root (loaded with -p)
PROBE = '''
import harness.pytest_plugin as plugin

def pytest_collection_finish(session):
    print("EOS-RESULTS", plugin.results_root(session.config))
    for it in session.items:
        s = getattr(it, "scenario", None)
        if s is not None:
            print("EOS", it.nodeid, s.seed, s.duration, s.cluster.kafka_version, s.cluster.backend)
'''


def doc_commands() -> list[list[str]]:
    """The pytest commands of the first code block of docs/pytest.md, as argument lists after
    `[sudo] .venv/bin/python -m pytest` (continuation lines joined, comments dropped)."""
    import shlex

    block = re.search(r"```\n(.*?)```", DOC.read_text(), re.S).group(1).replace("\\\n", " ")
    out = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["sudo"]:
            words = words[1:]
        assert words[:3] == [".venv/bin/python", "-m", "pytest"], line
        out.append(words[3:])
    return out


def probe(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, list[list[str]], str]:
    """Collect ``args`` with the probe plugin: (process, one [nodeid, seed, duration, kafka,
    backend] per scenario item, the results root)."""
    import os

    if not (tmp_path / "eos_doc_probe.py").is_file():  # written once: probes may run side by side
        (tmp_path / "eos_doc_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "pytest", *args, "--collect-only", "-q", "-s", *QUIET,
                          "-p", "eos_doc_probe"], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    rows = [line.split()[1:] for line in res.stdout.splitlines() if line.startswith("EOS ")]
    root = next((line.split(None, 1)[1] for line in res.stdout.splitlines() if line.startswith("EOS-RESULTS ")), "")
    return res, rows, root


def test_every_command_of_docs_pytest_md_collects_what_the_page_says(tmp_path):
    from harness.detect.suite import expand, load_suite

    cmds = doc_commands()
    k = kinds(SC.rglob("*.yaml"))
    scenario_files = {str(p.relative_to(ROOT)) for p in k["scenario"]}
    assert [c[0] for c in cmds] == ["scenarios/", "scenarios/smoke.yaml", "scenarios/nightly.yaml", "scenarios/",
                                    "scenarios/"], "a command the test does not know: add its check here"
    junit = cmds[3][-1]
    (tmp_path / "eos_doc_probe.py").write_text(PROBE)
    runs = at_once(*[lambda c=c: probe(tmp_path, *c) for c in cmds[:3]],
                   lambda: probe(tmp_path, *cmds[3][:-1], f"--junitxml={tmp_path / 'scenarios.xml'}"),
                   lambda: subprocess.run([sys.executable, "-m", "pytest", *cmds[4], *QUIET], cwd=ROOT,
                                          capture_output=True, text=True, timeout=600))
    # pytest scenarios/: every scenario, once
    res, rows, root = runs[0]
    assert res.returncode == 0 and {r[0].split("::")[0] for r in rows} == scenario_files
    assert len(rows) == len(scenario_files) and root == str(ROOT / "results")
    # scenarios/smoke.yaml --eos-duration 20 --eos-seed 3: one item with that seed and duration
    assert cmds[1][1:] == ["--eos-duration", "20", "--eos-seed", "3"]
    res, rows, _ = runs[1]
    assert res.returncode == 0 and rows == [["scenarios/smoke.yaml::smoke", "3", "20.0", "4.3.1", "netns"]], res.stdout
    # scenarios/nightly.yaml -v: one item per cell of the matrix, ids SCENARIO/sSEED/kafka-V
    assert cmds[2][1:] == ["-v"]
    res, rows, _ = runs[2]
    cells = expand(load_suite(SC / "nightly.yaml"), SC)
    assert res.returncode == 0 and [r[0] for r in rows] == [f"scenarios/nightly.yaml::{c.id}" for c in cells]
    assert re.fullmatch(r"scenarios/nightly.yaml::smoke/s\d+/kafka-[\d.]+", rows[0][0])
    # scenarios/ --eos-kafka-version 4.3.1 --eos-kafka-version 3.9.1 --junitxml=...: one item per version
    assert cmds[3][1:-1] == ["--eos-kafka-version", "4.3.1", "--eos-kafka-version", "3.9.1"]
    assert junit == "--junitxml=results/scenarios.xml"
    res, rows, _ = runs[3]
    assert res.returncode == 0 and (tmp_path / "scenarios.xml").is_file()
    assert len(rows) == 2 * len(scenario_files)
    assert {r[3] for r in rows} == {"4.3.1", "3.9.1"}
    ids = {r[0] for r in rows}
    assert {"scenarios/smoke.yaml::smoke[kafka-4.3.1]", "scenarios/smoke.yaml::smoke[kafka-3.9.1]"} <= ids  # no seed
    assert all(re.fullmatch(r"scenarios/\S+\.yaml::[^\[]+\[kafka-(4\.3\.1|3\.9\.1)\]", i) for i in ids), ids
    # scenarios/ --collect-only -q -rs: the skipped files with their reasons
    assert cmds[4][1:] == ["--collect-only", "-q", "-rs"]
    res = runs[4]
    assert res.returncode == 0
    assert set(skipped(res)) == {str(p.relative_to(ROOT)) for p in k["zoo"] + k["suite"] + k["selection"]}
    for line in re.search(r"one-line reason naming the command that runs it; `-rs` lists them:\n\n```\n(.*?)```",
                          DOC.read_text(), re.S).group(1).splitlines():
        assert line in res.stdout.splitlines(), line  # the page's example lines, verbatim


def test_the_options_table_and_the_plugin_switch(tmp_path):
    """--eos-results and --eos-backend (docs/pytest.md "Options"), `-p no:eos_chaos`."""
    (tmp_path / "eos_doc_probe.py").write_text(PROBE)
    docker, external, off = at_once(
        lambda: probe(tmp_path, "scenarios/smoke.yaml", "--eos-results", str(tmp_path / "r"), "--eos-backend", "docker"),
        lambda: probe(tmp_path, "scenarios/smoke.yaml", "--eos-backend", "external"),
        lambda: subprocess.run([sys.executable, "-m", "pytest", "scenarios/", "-p", "no:eos_chaos", "--collect-only",
                                "-q", *QUIET], cwd=ROOT, capture_output=True, text=True, timeout=600))
    res, rows, root = docker
    assert res.returncode == 0 and root == str(tmp_path / "r")
    assert [r[-1] for r in rows] == ["docker"]
    res, rows, _ = external
    assert res.returncode != 0 and not rows
    assert "scenarios/smoke.yaml with --eos-backend external" in res.stdout  # a collection error saying why
    res = off
    assert res.returncode == 5 and ".yaml" not in res.stdout, res.stdout[-2000:]  # no item, no skip, no error
