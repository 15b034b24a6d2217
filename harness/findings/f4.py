"""``eos-chaos repro f4``: finding F4's standalone reproducer (harness/findings/f4_repro.py) on
the harness's own cluster (3 KRaft nodes, no proxies, no faults), with librdkafka's
``cgrp,consumer,topic`` debug log kept and its telling lines picked out, so that one command shows
what the consumers read and why. docs/findings/F4.md is the bug report.

Layout of a run, ``<results>/f4-repro/<run-id>/``: ``tries.jsonl`` (one object per try, as the
reproducer prints them), ``logs/`` (broker logs, ``f4-repro.err``, ``librdkafka-debug.log``),
``evidence.txt`` (the debug lines of the offset fetches and partition starts).
"""
from __future__ import annotations

import re
from pathlib import Path

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
from harness.findings.bringup import TriesResult, run_tries_reproducer

REPRO = Path(__file__).with_name("f4_repro.py")


def run_f4(results: Path, *, tries: int = 3, variants: list[str] | None = None,
           kafka_version: str = DEFAULT_KAFKA_VERSION, debug_log: bool = True,
           timeout_s: float = 900, assignor: str = "eager", group_protocol: str = "classic",
           reset: str = "earliest") -> TriesResult:
    """Bring up a 3-node cluster, run the reproducer (``tries`` per variant; ``assignor``,
    ``group_protocol`` and ``reset`` as its --assignor/--group-protocol/--reset), tear down,
    and return the tries with the debug log's evidence. Raises what harness.findings.bringup
    raises; RuntimeError when the reproducer failed to start (its stderr quoted)."""
    return run_tries_reproducer(
        "f4", REPRO, results, tries=tries, variants=variants or ["rebalance"], kafka_version=kafka_version,
        proxies=False, debug_log=debug_log, timeout_s=timeout_s,
        extra=["--assignor", assignor, "--group-protocol", group_protocol, "--reset", reset],
        evidence=lambda r: debug_lines(r.run_dir / "logs" / "librdkafka-debug.log"))


#: the lines that tell the story: each OffsetFetch answer per partition (UNSTABLE_OFFSET_COMMIT),
#: the partition put back on the pending list, and the offset it is started at
_DEBUG = re.compile(r"OffsetFetchResponse: .*(UNSTABLE_OFFSET_COMMIT|offset \d+)|back to pending list|"
                    r"Starting pending assigned partition|Fetching committed offsets for|"
                    r"Ignoring OffsetFetch response|offset reset \(at offset|Start consuming .* at offset")


def debug_lines(path: Path, limit: int = 400) -> list[str]:
    """librdkafka's cgrp,consumer,topic debug lines of the offset fetches and partition starts
    (at most ``limit``, the first ones: the story is at the start of each try)."""
    if not path.is_file():
        return []
    out = ["# librdkafka debug log (cgrp,consumer,topic): offset fetches, pending list, partition starts"]
    with open(path, errors="replace") as fh:
        for line in fh:
            if _DEBUG.search(line):
                out.append(line.rstrip())
                if len(out) > limit:
                    break
    return out
