"""Tolerant reader of a run's history (``history.jsonl``, shared/design/HISTORY.md).

``load_history(source)`` never raises on bad content: a truncated or garbled last line is
dropped, garbled lines in the middle are skipped, malformed events and micro-operations are
skipped, and every such thing is recorded in ``History.problems`` (strings, in file order).
It raises only ``FileNotFoundError``/``OSError`` when ``source`` is a path that cannot be read
and ``TypeError`` when ``source`` is neither a path nor an iterable of event dicts.

An *op* is an invoke paired with its completion: the next event of the same process
(Jepsen ``history.clj`` pairing). An invoke with no completion by the end reads as ``info``.
Completions with no open invoke are reported and ignored. Nemesis events
(``process == "nemesis"``) are kept apart in ``History.nemesis``.

Columnar layout (polars):

``History.ops`` - one row per op, ordered by ``invoke_index`` (row number == ``op``):
    op (u32), invoke_index (i64), complete_index (i64, null if none), process (i64),
    f (categorical), type ("ok" | "fail" | "info"), invoke_time / complete_time (i64 ns since
    run start; complete_time null if none), transactional_id (str|null), group_id
    (str|null), final (bool: meta.final on invoke or completion), error (str|null: error
    name), commit_time (i64 ns|null: the completion's ``meta.commit_ns``, when the client
    asked to commit; a zombie paused inside the commit completes long after it).

``History.mops`` - one row per micro-op, ordered by (op, seq):
    op (u32), seq (u32, order inside the op; a poll's records keep the consumer's order),
    kind ("send" | "poll"), key (u32 id into ``History.keys``), offset (i64|null), value (i64).
    A send appears once, with the offset its completion reported (null if unknown); a poll
    micro-op contributes one row per returned record.

``History.extras`` maps op id -> {"value", "completion_value", "meta"} for ops other than
send/poll/txn (``assign``, ``subscribe``, ``init``, unknown ``f``s): they are few.

How a file is read (the fast path; see docs/checkers.md "The loader"):

0. The file is read in parts of at most 16 MB cut at line ends, each parsed, classified and
   tokenized on a worker thread (one per core; polars and numpy release the GIL), so its
   bytes and JSON texts are never all in memory at once.
1. polars parses the JSON Lines natively (``pl.read_ndjson`` with a fixed schema: the
   top-level fields typed, ``meta`` as a struct of the four fields the checkers use,
   ``value`` and ``error`` re-serialised by polars as canonical JSON text). A part with
   garbled lines fails as a whole; it is then bisected by line ranges down to blocks of
   _BISECT_MIN lines, read line by line with orjson (failures are garbled lines).
2. A line is *regular* when its fields have the expected types, its ``f`` is send/poll/txn,
   its ``value`` matches the micro-op grammar exactly (a regular expression over the
   canonical text; integers of at most 18 digits) and the raw line holds no backslash (so
   no string needs unescaping). Every other line (nemesis events, assign/init/..., anything
   odd) is parsed again with orjson and goes through the exact per-event code below, the
   same code that reads a list of event dicts.
3. Regular completion values are cut into tokens by one ``str.extract_all`` (a send's key,
   a poll's key, integers, ``null``) and numpy turns the token stream into micro-op rows.
   Invoke values are not tokenized: the few invokes whose sends their completion does not
   list are read again from the file.
4. Invokes are paired with completions by sorting events by (process, position) and
   comparing each with its neighbour: no Python loop over events.
"""

from __future__ import annotations

import gc
import io
import json
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import polars as pl

from .timing import laps

try:  # orjson parses JSON several times faster; json is the fallback
    import orjson as _orjson

    _loads = _orjson.loads
    _DecodeError: tuple[type[BaseException], ...] = (_orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads
    _DecodeError = (ValueError,)

#: fs whose values are lists of micro-operations (HISTORY.md "Micro-operations")
BULK_FS = frozenset({"send", "poll", "txn"})
COMPLETION_TYPES = frozenset({"ok", "fail", "info"})
EVENT_TYPES = ["invoke", "ok", "fail", "info"]
MAX_PROBLEMS = 200  # beyond this, problems are only counted

SEND, POLL = "send", "poll"
KIND = pl.Enum([SEND, POLL])
TYPE = pl.Enum(["ok", "fail", "info"])
END = 1 << 62  # problem position of what is only known at the end of the history
_LOCKS_LOCK = threading.Lock()


@dataclass
class History:
    """A parsed history. See the module docstring for the column shapes."""

    ops: pl.DataFrame
    mops: pl.DataFrame
    keys: list[str]
    nemesis: list[dict] = field(default_factory=list)
    extras: dict[int, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    n_events: int = 0
    n_problems: int = 0
    truncated: bool = False
    garbled_lines: int = 0
    _cache: dict = field(default_factory=dict, repr=False)
    _locks: dict = field(default_factory=dict, repr=False)

    def key_name(self, key_id: int) -> str:
        return self.keys[key_id]

    def cached(self, name, build):
        """Memoise a derived frame (the log, writes, reads) shared by several finders.
        Thread-safe: finders run concurrently, and each frame is built once."""
        try:
            return self._cache[name]
        except KeyError:
            pass
        with _LOCKS_LOCK:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self._cache:
                self._cache[name] = build(self)
            return self._cache[name]

    def drop_cached(self, *names) -> None:
        """Forget derived frames no finder will ask for again (peak memory)."""
        for n in names:
            self._cache.pop(n, None)

    def op_ref(self, op: int) -> dict:
        """Data naming one op: indices, process, f, type, transactional_id."""
        row = self.ops.row(op, named=True)
        return {
            "op": op,
            "invoke_index": row["invoke_index"],
            "complete_index": row["complete_index"],
            "process": row["process"],
            "f": row["f"],
            "type": row["type"],
            "transactional_id": row["transactional_id"],
        }


# -- problems -------------------------------------------------------------------------------

class _Problems:
    """Problem messages with a sort key (position in the source, sub-order); only the first
    MAX_PROBLEMS by that order are kept, all are counted."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, int, str]] = []
        self.count = 0

    def _prune(self) -> None:
        if len(self.items) > 8 * MAX_PROBLEMS:
            self.items = sorted(self.items)[:MAX_PROBLEMS]

    def add(self, pos: int, sub: int, msg: str) -> None:
        self.count += 1
        self.items.append((pos, sub, len(self.items), msg))
        self._prune()

    def add_first(self, count: int, first: Iterable[tuple[int, int, str]]) -> None:
        """``count`` problems of one kind, of which ``first`` (at least the MAX_PROBLEMS
        earliest) are spelled out."""
        self.count += count
        for pos, sub, msg in first:
            self.items.append((pos, sub, len(self.items), msg))
        self._prune()

    def result(self) -> list[str]:
        return [m for *_, m in sorted(self.items)[:MAX_PROBLEMS]]


# -- events ---------------------------------------------------------------------------------

_EV_SCHEMA = {
    "pos": pl.Int64, "index": pl.Int64, "time": pl.Int64, "process": pl.Int64,
    "type": pl.String, "f": pl.String, "tid": pl.String, "gid": pl.String,
    "final": pl.Boolean, "err": pl.String, "fast": pl.Boolean, "nsend": pl.Int64,
    "commit": pl.Int64,
}


def _int64(v: Any) -> bool:
    """An int (bools count, as ever) that fits a 64-bit column."""
    return isinstance(v, int) and -(1 << 63) <= v < (1 << 63)


def _error_name(err: Any) -> str | None:
    if isinstance(err, list) and err and isinstance(err[0], str):
        return err[0]
    if isinstance(err, str):
        return err
    return None


class _Events:
    """Client events gathered from the fast columnar path and from the exact per-event path,
    plus nemesis events, problems and counters. Positions (``pos``) order everything: a
    physical line number - 1 for files, the event's ordinal for lists."""

    def __init__(self, where: Callable[[int], str]) -> None:
        self.where = where
        self.problems = _Problems()
        self.nemesis: list[tuple[int, dict]] = []
        self.n_events = 0
        self.x_cols: dict[str, list] = {k: [] for k in _EV_SCHEMA}
        self.x_ev: dict[int, dict] = {}  # pos -> event dict (exact events only)
        self.i_pos: list[int] = []  # (pos, index) of exact events for the index-gap check
        self.i_index: list[int] = []
        self.fast: pl.DataFrame | None = None  # regular rows: _EV_SCHEMA columns
        self.tokens: pl.DataFrame | None = None  # their completions' micro-ops, by position
        self.gkeys: dict[str, int] = {}  # key name -> id used in tokens
        self.raw: Callable[[int], Any] | None = None  # pos -> event parsed from the source
        self.truncated = False
        self.garbled = 0

    def key_ids(self, keys: list[str]) -> np.ndarray:
        g = self.gkeys
        return np.array([g.setdefault(k, len(g)) for k in keys], dtype=np.uint32)

    def event_at(self, pos: int) -> Any:
        ev = self.x_ev.get(pos)
        if ev is None and self.raw is not None:
            ev = self.raw(pos)
        return ev if isinstance(ev, dict) else {}

    def event(self, ev: Any, pos: int) -> None:
        """The exact path: one event dict (Jepsen-style validation, same rules as ever)."""
        where = self.where(pos)
        if not isinstance(ev, dict):
            self.problems.add(pos, 0, f"{where}: event is not a JSON object")
            return
        self.n_events += 1
        idx = ev.get("index")
        typ = ev.get("type")
        proc = ev.get("process")
        f = ev.get("f")
        if not _int64(idx) or not isinstance(typ, str) or not isinstance(f, str):
            self.problems.add(pos, 0, f"{where}: event lacks an int index, a type or an f")
            return
        self.i_pos.append(pos)
        self.i_index.append(int(idx))
        if proc == "nemesis":
            self.nemesis.append((pos, ev))
            return
        if not _int64(proc):
            self.problems.add(pos, 1, f"{where}: event {idx} has non-integer process {proc!r}; ignored")
            return
        if typ != "invoke" and typ not in COMPLETION_TYPES:
            self.problems.add(pos, 1, f"{where}: event {idx} has unknown type {typ!r}; ignored")
            return
        meta = ev.get("meta")
        if not isinstance(meta, dict):
            meta = {}
        t = ev.get("time")
        tid, gid = meta.get("transactional_id"), meta.get("group_id")
        c = self.x_cols
        c["pos"].append(pos)
        c["index"].append(int(idx))
        c["time"].append(int(t) if _int64(t) else None)
        c["process"].append(int(proc))
        c["type"].append(typ)
        c["f"].append(f)
        c["tid"].append(tid if isinstance(tid, str) else None)
        c["gid"].append(gid if isinstance(gid, str) else None)
        c["final"].append(meta.get("final") is True)
        cn = meta.get("commit_ns")
        c["commit"].append(int(cn) if _int64(cn) and not isinstance(cn, bool) else None)
        c["err"].append(_error_name(ev.get("error")))
        c["fast"].append(False)
        c["nsend"].append(None)
        self.x_ev[pos] = ev

    def frame(self) -> tuple[pl.DataFrame, np.ndarray | None]:
        """All client events (fast and exact) and the row order that sorts them by position
        (None: already sorted)."""
        x = pl.DataFrame(self.x_cols, schema=_EV_SCHEMA)
        if self.fast is None or self.fast.is_empty():
            return x, None
        fast = self.fast.select(list(_EV_SCHEMA))
        if x.is_empty():
            return fast, None
        # both are sorted by position and the exact rows are few: merge by position
        fp, xp = fast["pos"].to_numpy(), x["pos"].to_numpy()
        order = np.empty(len(fp) + len(xp), np.int64)
        order[np.arange(len(fp)) + np.searchsorted(xp, fp)] = np.arange(len(fp))
        order[np.arange(len(xp)) + np.searchsorted(fp, xp)] = len(fp) + np.arange(len(xp))
        return pl.concat([fast, x]), order

    def index_gaps(self) -> None:
        parts = [pl.DataFrame({"pos": self.i_pos, "index": self.i_index},
                              schema={"pos": pl.Int64, "index": pl.Int64})]
        if self.fast is not None:
            parts.append(self.fast.select("pos", "index"))
        ix = pl.concat(parts).sort("pos")
        bad = ix.with_columns(prev=pl.col("index").shift(1)).filter(
            pl.col("prev").is_not_null() & (pl.col("index") != pl.col("prev") + 1))
        if bad.height:
            self.problems.add_first(bad.height, (
                (p, 0, f"{self.where(p)}: index {i} follows {q} (gap or disorder)")
                for p, i, q in bad.head(MAX_PROBLEMS).iter_rows()))


# -- the exact micro-op reader (one op at a time) --------------------------------------------

def _i64(v: Any) -> bool:
    return type(v) is int and -(1 << 63) <= v < (1 << 63)


def _py_completion(cmp: Any, where: str, inv_index: int, problem: Callable[[str], None]):
    """Micro-op rows [(kind 0 send / 1 poll, key, offset|None, value)] of a completion
    value, and how many sends it listed. Malformed micro-ops are skipped and reported."""
    rows: list[tuple[int, str, int | None, int]] = []
    n_sends = 0
    if isinstance(cmp, list):
        for mop in cmp:
            try:
                kind = mop[0]
                if kind == SEND:
                    key = mop[1]
                    if not isinstance(key, str):
                        raise ValueError(f"key {key!r} is not a string")
                    ov = mop[2]
                    if type(ov) is list:
                        off, v = ov
                    else:  # completion echoing the invoke's ["send", k, v]
                        off, v = None, ov
                    if not _i64(v) or (off is not None and not _i64(off)):
                        raise ValueError("offset/value not int")
                    rows.append((0, key, off, v))
                    n_sends += 1
                elif kind == POLL:
                    if len(mop) < 2:
                        continue  # an echoed ["poll"]: nothing was returned
                    for key, recs in mop[1].items():
                        if not isinstance(key, str):
                            raise ValueError(f"key {key!r} is not a string")
                        for off, v in recs:
                            if not _i64(v) or not _i64(off):
                                raise ValueError("offset/value not int")
                            rows.append((1, key, off, v))
                else:
                    raise ValueError(f"unknown micro-op {kind!r}")
            except (TypeError, ValueError, IndexError, AttributeError, KeyError) as e:
                problem(f"{where}: op {inv_index}: malformed micro-op {mop!r:.80}: {e}")
    elif cmp is not None:
        problem(f"{where}: op {inv_index}: completion value is not a list")
    return rows, n_sends


def _py_invoke_sends(inv: Any) -> list:
    """The send micro-ops of an invoke value (what the completion may fail to list)."""
    if not isinstance(inv, list):
        return []
    return [m for m in inv if type(m) is list and m and m[0] == SEND]


def _py_invoke_rows(sends: list, where: str, inv_index: int, problem: Callable[[str], None]):
    out = []
    for mop in sends:
        try:
            key = mop[1]
            if not isinstance(key, str):
                raise ValueError(f"key {key!r} is not a string")
            v = mop[2]
            if isinstance(v, list):  # tolerate an invoke already carrying [offset, v]
                v = v[1]
            if not _i64(v):
                raise ValueError("value not int")
        except (TypeError, ValueError, IndexError) as e:
            problem(f"{where}: op {inv_index}: malformed invoke micro-op: {e}")
            continue
        out.append((key, v))
    return out


# -- the fast micro-op reader (columnar, over polars' canonical JSON text) -------------------

_K = r'"[^"\\]*"'
_I = r"-?\d{1,18}"  # at most 18 digits: always an int64; longer numbers go the exact way
_REC = rf"\[{_I}, {_I}\]"
_SEND = rf"\[\"send\", {_K}, (?:\[(?:{_I}|null), {_I}\]|{_I})\]"
_PKEY = rf"{_K}: \[(?:{_REC}(?:, {_REC})*)?\]"
_MOP = rf"(?:{_SEND}|\[\"poll\"\]|\[\"poll\", \{{(?:{_PKEY}(?:, {_PKEY})*)?\}}\])"
#: a value made only of well-formed micro-ops, as polars re-serialises it
VALUE_GRAMMAR = rf"^\[(?:{_MOP}(?:, {_MOP})*)?\]$"
# tokens of a grammatical value, in order: a send's key (with its "send" prefix), a poll
# record list's key (with its ": " suffix), an integer, null (a send's unknown offset)
_TOKEN = r'"send", "[^"]*"|"[^"]*": |-?\d+|null'
_SEND_PREFIX = '["send", '
_PART_BYTES = 16 << 20  # a file is read in parts of at most about this size
_WORKERS = max(1, min(4, os.cpu_count() or 1))


def _tokenize(rid: pl.Series, values: pl.Series):
    """Micro-op rows of grammatical value texts.

    Returns (frame, keys): frame columns rid (of the value), kind (u8: 0 send, 1 poll), key
    (u32 index into ``keys``), offset (i64|null), value (i64); one row per send and per
    polled record, in value order.
    """
    tok = (pl.DataFrame({"rid": rid, "v": values})
           .select("rid", t=pl.col("v").str.extract_all(_TOKEN))
           .explode("t").drop_nulls("t"))
    n = tok.height
    if n == 0:
        return pl.DataFrame(schema={"rid": rid.dtype, "kind": pl.UInt8,
                                    "key": pl.UInt32, "offset": pl.Int64,
                                    "value": pl.Int64}), []
    t = tok["t"]
    is_key = t.str.starts_with('"').to_numpy()
    num = t.cast(pl.Int64, strict=False)  # keys and null -> null
    nums = num.fill_null(0).to_numpy()
    numnull = num.is_null().to_numpy()
    del num
    mpos = np.flatnonzero(is_key)
    markers = t.gather(mpos)
    del t
    # distinct markers are few (two per key at most): name their keys in Python
    um = markers.unique(maintain_order=True)
    names = [m[9:-1] if m.startswith('"send", "') else m[1:-3] for m in um.to_list()]
    keys = list(dict.fromkeys(names))
    kpos = {k: i for i, k in enumerate(keys)}
    m_key = np.array([kpos[k] for k in names], dtype=np.uint32)
    m_send = np.array([m.startswith('"send", "') for m in um.to_list()], dtype=bool)
    mk = markers.cast(pl.Enum(um)).to_physical().to_numpy()  # marker -> distinct marker
    del markers, um
    msend = m_send[mk]
    # the grammar guarantees: every value's tokens start with a key; a poll key is followed
    # by pairs (offset, value); a send key by its value or by (offset|null, value). A
    # record is anchored at its value token: 2nd, 4th, ... after a poll key, last after a
    # send key; its offset is the token before (a send key or null: unknown).
    cnt = np.diff(np.append(mpos, n)) - 1
    if not (cnt[msend] & 1).any():
        # every key is followed by pairs: the numbers pair up globally, in order
        numidx = np.flatnonzero(~is_key)
        del is_key
        vidx = numidx[1::2]
        oidx = numidx[0::2]
        del numidx
        midx = np.repeat(np.arange(len(mpos)), cnt // 2)
    else:
        it = np.int32 if n < (1 << 31) else np.int64
        cnt = cnt.astype(it)
        gm = (np.cumsum(is_key, dtype=it) - 1)  # marker of each token
        del is_key
        within = np.arange(n, dtype=it) - mpos.astype(it)[gm]  # 0 at the marker
        anchor = np.where(msend[gm], within == cnt[gm], (within > 0) & ((within & 1) == 0))
        del within
        vidx = np.flatnonzero(anchor)
        del anchor
        midx = gm[vidx]
        del gm
        oidx = vidx - 1
    frame = pl.DataFrame({
        "rid": tok["rid"].gather(vidx),
        "kind": (~msend[midx]).astype(np.uint8),
        "key": m_key[mk[midx]],
        "offset": pl.Series(nums[oidx]).set(pl.Series(numnull[oidx]), None),
        "value": nums[vidx],
    })
    return frame, keys


# -- reading a file -------------------------------------------------------------------------

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
            except Exception:  # noqa: BLE001 - a garbled line somewhere in the range
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


# -- pairing and assembly -------------------------------------------------------------------

def stable_order(g: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative integers (radix passes over 16-bit digits)."""
    if len(g) == 0:
        return np.zeros(0, np.int64)
    top = int(g.max())
    if top < (1 << 16):
        return np.argsort(g.astype(np.uint16), kind="stable")
    if top < (1 << 32):
        g = g.astype(np.int64)
        o = np.argsort((g & 0xFFFF).astype(np.uint16), kind="stable")
        return o[np.argsort((g[o] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(g, kind="stable")


def _pair(ev: _Events) -> pl.DataFrame:
    """Ops from client events: each invoke with the next event of its process when that is a
    completion. Reports orphan completions, invokes while in flight and f mismatches."""
    E, order = ev.frame()  # rows sorted by pos: E[order]

    def col(a: np.ndarray) -> np.ndarray:
        return a if order is None else a[order]

    n = E.height
    proc = col(E["process"].to_numpy())
    is_inv = col((E["type"] == "invoke").to_numpy())
    perm = (stable_order(proc) if n and proc.min() >= 0  # by process, then position
            else np.argsort(proc, kind="stable"))
    same = proc[perm[1:]] == proc[perm[:-1]]
    nxt = np.full(n, -1, np.int64)
    prv = np.full(n, -1, np.int64)
    nxt[perm[:-1][same]] = perm[1:][same]
    prv[perm[1:][same]] = perm[:-1][same]
    del perm, same
    has_next = nxt >= 0
    nxt_inv = np.zeros(n, bool)
    nxt_inv[has_next] = is_inv[nxt[has_next]]
    paired = is_inv & has_next & ~nxt_inv
    superseded = is_inv & has_next & nxt_inv
    has_prev = prv >= 0
    prev_inv = np.zeros(n, bool)
    prev_inv[has_prev] = is_inv[prv[has_prev]]
    orphan = ~is_inv & ~prev_inv
    where = ev.where
    pos = col(E["pos"].to_numpy())
    idx = col(E["index"].to_numpy())
    f = E["f"] if order is None else E["f"].gather(order)
    o = np.flatnonzero(orphan)
    if len(o):
        ev.problems.add_first(len(o), (
            (int(pos[r]), 1, f"{where(int(pos[r]))}: completion {idx[r]} of process {proc[r]} "
                             "has no open invoke; ignored") for r in o[:MAX_PROBLEMS]))
    sp = np.flatnonzero(superseded)
    if len(sp):
        ev.problems.add_first(len(sp), (
            (int(pos[nxt[r]]), 1, f"{where(int(pos[nxt[r]]))}: process {proc[r]} invoked "
                                  f"{idx[nxt[r]]} while op {idx[r]} was in flight; the earlier "
                                  "op reads as info") for r in sp[:MAX_PROBLEMS]))
    inv_rows = np.flatnonzero(is_inv)
    cmp_rows = np.where(paired[inv_rows], nxt[inv_rows], -1)

    def col_rows(r: np.ndarray) -> np.ndarray:  # sorted row numbers -> rows of E
        return r if order is None else order[r]
    has_cmp = cmp_rows >= 0
    ic = inv_rows[has_cmp]
    mm = ic[(f.gather(ic) != f.gather(cmp_rows[has_cmp])).to_numpy()]
    if len(mm):
        ev.problems.add_first(len(mm), (
            (int(pos[nxt[r]]), 1, f"{where(int(pos[nxt[r]]))}: completion {idx[nxt[r]]} has f "
                                  f"{f[int(nxt[r])]!r} but its invoke has {f[int(r)]!r}")
            for r in mm[:MAX_PROBLEMS]))
    I = E[col_rows(inv_rows)]
    C = E.select("pos", "index", "time", "type", "tid", "gid", "final", "err", "fast", "nsend",
                 "commit").gather(pl.Series(col_rows(np.where(has_cmp, cmp_rows, 0))).set(
                     pl.Series(~has_cmp), None))
    sup_pos = pl.Series(np.where(superseded[inv_rows], pos[np.maximum(nxt[inv_rows], 0)], 0)
                        ).set(pl.Series(~superseded[inv_rows]), None)
    del E, proc, is_inv, nxt, prv, has_next, nxt_inv, paired, has_prev, prev_inv, orphan, idx
    return pl.DataFrame({
        "op": pl.Series(np.arange(len(inv_rows), dtype=np.uint32)),
        "invoke_index": I["index"],
        "complete_index": C["index"],
        "process": I["process"],
        "f": I["f"],
        "type": C["type"].fill_null("info"),
        "invoke_time": I["time"],
        "complete_time": C["time"],
        "transactional_id": I["tid"].fill_null(C["tid"]),
        "group_id": I["gid"].fill_null(C["gid"]),
        "final": I["final"] | C["final"].fill_null(False),
        "error": C["err"],
        "commit_time": C["commit"],
        # private, for the micro-ops
        "_inv_pos": I["pos"], "_inv_fast": I["fast"], "_inv_nsend": I["nsend"],
        "_cmp_pos": C["pos"], "_cmp_fast": C["fast"], "_cmp_nsend": C["nsend"],
        "_sup_pos": sup_pos,
    })


def _micro_ops(ev: _Events, ops: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """mops (keys as ids into the returned key list)."""
    bulk = ops.select("op", "f", "invoke_index", "_inv_pos", "_inv_fast", "_inv_nsend",
                      "_cmp_pos", "_cmp_fast", "_cmp_nsend", "_sup_pos"
                      ).filter(pl.col("f").is_in(list(BULK_FS)))
    schema = {"op": pl.UInt32, "part": pl.UInt8, "ord": pl.Int64, "kind": pl.UInt8,
              "key": pl.UInt32, "offset": pl.Int64, "value": pl.Int64}
    gid_of = ev.key_ids
    gkeys = ev.gkeys

    # 1. completion micro-ops: the regular completions' tokens (by position) -> ops, in op
    # order (a stable sort keeps the order inside each completion)
    paired = bulk.filter(pl.col("_cmp_pos").is_not_null())
    big = pl.DataFrame(schema=schema)
    if ev.tokens is not None and ev.tokens.height:
        fc = paired.filter(pl.col("_cmp_fast"))
        tp = ev.tokens["rid"].to_numpy()
        cpos = fc["_cmp_pos"].to_numpy()
        op_at = np.full(int(max(tp.max(), cpos.max() if len(cpos) else 0)) + 1, -1, np.int64)
        op_at[cpos] = fc["op"].to_numpy()
        # a completion's tokens are one run; order the runs by op, then expand them
        start = np.flatnonzero(np.concatenate([[True], tp[1:] != tp[:-1]]))
        length = np.diff(np.append(start, len(tp)))
        r_op = op_at[tp[start]]
        del op_at, tp
        keep = np.flatnonzero(r_op >= 0)
        keep = keep[np.argsort(r_op[keep], kind="stable")]
        start, length, r_op = start[keep], length[keep], r_op[keep]
        cum = np.cumsum(length) - length
        o = np.repeat(start - cum, length) + np.arange(int(length.sum()))
        big = ev.tokens.drop("rid")[o].select(
            op=pl.Series(np.repeat(r_op, length), dtype=pl.UInt32), part=pl.lit(0, pl.UInt8),
            kind="kind", key="key", offset="offset", value="value")
        ev.tokens = None
        del o, start, length, r_op, cum, keep
    laps("load: completion micro-ops to ops")
    n_cmp_sends: dict[int, int] = {}
    py_rows: list[tuple] = []
    py_inv_rows: list[tuple] = []
    problems = ev.problems
    for op, cpos, inv_index in paired.filter(~pl.col("_cmp_fast")).select(
            "op", "_cmp_pos", "invoke_index").iter_rows():
        rows, n = _py_completion(ev.event_at(cpos).get("value"), ev.where(cpos), inv_index,
                                 lambda m, cpos=cpos: problems.add(cpos, 2, m))
        n_cmp_sends[op] = n
        py_rows.extend((op, 0, i, k, key, off, v) for i, (k, key, off, v) in enumerate(rows))

    # 2. sends the completion did not list (info/fail completions may carry no value)
    counts = bulk.select("op", "_inv_fast", "_inv_nsend", "_inv_pos", "_cmp_pos", "_cmp_nsend",
                         "_sup_pos", "invoke_index")
    if n_cmp_sends:
        counts = counts.join(pl.DataFrame({"op": list(n_cmp_sends), "_py_n": list(n_cmp_sends.values())},
                                          schema={"op": pl.UInt32, "_py_n": pl.Int64}), on="op", how="left"
                             ).with_columns(_cmp_nsend=pl.coalesce("_py_n", "_cmp_nsend")).drop("_py_n")
    counts = counts.with_columns(_cmp_nsend=pl.col("_cmp_nsend").fill_null(0))
    inv_sends_py: dict[int, list] = {}
    slow_inv = counts.filter(~pl.col("_inv_fast"))  # regular invokes' send counts are known
    if slow_inv.height:
        ns = []
        for op, ipos in slow_inv.select("op", "_inv_pos").iter_rows():
            s = _py_invoke_sends(ev.event_at(ipos).get("value"))
            inv_sends_py[op] = s
            ns.append(len(s))
        counts = counts.join(pl.DataFrame({"op": slow_inv["op"], "_py_n": ns},
                                          schema={"op": pl.UInt32, "_py_n": pl.Int64}), on="op", how="left"
                             ).with_columns(_inv_nsend=pl.coalesce("_inv_nsend", "_py_n")).drop("_py_n")
    need = counts.filter((pl.col("_inv_nsend") > 0) & (pl.col("_inv_nsend") != pl.col("_cmp_nsend")))
    laps("load: odd completions, send counts")
    if need.height:  # rare: read those invokes one by one
        for op, ipos, cpos, spos, inv_index in need.select(
                "op", "_inv_pos", "_cmp_pos", "_sup_pos", "invoke_index").iter_rows():
            if op not in inv_sends_py:
                inv_sends_py[op] = _py_invoke_sends(ev.event_at(ipos).get("value"))
            if cpos is not None:
                where, at, sub = ev.where(cpos), cpos, 2
            else:
                where, at, sub = f"op {inv_index}", (spos if spos is not None else END), 2 if spos is not None else op
            rows = _py_invoke_rows(inv_sends_py[op], where, inv_index,
                                   lambda m, at=at, sub=sub: problems.add(at, sub, m))
            py_inv_rows.extend((op, 1, i, 0, key, None, v) for i, (key, v) in enumerate(rows))
    laps("load: unlisted invoke sends")
    parts: list[pl.DataFrame] = []
    for rows in (py_rows, py_inv_rows):
        if not rows:
            continue
        ids = gid_of([r[4] for r in rows])
        parts.append(pl.DataFrame({
            "op": [r[0] for r in rows], "part": [r[1] for r in rows],
            "ord": [r[2] for r in rows], "kind": [r[3] for r in rows], "key": ids,
            "offset": [r[5] for r in rows], "value": [r[6] for r in rows],
        }, schema=schema))
    # the completions' tokens are the bulk of the rows, in (op, ord) order; the other parts
    # are small: sorted on their own, then merged in by position
    small = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    schema = {k: v for k, v in schema.items() if k != "ord"}
    big = big.select(list(schema)).cast(schema)
    parts.clear()
    inv = small.filter(pl.col("part") == 1)
    if inv.height:  # invoke-only sends whose (key, value) the completion listed: not repeated
        iops = np.unique(inv["op"].to_numpy())
        bo = big["op"].to_numpy()  # sorted: each op's rows are one range
        lo, hi = np.searchsorted(bo, iops, "left"), np.searchsorted(bo, iops, "right")
        ln = hi - lo
        rows = np.repeat(lo - (np.cumsum(ln) - ln), ln) + np.arange(int(ln.sum()))
        listed = pl.concat([
            big[rows].filter(pl.col("kind") == 0).select("op", "key", "value"),
            small.filter((pl.col("part") == 0) & (pl.col("kind") == 0)
                         & pl.col("op").is_in(pl.Series(iops, dtype=pl.UInt32).implode()))
            .select("op", "key", "value")]).unique()
        small = pl.concat([small.filter(pl.col("part") == 0),
                           inv.join(listed, on=["op", "key", "value"], how="anti")])
    m = _merge_sorted(big, small.sort("op", "part", "ord").drop("ord"))
    del big, small, inv
    laps("load: merge micro-op parts")
    from .log import positions  # local: log imports this module
    opn = m["op"].to_numpy()
    seq = positions(opn)
    # key ids in the order the history first mentions them: by the position of the
    # completion that reported the micro-op (an op that never completed: where it was
    # superseded, or at the end), then by the order inside the op
    kv = m["key"].to_numpy()
    names = [None] * len(gkeys)
    for k, i in gkeys.items():
        names[i] = k
    if len(kv):
        at = ops.select(pl.coalesce("_cmp_pos", "_sup_pos",
                                    pl.col("op").cast(pl.Int64) + END)).to_series().to_numpy()
        at_row = at[opn]
        kmin = np.full(len(gkeys), np.iinfo(np.int64).max, np.int64)
        np.minimum.at(kmin, kv, at_row)
        cand = np.flatnonzero(at_row == kmin[kv])  # rows of each key's first mentioning op
        ck, first_row = np.unique(kv[cand], return_index=True)
        first = ck[np.lexsort((cand[first_row], kmin[ck]))]
        del at_row, cand
        remap = np.zeros(len(gkeys), np.uint32)
        remap[first] = np.arange(len(first), dtype=np.uint32)
        kv = remap[kv]
        keys = [names[i] for i in first]
    else:
        keys = []
    mops = pl.DataFrame({
        "op": m["op"],
        "seq": pl.Series(seq, dtype=pl.UInt32),
        "kind": m["kind"].replace_strict({0: SEND, 1: POLL}, return_dtype=KIND),
        "key": pl.Series(kv, dtype=pl.UInt32),
        "offset": m["offset"],
        "value": m["value"],
    })
    laps("load: mops frame")
    return mops, keys


def _merge_sorted(big: pl.DataFrame, small: pl.DataFrame) -> pl.DataFrame:
    """Rows of two frames sorted by (op, part, ord), merged; no (op, part) is in both."""
    if small.is_empty():
        return big
    if big.is_empty():
        return small
    kb = big["op"].cast(pl.Int64).to_numpy() * 2 + big["part"].to_numpy()
    ks = small["op"].cast(pl.Int64).to_numpy() * 2 + small["part"].to_numpy()
    cut = np.searchsorted(kb, ks, side="right")  # where each small row goes in big
    if len(ks) <= 512:  # few: interleave slices (no copy of big until the concat)
        pieces, prev = [], 0
        for i, c in enumerate(cut.tolist()):
            if c > prev:
                pieces.append(big.slice(prev, c - prev))
            pieces.append(small.slice(i, 1))
            prev = c
        pieces.append(big.slice(prev))
        return pl.concat(pieces, rechunk=True)
    at_b = np.arange(len(kb)) + np.searchsorted(ks, kb, side="left")
    at_s = np.arange(len(ks)) + cut
    order = np.empty(len(kb) + len(ks), np.int64)
    order[at_b] = np.arange(len(kb))
    order[at_s] = len(kb) + np.arange(len(ks))
    return pl.concat([big, small]).gather(order)


def _extras(ev: _Events, ops: pl.DataFrame) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for op, ipos, cpos in ops.filter(~pl.col("f").is_in(list(BULK_FS))).select(
            "op", "_inv_pos", "_cmp_pos").iter_rows():
        inv = ev.event_at(ipos)
        meta = inv.get("meta")
        ex = {"value": inv.get("value"), "completion_value": None,
              "meta": meta if isinstance(meta, dict) else {}}
        if cpos is not None:
            c = ev.event_at(cpos)
            ex["completion_value"] = c.get("value")
            cm = c.get("meta")
            if isinstance(cm, dict):
                ex["meta"] = {**ex["meta"], **cm}
        out[op] = ex
    return out


def _assemble(ev: _Events) -> History:
    ev.index_gaps()
    laps("load: index gaps")
    ops = _pair(ev)
    ev.fast = None  # the events are in ops now
    laps("load: pair invokes/completions")
    extras = _extras(ev, ops)
    mops, keys = _micro_ops(ev, ops)
    ev.raw = None
    ops = ops.select(
        "op", "invoke_index", "complete_index", "process",
        pl.col("f").cast(pl.Categorical),
        pl.col("type").cast(TYPE),
        "invoke_time", "complete_time", "transactional_id", "group_id", "final",
        "error", "commit_time",
    )
    # a producer process is one instance of one transactional.id: ops that do not
    # repeat it in their meta inherit it from the process's init/earlier ops
    tids = (ops.filter(pl.col("transactional_id").is_not_null())
            .group_by("process").agg(tid_=pl.col("transactional_id").first()))
    if tids.height:
        ops = (ops.join(tids, on="process", how="left")
               .with_columns(transactional_id=pl.coalesce("transactional_id", "tid_"))
               .drop("tid_").sort("op"))
    nemesis = [e for _, e in sorted(ev.nemesis, key=lambda x: x[0])]
    laps("load: ops frame, extras")
    return History(
        ops=ops, mops=mops, keys=keys, nemesis=nemesis, extras=extras,
        problems=ev.problems.result(), n_events=ev.n_events, n_problems=ev.problems.count,
        truncated=ev.truncated, garbled_lines=ev.garbled,
    )


def load_history(source: str | Path | Iterable[dict]) -> History:
    """Read a history from a ``history.jsonl`` path or from an iterable of event dicts.

    Returns a :class:`History`; content problems land in ``History.problems`` (and set
    ``truncated`` for a dropped last line, ``garbled_lines`` for dropped lines mid-file).
    """
    # parsing allocates many short-lived containers that refcounting frees; the cyclic
    # collector would only rescan them, so it is paused while reading
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if isinstance(source, (str, Path)):
            ev = _read_file(Path(source))
        else:
            ev = _read_events(source)
        return _assemble(ev)
    finally:
        if was_enabled:
            gc.enable()


def as_history(history: "History | str | Path | Iterable[dict]") -> History:
    """Accept a History, a path, or a list of event dicts."""
    if isinstance(history, History):
        return history
    return load_history(history)
