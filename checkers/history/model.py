"""The parsed history: ``History`` (ops and micro-ops as polars frames) and the constants
of the history format (docs/history.md). Column shapes: see the package docstring."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import polars as pl

#: fs whose values are lists of micro-operations (docs/history.md "Micro-operations")
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
    #: op ids (rows of ``ops``) some of whose values were read on keys this history does not
    #: hold: a part of a history cut by key (``checkers.engines.parts``); ``log.index`` counts such an
    #: op as read (an info transaction one of whose values was read must have committed)
    ops_read_elsewhere: list[int] = field(default_factory=list)
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

