"""Short definitions of the anomaly names, after /work/docs/anomalies.md.

The report shows these next to each anomaly a checker found. The checkers' finder docstrings are
the authoritative definitions; this table is a copy for people reading a report offline, kept short.
"""
from __future__ import annotations

ANOMALY_DEFINITIONS: dict[str, str] = {
    # Jepsen parity
    "duplicate": "One value appears at more than one offset of a key.",
    "inconsistent-offsets": "One offset of a key holds different values in different observations.",
    "lost-write": (
        "A write that must have committed is missing from its key's log, although a later "
        "position of that log was read."
    ),
    "unseen": "A committed write that no poll had read by the end of the run, after the final drain.",
    "G1a": "Aborted read: a poll returned a value whose writing op completed fail (aborted).",
    "precommitted-read": "One op polled a value that the same op sent, before its own commit.",
    "int-poll-skip": "Within one poll, the consumer skipped committed positions of the log.",
    "poll-skip": (
        "Between a consumer's consecutive polls of a key, with no seek or reassignment between, "
        "the consumer skipped committed positions of the log."
    ),
    "int-nonmonotonic-poll": "Within one poll, the positions read went backwards or repeated.",
    "nonmonotonic-poll": (
        "Between a consumer's consecutive polls of a key, with no seek or reassignment between, "
        "the positions read went backwards or repeated."
    ),
    "int-nonmonotonic-send": (
        "Within one op, a later send to a key landed at an earlier position than an earlier send."
    ),
    "nonmonotonic-send": (
        "A process's later send to a key landed at an earlier position than its earlier send."
    ),
    "G0": "Write cycle: a cycle of write-write (log order) edges between ops.",
    "G1c": "Circular information flow: a cycle of write-write and write-read edges between ops.",
    # Beyond Jepsen
    "torn-transaction": (
        "In the final complete reads, a transaction's writes are partly visible and partly not."
    ),
    "zombie-write": (
        "After init of a transactional.id completed ok for a newer instance, a value that an older "
        "instance of that id sent becomes visible, or the older instance's commit completes ok."
    ),
    "eos-duplicate": (
        "In a consume-transform-produce pipeline, a committed input record yields more than one "
        "committed output record."
    ),
    "eos-loss": (
        "In a consume-transform-produce pipeline, a committed input record yields no committed "
        "output record."
    ),
    "eos-aborted-read": (
        "An application's output record names an input whose transaction was aborted: the "
        "application read uncommitted data (the app workload)."
    ),
    "eos-phantom": "An application's output record names no input the harness wrote.",
    "eos-reorder": (
        "With order: per-partition, two inputs of one input partition appear in one output "
        "partition in the opposite order of their input offsets."
    ),
    "app-verify": (
        "A finding of the user's own verifier (output.verify) of an output that is not one record "
        "per input, such as a word count: its kind and explanation are the verifier's."
    ),
    "app-stalled": (
        "An input that reached the application's output more than lag_bound_s after its commit, "
        "or never during the load."
    ),
    "pipeline-stalled": (
        "An input partition of the eos-pipeline whose committed records all lack a committed output: "
        "the processors made no progress on it in the whole run (nothing processed anywhere: unknown)."
    ),
    "offsets-ahead": (
        "A consumer group's committed offsets point past input whose output is not committed."
    ),
    "offsets-behind": (
        "A consumer group's committed offsets point before input whose output is committed."
    ),
    "sink-duplicate": "A Spark sink holds a committed record twice.",
    "sink-loss": "A Spark sink misses a committed record.",
    # Liveness and performance
    "stalled-lso": (
        "A read_committed consumer cannot advance on a key for longer than the scenario's bound "
        "while the key has records: a hanging transaction (KAFKA-17754 family)."
    ),
    "realtime-lag": "Time from a write's commit to its first observation by each consumer.",
    "unavailable": "Windows with no successful op of a kind.",
    "server-error": (
        "A client op failed with an error a correct broker never returns to a valid request "
        "(UNKNOWN_SERVER_ERROR, CORRUPT_MESSAGE, INVALID_RECORD): the broker failed."
    ),
    # Share groups (KIP-932)
    "share-lost": ("A committed record that by the end no share consumer processed and the group "
                   "did not archive (rejected, or delivered up to the delivery-count limit)."),
    "share-aborted-read": "A read_committed share group delivered a record whose transaction aborted.",
    "share-double-acquire": ("Two consumers acquired one record while the first one's acquisition "
                             "lock was held (no acknowledgement, no fault in between)."),
    "share-delivery-count": ("A record delivered with a delivery count above the group's limit, or "
                             "delivered again after an accept or reject of it succeeded."),
    "share-duplicate": "A record processed more than once: share groups deliver at least once (allowed).",
    "share-dlq-missing": ("A record the share group archived as undeliverable (rejected, or delivered up "
                          "to the delivery-count limit) with no record in its dead-letter queue (KIP-1191)."),
    "share-dlq-spurious": ("A dead-letter queue record for a record that was never undeliverable: "
                           "accepted, aborted, or another value (KIP-1191)."),
}

_VARIANTS = {
    "-realtime": " (with realtime edges: an op that completed before another began precedes it)",
    "-process": " (with process edges: a process's ops are ordered)",
}


def anomaly_definition(name: str) -> str | None:
    """The short definition of an anomaly name, tolerant of case and of cycle variants."""
    if name in ANOMALY_DEFINITIONS:
        return ANOMALY_DEFINITIONS[name]
    lowered = {k.lower(): v for k, v in ANOMALY_DEFINITIONS.items()}
    key = name.strip().lower()
    if key in lowered:
        return lowered[key]
    for suffix, note in _VARIANTS.items():
        if key.endswith(suffix) and key[: -len(suffix)] in lowered:
            return lowered[key[: -len(suffix)]].rstrip(".") + note + "."
    # "G1a (aborted read)" and similar spellings
    head = key.split(" ")[0].split("(")[0]
    if head in lowered:
        return lowered[head]
    return None
