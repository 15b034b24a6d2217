"""The app workload's output when the user's PySpark job writes Spark's file sink
(``workload.app.pyspark.sink: parquet``; harness.workers.app_pyspark writes it).

The output is not a topic but a folder per instance, ``<run>/app/<i>/sink``, beside the
instance's checkpoint in its work dir (both kept across restarts). The harness reads only the
files its ``_spark_metadata`` log lists (harness.workers.file_sink): the files of a batch a
killed driver never committed are ignored, as Spark's own readers ignore them.

**Output keys and offsets.** A sink folder is one output key, named by its path in the run
folder: ``app/<i>/sink`` (``sink_key``). An output record's offset is its position in the
sink's committed order, counted from 0: batches by id, a batch's files in the order its log
lists them, a file's rows in order. Committed batches never change, so every reader (the
readers during the run, the catch-up wait, the final drain) gives a row the same offset: two
offsets naming one input are two rows, a real duplicate. During the run a reader takes batches
in id order only (it waits at a missing id, and at a committed file it cannot read yet), so an
offset it gives is final; the final read (``final=True``) goes past both (an unreadable
committed file's rows are then left out, and named in ``problems``).

Rows have the columns ``key`` and ``value`` (strings: the driver casts the user's DataFrame);
each is passed to the scenario's match (harness.workers.app_match) as UTF-8 bytes, as a Kafka
record's key and value would be. The readers record them as ``app-poll`` ops
``[["poll", {"app/0/sink": [[offset, input value | null], ...]}]]`` (docs/history.md), the
form checkers.finders.app_end_to_end reads for a topic's records.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from harness.workers.file_sink import committed_batches

#: the sink folder's name in an instance's work dir
SINK_DIR = "sink"

#: match(key bytes | None, value bytes | None) -> input value | None (harness.workers.app_match)
Match = Callable[[bytes | None, bytes | None], "int | None"]


def sink_key(instance: int) -> str:
    """The output key of instance ``instance``'s sink folder: ``app/<i>/sink``."""
    return f"app/{instance}/{SINK_DIR}"


def _read_rows(path: Path) -> list[tuple[str | None, str | None]]:
    """(key, value) of a parquet file's rows, in order; a missing column reads as None.
    Raises whatever pyarrow raises for a file it cannot read."""
    import pyarrow.parquet as pq

    cols = set(pq.read_schema(path).names)
    t = pq.read_table(path, columns=[c for c in ("key", "value") if c in cols]).to_pydict()
    n = len(next(iter(t.values()), []))
    keys, values = t.get("key", [None] * n), t.get("value", [None] * n)
    return [(_text(k), _text(v)) for k, v in zip(keys, values)]


def _text(x) -> str | None:
    if isinstance(x, (bytes, bytearray)):
        return bytes(x).decode("utf-8", "replace")
    return None if x is None else str(x)


class SinkRows:
    """One sink folder read incrementally: each ``read`` returns the rows of the batches
    committed since the previous one, as ``(offset, key, value)`` (the module docstring)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.next_batch = 0
        self.next_offset = 0
        self.problems: list[str] = []

    def read(self, final: bool = False) -> list[tuple[int, str | None, str | None]]:
        out: list[tuple[int, str | None, str | None]] = []
        for b in committed_batches(self.folder, self.problems):
            if b.batch_id < self.next_batch:
                continue
            if b.batch_id > self.next_batch and not final:
                break  # a batch id not committed (or not visible) yet: offsets after it would move
            rows: list[tuple[str | None, str | None]] = []
            for path in b.files:
                try:
                    rows += _read_rows(path)
                except Exception as exc:  # noqa: BLE001 - pyarrow's errors have no common base
                    if not final:
                        return out  # try again at the next read, the offsets still unassigned
                    self.problems.append(f"batch {b.batch_id}: committed file {path} unreadable: "
                                         f"{type(exc).__name__}: {exc}")
            for k, v in rows:
                out.append((self.next_offset, k, v))
                self.next_offset += 1
            self.next_batch = b.batch_id + 1
        return out


class FileOutput:
    """The application's sink folders (``dirs``: output key -> folder) read with ``match``:
    ``poll`` returns ``{key: [[offset, input value | None], ...]}`` of the rows committed since
    the previous poll; ``matched`` / ``unmatched`` count rows, ``samples`` keeps the first three
    rows that name no input (``{"at", "key", "value"}``, as the Kafka readers keep them)."""

    def __init__(self, dirs: dict[str, str], match: Match):
        self.sinks = {key: SinkRows(folder) for key, folder in dirs.items()}
        self.match = match
        self.matched = self.unmatched = 0
        self.samples: list[dict] = []

    def poll(self, final: bool = False) -> dict[str, list[list]]:
        out: dict[str, list[list]] = {}
        for key, sink in self.sinks.items():
            named = [[off, self._name(key, off, k, v)] for off, k, v in sink.read(final)]
            if named:
                out[key] = named
        return out

    def problems(self) -> list[str]:
        return [p for s in self.sinks.values() for p in s.problems]

    def _name(self, key: str, off: int, k: str | None, v: str | None) -> int | None:
        kb = None if k is None else k.encode()
        vb = None if v is None else v.encode()
        named = self.match(kb, vb)
        if named is None:
            self.unmatched += 1
            if len(self.samples) < 3:
                self.samples.append({"at": f"{key}@{off}", "key": repr(kb)[:120], "value": repr(vb)[:200]})
        else:
            self.matched += 1
        return named
