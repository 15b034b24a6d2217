"""Reading a run's files tolerantly: a run that died mid-way still gets a report."""
from __future__ import annotations

import contextlib
import gc
import json
from pathlib import Path
from typing import Any

import orjson
import yaml


def _loads(raw: bytes) -> Any:
    """orjson first (several times faster on big histories), json for what it refuses
    (NaN, integers beyond 64 bits); None when neither can read the line."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None


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


def read_history(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Events of a history.jsonl, and warnings about lines that could not be read.

    A truncated last line (the run died while writing it) is skipped with a warning, as is any
    other unreadable line; a missing file gives an empty history.
    """
    if not path.exists():
        return [], [f"{path.name} is missing: the report shows no history."]
    with path.open("rb") as fh:
        lines = fh.read().split(b"\n")
    with gc_paused():
        return _parse_lines(path, lines)


def _parse_lines(path: Path, lines: list[bytes]) -> tuple[list[dict[str, Any]], list[str]]:
    warnings: list[str] = []
    events: list[dict[str, Any]] = []
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    bad_middle = 0
    for i, raw in enumerate(lines[: last + 1]):
        if not raw or raw.isspace():
            continue
        event = _loads(raw)
        if not isinstance(event, dict):
            if i == last:
                warnings.append(
                    f"The last line of {path.name} (line {i + 1}) is truncated or unreadable and "
                    "was ignored: the run probably died while writing it."
                )
            else:
                bad_middle += 1
            continue
        events.append(event)
    if bad_middle:
        warnings.append(f"{bad_middle} unreadable line(s) inside {path.name} were ignored.")
    return events, warnings


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
