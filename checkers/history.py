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

Columnar layout (polars), built in one streaming pass:

``History.ops`` - one row per op, ordered by ``invoke_index`` (row number == ``op``):
    op (u32), invoke_index (i64), complete_index (i64, null if none), process (i64),
    f (str), type ("ok" | "fail" | "info"), invoke_time / complete_time (i64 ns since run
    start; complete_time null if none), transactional_id (str|null), group_id (str|null),
    final (bool: meta.final on invoke or completion), error (str|null: error name).

``History.mops`` - one row per micro-op, ordered by (op, seq):
    op (u32), seq (u32, order inside the op; a poll's records keep the consumer's order),
    kind ("send" | "poll"), key (u32 id into ``History.keys``), offset (i64|null), value (i64).
    A send appears once, with the offset its completion reported (null if unknown); a poll
    micro-op contributes one row per returned record.

``History.extras`` maps op id -> {"value", "completion_value", "meta"} for ops other than
send/poll/txn (``assign``, ``subscribe``, ``init``, unknown ``f``s): they are few.
"""

from __future__ import annotations

import gc
import json
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import polars as pl

try:  # orjson parses JSON Lines several times faster; json is the fallback
    import orjson as _orjson

    _loads = _orjson.loads
    _DecodeError: tuple[type[BaseException], ...] = (_orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads
    _DecodeError = (ValueError,)

#: fs whose values are lists of micro-operations (HISTORY.md "Micro-operations")
BULK_FS = frozenset({"send", "poll", "txn"})
COMPLETION_TYPES = frozenset({"ok", "fail", "info"})
MAX_PROBLEMS = 200  # beyond this, problems are only counted

NO_OFFSET = -(1 << 63)  # sentinel for an unknown offset in the typed offset column
SEND, POLL = "send", "poll"
KIND = pl.Enum([SEND, POLL])
TYPE = pl.Enum(["ok", "fail", "info"])


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

    def key_name(self, key_id: int) -> str:
        return self.keys[key_id]

    def cached(self, name: str, build):
        """Memoise a derived frame (the log, writes, reads) shared by several finders."""
        if name not in self._cache:
            self._cache[name] = build(self)
        return self._cache[name]

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


class _Builder:
    """Streaming pairing of events into op and micro-op columns."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.n_problems = 0
        self.key_ids: dict[str, int] = {}
        self.keys: list[str] = []
        self.open: dict[Any, int] = {}  # process -> op id of its in-flight invoke
        self.inv_value: dict[int, Any] = {}
        # op columns (appended at invoke, completion fields filled later)
        self.o_inv: list[int] = []
        self.o_cmp: list[int | None] = []
        self.o_proc: list[int | None] = []
        self.o_f: list[str] = []
        self.o_type: list[str] = []
        self.o_tinv: list[int | None] = []
        self.o_tcmp: list[int | None] = []
        self.o_tid: list[str | None] = []
        self.o_gid: list[str | None] = []
        self.o_final: list[bool] = []
        self.o_err: list[str | None] = []
        # micro-op columns as typed arrays: 8 bytes an entry instead of a list slot plus an
        # int object, which keeps a million-op history's loader well under 1 GiB
        self.m_op = array("q")
        self.m_seq = array("q")
        self.m_kind = array("b")
        self.m_key = array("q")
        self.m_off = array("q")  # NO_OFFSET where unknown
        self.m_val = array("q")
        self.nemesis: list[dict] = []
        self.extras: dict[int, dict] = {}
        self.n_events = 0
        self.last_index: int | None = None

    def problem(self, msg: str) -> None:
        self.n_problems += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(msg)

    def key(self, k: Any) -> int:
        kid = self.key_ids.get(k)
        if kid is None:
            if not isinstance(k, str):
                raise ValueError(f"key {k!r} is not a string")
            kid = self.key_ids[k] = len(self.keys)
            self.keys.append(k)
        return kid

    # -- events -----------------------------------------------------------------------
    def event(self, ev: Any, where: str) -> None:
        if not isinstance(ev, dict):
            self.problem(f"{where}: event is not a JSON object")
            return
        self.n_events += 1
        idx = ev.get("index")
        typ = ev.get("type")
        proc = ev.get("process")
        f = ev.get("f")
        if not isinstance(idx, int) or not isinstance(typ, str) or not isinstance(f, str):
            self.problem(f"{where}: event lacks an int index, a type or an f")
            return
        if self.last_index is not None and idx != self.last_index + 1:
            self.problem(f"{where}: index {idx} follows {self.last_index} (gap or disorder)")
        self.last_index = idx
        if proc == "nemesis" or isinstance(proc, str) or proc is None:
            if proc != "nemesis":
                self.problem(f"{where}: event {idx} has non-integer process {proc!r}; ignored")
            else:
                self.nemesis.append(ev)
            return
        if typ == "invoke":
            self.invoke(ev, idx, proc, f, where)
        elif typ in COMPLETION_TYPES:
            self.complete(ev, idx, proc, f, typ, where)
        else:
            self.problem(f"{where}: event {idx} has unknown type {typ!r}; ignored")

    def invoke(self, ev: dict, idx: int, proc: int, f: str, where: str) -> None:
        prev = self.open.get(proc)
        if prev is not None:
            self.problem(
                f"{where}: process {proc} invoked {idx} while op {self.o_inv[prev]} was in "
                "flight; the earlier op reads as info"
            )
            self.finish_missing(prev)
        op = len(self.o_inv)
        self.open[proc] = op
        meta = ev.get("meta")
        if not isinstance(meta, dict):
            meta = {}
        self.o_inv.append(idx)
        self.o_cmp.append(None)
        self.o_proc.append(proc)
        self.o_f.append(f)
        self.o_type.append("info")
        t = ev.get("time")
        self.o_tinv.append(t if isinstance(t, int) else None)
        self.o_tcmp.append(None)
        self.o_tid.append(meta.get("transactional_id"))
        self.o_gid.append(meta.get("group_id"))
        self.o_final.append(meta.get("final") is True)
        self.o_err.append(None)
        if f in BULK_FS:
            self.inv_value[op] = ev.get("value")
        else:
            self.extras[op] = {"value": ev.get("value"), "completion_value": None, "meta": meta}

    def complete(self, ev: dict, idx: int, proc: int, f: str, typ: str, where: str) -> None:
        op = self.open.pop(proc, None)
        if op is None:
            self.problem(f"{where}: completion {idx} of process {proc} has no open invoke; ignored")
            return
        if f != self.o_f[op]:
            self.problem(f"{where}: completion {idx} has f {f!r} but its invoke has {self.o_f[op]!r}")
        self.o_cmp[op] = idx
        self.o_type[op] = typ
        t = ev.get("time")
        self.o_tcmp[op] = t if isinstance(t, int) else None
        meta = ev.get("meta")
        if isinstance(meta, dict):
            if meta.get("final") is True:
                self.o_final[op] = True
            if self.o_tid[op] is None:
                self.o_tid[op] = meta.get("transactional_id")
            if self.o_gid[op] is None:
                self.o_gid[op] = meta.get("group_id")
        err = ev.get("error")
        if isinstance(err, list) and err and isinstance(err[0], str):
            self.o_err[op] = err[0]
        elif isinstance(err, str):
            self.o_err[op] = err
        if self.o_f[op] in BULK_FS:
            self.micro_ops(op, self.inv_value.pop(op, None), ev.get("value"), where)
        else:
            ex = self.extras[op]
            ex["completion_value"] = ev.get("value")
            if isinstance(meta, dict):
                ex["meta"] = {**ex["meta"], **meta}

    def finish_missing(self, op: int) -> None:
        """An op that never completed: info, micro-ops from its invoke only."""
        if self.o_f[op] in BULK_FS:
            self.micro_ops(op, self.inv_value.pop(op, None), None, f"op {self.o_inv[op]}")

    def micro_ops(self, op: int, inv: Any, cmp: Any, where: str) -> None:
        # hot loop: one call per bulk op, so locals are bound once
        seq = 0
        n_cmp_sends = 0
        key_ids = self.key_ids
        a_op, a_seq, a_kind = self.m_op.append, self.m_seq.append, self.m_kind.append
        a_key, a_off, a_val = self.m_key.append, self.m_off.append, self.m_val.append
        start = len(self.m_op)
        if isinstance(cmp, list):
            for mop in cmp:
                try:
                    kind = mop[0]
                    if kind == SEND:
                        kname = mop[1]
                        k = key_ids.get(kname)
                        if k is None:
                            k = self.key(kname)
                        ov = mop[2]
                        if type(ov) is list:
                            off, v = ov
                            if off is None:
                                off = NO_OFFSET
                        else:  # completion echoing the invoke's ["send", k, v]
                            off, v = NO_OFFSET, ov
                        if type(v) is not int or type(off) is not int:
                            raise ValueError("offset/value not int")
                        a_op(op); a_seq(seq); a_kind(0); a_key(k); a_off(off); a_val(v)
                        seq += 1
                        n_cmp_sends += 1
                    elif kind == POLL:
                        if len(mop) < 2:
                            continue  # an echoed ["poll"]: nothing was returned
                        for kname, recs in mop[1].items():
                            k = key_ids.get(kname)
                            if k is None:
                                k = self.key(kname)
                            for off, v in recs:
                                if type(v) is not int or type(off) is not int:
                                    raise ValueError("offset/value not int")
                                a_op(op); a_seq(seq); a_kind(1); a_key(k); a_off(off); a_val(v)
                                seq += 1
                    else:
                        raise ValueError(f"unknown micro-op {kind!r}")
                except (TypeError, ValueError, IndexError, AttributeError, KeyError) as e:
                    self.problem(f"{where}: op {self.o_inv[op]}: malformed micro-op {mop!r:.80}: {e}")
        elif cmp is not None:
            self.problem(f"{where}: op {self.o_inv[op]}: completion value is not a list")
        if not isinstance(inv, list):
            return
        inv_sends = [m for m in inv if type(m) is list and m and m[0] == SEND]
        if len(inv_sends) == n_cmp_sends:
            return  # the completion listed every send (the common case)
        # sends the completion did not list (info/fail completions may carry no value)
        seen = {(self.m_key[i], self.m_val[i]) for i in range(start, len(self.m_op))
                if self.m_kind[i] == 0}
        for mop in inv_sends:
            try:
                k = self.key(mop[1])
                v = mop[2]
                if isinstance(v, list):  # tolerate an invoke already carrying [offset, v]
                    v = v[1]
                if type(v) is not int:
                    raise ValueError("value not int")
            except (TypeError, ValueError, IndexError) as e:
                self.problem(f"{where}: op {self.o_inv[op]}: malformed invoke micro-op: {e}")
                continue
            if (k, v) in seen:
                continue
            a_op(op); a_seq(seq); a_kind(0); a_key(k); a_off(NO_OFFSET); a_val(v)
            seq += 1

    def build(self) -> History:
        for proc, op in list(self.open.items()):
            self.finish_missing(op)
        self.open.clear()
        n = len(self.o_inv)
        ops = pl.DataFrame(
            {
                "op": pl.Series(range(n), dtype=pl.UInt32),
                "invoke_index": pl.Series(self.o_inv, dtype=pl.Int64),
                "complete_index": pl.Series(self.o_cmp, dtype=pl.Int64),
                "process": pl.Series(self.o_proc, dtype=pl.Int64),
                "f": pl.Series(self.o_f, dtype=pl.Categorical),
                "type": pl.Series(self.o_type, dtype=TYPE),
                "invoke_time": pl.Series(self.o_tinv, dtype=pl.Int64),
                "complete_time": pl.Series(self.o_tcmp, dtype=pl.Int64),
                "transactional_id": pl.Series([t if isinstance(t, str) else None for t in self.o_tid], dtype=pl.Utf8),
                "group_id": pl.Series([g if isinstance(g, str) else None for g in self.o_gid], dtype=pl.Utf8),
                "final": pl.Series(self.o_final, dtype=pl.Boolean),
                "error": pl.Series(self.o_err, dtype=pl.Utf8),
            }
        )
        # a producer process is one instance of one transactional.id: ops that do not
        # repeat it in their meta inherit it from the process's init/earlier ops
        tids = (ops.filter(pl.col("transactional_id").is_not_null())
                .group_by("process").agg(tid_=pl.col("transactional_id").first()))
        ops = (ops.join(tids, on="process", how="left")
               .with_columns(transactional_id=pl.coalesce("transactional_id", "tid_"))
               .drop("tid_").sort("op"))
        def col(a, dtype):
            return pl.Series(np.frombuffer(a, dtype=a.typecode == "b" and np.int8 or np.int64)
                             if len(a) else np.zeros(0, np.int64)).cast(dtype)
        off = np.frombuffer(self.m_off, dtype=np.int64) if len(self.m_off) else np.zeros(0, np.int64)
        mops = pl.DataFrame(
            {
                "op": col(self.m_op, pl.UInt32),
                "seq": col(self.m_seq, pl.UInt32),
                "kind": col(self.m_kind, pl.UInt8).replace_strict(
                    {0: SEND, 1: POLL}, return_dtype=KIND),
                "key": col(self.m_key, pl.UInt32),
                "offset": pl.Series(off).set(pl.Series(off == NO_OFFSET), None),
                "value": col(self.m_val, pl.Int64),
            }
        ).sort(["op", "seq"])
        return History(
            ops=ops, mops=mops, keys=self.keys, nemesis=self.nemesis, extras=self.extras,
            problems=self.problems, n_events=self.n_events, n_problems=self.n_problems,
        )


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, is_last) for each non-blank line, reading one line ahead."""
    with open(path, "rb") as fh:
        prev: tuple[int, bytes] | None = None
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if prev is not None:
                yield prev[0], prev[1], False
            prev = (n, line)
        if prev is not None:
            yield prev[0], prev[1], True


def load_history(source: str | Path | Iterable[dict]) -> History:
    """Read a history from a ``history.jsonl`` path or from an iterable of event dicts.

    Returns a :class:`History`; content problems land in ``History.problems`` (and set
    ``truncated`` for a dropped last line, ``garbled_lines`` for dropped lines mid-file).
    """
    # parsing allocates millions of short-lived containers that refcounting frees; the
    # cyclic collector would only rescan them, so it is paused for the parse
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(source)
    finally:
        if was_enabled:
            gc.enable()


def _load(source: str | Path | Iterable[dict]) -> History:
    b = _Builder()
    truncated = False
    garbled = 0
    if isinstance(source, (str, Path)):
        for lineno, line, last in _lines(Path(source)):
            try:
                ev = _loads(line)
            except _DecodeError:
                if last:
                    truncated = True
                    b.problem(f"line {lineno}: truncated or garbled last line dropped")
                else:
                    garbled += 1
                    b.problem(f"line {lineno}: garbled line skipped")
                continue
            b.event(ev, f"line {lineno}")
    else:
        try:
            it = iter(source)
        except TypeError:
            raise TypeError("load_history takes a path or an iterable of event dicts") from None
        for i, ev in enumerate(it):
            b.event(ev, f"event #{i}")
    h = b.build()
    h.truncated = truncated
    h.garbled_lines = garbled
    return h


def as_history(history: "History | str | Path | Iterable[dict]") -> History:
    """Accept a History, a path, or a list of event dicts."""
    if isinstance(history, History):
        return history
    return load_history(history)
