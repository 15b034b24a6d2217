"""The parts path of ``check``: a history cut by key into Parquet parts, checked part by part.

Opt-in (``eos-chaos check HISTORY --parts N``, ``check_parts``, ``check_run_parts``); ``checkers.verdict.check``
stays the default. Issue 25 section 1, first step: the per-key finders run on one part at a
time, so their memory is that of the largest part, not of the whole history.

Cutting (``write_parts``, one pass over history.jsonl, memory bounded by ``flush_lines`` and
the number of processes): every key (``topic/partition``) belongs to one of ``n_parts``
*parts* (``part_of``: CRC-32 of the key modulo ``n_parts``). An op (an invoke with its
completion: the next event of its process, docs/history.md) belongs to every part one of its
micro-ops' keys (invoke's or completion's) belongs to: a multi-key transaction or poll is in
each part it touches, with only that part's micro-ops (``_split``: the op's lines are written
again without the others). Events no key places (nemesis events, ``assign``,
``init``, ``subscribe``, ``app-poll``, an empty poll, lines that do not parse, a completion
with no open invoke) go to every part, so each part keeps every process's seeks and
reassignments (``checkers.history.polls`` segments) and the final drain's processes
(``log.final_keys``). Each part is a folder of Parquet files with columns ``line`` (u64: the
line's number in history.jsonl) and ``text`` (binary: the raw line). The file's event indices
are checked here (gaps, disorder: loader problems of the whole file), not in the parts, whose
indices have gaps by construction.

Checking (``check_parts``): each part is read back in line order and loaded
(``load_history(..., index_gaps=False)``) and keeps only its own keys' micro-ops (a multi-key
op brings the others', whose logs are partial there); the *per-key* finders (``PER_KEY``) run
on it and keep only the cases of the part's own keys (an assign or seek names keys of other
parts too: ``_own`` drops what they bring). One fact crosses keys: an ``info`` transaction one of whose
values was read on any key must have committed (``checkers.history.log``). The cut records such ops
that span parts; a part holding one whose values it did not see read is checked again once the
other parts said whether they read it (``History.ops_read_elsewhere``). The *cross-key*
finders (``CROSS_KEY``: cycles and their event order, torn transactions, zombie writes, the
pipeline, sink and app checks, unavailable windows) need ops of every key: ``cross="whole"``
loads the whole history once more and runs only them (memory as today's path: this step
does not bound it); ``cross="skip"`` does not run them and says so in ``unknown_reasons`` (the
verdict is then never valid).

What differs from ``check`` besides memory: verdict names, counts and ``valid`` are the same
(tests/unit/test_checkers_parts.py); an example's op ref ``op`` is the op's row in its part
(``invoke_index`` is the file's); ``stats`` holds counts, log lengths and the parts' sizes, not
the realtime-lag quantiles or the problem list.
"""

from __future__ import annotations

import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import polars as pl

from ..finders.app_end_to_end import app_unknown
from ..history import BULK_FS, History, load_history
from ..history.log import index
from ..run import RunMeta, Verdict
from ..timing import laps
from ..catalogue import run_allowed
from ..verdict import FINDERS, check_run, fold, judgeable, malformed

try:
    import orjson as _json

    _loads = _json.loads
except ImportError:  # pragma: no cover - depends on the environment
    import json as _json  # type: ignore[no-redef]

    _loads = _json.loads

#: finders whose cases each concern one key and need only that key's micro-ops (plus the ops
#: no key places, which every part holds); docs/checkers.md "Per-key and cross-key finders"
PER_KEY = ("duplicate_cases", "inconsistent_offsets_cases", "lost_write_cases", "unseen_cases",
           "g1a_cases", "poll_skip_cases", "nonmonotonic_poll_cases", "precommitted_read_cases",
           "nonmonotonic_send_cases", "stalled_lso_cases", "realtime_lag_cases")
CROSS = ("whole", "skip")
_ALL = -1  # placement of an event no key places: every part


def part_of(key: str, n_parts: int) -> int:
    """The part (0 .. n_parts-1) a key belongs to: CRC-32 of its UTF-8 bytes modulo n_parts."""
    return zlib.crc32(key.encode()) % n_parts


def run_local(fn, items: list) -> list:
    """The local engine: ``fn`` on each item, one after another, in this process."""
    return [fn(x) for x in items]


@dataclass
class Parts:
    """A history cut by key: ``root/part-<i>/<j>.parquet`` (columns line u64, text binary).

    ``lines[i]``: lines part i holds; ``events``: lines of the file; ``gap_problems``: the
    file's index gaps (loader problem strings, first 200) and ``n_gaps`` their count;
    ``info_multi``: invoke event index -> parts, of the ops that completed ``info`` (or never
    completed), sent records and span several parts."""

    root: Path
    n_parts: int
    events: int = 0
    lines: list[int] = field(default_factory=list)
    gap_problems: list[str] = field(default_factory=list)
    n_gaps: int = 0
    info_multi: dict[int, frozenset[int]] = field(default_factory=dict)

    def files(self, i: int) -> list[Path]:
        return sorted((self.root / f"part-{i}").glob("*.parquet"))


def _keys(value) -> tuple[list[str], bool]:
    """(keys of a send/poll/txn value's micro-ops, whether it sends)."""
    keys: list[str] = []
    sends = False
    if isinstance(value, list):
        for m in value:
            if isinstance(m, list) and len(m) >= 2:
                if m[0] == "send" and isinstance(m[1], str):
                    keys.append(m[1])
                    sends = True
                elif m[0] == "poll" and isinstance(m[1], dict):
                    keys.extend(k for k in m[1] if isinstance(k, str))
    return keys, sends


def _split(ev: dict, text: bytes, where: frozenset[int], part: Callable[[str], int]) -> dict[int, bytes]:
    """The event's JSON for each part of ``where``, with only the micro-ops of that part's keys
    (``part``: key -> part): a send to another part's key is left out, a poll keeps its own
    keys' records (an empty poll when none). Its other micro-ops would only be dropped when the
    part loads (``_own``): leaving them out here keeps a part's size to its keys' share. An
    event whose value is not a list (an info completion may carry none) keeps its ``text``."""
    value = ev.get("value")
    if not isinstance(value, list):
        return dict.fromkeys(where, text)
    out: dict[int, list] = {i: [] for i in where}
    for m in value:
        if isinstance(m, list) and len(m) >= 2:
            if m[0] == "send" and isinstance(m[1], str):
                p = part(m[1])
                if p in out:
                    out[p].append(m)
                continue
            if m[0] == "poll" and isinstance(m[1], dict):
                by: dict[int, dict] = {i: {} for i in where}
                for k, v in m[1].items():
                    p = part(k)
                    if p in by:
                        by[p][k] = v
                for i, recs in by.items():
                    out[i].append([m[0], recs, *m[2:]])
                continue
        for i in out:
            out[i].append(m)
    return {i: _dumps({**ev, "value": v}) for i, v in out.items()}


def _dumps(ev: dict) -> bytes:
    if _json.__name__ != "orjson":
        return _json.dumps(ev, separators=(",", ":")).encode()
    # orjson's bytes keep their ~4 KiB write buffer: an exact-size copy, or a buffer of
    # half a million lines holds gigabytes
    return bytes(memoryview(_json.dumps(ev)))


class _Cutter:
    """The streaming state of ``write_parts``: open invokes per process, per-part buffers."""

    def __init__(self, parts: Parts, flush_lines: int):
        self.p, self.flush_lines = parts, flush_lines
        self.buf: list[list[tuple[int, bytes]]] = [[] for _ in range(parts.n_parts)]
        self.buffered, self.flushes = 0, 0
        self.open: dict = {}  # process -> (line, text, keys, sends, event index, event)
        self.prev_index: int | None = None
        self.parts_of: dict[str, int] = {}

    def emit(self, where: Iterable[int] | int, line: int, text: bytes) -> None:
        targets = range(self.p.n_parts) if where == _ALL else where
        for i in targets:  # type: ignore[union-attr]
            self.buf[i].append((line, text))
            self.buffered += 1
        if self.buffered >= self.flush_lines:
            self.flush()

    def flush(self) -> None:
        for i, rows in enumerate(self.buf):
            if rows:
                d = self.p.root / f"part-{i}"
                d.mkdir(exist_ok=True)
                pl.DataFrame({"line": [r[0] for r in rows], "text": [r[1] for r in rows]},
                             schema={"line": pl.UInt64, "text": pl.Binary}
                             ).write_parquet(d / f"{self.flushes:06d}.parquet", compression="lz4")
                self.p.lines[i] += len(rows)
        self.buf = [[] for _ in range(self.p.n_parts)]
        self.buffered, self.flushes = 0, self.flushes + 1

    def where(self, keys: list[str]) -> frozenset[int] | int:
        return frozenset(map(self.part, keys)) if keys else _ALL

    def close_invoke(self, process, completion: tuple | None) -> None:
        """Emit an open invoke with its completion (line, text, keys, sends, type, event) or
        alone. An op of several parts goes to each with only that part's micro-ops."""
        line, text, keys, sends, idx, ev = self.open.pop(process)
        ckeys, csends, ctype = (completion[2], completion[3], completion[4]) if completion else ([], False, "info")
        where = self.where(keys + ckeys)
        if where == _ALL or len(where) == 1:  # type: ignore[arg-type]
            self.emit(where, line, text)
            if completion:
                self.emit(where, completion[0], completion[1])
            return
        if ctype == "info" and (sends or csends):
            self.p.info_multi[idx] = where  # type: ignore[assignment]
        inv = _split(ev, text, where, self.part)  # type: ignore[arg-type]
        cmp = _split(completion[5], completion[1], where, self.part) if completion else {}  # type: ignore[arg-type]
        for i in sorted(where):  # type: ignore[arg-type]
            self.emit((i,), line, inv[i])
            if completion:
                self.emit((i,), completion[0], cmp[i])

    def part(self, key: str) -> int:
        """``part_of(key)``, memoised: a history names few keys, each millions of times."""
        p = self.parts_of.get(key)
        if p is None:
            p = self.parts_of[key] = part_of(key, self.p.n_parts)
        return p

    def event(self, line: int, text: bytes) -> None:
        try:
            ev = _loads(text)
        except ValueError:
            ev = None
        if not isinstance(ev, dict):
            self.emit(_ALL, line, text)  # every part's loader reports it
            return
        idx = ev.get("index")
        if isinstance(idx, int):
            if self.prev_index is not None and idx != self.prev_index + 1:
                self.p.n_gaps += 1
                if len(self.p.gap_problems) < 200:
                    self.p.gap_problems.append(
                        f"line {line + 1}: index {idx} follows {self.prev_index} (gap or disorder)")
            self.prev_index = idx
        proc, typ, f = ev.get("process"), ev.get("type"), ev.get("f")
        if proc == "nemesis" or not isinstance(proc, (int, str)) or f not in BULK_FS:
            if proc in self.open and typ != "invoke":  # a completion of a keyless op
                self.close_invoke(proc, (line, text, [], False, typ, ev))
                return
            if proc in self.open:  # a second invoke in flight: the loader reports it
                self.close_invoke(proc, None)
            self.emit(_ALL, line, text)
            return
        keys, sends = _keys(ev.get("value"))
        if typ == "invoke":
            if proc in self.open:
                self.close_invoke(proc, None)
            self.open[proc] = (line, text, keys, sends, idx, ev)
        elif proc in self.open:
            self.close_invoke(proc, (line, text, keys, sends, typ, ev))
        else:  # a completion with no open invoke: the loader reports it
            self.emit(_ALL, line, text)


def write_parts(history: str | Path, root: str | Path, n_parts: int = 8,
                flush_lines: int = 500_000) -> Parts:
    """Cut ``history`` (a history.jsonl path) into ``n_parts`` parts under ``root`` (created;
    must be empty or absent). Memory: at most ``flush_lines`` buffered lines plus one open
    invoke per process. Raises OSError when the file cannot be read or ``root`` written,
    ValueError when n_parts < 1. Returns the ``Parts``."""
    if n_parts < 1:
        raise ValueError(f"n_parts must be >= 1, not {n_parts}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    parts = Parts(root, n_parts, lines=[0] * n_parts)
    cut = _Cutter(parts, flush_lines)
    n = 0
    with open(history, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            text = raw.rstrip(b"\r\n")
            if text.strip():
                cut.event(n - 1, text)
    for proc in list(cut.open):
        cut.close_invoke(proc, None)
    cut.flush()
    parts.events = n
    laps("parts: cut")
    return parts


def read_part(parts: Parts, i: int, tmp: Path) -> History | None:
    """Part ``i`` as a History (its lines in file order, written to ``tmp`` and loaded with
    ``index_gaps=False``), or None when it holds no line."""
    files = parts.files(i)
    if not files:
        return None
    text = pl.scan_parquet(files).sort("line").select("text").collect()["text"]
    with open(tmp, "wb") as fh:
        for chunk in text.to_list():
            fh.write(chunk)
            fh.write(b"\n")
    del text
    h = load_history(tmp, index_gaps=False)
    tmp.unlink()
    return h


def _run_per_key(h: History, own: set[int], meta: RunMeta) -> list:
    """Each per-key finder's cases on ``h`` about the keys of ``own`` (key ids), or its crash."""
    out = []
    names = {h.keys[k] for k in own}
    for fname, finder, kw in FINDERS:
        if fname not in PER_KEY:
            continue
        try:
            cases = finder(h, **(kw(meta) if kw else {}))
            # a case with no key (none known today) is kept, and merged once by explanation
            out.append([c for c in cases if c.get("key") in names or "key" not in c])
        except Exception as e:  # noqa: BLE001 - as in check: a crash is an unknown reason
            out.append(f"finder {fname} crashed: {type(e).__name__}: {e}")
    return out


def _ops_read_here(h: History, parts: Parts, own: set[int]) -> tuple[set[int], set[int]]:
    """Of the ops in ``parts.info_multi`` this part holds, by invoke index: (those with a value
    read on one of its own keys, those with none)."""
    if not parts.info_multi:
        return set(), set()
    inv = h.ops["invoke_index"].to_numpy()
    ix = index(h)
    mine = np.zeros(len(h.keys), bool)
    mine[sorted(own)] = True
    g = inv[ix.w_op]
    sel = np.isin(g, np.fromiter(parts.info_multi, np.int64)) & mine[ix.w_key]
    read = set(np.unique(g[sel & ix.w_read]).tolist())
    return read, set(np.unique(g[sel]).tolist()) - read


def check_parts(history: str | Path, meta: RunMeta | dict | None = None, allowed: Iterable[str] = (),
                max_examples: int = 10, n_parts: int = 8, cross: str = "whole",
                workdir: str | Path | None = None, engine: Callable = run_local) -> Verdict:
    """Judge a history.jsonl as ``checkers.verdict.check`` does, the per-key finders part by
    part (see the module docstring). ``cross``: "whole" (run the cross-key finders on the whole
    history, in memory) or "skip" (an unknown reason instead). ``workdir``: where the parts go
    (a temporary folder by default, removed at the end; an engine that runs elsewhere needs
    it on storage its workers share). ``engine(fn, items) -> [fn(x) for x in items]``: how the
    parts are checked (``run_local``: here, one by one). Never raises on content; raises
    ValueError for a bad ``cross`` or ``n_parts`` and OSError when the file cannot be read."""
    if cross not in CROSS:
        raise ValueError(f"cross must be one of {CROSS}, not {cross!r}")
    meta, unknown = RunMeta.coerce(meta)
    allowed = run_allowed(meta, allowed)  # as checkers.verdict.check: a share group's duplicates too
    unknown += app_unknown(meta.app)  # a match that named nothing, a verifier that failed
    root = Path(tempfile.mkdtemp(prefix="eosc-parts-", dir=workdir))
    try:
        parts = write_parts(history, root / "parts", n_parts)
        per_key, reasons, stats = _check_per_key(parts, meta, root, engine)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    unknown += reasons
    malformed_n = stats.pop("_malformed") + parts.n_gaps
    if parts.n_gaps:
        unknown.append(f"the history is not well-formed (docs/history.md): {parts.n_gaps} index "
                       f"gap(s), first: {'; '.join(parts.gap_problems[:3])}")
    results: list = []
    cross_res: dict[str, list | str] = {}
    if cross == "whole":
        h = load_history(history)
        for fname, finder, kw in FINDERS:
            if fname in PER_KEY:
                continue
            try:
                cross_res[fname] = finder(h, **(kw(meta) if kw else {}))
            except Exception as e:  # noqa: BLE001
                cross_res[fname] = f"finder {fname} crashed: {type(e).__name__}: {e}"
            laps(fname)
        del h
    else:
        unknown.append("cross-key finders not run (check --parts --cross skip): "
                       + ", ".join(n for n, _, _ in FINDERS if n not in PER_KEY))
    for fname, _, _ in FINDERS:
        results.append(per_key[fname] if fname in PER_KEY else cross_res.get(fname, []))
    return fold(results, unknown, meta=meta, allowed=sorted(allowed), malformed_n=malformed_n,
                stats=stats, max_examples=max_examples)


def check_run_parts(run_dir: str | Path, n_parts: int = 8, cross: str = "whole",
                    max_examples: int = 10, engine: Callable = run_local,
                    workdir: str | Path | None = None) -> Verdict:
    """``checkers.verdict.check_run`` (a run folder: its meta.json and scenario.yaml) by the
    parts path. Raises FileNotFoundError when the folder has no history.jsonl."""
    def checker(history, **kw):
        return check_parts(history, n_parts=n_parts, cross=cross, engine=engine, workdir=workdir, **kw)
    return check_run(run_dir, max_examples=max_examples, checker=checker)


@dataclass
class PartResult:
    """What checking one part gives (picklable: an engine may run ``check_part`` elsewhere).

    ``results``: per ``PER_KEY`` finder, its cases about the part's own keys or its crash
    string; ``reasons``: the loader's unknown reasons by kind; ``malformed``: its malformed
    count; ``read_here`` / ``unread_here``: invoke indices of ``Parts.info_multi`` ops the part
    saw read on one of its own keys / did not; ``micro_ops``, ``ops``: the part's sizes;
    ``log_lengths``: own key name -> committed log length."""

    i: int
    results: list
    reasons: dict[str, list[str]] = field(default_factory=dict)
    malformed: int = 0
    read_here: set[int] = field(default_factory=set)
    unread_here: set[int] = field(default_factory=set)
    micro_ops: int = 0
    ops: int = 0
    log_lengths: dict[str, int] = field(default_factory=dict)


def check_part(parts: Parts, i: int, meta: RunMeta, tmp: str | Path,
               read_elsewhere: frozenset[int] | None = None) -> PartResult | None:
    """Run the per-key finders on part ``i`` (None when it holds no line). ``tmp``: a folder
    for the part's text while it loads. ``read_elsewhere``: invoke indices of info ops some
    other part saw read (the second round, ``History.ops_read_elsewhere``). Never raises on
    content (a finder's crash is its result); OSError when the part cannot be read."""
    h = read_part(parts, i, Path(tmp) / f"part-{i}.jsonl")
    if h is None:
        return None
    own = _own(h, i, parts.n_parts)
    out = PartResult(i, [])
    if read_elsewhere is not None:
        inv = h.ops["invoke_index"].to_list()
        h.ops_read_elsewhere = [op for op, g in enumerate(inv) if g in read_elsewhere]
    for r in judgeable(h):
        out.reasons.setdefault(r.split(":")[0].split(" (")[0], []).append(r)
    out.malformed = malformed(h)
    out.read_here, out.unread_here = _ops_read_here(h, parts, own)
    out.results = _run_per_key(h, own, meta)
    laps(f"parts: part {i}")
    out.micro_ops, out.ops = h.mops.height, h.ops.height
    from ..history.log import log

    out.log_lengths = {h.keys[k]: n for k, n in log(h).group_by("key").len().iter_rows() if k in own}
    return out


def _check_per_key(parts: Parts, meta: RunMeta, root: Path, engine=run_local) -> tuple[dict, list[str], dict]:
    """Run the per-key finders part by part with ``engine`` (``engine(fn, items) -> results``:
    ``run_local`` or a distributed map such as ``checkers.engines.parts_spark``'s): ({finder name:
    merged cases or crash string}, unknown reasons of the whole history, stats)."""
    first = [r for r in engine(partial(check_part, parts, meta=meta, tmp=root), list(range(parts.n_parts)))
             if r is not None]
    read_anywhere = frozenset().union(*(r.read_here for r in first))
    # info transactions read in another part: committed there, so committed here too
    again_ids = [r.i for r in first if r.unread_here & read_anywhere]
    again = {r.i: r for r in engine(partial(check_part, parts, meta=meta, tmp=root,
                                            read_elsewhere=read_anywhere), again_ids) if r is not None}
    return merge_parts(parts, first, again)


def merge_parts(parts: Parts, first: list[PartResult], again: dict[int, PartResult]) -> tuple[dict, list[str], dict]:
    """Fold the parts' results (``again``: second-round results that replace the first's
    cases) into ({finder name: merged cases or crash string}, unknown reasons, stats)."""
    per_key: dict[str, list | str] = {n: [] for n in PER_KEY}
    reasons: dict[str, list[str]] = {}
    stats = {"events": parts.events, "ops": 0, "micro_ops": 0, "log_lengths": {},
             "parts": {"n": parts.n_parts, "lines": parts.lines, "checked_again": len(again)},
             "_malformed": 0}
    for r in first:
        for kind, rs in r.reasons.items():
            reasons.setdefault(kind, []).extend(rs)
        stats["_malformed"] = max(stats["_malformed"], r.malformed)
        stats["micro_ops"] += r.micro_ops
        stats["ops"] = max(stats["ops"], r.ops)  # ops span parts: the largest part's
        stats["log_lengths"].update(r.log_lengths)
    keyless: set = set()
    for r in sorted(first, key=lambda r: r.i):
        for fname, res in zip(PER_KEY, again.get(r.i, r).results):
            if isinstance(res, str) or isinstance(per_key[fname], str):
                per_key[fname] = res if isinstance(res, str) else per_key[fname]
                continue
            for c in res:
                if "key" not in c:
                    if (c.get("anomaly"), c.get("explanation")) in keyless:
                        continue
                    keyless.add((c.get("anomaly"), c.get("explanation")))
                per_key[fname].append(c)  # type: ignore[union-attr]
    # "nothing to judge" holds for the whole history at the weakest level every part says
    # (no op < no completed read or write < no completed read); the others (garbled lines,
    # not well-formed) when any part says them: every part holds the lines that cause them
    out = [rs[0] for r, rs in reasons.items() if r not in _NOTHING]
    level = min((max((lv for r, lv in _NOTHING.items() if r in p.reasons), default=0)
                 for p in first), default=0)
    if level:
        r = next(r for r, lv in _NOTHING.items() if lv == level)
        out.insert(0, reasons[r][0])
    return per_key, out, stats


_NOTHING = {"history has no client operations": 3,
            "history has no completed client read or write": 2,
            "history has no completed read": 1}


def _own(h: History, i: int, n_parts: int) -> set[int]:
    """The ids of part i's own keys; drops the other keys' micro-ops from ``h`` (a multi-key op
    brought them: their logs are partial here, and would make false cases that cost time to
    find and are dropped anyway). The op stays, for its own keys and its process's order."""
    own = {k for k, name in enumerate(h.keys) if part_of(name, n_parts) == i}
    if len(own) < len(h.keys):
        h.mops = h.mops.filter(pl.col("key").is_in(sorted(own)))
        h.drop_cached(*list(h._cache))
    return own
