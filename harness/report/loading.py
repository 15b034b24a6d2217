"""Reading a run's small files tolerantly: a run that died mid-way still gets a report.
history.jsonl is the checkers' to read (checkers.history, through harness.report.ops)."""
from __future__ import annotations

import contextlib
import gc
from pathlib import Path
from typing import Any

import yaml

from checkers import safe_load


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector: building a big history's hundreds of thousands of
    small containers otherwise triggers full collections over and over (10x the parse time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_json(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A run's JSON file (meta.json, verdict.json) read with the limits of checkers.safe_load:
    (data, warnings), data None with one warning when it is missing or cannot be read."""
    if not path.exists():
        return None, [f"{path.name} is missing."]
    try:
        data = safe_load.read_json(path)
    except (OSError, ValueError) as exc:  # a directory, not UTF-8 or JSON, beyond the limits
        return None, [f"{path.name} could not be read: {_one_line(exc)}"]
    if not isinstance(data, dict):
        return None, [f"{path.name} does not hold a JSON object."]
    return data, []


def read_yaml(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """A run's scenario.yaml read with the limits of checkers.safe_load (alias expansion,
    depth, size): (data, warnings) as read_json."""
    if not path.exists():
        return None, [f"{path.name} is missing."]
    try:
        data = safe_load.read_yaml(path)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return None, [f"{path.name} could not be read: {_one_line(exc)}"]
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return None, [f"{path.name} does not hold a mapping."]
    return data, []


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
