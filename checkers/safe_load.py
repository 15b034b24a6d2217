"""YAML and JSON read with limits: a file typed by hand or left by another tool can be wrong,
never a way to hang or crash the harness.

Every YAML file the project reads (scenario, suite and zoo files, a run folder's
scenario.yaml) goes through ``load_yaml`` / ``read_yaml``; meta.json and verdict.json through
``load_json`` / ``read_json``. Limits (module constants):

* size: at most ``MAX_YAML_BYTES`` of YAML, ``MAX_JSON_BYTES`` of JSON;
* depth: at most ``MAX_DEPTH`` nested collections (a deeper document raised RecursionError);
* alias expansion (YAML): at most ``MAX_NODES`` nodes with every alias expanded, so a
  "billion laughs" document is refused before anything walks it, and no alias may refer to
  the collection it is in (a recursive document).

A document beyond a limit raises ``YAMLLimitError`` (a ``yaml.YAMLError`` and a ValueError,
so a caller's "not valid YAML" handling applies) or ``JSONLimitError`` (a ValueError), with
one line saying which limit. This module lives in checkers because the checkers read a run
folder's files and must not import harness; the harness imports it.
"""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_YAML_BYTES = 256 << 10
MAX_JSON_BYTES = 256 << 20
MAX_DEPTH = 64
MAX_NODES = 20_000


class YAMLLimitError(yaml.YAMLError, ValueError):
    """A YAML document beyond a limit of this module (size, depth, alias expansion)."""


class JSONLimitError(ValueError):
    """A JSON document beyond a limit of this module (size, depth)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses, while composing, documents nested deeper than ``max_depth``
    (before Python's recursion limit is near) or with more than ``max_nodes`` nodes."""

    def __init__(self, stream: str, max_depth: int, max_nodes: int) -> None:
        super().__init__(stream)
        self._depth = self._nodes = 0
        self._max_depth, self._max_nodes = max_depth, max_nodes

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > self._max_depth:
                mark = self.peek_event().start_mark
                raise YAMLLimitError(f"nested deeper than {self._max_depth} levels (line {mark.line + 1})")
            if self._nodes > self._max_nodes:
                mark = self.peek_event().start_mark
                raise YAMLLimitError(f"more than {self._max_nodes:,} nodes (line {mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(root: yaml.Node, max_nodes: int, max_depth: int) -> int:
    """Nodes of ``root`` with every alias expanded (a node shared by aliases counts each
    time), computed without expanding: sizes are memoised per node. Raises YAMLLimitError
    beyond ``max_nodes`` or ``max_depth`` (expanded), or for a node that contains itself."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    # iterative post-order walk: (node, children done?)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > max_nodes:
                raise YAMLLimitError(f"more than {max_nodes:,} nodes once its aliases are expanded "
                                     f"(line {node.start_mark.line + 1}): an alias bomb?")
            if depth[key] > max_depth:
                raise YAMLLimitError(f"nested deeper than {max_depth} levels once its aliases are "
                                     f"expanded (line {node.start_mark.line + 1})")
            continue
        if key in size:
            continue
        if key in on_path:
            raise YAMLLimitError(f"an alias refers to a collection that contains it "
                                 f"(line {node.start_mark.line + 1}): a recursive document")
        on_path.add(key)
        stack.append((node, True))
        for k in _children(node):
            if id(k) in on_path:
                raise YAMLLimitError(f"an alias refers to a collection that contains it "
                                     f"(line {k.start_mark.line + 1}): a recursive document")
            if id(k) not in size:
                stack.append((k, False))
    return size[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    return []


_QUOTED = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|#[^\n]*""")


def _depth(data: bytes) -> int:
    """Deepest bracket nesting of ``data`` ([ and { open, ] and } close), vectorised.
    numpy is imported here, not at module top: worker processes import this module (through
    the run contract) and must start fast; only deep-looking texts get here."""
    import numpy as np

    arr = np.frombuffer(data, dtype=np.uint8)
    step = np.zeros(len(arr), np.int32)
    step[(arr == 0x5B) | (arr == 0x7B)] = 1
    step[(arr == 0x5D) | (arr == 0x7D)] = -1
    return int(np.cumsum(step).max(initial=0))


def _flow_depth(text: str) -> int:
    """Deepest nesting of flow collections ([...], {...}) in YAML text, quoted strings and
    comments skipped (a bracket inside a plain scalar counts: an overestimate at worst)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0
    return _depth(_QUOTED.sub("", text).encode("utf-8"))


def file_problem(path: str | Path) -> str | None:
    """None when ``path`` is a regular file (through symlinks); else what it is, as the end of a
    sentence: "does not exist", "is a directory", "is a FIFO (named pipe)", "is a character
    device", ... Reading a FIFO or a device would block or never end: callers refuse them."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return "is a broken symbolic link" if p.is_symlink() else "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISDIR, "is a directory"), (stat.S_ISFIFO, "is a FIFO (named pipe)"),
                       (stat.S_ISCHR, "is a character device"), (stat.S_ISBLK, "is a block device"),
                       (stat.S_ISSOCK, "is a socket")):
        if test(mode):
            return what
    return "is not a regular file"


def load_yaml(text: str | bytes, *, max_bytes: int = MAX_YAML_BYTES, max_depth: int = MAX_DEPTH,
              max_nodes: int = MAX_NODES) -> Any:
    """``yaml.safe_load(text)`` within the limits. Raises YAMLLimitError beyond one,
    yaml.YAMLError for text that is not YAML, UnicodeDecodeError for bytes not UTF-8."""
    size = len(text.encode("utf-8") if isinstance(text, str) else text)
    if size > max_bytes:
        raise YAMLLimitError(f"{size:,} bytes, more than the {max_bytes:,} a YAML file may have")
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if _flow_depth(text) > max_depth:  # PyYAML scans a flow collection whole before its first node
        raise YAMLLimitError(f"nested deeper than {max_depth} levels ([ and {{ brackets)")
    loader = _Loader(text, max_depth, max_nodes)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, max_nodes, max_depth)
        return loader.construct_document(node)
    except RecursionError:  # a limit above should come first; never a traceback
        raise YAMLLimitError(f"nested too deep to read (limit {max_depth} levels)") from None
    finally:
        loader.dispose()


def read_yaml(path: str | Path, **limits: Any) -> Any:
    """``load_yaml`` of a file. Raises OSError, UnicodeDecodeError, yaml.YAMLError
    (YAMLLimitError among them). A file larger than the limit is not read whole."""
    p = Path(path)
    max_bytes = limits.get("max_bytes", MAX_YAML_BYTES)
    with open(p, "rb") as fh:
        data = fh.read(max_bytes + 1)
    return load_yaml(data, **limits)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def json_depth(data: bytes) -> int:
    """Deepest nesting of arrays and objects in a JSON text (brackets inside strings skipped)."""
    opens = data.count(b"[") + data.count(b"{")
    if not opens:
        return 0
    return _depth(_STRING.sub(b'""', data) if b'"' in data else data)


def load_json(text: str | bytes, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)`` within the limits. Raises JSONLimitError beyond one,
    ValueError (json.JSONDecodeError, UnicodeDecodeError) for text that is not JSON."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if len(data) > max_bytes:
        raise JSONLimitError(f"{len(data):,} bytes, more than the {max_bytes:,} a JSON file may have")
    depth = json_depth(data)
    if depth > max_depth:
        raise JSONLimitError(f"nested {depth} levels deep, more than {max_depth}")
    return json.loads(data)


def read_json(path: str | Path, **limits: Any) -> Any:
    """``load_json`` of a file. Raises OSError, ValueError (JSONLimitError among them)."""
    max_bytes = limits.get("max_bytes", MAX_JSON_BYTES)
    with open(Path(path), "rb") as fh:
        data = fh.read(max_bytes + 1)
    return load_json(data, **limits)
