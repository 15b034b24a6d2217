"""Find a scenario, suite, zoo selection or the zoo folder from any working directory.

``find_scenario_path("scenarios/smoke.yaml")`` is the path itself when it exists relative to
the current folder (or is absolute and exists); otherwise a path that starts with
``scenarios/``, or a bare name (``smoke.yaml``, ``zoo``), is looked up in the scenarios that
ship with the package: ``harness/scenarios/`` inside an installed wheel (pyproject.toml /
setup.py copy the repository's top-level ``scenarios/`` there), the repository's own
``scenarios/`` in a clone or an editable install. Anything else, or a name found in neither
place, raises ScenarioNotFound with one line naming both places looked at.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from harness.run.scenario import ScenarioError


class ScenarioNotFound(ScenarioError, FileNotFoundError):
    """A scenario path found neither as given nor among the packaged scenarios."""


def packaged_scenarios() -> Path:
    """The scenarios folder that ships with the package: ``harness/scenarios`` in a wheel,
    else the repository's top-level ``scenarios`` beside the ``harness`` package (a clone or
    an editable install). The path may not exist (a wheel built without them)."""
    pkg = Path(str(files("harness")))
    inside = pkg / "scenarios"
    return inside if inside.is_dir() else pkg.parent / "scenarios"


def find_scenario_path(path: str | Path) -> Path:
    """``path`` when it exists as given (relative to the current folder); else the packaged
    scenarios' file or folder for ``scenarios/...``, a bare file name or ``zoo``; else
    ScenarioNotFound (a ScenarioError and a FileNotFoundError) naming both places looked at."""
    p = Path(path)
    if p.exists():
        return p
    root = packaged_scenarios()
    parts = p.parts
    rel = None
    if not p.is_absolute() and parts:
        if parts[0] == "scenarios" and len(parts) > 1:
            rel = Path(*parts[1:])
        elif len(parts) == 1 and parts[0] not in (".", ".."):
            rel = p
    if rel is not None and (root / rel).exists():
        return root / rel
    where = Path.cwd() if not p.is_absolute() else p.parent
    if rel is None:
        raise ScenarioNotFound(f"{path} does not exist in {where} (only scenarios/... or a bare file name is also "
                               f"looked up among the packaged scenarios, {root})")
    raise ScenarioNotFound(f"{path} does not exist in {where} nor among the packaged scenarios ({root / rel})")
