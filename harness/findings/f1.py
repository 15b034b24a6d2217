"""``eos-chaos repro f1``: finding F1's standalone reproducer (harness/findings/f1_repro.py) on
the harness's own cluster, with the brokers' segments kept and read back with Kafka's
DumpLogSegments (harness.cluster.segments), so that one command shows both what the client saw and
what the log holds. docs/findings/F1.md is the bug report.

Layout of a run, ``<results>/f1-repro/<run-id>/``: ``tries.jsonl`` (one object per try, as the
reproducer prints them), ``logs/`` (broker logs, ``f1-repro.err``, ``librdkafka-debug.log``),
``nodes/n*/data`` (kept segments), ``evidence.txt`` (DumpLogSegments lines of each try's records).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, dump_log_command
from harness.findings.bringup import TriesResult, run_tries_reproducer

REPRO = Path(__file__).with_name("f1_repro.py")




def run_f1(results: Path, *, tries: int = 3, variants: list[str] | None = None,
           kafka_version: str = DEFAULT_KAFKA_VERSION, debug_log: bool = True,
           timeout_s: float = 600) -> TriesResult:
    """Bring up a 3-node cluster with toxiproxy, run the reproducer (``tries`` per variant),
    tear down keeping the segments, and return the tries with the DumpLogSegments lines of
    each try's records. Raises what harness.findings.bringup raises; RuntimeError when the
    reproducer failed to start (its stderr quoted)."""
    return run_tries_reproducer(
        "f1", REPRO, results, tries=tries, variants=variants or ["reuse"], kafka_version=kafka_version,
        proxies=True, debug_log=debug_log, timeout_s=timeout_s,
        evidence=lambda r: (evidence(r.run_dir, r.tries, kafka_version)
                            + debug_lines(r.run_dir / "logs" / "librdkafka-debug.log")))


_OFFSET = re.compile(r"^\| offset: (\d+) ")
_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) ")


def dump_lines(segment_dir: Path, kafka_version: str, offsets: set[int]) -> list[str]:
    """DumpLogSegments ``--print-data-log`` lines of one replica's log dir for the batches
    that hold ``offsets``: each batch header (producer id, epoch, base sequence, isControl)
    followed by its record lines (payload or endTxnMarker)."""
    segs = sorted(segment_dir.glob("*.log"))
    if not segs:
        return []
    proc = subprocess.run(dump_log_command(kafka_version) + ["--print-data-log", "--files", ",".join(map(str, segs))],
                          capture_output=True, text=True, timeout=120)
    return select_batches(proc.stdout, offsets)


def select_batches(text: str, offsets: set[int]) -> list[str]:
    """The batch header lines of DumpLogSegments output whose offset range holds one of
    ``offsets``, each followed by its record lines (indented)."""
    out, keep = [], False
    for line in text.splitlines():
        m = _BATCH.match(line)
        if m:
            keep = any(int(m[1]) <= o <= int(m[2]) for o in offsets)
            if keep:
                out.append(line)
        elif keep and _OFFSET.match(line):
            out.append("  " + line)
    return out


def evidence(run_dir: Path, tries: list[dict], kafka_version: str) -> list[str]:
    """For every try: what the client saw, then every kept replica's DumpLogSegments lines of
    the offsets from the try's first record to two past its committed offset (the aborted
    record, its ABORT marker, the next transaction's COMMIT marker)."""
    out = []
    for t in tries:
        if "error" in t:
            out.append(f"# {t['variant']} try {t['try']}: error {t['error']}")
            continue
        offs = [int(o) for o in {**t["read_uncommitted"], **t["read_committed"]}]
        if t.get("committed_offset") is not None:
            offs.append(int(t["committed_offset"]))
        lo, hi = min(offs), max(offs) + 2
        out.append(f"# {t['variant']} try {t['try']}: {t['topic']}-{t['partition']} leader n{t['leader']}, "
                   f"coordinator n{t['coordinator']}; lost={t['lost']}; committed value "
                   f"{t['values']['committed']!r} acknowledged at offset {t['committed_offset']}, which "
                   f"holds {t['value_at_committed_offset']!r}")
        out += replica_lines(run_dir, f"{t['topic']}-{t['partition']}", kafka_version, set(range(lo, hi + 1)))
    return out


def replica_lines(run_dir: Path, partition_dir: str, kafka_version: str, offsets: set[int]) -> list[str]:
    """``dump_lines`` of every kept replica of ``partition_dir`` ("topic-partition"), each
    under a ``## n<i>`` heading; a replica identical to the first one is named, not repeated."""
    out: list[str] = []
    first: tuple[str, list[str]] | None = None
    for d in sorted(run_dir.glob(f"nodes/n*/data/{partition_dir}")):
        node, lines = d.parents[1].name, dump_lines(d, kafka_version, offsets)
        if first is not None and lines == first[1]:
            out.append(f"## {node}: identical to {first[0]}")
            continue
        out.append(f"## {node}")
        out += lines
        first = first or (node, lines)
    return out


_DEBUG = re.compile(r"Produce MessageSet|MessageSet with|ADVBASE|Timed out ProduceRequest|Transactional API called: "
                    r"(abort|commit)_transaction|RESETSEQ|NEWPID")


def debug_lines(path: Path) -> list[str]:
    """librdkafka's debug lines (eos,msg,topic) that tell the story: each ProduceRequest with
    its MsgId and BaseSeq, its outcome, the sequence base moves, the abort/commit calls."""
    if not path.is_file():
        return []
    lines = [x.rstrip() for x in path.read_text(errors="replace").splitlines() if _DEBUG.search(x)]
    return ["# librdkafka debug log (eos,msg,topic): produce requests, outcomes, sequence base moves"] + lines

