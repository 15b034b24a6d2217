"""The repository's own scenarios under pytest, collected exactly as the README and
docs/pytest.md write the commands (a subprocess from the repository root, --collect-only: no
cluster, no root): every runnable scenario is an item, zoo files, zoo selections and suite
files are skipped with a one-line reason, nothing is a collection error. That `pytest` and
`pytest tests` never collect a scenario is tested in test_pytest_plugin.py (pytester)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from harness.pytest_plugin import kind_of

ROOT = Path(__file__).resolve().parents[2]
SC = ROOT / "scenarios"
#: the hypothesis plugin costs seconds per session and is not what is tested here
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def collect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", *args, "--collect-only", "-q", "-rs", *QUIET],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


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
    res = subprocess.run([sys.executable, "-m", "pytest", "scenarios/", "--collect-only", "-q"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    k = kinds(SC.rglob("*.yaml"))
    assert summary(res).startswith(f"{len(k['scenario'])} tests collected in "), summary(res)  # no "N errors"
    assert items(res) == {str(p.relative_to(ROOT)) for p in k["scenario"]}
    res = collect("scenarios/", "--eos-duration", "30")
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
    res = collect(*top)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    k = kinds(SC.glob("*.yaml"))
    assert items(res) == {str(p.relative_to(ROOT)) for p in k["scenario"]}
    assert set(skipped(res)) == {str(p.relative_to(ROOT)) for p in k["suite"] + k["selection"]}
    for folder in ("scenarios/java/", "scenarios/zoo/"):
        res = collect(folder)
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
