"""harness.run.locate.find_scenario_path: a path as given wins, else scenarios/... (or a bare
name, or zoo) among the packaged scenarios, else one line naming both places; from other
working directories, against the clone's scenarios/ and against a wheel-like layout
(harness/scenarios/ inside the package). Also: setup.py's build_py copies every
scenarios/**/*.yaml into the built package, and the CLI's run and explore use the lookup."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.run import locate
from harness.run.locate import ScenarioNotFound, find_scenario_path, packaged_scenarios
from harness.run.scenario import ScenarioError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The current folder is an empty tmp folder, outside the repository."""
    d = tmp_path / "elsewhere"
    d.mkdir()
    monkeypatch.chdir(d)
    return d


def test_in_a_clone_the_packaged_scenarios_are_the_repositorys():
    assert packaged_scenarios() == ROOT / "scenarios"


def test_a_path_that_exists_as_given_wins(elsewhere):
    (elsewhere / "scenarios").mkdir()
    own = elsewhere / "scenarios" / "smoke.yaml"
    own.write_text("name: mine\nduration: 1\n")
    assert find_scenario_path("scenarios/smoke.yaml") == Path("scenarios/smoke.yaml")
    assert find_scenario_path(own) == own
    (elsewhere / "smoke.yaml").write_text("name: bare\nduration: 1\n")
    assert find_scenario_path("smoke.yaml") == Path("smoke.yaml")


def test_from_another_folder_scenarios_paths_and_bare_names_resolve_to_the_package(elsewhere):
    sc = ROOT / "scenarios"
    assert find_scenario_path("scenarios/smoke.yaml") == sc / "smoke.yaml"
    assert find_scenario_path(Path("scenarios/java/coordinator.yaml")) == sc / "java" / "coordinator.yaml"
    assert find_scenario_path("scenarios/zoo") == sc / "zoo"
    assert find_scenario_path("zoo") == sc / "zoo"
    assert find_scenario_path("releases.yaml") == sc / "releases.yaml"
    assert find_scenario_path("scenarios/zoo/acks1-unclean.yaml").is_file()


@pytest.mark.parametrize("path, packaged", [
    ("scenarios/nope.yaml", "nor among the packaged scenarios ({root}/nope.yaml)"),
    ("nope.yaml", "nor among the packaged scenarios ({root}/nope.yaml)"),
    ("my/smoke.yaml", "only scenarios/... or a bare file name is also looked up among the packaged scenarios, {root}"),
])
def test_a_path_found_nowhere_is_one_line_naming_both_places(elsewhere, path, packaged):
    with pytest.raises(ScenarioNotFound) as exc:
        find_scenario_path(path)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path} does not exist in {elsewhere}")
    assert packaged.format(root=ROOT / "scenarios") in msg
    assert isinstance(exc.value, ScenarioError) and isinstance(exc.value, FileNotFoundError)


def test_an_absolute_path_is_never_looked_up_in_the_package(elsewhere):
    with pytest.raises(ScenarioNotFound, match=f"{elsewhere}/smoke.yaml does not exist in {elsewhere} "):
        find_scenario_path(elsewhere / "smoke.yaml")


def test_a_wheel_layout_uses_the_scenarios_inside_the_package(tmp_path, elsewhere, monkeypatch):
    pkg = tmp_path / "site-packages" / "harness"
    (pkg / "scenarios" / "zoo").mkdir(parents=True)
    (pkg / "scenarios" / "smoke.yaml").write_text("name: smoke\n")
    monkeypatch.setattr(locate, "files", lambda name: pkg)
    assert packaged_scenarios() == pkg / "scenarios"
    assert find_scenario_path("scenarios/smoke.yaml") == pkg / "scenarios" / "smoke.yaml"
    assert find_scenario_path("zoo") == pkg / "scenarios" / "zoo"
    with pytest.raises(ScenarioNotFound, match=f"packaged scenarios \\({pkg}/scenarios/chaos.yaml\\)"):
        find_scenario_path("scenarios/chaos.yaml")


def test_build_py_puts_every_scenario_into_the_package_and_locate_finds_them_there(tmp_path):
    """What `pip wheel .` / `python -m build` run: setup.py's build_py (its egg-info in tmp, not
    in the clone); then, from another folder with only the built package on sys.path, the
    packaged scenarios are the copies."""
    lib, egg = tmp_path / "lib", tmp_path / "egg"
    egg.mkdir()
    res = subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(egg),
                          "build_py", "--build-lib", str(lib)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    want = sorted(p.relative_to(ROOT / "scenarios") for p in (ROOT / "scenarios").rglob("*.yaml"))
    got = sorted(p.relative_to(lib / "harness" / "scenarios") for p in (lib / "harness" / "scenarios").rglob("*.yaml"))
    assert got == want and len(want) > 40 and Path("zoo/acks1-unclean.yaml") in got
    away = tmp_path / "away"
    away.mkdir()
    code = ("from harness.run.locate import find_scenario_path as f; "
            "print(f('scenarios/smoke.yaml')); print(f('zoo'))")
    env = {**os.environ, "PYTHONPATH": str(lib)}
    res = subprocess.run([sys.executable, "-c", code], cwd=away, capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(lib / "harness" / "scenarios" / "smoke.yaml"),
                                  str(lib / "harness" / "scenarios" / "zoo")]


def test_manifest_puts_the_scenarios_into_the_sdist():
    assert "recursive-include scenarios *.yaml" in (ROOT / "MANIFEST.in").read_text().splitlines()


def test_run_dry_run_and_explore_find_the_packaged_scenario_from_another_folder(elsewhere):
    from harness.cli.main import app

    runner = CliRunner()
    res = runner.invoke(app, ["run", "scenarios/nope.yaml", "--dry-run"])
    assert res.exit_code == 2
    assert "nor among the packaged scenarios" in " ".join(res.output.split())
    res = runner.invoke(app, ["explore", "scenarios/nope.yaml", "--budget-s", "1"])
    assert res.exit_code == 2
    assert "nor among the packaged scenarios" in " ".join(res.output.split())
    # found: explore gets past loading and stops at a bad option (no run, no root needed)
    res = runner.invoke(app, ["explore", "scenarios/smoke.yaml", "--runs-per-example", "0"])
    assert res.exit_code == 2 and "--runs-per-example must be at least 1" in res.output, res.output


def test_run_hands_the_found_path_on(elsewhere, monkeypatch):
    """`eos-chaos run scenarios/smoke.yaml --dry-run` from another folder loads the packaged file
    and passes its path on (as the run's source); preflight itself is tested elsewhere."""
    import typer

    from harness.cli import main

    seen = {}

    def dry(scn, source):
        seen.update(name=scn.name, source=source)
        raise typer.Exit(0)

    monkeypatch.setattr(main, "_dry_run", dry)
    res = CliRunner().invoke(main.app, ["run", "scenarios/smoke.yaml", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert seen == {"name": "smoke", "source": ROOT / "scenarios" / "smoke.yaml"}
