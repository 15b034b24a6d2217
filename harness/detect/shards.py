"""Shards: a suite's (or the zoo's) cells split over N machines, and the shards merged back.

A machine holds one cluster at a time, so a nightly's hours of runs only fit a night on many
machines. The machines are the CI's own (a GitHub Actions matrix, a GitLab ``parallel:`` job,
a Kubernetes Indexed Job: docs/nightly.md); this module only decides which cells each runs
and joins their folders.

- ``split``: a deterministic split of the cells into N shards, balanced by each cell's estimated
  time (``estimate_s``: load seconds plus the measured overhead), longest first onto the least
  loaded shard (LPT: within 4/3 of the best possible slowest shard); ties go by cell id and
  shard number, so every machine computes the same split from the same suite file and flags.
  Each shard keeps the suite's run order (seed-major).
- A shard is a complete suite folder (runs.jsonl, index.html, junit.xml, summary.json),
  resumable like any suite; its summary.json carries a ``shard`` block: ``{index, count,
  matrix, cells: [row, ...]}``, ``matrix`` being 12 hex digits over every cell's id and
  fingerprint of the *whole* matrix (seeds, versions and durations included), ``cells`` the
  whole matrix's rows (harness.detect.suite_records.cell_fields).
- ``merge``: one suite folder from shard folders: refuses shards of different matrices (another
  suite, other seeds) or a summary that is not complete JSON, rebases every run folder path
  onto the merged folder, and lists the cells no shard ran.

``K/N`` is 1-based, as GitLab's ``CI_NODE_INDEX`` (a Kubernetes ``JOB_COMPLETION_INDEX`` is
0-based: add one).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from harness.detect.suite_records import RECORDS, cell_fields, read_records, summarize

SHARD_RE = re.compile(r"^\s*(-?\d+)\s*/\s*(-?\d+)\s*$")


class ShardError(ValueError):
    """A bad ``K/N``, or shard folders that cannot be merged; the message says what to fix."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N), 1 <= K <= N. Raises ShardError in one line."""
    m = SHARD_RE.match(str(text))
    if not m:
        raise ShardError(f"--shard {text!r}: give K/N, e.g. --shard 3/20 (shard 3 of 20, counted from 1)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1:
        raise ShardError(f"--shard {text}: N must be at least 1")
    if not 1 <= k <= n:
        raise ShardError(f"--shard {text}: K must be from 1 to {n} (shards are counted from 1; "
                         "a Kubernetes JOB_COMPLETION_INDEX counts from 0: add one)")
    return k, n


def estimate_s(cell: Any, overhead: float) -> float:
    """Seconds a cell is expected to take: its load duration plus ``overhead`` (the suite's
    measured median overhead, harness.detect.suite_records.overhead_s)."""
    return float(cell.duration) + float(overhead)


def split(cells: list[Any], n: int, overhead: float) -> list[list[Any]]:
    """The cells in ``n`` shards (module docstring): longest estimate first onto the shard with
    the least estimated time so far (ties: lower shard number); each shard in the cells' own order."""
    if n < 1:
        raise ShardError("the number of shards must be at least 1")
    order = sorted(range(len(cells)), key=lambda i: (-estimate_s(cells[i], overhead), cells[i].id))
    loads = [0.0] * n
    owner: dict[int, int] = {}
    for i in order:
        s = min(range(n), key=lambda j: (loads[j], j))
        owner[i] = s
        loads[s] += estimate_s(cells[i], overhead)
    return [[c for i, c in enumerate(cells) if owner[i] == s] for s in range(n)]


def shard_cells(cells: list[Any], shard: tuple[int, int], overhead: float) -> list[Any]:
    """The cells of shard ``(K, N)``."""
    k, n = shard
    return split(cells, n, overhead)[k - 1]


def matrix_id(cells: Iterable[Any]) -> str:
    """12 hex digits over every cell's id and fingerprint: equal for two shards of one matrix."""
    text = json.dumps(sorted([c.id, c.fingerprint] for c in cells))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def shard_meta(cells: list[Any], shard: tuple[int, int], overhead: float) -> dict:
    """summary.json's ``shard`` block of shard ``(K, N)`` of ``cells`` (the whole matrix)."""
    k, n = shard
    mine = shard_cells(cells, shard, overhead)
    return {"shard": {"index": k, "count": n, "matrix": matrix_id(cells), "overhead_s": round(overhead, 1),
                      "ids": [c.id for c in mine], "cells": [cell_fields(c) for c in cells]}}


def plan(cells: list[Any], n: int, overhead: float) -> dict:
    """``--dry-run --shards N``: ``{shards: [{index, runs, estimate_s}], machine_s, slowest_s,
    slowest_shard}``: machine time (every cell's estimate) and the wall time of the slowest
    shard (shards run at once), in seconds."""
    parts = split(cells, n, overhead)
    rows = [{"index": i + 1, "runs": len(p), "estimate_s": round(sum(estimate_s(c, overhead) for c in p), 1)}
            for i, p in enumerate(parts)]
    slowest = max(rows, key=lambda r: (r["estimate_s"], -r["index"]))
    return {"shards": rows, "machine_s": round(sum(estimate_s(c, overhead) for c in cells), 1),
            "slowest_s": slowest["estimate_s"], "slowest_shard": slowest["index"]}


# ---------------------------------------------------------------- what a shard needs

def setup_args(cells: Iterable[Any]) -> list[str]:
    """``eos-chaos setup``'s arguments that install what ``cells`` need and no more: each Kafka
    release (``--kafka-version``), ``--docker`` (docker backend or an app image), ``--spark``
    (spark workload, a PySpark app), ``--flink`` (the PyFlink example), ``--java-client V``
    (the Java client), and ``--minimal`` when no cell needs toxiproxy (link faults), the Kafka
    Streams example, Kafka's tools or the Java workers."""
    from nemesis.registry import needs

    versions: dict[str, None] = {}
    java: dict[str, None] = {}
    docker = spark = flink = full = False
    for c in cells:
        scn = c.scenario
        cl, w = scn.cluster, scn.workload
        if cl.backend != "external" and not (cl.backend == "docker" and cl.docker is not None and cl.docker.image):
            versions[cl.kafka_version] = None
        docker |= cl.backend == "docker"
        if "toxiproxy" in needs([f.fault for f in scn.nemesis.all_faults()]):
            full = True
        if w.name == "spark":
            spark = True
        if getattr(w, "client", None) == "java":
            from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION

            java[getattr(w, "java_client_version", None) or DEFAULT_JAVA_CLIENT_VERSION] = None
            full = True
        app = getattr(getattr(w, "spec", None), "app", None) or getattr(w, "app", None)
        if app is not None:
            command = " ".join(str(a) for a in (getattr(app, "command", None) or []))
            docker |= bool(getattr(app, "image", None))
            spark |= getattr(app, "pyspark", None) is not None
            flink |= "harness.examples.flink_app" in command
            full |= any(x in command for x in ("harness.examples.streams_app", "{kafka_tools}", "java"))
    args: list[str] = []
    for v in versions:
        args += ["--kafka-version", v]
    for v in java:
        args += ["--java-client", v]
    args += ["--spark"] * spark + ["--flink"] * flink + ["--docker"] * docker
    if not full and not java:
        args.append("--minimal")
    return args


# ---------------------------------------------------------------- merge

@dataclass(frozen=True)
class CellRow:
    """A cell known only from a shard's ``cells`` rows: what summarize needs of a Cell."""

    row: dict

    def __getattr__(self, name: str) -> Any:
        alias = {"name": "scenario", "duration": "duration_s"}
        try:
            return self.row[alias.get(name, name)]
        except KeyError:
            raise AttributeError(name) from None


def read_shard(folder: str | Path) -> dict:
    """A shard folder's summary.json (with its ``shard`` block). Raises ShardError in one line."""
    d = Path(folder)
    p = d / "summary.json"
    if not d.is_dir():
        raise ShardError(f"{d} is not a folder: give the shard folders (each a suite folder with summary.json)")
    if not p.is_file():
        raise ShardError(f"{d} has no summary.json: not a suite folder, or its shard never started; "
                         "run the shard (it resumes) or leave the folder out")
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise ShardError(f"{p} is not complete JSON ({str(exc)[:80]}): the shard was cut short while "
                         "writing it; run the same shard command again (it resumes) and merge after") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("shard"), dict) or "cells" not in doc["shard"]:
        raise ShardError(f"{p} is not a shard's summary (no shard block): run the suite with --shard K/N")
    return doc


def merge(out: str | Path, folders: list[str | Path]) -> tuple[dict, list[str]]:
    """Merge shard folders into the suite folder ``out``: its runs.jsonl (every shard's records,
    run folders rebased onto ``out``) and summary, junit and index (written by the caller:
    harness.detect.suite_outputs.write_outputs). Returns (summary, ids of the cells no shard
    ran). Raises ShardError for no folders, a folder that is not a shard, shards of different
    matrices, or one shard given twice."""
    if not folders:
        raise ShardError("give at least one shard folder to merge")
    out = Path(out)
    docs = [(Path(f), read_shard(f)) for f in folders]
    first_dir, first = docs[0]
    seen: dict[int, Path] = {}
    for d, doc in docs:
        sh = doc["shard"]
        if (doc.get("suite"), sh.get("matrix")) != (first.get("suite"), first["shard"].get("matrix")):
            raise ShardError(f"{d} is a shard of suite {doc.get('suite')!r} (matrix {sh.get('matrix')}) and "
                             f"{first_dir} of {first.get('suite')!r} (matrix {first['shard'].get('matrix')}): "
                             "merge shards of one suite run with the same seeds, versions and durations")
        if sh.get("count") != first["shard"].get("count"):
            raise ShardError(f"{d} is shard {sh.get('index')}/{sh.get('count')} but {first_dir} is of "
                             f"{first['shard'].get('count')} shards: merge shards of one split")
        if sh.get("index") in seen:
            raise ShardError(f"{d} and {seen[sh['index']]} are both shard {sh['index']}/{sh['count']}")
        seen[sh["index"]] = d
    cells = [CellRow(r) for r in first["shard"]["cells"]]
    out.mkdir(parents=True, exist_ok=True)
    merged: dict[str, dict] = {}
    for d, doc in docs:
        records = read_records(d / RECORDS)
        mine = set(doc["shard"].get("ids") or [])
        for cid, rec in records.items():
            if mine and cid not in mine:
                continue
            rec = dict(rec)
            for key in ("run_dir", "report"):
                if rec.get(key):
                    rec[key] = Path(os.path.relpath((d / rec[key]).resolve(), out.resolve())).as_posix()
            if isinstance(rec.get("replay"), dict) and rec["replay"].get("run_dir"):
                rec["replay"] = dict(rec["replay"], run_dir=Path(os.path.relpath(
                    (d / rec["replay"]["run_dir"]).resolve(), out.resolve())).as_posix())
            merged[cid] = rec
    with open(out / RECORDS, "w") as f:
        for rec in merged.values():
            f.write(json.dumps(rec, default=str) + "\n")
    count = first["shard"]["count"]
    meta = {"merged": {"shards": sorted(seen), "count": count, "matrix": first["shard"]["matrix"],
                       "missing_shards": [k for k in range(1, count + 1) if k not in seen],
                       "folders": {str(k): Path(os.path.relpath(v.resolve(), out.resolve())).as_posix()
                                   for k, v in sorted(seen.items())}}}
    summary = summarize(first.get("suite"), first.get("source"), cells, merged, meta)
    # a cell is "not run" when no shard's record is for it (fingerprint and all)
    missing = [r["id"] for r in summary["runs"] if r["status"] == "not-run"]
    summary["merged"]["not_run"] = missing
    return summary, missing
