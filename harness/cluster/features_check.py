"""What the brokers finalized, read once after the cluster started, for a scenario that sets
``cluster.features`` (feature levels at format time, harness.cluster.releases.Release.format_args).

``kafka-features.sh describe`` (Kafka's org.apache.kafka.tools.FeatureCommand, KIP-584's
describeFeatures) run in the client namespace, as harness.cluster.open_txns runs
kafka-transactions.sh: one JVM of a few seconds, only on runs that ask for levels, on the
releases whose kafka-tools jar the harness fetches (4.x; Release.tools_jar). Its lines read
``Feature: transaction.version  SupportedMinVersion: 0  SupportedMaxVersion: 2
FinalizedVersionLevel: 1  Epoch: 5``.

    parse_describe(text) -> {name: level}     finalized levels (metadata.version's is a name: left out)
    read_finalized(version, bootstrap, prefix, log) -> (levels or None, note)
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

MAIN = "org.apache.kafka.tools.FeatureCommand"
_LINE = re.compile(r"Feature:\s*(\S+)\s.*?FinalizedVersionLevel:\s*(\S+)")


def parse_describe(text: str) -> dict[str, int]:
    """Finalized levels from ``kafka-features.sh describe``'s output: name -> level, for the
    levels that are whole numbers (metadata.version's is a release name, ``4.4-IV2``; a feature
    not finalized prints no number and is left out: it is at level 0, KIP-584)."""
    out: dict[str, int] = {}
    for m in _LINE.finditer(text or ""):
        if m[2].isdigit():
            out[m[1]] = int(m[2])
    return out


def read_finalized(kafka_version: str, bootstrap: str, prefix: list[str], log: Path | None = None,
                   timeout: float = 60.0) -> tuple[dict[str, int] | None, str]:
    """(the brokers' finalized levels, "") or (None, why they were not read). Never raises: the
    check is a help; the Java drain reads the same levels again at the end of a Java run."""
    from harness.cluster.artifacts import ArtifactError, kafka_tools_command

    try:
        argv = kafka_tools_command(kafka_version, MAIN)
    except ArtifactError as exc:
        return None, str(exc).splitlines()[0][:200]
    cmd = list(prefix) + argv + ["--bootstrap-server", bootstrap, "describe"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", f"(no answer in {timeout:.0f} s)"
    except OSError as exc:
        return None, f"kafka-features.sh describe could not start: {exc}"[:200]
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as fh:
            fh.write(f"$ kafka-features.sh --bootstrap-server {bootstrap} describe   (exit {rc})\n{out}{err if rc else ''}\n")
    if rc != 0:
        last = next((ln for ln in reversed((err or out).strip().splitlines()) if ln.strip()), "")
        return None, f"kafka-features.sh describe exited {rc}: {last[:200]}"
    return parse_describe(out), ""
