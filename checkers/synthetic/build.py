"""HistoryBuilder: write histories event by event in the docs/history.md shape.

Used by the unit tests (tiny handmade histories), by ``checkers.synthetic.simulate`` and by anyone who
wants a history without a cluster. Times are ns since run start; by default each event is
1 ms after the previous one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

MS = 1_000_000


class HistoryBuilder:
    """Append events; ``events`` is the list of event dicts, ``write(path)`` the JSON Lines."""

    def __init__(self, step_ns: int = MS) -> None:
        self.events: list[dict] = []
        self.step_ns = step_ns
        self.time = 0
        self._open: dict[Any, str] = {}

    def _event(self, process: Any, type_: str, f: str, value: Any, meta: dict | None,
               error: list | None, time: int | None) -> int:
        self.time = time if time is not None else self.time + self.step_ns
        ev = {"index": len(self.events), "time": self.time, "process": process,
              "type": type_, "f": f, "value": value}
        if meta:
            ev["meta"] = meta
        if error:
            ev["error"] = error
        self.events.append(ev)
        return ev["index"]

    # -- raw -------------------------------------------------------------------------
    def invoke(self, process: int, f: str, value: Any = None, meta: dict | None = None,
               time: int | None = None) -> int:
        """Record an invoke; returns its index."""
        self._open[process] = f
        return self._event(process, "invoke", f, value, meta, None, time)

    def complete(self, process: int, type_: str, value: Any = None, meta: dict | None = None,
                 error: list | None = None, time: int | None = None) -> int:
        """Record the completion of ``process``'s open op; returns its index."""
        f = self._open.pop(process)
        return self._event(process, type_, f, value, meta, error, time)

    def nemesis(self, f: str, value: Any = None) -> int:
        return self._event("nemesis", "info", f, value, None, None, None)

    # -- ops -------------------------------------------------------------------------
    def txn(self, process: int, sends: Iterable[tuple[str, int, int | None]], type_: str = "ok",
            tid: str | None = None, f: str = "txn", polls: dict | None = None,
            error: list | None = None, complete: bool = True) -> int:
        """A producer txn (or, with f="send", a non-transactional send op).

        ``sends``: (key, value, offset-or-None). ``polls``: {key: [(offset, value), ...]} read
        inside the op (consume-transform-produce). ``type_`` None with complete=False leaves
        the op in flight. Returns the invoke index.
        """
        sends = list(sends)
        meta = {"transactional_id": tid} if tid else None
        inv = ([["poll"]] if polls is not None else []) + [["send", k, v] for k, v, _ in sends]
        i = self.invoke(process, f, inv, meta)
        if complete:
            val = ([["poll", {k: [list(r) for r in rs] for k, rs in polls.items()}]]
                   if polls is not None else [])
            val += [["send", k, [o, v]] for k, v, o in sends]
            self.complete(process, type_, val, meta, error)
        return i

    def send(self, process: int, sends: Iterable[tuple[str, int, int | None]],
             type_: str = "ok", **kw) -> int:
        return self.txn(process, sends, type_, f="send", **kw)

    def init(self, process: int, tid: str, type_: str = "ok", error: list | None = None) -> int:
        meta = {"transactional_id": tid}
        i = self.invoke(process, "init", None, meta)
        self.complete(process, type_, None, meta, error)
        return i

    def assign(self, process: int, keys: list[str], start: dict | None = None,
               isolation: str | None = None) -> int:
        """Assign keys from the beginning, or from per-key offsets ``start``; ``isolation``
        ("read_committed" | "read_uncommitted") goes to ``meta.isolation_level``."""
        meta = dict(start) if start is not None else {"from": "beginning"}
        if isolation:
            meta["isolation_level"] = isolation
        i = self.invoke(process, "assign", list(keys), meta)
        self.complete(process, "ok", list(keys), meta)
        return i

    def poll(self, process: int, records: dict[str, list[tuple[int, int]]], type_: str = "ok",
             final: bool = False) -> int:
        """A poll returning ``records`` ({key: [(offset, value), ...]}); returns invoke index."""
        meta = {"final": True} if final else None
        i = self.invoke(process, "poll", [["poll"]], meta)
        self.complete(process, type_,
                      [["poll", {k: [list(r) for r in rs] for k, rs in records.items()}]], meta)
        return i

    # -- output ----------------------------------------------------------------------
    def lines(self) -> list[str]:
        return [json.dumps(e, separators=(",", ":")) for e in self.events]

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text("".join(line + "\n" for line in self.lines()))
        return path
