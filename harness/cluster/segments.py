"""Read the brokers' log segments that a run kept (``<run>/nodes/n<i>/data``), with Kafka's own
DumpLogSegments (kafka-dump-log.sh), to see a partition replica by replica: every record's
offset, producer id and epoch, value, and the COMMIT/ABORT control records (KIP-98).

A run keeps the log dirs when its verdict is not valid, when its brokers logged an event that
threatens exactly-once (harness.cluster.broker_events), or with ``eos-chaos run --keep-data``
(harness.run.runner.settle_node_data). ``eos-chaos dump-log RUN KEY`` prints what this module reads.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from checkers.safe_load import read_yaml
from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, VERSION, dump_log_command

_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .*?producerId: (-?\d+) producerEpoch: (-?\d+)"
                    r".*?isTransactional: (true|false) isControl: (true|false)")
_RECORD = re.compile(r"^\| offset: (\d+) .*?(?:payload: (.*)$|endTxnMarker: (\w+))")


class SegmentError(Exception):
    """The run kept no log dir for the partition, or DumpLogSegments failed."""


@dataclass
class Record:
    """One record of a replica's log: a data record (``value``: its payload text) or a control
    record (``marker``: "COMMIT" or "ABORT")."""

    offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    value: str | None = None
    marker: str | None = None


@dataclass
class Replica:
    node: str  # "n1"
    segments: list[Path]
    records: list[Record] = field(default_factory=list)
    raw: str = ""

    @property
    def log_end_offset(self) -> int:
        """One past the last offset in the segments (0 when empty)."""
        return self.records[-1].offset + 1 if self.records else 0


def parse_dump(text: str) -> list[Record]:
    """Records of DumpLogSegments ``--print-data-log`` output (Kafka 3.x and 4.x format)."""
    out: list[Record] = []
    batch = None
    for line in text.splitlines():
        m = _BATCH.match(line)
        if m:
            batch = (int(m[3]), int(m[4]), m[5] == "true")
            continue
        m = _RECORD.match(line)
        if m and batch is not None:
            out.append(Record(int(m[1]), batch[0], batch[1], batch[2],
                              value=m[2] if m[3] is None else None, marker=m[3]))
    return out


def kafka_version_of(run_dir: Path) -> str:
    """The Kafka version the run used (``kafka_version`` of the scenario.yaml the runner
    wrote), else the default."""
    try:
        data = read_yaml(run_dir / "scenario.yaml") or {}
    except (OSError, ValueError, yaml.YAMLError):
        return DEFAULT_KAFKA_VERSION
    v = data.get("kafka_version") if isinstance(data, dict) else None
    return v if isinstance(v, str) and VERSION.fullmatch(v) else DEFAULT_KAFKA_VERSION


def aligned(replicas: list[Replica]) -> list[tuple[int, list[Record | None], bool]]:
    """Per offset held by any replica: (offset, each replica's record there or None, whether
    the replicas disagree: a missing record, or another producer, value or marker)."""
    cells = [{x.offset: x for x in r.records} for r in replicas]
    rows = []
    for o in sorted({o for c in cells for o in c}):
        row = [c.get(o) for c in cells]
        seen = {(x.producer_id, x.value, x.marker) if x else None for x in row}
        rows.append((o, row, len(seen) > 1))
    return rows


def read_partition(run_dir: str | Path, key: str, timeout: float = 120.0) -> list[Replica]:
    """Every kept replica of ``key`` ("topic/partition") in ``run_dir``, node by node.

    Raises SegmentError when the run kept no log dir with that partition (say how to keep
    them) or when DumpLogSegments fails (its last lines quoted); ArtifactError when Kafka's
    tools cannot be fetched."""
    run_dir = Path(run_dir)
    topic, _, part = key.rpartition("/")
    if not topic or not part.isdigit():
        raise SegmentError(f"key {key!r} is not topic/partition, e.g. t0/1")
    dirs = sorted(run_dir.glob(f"nodes/n*/data/{topic}-{part}"))
    if not dirs:
        kept = sorted(run_dir.glob("nodes/n*/data"))
        raise SegmentError(
            f"no log dir of {topic}-{part} in {run_dir}/nodes: "
            + ("the run kept log dirs, but not this partition's" if kept else
               "the run kept none (valid runs discard them; run again with `eos-chaos run --keep-data`)"))
    cmd = dump_log_command(kafka_version_of(run_dir))
    out = []
    for d in dirs:
        segs = sorted(d.glob("*.log"))
        rep = Replica(d.parents[1].name, segs)
        if segs:
            proc = subprocess.run(cmd + ["--print-data-log", "--files", ",".join(map(str, segs))],
                                  capture_output=True, text=True, timeout=timeout)
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
                raise SegmentError(f"DumpLogSegments failed on {d}:\n{tail}")
            rep.raw = proc.stdout
            rep.records = parse_dump(proc.stdout)
        out.append(rep)
    return out
