"""``eos-chaos repro f6``: finding F6's standalone reproducer (harness/findings/f6_repro.py) on
the harness's own cluster (3 KRaft nodes of Kafka 4.4.0, no proxies, no faults), with the
brokers' minimum acquisition lock lowered to 1 s (``group.share.min.record.lock.duration.ms``),
the segments kept and read back with DumpLogSegments (the markers at the dead-lettered
offsets), librdkafka's ``fetch,cgrp,queue`` debug log and, for the ``java`` variant, the
harness's Java share-consumer worker on kafka-clients of the brokers' version.
docs/findings/F6.md is the bug report.

Layout of a run, ``<results>/f6-repro/<run-id>/``: ``tries.jsonl`` (one object per try, as the
reproducer prints them), ``logs/`` (broker logs, ``f6-repro.err``, ``librdkafka-debug.log``,
``java-share-consumer.log``), ``nodes/n*/data`` (kept segments), ``evidence.txt`` (per try: the
DLQ records, the DumpLogSegments lines of the try's partition, and the debug lines of the
ShareFetch responses and acknowledgements).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from harness.findings.bringup import (TriesResult, findings_cluster, repro_run_dir, reproducer_tries,
                                      write_evidence)
from harness.findings.f1 import replica_lines

REPRO = Path(__file__).with_name("f6_repro.py")
#: KIP-1191's dead-letter queue of share groups came with 4.4.0 (share.version=2)
F6_KAFKA_VERSION = "4.4.0"
#: what the reproducer needs of the brokers: a 1 s lock allowed (default minimum 15 s)
BROKER = {"group.share.min.record.lock.duration.ms": "1000"}


def java_worker_spec(kafka_version: str) -> dict:
    """``{"argv", "cfg"}`` of the Java share-consumer worker (harness.workers.java.command) on
    kafka-clients ``kafka_version``; builds it if needed (raises ArtifactError)."""
    from harness.workers.java import command

    argv, cfg = command("share-consumer", {"java_client_version": kafka_version})
    return {"argv": argv, "cfg": {"error_table": cfg["error_table"], "java_client_version": kafka_version}}


def run_f6(results: Path, *, tries: int = 3, variants: list[str] | None = None,
           kafka_version: str = F6_KAFKA_VERSION, debug_log: bool = True, timeout_s: float = 1500,
           lock_ms: int = 2000) -> TriesResult:
    """Bring up a 3-node cluster, run the reproducer (``tries`` per variant, default ``txn``,
    ``no-txn`` and ``java``) in the client namespace, tear down keeping the segments, and return
    the tries with their evidence. Raises what harness.findings.bringup raises (ArtifactError
    also when the Java worker cannot be built); RuntimeError when the reproducer failed."""
    variants = variants or ["txn", "no-txn", "java"]
    run_dir = repro_run_dir(results, "f6")
    logs, err = run_dir / "logs", run_dir / "logs" / "f6-repro.err"
    argv = [str(REPRO), "--json", "--tries", str(tries), "--lock-ms", str(lock_ms)]
    argv += [a for v in variants for a in ("--variant", v)]
    if "java" in variants:
        logs.mkdir(parents=True, exist_ok=True)
        spec = logs / "java-worker.json"
        spec.write_text(json.dumps(java_worker_spec(kafka_version)))
        argv += ["--java-worker", str(spec), "--java-log", str(logs / "java-share-consumer.log")]
    if debug_log:
        logs.mkdir(parents=True, exist_ok=True)
        argv += ["--debug-log", str(logs / "librdkafka-debug.log")]
    with findings_cluster(run_dir, kafka_version=kafka_version, proxies=False, broker=BROKER) as fc:
        proc = fc.run_client([*argv[:1], "--bootstrap", fc.bootstrap, *argv[1:]], timeout_s, err)
        problems = fc.problems
    done, summary = reproducer_tries(proc, run_dir, err)
    res = TriesResult(run_dir, done, summary, problems=problems)
    res.evidence = evidence(run_dir, done, kafka_version)
    write_evidence(run_dir, res.evidence)
    return res


def dlq_lines(t: dict) -> list[str]:
    """One line per DLQ record of a try: the source offset, the reason, the delivery count and
    the copied value (hex; a marker's is 6 bytes: version 0, coordinator epoch)."""
    out = []
    for r in t.get("dlq_records") or []:
        h = r.get("headers") or {}
        off = h.get("__dlq.errors.offset")
        kind = (t.get("markers") or {}).get(str(off), "record" if off is not None else "?")
        out.append(f"  DLQ@{r['dlq_offset']}: {h.get('__dlq.errors.topic')}-{h.get('__dlq.errors.partition')}"
                   f"@{off} ({kind}) delivery.count={h.get('__dlq.errors.delivery.count')} "
                   f"message={h.get('__dlq.errors.message')!r} value=0x{r.get('value_hex', '')}")
    return out


def evidence(run_dir: Path, tries: list[dict], kafka_version: str) -> list[str]:
    """Per try: its outcome, its DLQ records, the DumpLogSegments lines of its partition (every
    batch: records and markers); then the librdkafka debug lines."""
    from harness.findings.f6_repro import verdict

    out: list[str] = []
    for t in tries:
        if "error" in t:
            out.append(f"# {t['variant']} try {t['try']}: error {t['error']}")
            continue
        out.append(f"# {t['variant']} try {t['try']}: {t['topic']}-0, group {t['group']}: {verdict(t)}")
        out += dlq_lines(t)
        last = max([o for b in t.get("batches", []) for o in b["offsets"]] + [0]) + 1
        out += replica_lines(run_dir, f"{t['topic']}-0", kafka_version, set(range(0, last + 1)))[:40]
    return out + debug_lines(run_dir / "logs" / "librdkafka-debug.log", tries)


#: the debug lines of the story: the acquired ranges of each ShareFetch response, the response
#: built (messages and gaps), the acknowledgements sent (type 0 = GAP, 1 = ACCEPT)
_DEBUG = re.compile(r"Acquired Records from offset|Built share fetch response rko|Building ack details for|"
                    r"Adding ack detail for offsets")


def debug_lines(path: Path, tries: list[dict], limit: int = 300) -> list[str]:
    """librdkafka's fetch,cgrp,queue debug lines of the first ``txn`` try's topic (acquired
    ranges, responses built, acknowledgements sent), at most ``limit``."""
    first = next((t for t in tries if t.get("variant") == "txn" and "error" not in t), None)
    if first is None or not path.is_file():
        return []
    out = [f"# librdkafka debug log (fetch,cgrp,queue) of {first['topic']}: acquired ranges, responses built, "
           "acknowledgements sent (type 0 GAP, 1 ACCEPT)"]
    topic, active = first["topic"], False
    with open(path, errors="replace") as fh:
        for line in fh:
            named = _TOPIC.search(line)
            if named:
                active = named[0] == topic
            if active and _DEBUG.search(line):
                out.append(line.rstrip())
                if len(out) > limit:
                    break
    return out


#: a reproducer's topic name in a debug line: the lines without one (responses built, ack
#: details) belong to the last topic named before them
_TOPIC = re.compile(r"f6-[0-9a-f]{6}-[a-z-]+-\d+")
