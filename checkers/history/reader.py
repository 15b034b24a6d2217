"""Reading a history file in parts on worker threads (parse, classify, tokenize), or a list
of event dicts, into ``_Events``."""

from __future__ import annotations

import io
import json
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import polars as pl

from ..timing import laps
from .events import _Events
from .model import BULK_FS, EVENT_TYPES
from .tokens import _SEND_PREFIX, VALUE_GRAMMAR, _tokenize

try:  # orjson parses JSON several times faster; json is the fallback
    import orjson as _orjson

    _loads = _orjson.loads
    _DecodeError: tuple[type[BaseException], ...] = (_orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads
    _DecodeError = (ValueError,)

_PART_BYTES = 16 << 20  # a file is read in parts of at most about this size
_WORKERS = max(1, min(4, os.cpu_count() or 1))


_NDJSON_SCHEMA = {
    "index": pl.Int64, "time": pl.Int64, "process": pl.String, "type": pl.String,
    "f": pl.String, "value": pl.String,
    "meta": pl.Struct({"transactional_id": pl.String, "group_id": pl.String,
                       "final": pl.Boolean, "commit_ns": pl.Int64}),
    "error": pl.String,
}
_BISECT_MIN = 64  # below this many lines, a failing range is read line by line


def _last_line(fh, size: int) -> tuple[int, bytes | None]:
    """(start offset, content) of the file's last non-blank line, or (size, None)."""
    pos, buf = size, b""
    while pos > 0:
        step = min(1 << 16, pos)
        pos -= step
        fh.seek(pos)
        buf = fh.read(step) + buf
        s = buf.rstrip()
        if not s:
            continue
        nl = s.rfind(b"\n")
        if nl >= 0:
            return pos + nl + 1, s[nl + 1:]
        if pos == 0:
            return 0, s
    return size, None


def _line_starts(data: bytes) -> np.ndarray:
    """Start offset of every physical line (split at b"\\n", as iterating a file does)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    parts = [np.zeros(1, np.int64)] if len(data) else [np.zeros(0, np.int64)]
    step = 1 << 24
    for s in range(0, len(arr), step):
        parts.append(np.flatnonzero(arr[s:s + step] == 10).astype(np.int64) + (s + 1))
    starts = np.concatenate(parts)
    if len(starts) and starts[-1] >= len(data):
        starts = starts[:-1]  # the newline that ends the file opens no line
    return starts


def _lines_with(data: bytes, starts: np.ndarray, byte: int) -> np.ndarray:
    """Line numbers (0-based) of the lines holding ``byte``."""
    if data.find(bytes([byte])) < 0:
        return np.zeros(0, np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    step = 1 << 24
    hits = np.concatenate([np.flatnonzero(arr[s:s + step] == byte).astype(np.int64) + s
                           for s in range(0, len(arr), step)])
    return np.unique(np.searchsorted(starts, hits, side="right") - 1)


def _classify(df: pl.DataFrame, slow: pl.Series) -> tuple[pl.DataFrame, list[int]]:
    """(regular rows as event columns + value text, positions of the other rows)."""
    regular = (
        pl.col("index").is_not_null() & pl.col("type").is_in(EVENT_TYPES)
        & pl.col("f").is_in(list(BULK_FS))
        & pl.col("process").cast(pl.Int64, strict=False).is_not_null()
        & (pl.col("value").is_null() | pl.col("value").str.contains(VALUE_GRAMMAR))
        & (pl.col("error").is_null() | pl.col("error").str.starts_with("["))
    )
    if len(slow):
        regular = regular & ~pl.col("pos").is_in(slow.implode())
    mask = df.select(regular.fill_null(False)).to_series()
    odd = df["pos"].filter(~mask).to_list()
    # one pass: only the kept rows and columns are materialised
    fast = df.lazy().filter(mask).select(
        "pos", "index", "time", pl.col("process").cast(pl.Int64, strict=False), "type", "f",
        tid=pl.col("meta").struct.field("transactional_id"),
        gid=pl.col("meta").struct.field("group_id"),
        final=pl.col("meta").struct.field("final").fill_null(False),
        commit=pl.col("meta").struct.field("commit_ns"),
        err=pl.when(pl.col("error").str.starts_with('["'))
        .then(pl.col("error").str.extract(r'^\["([^"]*)"', 1)),
        fast=pl.lit(True),
        nsend=pl.col("value").str.count_matches(_SEND_PREFIX, literal=True)
        .fill_null(0).cast(pl.Int64),
        value="value",
    ).collect()
    return fast, odd


@dataclass
class _Part:
    """What one part of a file yields (``_read_part``)."""

    n_lines: int
    starts: np.ndarray  # byte offset of each line in the part
    fast: pl.DataFrame | None  # regular events: _EV_SCHEMA columns
    tokens: pl.DataFrame | None  # completion micro-ops: rid = position, ord, kind, key, ...
    keys: list[str]  # key names of tokens["key"]
    odd: list[tuple[int, bytes]]  # (position, line) to read one by one, in order


def _read_part(data: bytes, line0: int) -> _Part:
    """Parse, classify and tokenize one part of a file: whole lines, the first of which is
    line ``line0`` (0-based) of the file. Runs on a worker thread: no shared state."""
    starts = _line_starts(data)
    n_lines = len(starts)
    ends = np.empty(n_lines, np.int64)
    if n_lines:
        ends[:-1] = starts[1:] - 1
        ends[-1] = len(data) - 1 if data.endswith(b"\n") else len(data)
    arr = np.frombuffer(data, dtype=np.uint8)

    def line(k: int) -> bytes:
        return data[starts[k]:ends[k]]

    def nonblank(lo: int, hi: int) -> np.ndarray:
        """Lines in [lo, hi) that polars reads as a row (not empty or space/tab/CR only)."""
        s, e = starts[lo:hi], ends[lo:hi]
        first = np.where(e > s, arr[np.minimum(s, max(len(arr) - 1, 0))], 32) if len(arr) else \
            np.full(len(s), 32, np.uint8)
        cand = np.isin(first, (32, 9, 13))
        keep = ~cand
        for i in np.flatnonzero(cand):
            keep[i] = bool(data[s[i]:e[i]].strip(b" \t\r"))
        return np.flatnonzero(keep).astype(np.int64) + lo

    frames: list[tuple[pl.DataFrame, np.ndarray]] = []
    exact: list[int] = []  # local lines to read one by one (orjson)

    def parse(lo: int, hi: int) -> None:
        rows = nonblank(lo, hi)
        if not len(rows):
            return
        whole = lo == 0 and hi == n_lines
        if hi - lo > _BISECT_MIN or whole:
            try:
                chunk = data if whole else io.BytesIO(data[starts[lo]:ends[hi - 1]])
                df = pl.read_ndjson(chunk, schema=_NDJSON_SCHEMA, ignore_errors=True)
                if df.height == len(rows):
                    frames.append((df, rows))
                    return
            except Exception:  # noqa: BLE001 - a garbled line somewhere in the range: bisected below, reported there
                pass
        if hi - lo <= _BISECT_MIN:  # read one by one; blank as Python strips (\x0b, \x0c)
            exact.extend(int(k) for k in rows if line(int(k)).strip())
            return
        mid = (lo + hi) // 2
        parse(lo, mid)
        parse(mid, hi)

    if n_lines:
        parse(0, n_lines)
    parse = None  # noqa: F841 - the closure refers to itself: break the cycle, free ``data``
    fast = tokens = None
    keys: list[str] = []
    odd_pos: list[int] = []
    if frames:
        df = pl.concat([f for f, _ in frames]) if len(frames) > 1 else frames[0][0]
        pos = np.concatenate([r for _, r in frames]) if len(frames) > 1 else frames[0][1]
        frames.clear()
        slow = _lines_with(data, starts, 92) + line0  # backslashes: strings to unescape
        df = df.with_columns(pos=pl.Series(pos + line0, dtype=pl.Int64))
        fast, odd_pos = _classify(df, pl.Series(slow, dtype=pl.Int64))
        del df
        comp = fast.filter((pl.col("type") != "invoke") & pl.col("value").is_not_null())
        tokens, keys = _tokenize(comp["pos"], comp["value"])
        del comp
        fast = fast.drop("value")
    odd = sorted([(k, line(k - line0)) for k in odd_pos] + [(k + line0, line(k)) for k in exact])
    return _Part(n_lines, starts, fast, tokens, keys, odd)


def _read_file(path: Path) -> _Events:
    ev = _Events(lambda p: f"line {p + 1}")
    parts: list[_Part] = []
    offsets: list[int] = []
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        last_start, last = _last_line(fh, size)
        if last is not None:
            try:
                _loads(last)
            except _DecodeError:
                ev.truncated = True
        end = last_start if ev.truncated else size
        # parts of about _PART_BYTES, cut after a newline; parsed on worker threads, at
        # most _WORKERS at a time (bounded memory)
        pending: deque = deque()
        # small files are cut too, so that every core has a part
        part = min(_PART_BYTES, max(4 << 20, -(-end // (2 * _WORKERS))))
        with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
            pos = line0 = 0
            while pos < end:
                fh.seek(pos)
                data = fh.read(min(part, end - pos))
                if pos + len(data) < end and not data.endswith(b"\n"):
                    data += fh.readline()
                offsets.append(pos)
                pending.append(pool.submit(_read_part, data, line0))
                line0 += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
                pos += len(data)
                del data
                while len(pending) >= _WORKERS:
                    parts.append(pending.popleft().result())
            while pending:
                parts.append(pending.popleft().result())
    laps("load: parse + classify + tokenize parts")
    n_lines = sum(p.n_lines for p in parts)
    if ev.truncated:
        ev.problems.add(n_lines, 0, f"line {n_lines + 1}: truncated or garbled last line dropped")
    starts = (np.concatenate([p.starts + o for p, o in zip(parts, offsets)])
              if parts else np.zeros(0, np.int64))
    fast = [p.fast for p in parts if p.fast is not None and p.fast.height]
    ev.fast = pl.concat(fast) if fast else None
    ev.n_events += ev.fast.height if ev.fast is not None else 0
    toks = []
    for p in parts:
        if p.tokens is not None and p.tokens.height:
            gmap = pl.Series(ev.key_ids(p.keys), dtype=pl.UInt32)
            toks.append(p.tokens.with_columns(key=gmap.gather(p.tokens["key"])))
        p.fast = p.tokens = None
    ev.tokens = pl.concat(toks) if toks else None
    del toks, fast
    for p in parts:
        for k, raw_line in p.odd:
            try:
                e = _loads(raw_line)
            except _DecodeError:
                ev.garbled += 1
                ev.problems.add(k, 0, f"line {k + 1}: garbled line skipped")
                continue
            ev.event(e, k)
    parts.clear()
    laps("load: odd lines one by one")

    def raw(k: int) -> Any:  # a line again, from the file (its bytes are not kept)
        try:
            with open(path, "rb") as fh:
                fh.seek(int(starts[k]))
                return _loads(fh.readline())
        except (OSError, IndexError, *_DecodeError):
            return None

    ev.raw = raw
    return ev


def _read_events(source: Iterable[Any]) -> _Events:
    try:
        it = iter(source)
    except TypeError:
        raise TypeError("load_history takes a path or an iterable of event dicts") from None
    ev = _Events(lambda p: f"event #{p}")
    for i, e in enumerate(it):
        ev.event(e, i)
    return ev

