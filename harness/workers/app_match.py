"""How an output record of a user's application names the input it came from (``output.match``).

The harness writes unique integer values (as ASCII digits) to the input topics; the app's
output record must carry one of them somewhere. ``compile_match(spec)`` returns
``fn(key: bytes | None, value: bytes | None) -> int | None`` (None: the record names no input):

* ``"value"``: the record's value is the input value (a copy service).
* ``"key"``: the record's key is the input value.
* ``{"json": "a.b.0"}``: the value is JSON; the dotted path (object keys, list indexes) leads
  to the input value (an integer, or a string of digits).
* ``{"regex": "id=(\\d+)"}``: the first group (or the whole match) of the first match in the
  value, decoded as UTF-8.
* ``{"python": "module:function"}``: the user's own function of (key, value), importable from
  the scenario's folder; it returns the input value or None.
* ``"none"``: no output record names an input (an aggregation checked by ``output.verify``,
  the user's own verifier, instead of record by record).

Raises ValueError for a spec it does not know (checked when the scenario loads, so a typo
never reaches a run).
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from typing import Any, Callable

Match = Callable[[bytes | None, bytes | None], int | None]


def _int(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, (bytes, bytearray)):
        x = x.decode("utf-8", "replace")
    if isinstance(x, str) and x.strip().lstrip("-").isdigit():
        return int(x.strip())
    return None


def _json_path(path: str) -> Match:
    parts = [p for p in path.split(".") if p]

    def fn(key, value):
        try:
            doc = json.loads(value) if value is not None else None
        except ValueError:
            return None
        for p in parts:
            if isinstance(doc, dict) and p in doc:
                doc = doc[p]
            elif isinstance(doc, list) and p.lstrip("-").isdigit() and -len(doc) <= int(p) < len(doc):
                doc = doc[int(p)]
            else:
                return None
        return _int(doc)
    return fn


def _regex(pattern: str) -> Match:
    rx = re.compile(pattern)

    def fn(key, value):
        if value is None:
            return None
        m = rx.search(value.decode("utf-8", "replace"))
        if not m:
            return None
        return _int(m.group(1) if m.groups() else m.group(0))
    return fn


def _python(ref: str, base_dir: str | None) -> Match:
    mod, _, name = ref.partition(":")
    if base_dir and base_dir not in sys.path:
        sys.path.insert(0, base_dir)
    fn = getattr(importlib.import_module(mod), name)

    def call(key, value):
        try:
            return _int(fn(key, value))
        except Exception:  # a user's function that fails on a record: that record names no input
            return None
    return call


def check_spec(spec: Any) -> None:
    """Raise ValueError unless ``spec`` is a match this module knows (module docstring)."""
    if spec in ("value", "key", "none"):
        return
    if isinstance(spec, dict) and len(spec) == 1:
        (kind, arg), = spec.items()
        if kind in ("json", "python") and isinstance(arg, str) and arg:
            if kind == "python" and ":" not in arg:
                raise ValueError(f"match {{python: {arg!r}}}: give module:function")
            return
        if kind == "regex" and isinstance(arg, str):
            try:
                re.compile(arg)
            except re.error as e:
                raise ValueError(f"match {{regex: {arg!r}}} is not a regular expression: {e}") from None
            return
    raise ValueError(f"match {spec!r}: use value, key, none, {{json: PATH}}, {{regex: RE}} or {{python: 'module:function'}}")


def compile_match(spec: Any, base_dir: str | None = None) -> Match:
    """The function ``spec`` names (module docstring); ``base_dir`` is put on sys.path for
    ``{python: ...}``. Raises ValueError (unknown spec) or ImportError/AttributeError (a
    python function that cannot be found)."""
    check_spec(spec)
    if spec == "value":
        return lambda key, value: _int(value)
    if spec == "key":
        return lambda key, value: _int(key)
    if spec == "none":
        return lambda key, value: None
    (kind, arg), = spec.items()
    if kind == "json":
        return _json_path(arg)
    if kind == "regex":
        return _regex(arg)
    return _python(arg, base_dir)
