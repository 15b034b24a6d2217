"""The history writer: one append-only, durable ``history.jsonl`` per run (docs/history.md).

Client workers and the nemesis hand events to one HistoryWriter, which gives each the next
``index`` and appends it as one JSON line. Every line is written with one ``write(2)`` on an
``O_APPEND`` descriptor, so a crash of the controller leaves whole lines (at most the last one
torn); a background thread ``fsync``s every ``fsync_interval`` seconds so that what was written
survives a crash of the machine too, at most that much later.

Readers live in checkers.history (the checkers must not import the harness).
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any


def now_ns(start_ns: int) -> int:
    """Nanoseconds since ``start_ns`` on CLOCK_MONOTONIC, which all processes on a host share."""
    return time.monotonic_ns() - start_ns


class HistoryWriter:
    """Thread-safe appender of history events.

    ``append(event)`` fills ``index`` (and ``time`` when absent) and returns the event as
    written. Counters of what was written (``counts[(is_nemesis, type)]``) feed the progress display.
    """

    def __init__(self, path: Path, start_ns: int | None = None, fsync_interval: float = 0.2):
        self.path = Path(path)
        self.start_ns = time.monotonic_ns() if start_ns is None else start_ns
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()
        self._next = 0
        self._dirty = False
        self._closed = threading.Event()
        self.counts: Counter = Counter()
        self._syncer = threading.Thread(target=self._sync_loop, args=(fsync_interval,), daemon=True)
        self._syncer.start()

    def _sync_loop(self, interval: float) -> None:
        while not self._closed.wait(interval):
            self._sync()

    def _sync(self) -> None:
        with self._lock:
            if not self._dirty or self._fd < 0:
                return
            self._dirty = False
            fd = self._fd
        try:
            os.fsync(fd)
        except OSError:
            pass  # closed concurrently; close() syncs itself

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        """Write one event; ``index`` is assigned here. Raises ValueError once closed."""
        with self._lock:
            if self._fd < 0:
                raise ValueError("history is closed")
            ev = {"index": self._next, "time": event.get("time", now_ns(self.start_ns))}
            ev.update((k, v) for k, v in event.items() if k not in ("index", "time"))
            os.write(self._fd, (json.dumps(ev, separators=(",", ":")) + "\n").encode())
            self._next += 1
            self._dirty = True
            self.counts[(ev.get("process") == "nemesis", ev.get("type"))] += 1
        return ev

    def now(self) -> int:
        return now_ns(self.start_ns)

    @property
    def size(self) -> int:
        return self._next

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = -1
