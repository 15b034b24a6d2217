"""Spark's file sink on disk: which files are committed, read from its ``_spark_metadata`` log.

Spark's file sink (``writeStream.format("parquet")``, harness.workers.spark_driver.file_sink)
is exactly-once through its own log: ``<sink>/_spark_metadata/<N>`` is written (atomically,
by rename) when batch N commits, one JSON line per file the batch added after a first line
``v1``: ``{"path": "file:///.../part-....parquet", "action": "add", ...}``. Only the files
listed there belong to the sink; files of an attempt that never committed (a driver killed
mid-batch) stay in the folder and are ignored, as Spark's own readers ignore them. Its mtime
is when the sink committed batch N. ``<N>.compact`` files (every ``compactInterval`` batches;
the harness's drivers turn compaction off, harness.workers.spark_driver.BASE_CONF) repeat all
earlier entries; a batch's own files are then the entries no earlier batch listed.

Shared by the spark workload's reader (harness.workloads.spark_batches.parquet_batches) and
the app workload's output readers (harness.workers.app_files). Nothing here raises on a
missing folder (an empty result); unreadable lines are skipped and reported in ``problems``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

#: the log folder inside a sink folder
METADATA = "_spark_metadata"


@dataclass
class CommittedBatch:
    """One committed batch of a file sink: its id, when it committed (``commit_wall_ns``: the
    mtime of its log file, wall-clock ns) and the files it added, in its log's order."""

    batch_id: int
    commit_wall_ns: int
    files: list[Path] = field(default_factory=list)


def numbered(d: Path) -> dict[int, Path]:
    """Batch id -> file among ``d``'s entries named ``<N>`` or ``<N>.compact`` ({} when ``d``
    is not a folder)."""
    out: dict[int, Path] = {}
    if not d.is_dir():
        return out
    for p in d.iterdir():
        stem = p.name.removesuffix(".compact")
        if stem.isdigit() and not p.name.startswith("."):
            out[int(stem)] = p
    return out


def json_lines(p: Path, problems: list[str]) -> list:
    """The JSON values of a Spark log file's lines after the first (the version, ``v1``); an
    unreadable line is skipped and named in ``problems``."""
    out = []
    for line in p.read_text().splitlines()[1:]:
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            problems.append(f"{p}: unreadable line {line[:80]!r}")
    return out


def local_path(uri: str, sink: Path) -> Path:
    """The local file a log entry's ``path`` URI names; when that is gone (the sink folder was
    copied elsewhere), the file of that name in ``sink``."""
    u = urlparse(uri)
    path = Path(unquote(u.path)) if u.scheme in ("file", "") else None
    if path is None or not path.exists():
        path = sink / Path(unquote(u.path)).name
    return path


def committed_batches(sink: Path, problems: list[str] | None = None) -> list[CommittedBatch]:
    """Every committed batch of the file sink at ``sink``, in batch-id order, each with the
    files it added (the module docstring); [] when the sink has no log yet."""
    problems = [] if problems is None else problems
    seen: set[str] = set()
    out = []
    for n, p in sorted(numbered(sink / METADATA).items()):
        try:
            entries = [e for e in json_lines(p, problems)
                       if isinstance(e, dict) and e.get("action", "add") == "add" and isinstance(e.get("path"), str)]
            mtime = p.stat().st_mtime_ns
        except OSError as exc:  # vanished or unreadable: the next read tries again
            problems.append(f"{p}: {exc}")
            break
        files = [local_path(e["path"], sink) for e in entries if e["path"] not in seen]
        seen.update(e["path"] for e in entries)
        out.append(CommittedBatch(n, mtime, files))
    return out
