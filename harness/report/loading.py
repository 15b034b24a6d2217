"""Reading a run's small files tolerantly: a run that died mid-way still gets a report.
history.jsonl is the checkers' to read (checkers.history, through harness.report.ops)."""
from __future__ import annotations

import contextlib
import gc
import json
from pathlib import Path
from typing import Any

import yaml


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
    if not path.exists():
        return None, [f"{path.name} is missing."]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, [f"{path.name} could not be read: {exc}"]
    if not isinstance(data, dict):
        return None, [f"{path.name} does not hold a JSON object."]
    return data, []


def read_yaml(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    if not path.exists():
        return None, [f"{path.name} is missing."]
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, [f"{path.name} could not be read: {exc}"]
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return None, [f"{path.name} does not hold a mapping."]
    return data, []
