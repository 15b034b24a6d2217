"""The anomaly table: one record per name a finder reports, and everything else reads it.

An :class:`Anomaly` holds the name, its family, a short definition (the report shows it beside
each anomaly found), the finders that report it (their names in ``checkers.verdict.FINDERS``;
``pipeline_window_cases`` is the soak windows' own, ``checkers.engines.windows``), the workloads
whose histories it can come from (none named: any workload's), whether a run allows it without
its scenario expecting it, and its anchor in docs/anomalies.md. ``ANOMALIES`` and the family
tuples are read off the table; ``harness.report.definitions`` takes its definitions from it; the
unit tests hold ``FINDERS``, ``checkers.__init__``'s names, docs/anomalies.md's anchors and
docs/checkers.md's finder table to it (tests/unit/test_catalogue.py).

A scenario's ``expected``, a zoo mutant's ``must_find`` and a meta.json's ``fail_on`` name
anomalies; a name that is not here can never be found, so it is a typo: ``check_names``
refuses it and suggests the nearest name (difflib).

This module imports nothing of the finders: a worker reading the run contract (``checkers.run``)
loads it, and must not pay for numpy and polars.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

#: the families, as docs/anomalies.md groups them: Jepsen's Kafka test's names ("Safety", name for
#: name), the safety names beyond Jepsen's, the liveness reports (they fail a run only through
#: fail_on) and the share groups' (KIP-932; the dead-letter queue's, KIP-1191)
FAMILIES = ("jepsen", "beyond-jepsen", "liveness", "share")


@dataclass(frozen=True)
class Anomaly:
    name: str
    family: str
    definition: str
    #: the finders that report it (names in checkers.verdict.FINDERS, or pipeline_window_cases)
    finders: tuple[str, ...]
    #: the workloads whose histories it can come from (harness.workloads.WORKLOADS); () = any
    workloads: tuple[str, ...] = ()
    #: allowed in every run of its workloads, expected or not (share groups deliver at least once)
    allowed_by_default: bool = False

    @property
    def anchor(self) -> str:
        """Its anchor in docs/anomalies.md (an ``<a id>`` in the row that explains it)."""
        return self.name

    @property
    def doc(self) -> str:
        return f"docs/anomalies.md#{self.anchor}"


_CYCLES = ("cycle_cases", "impossible_cycle_cases")
_G0 = "Write cycle: a cycle of write-write (log order) edges between ops"
_G1C = "Circular information flow: a cycle of write-write and write-read edges between ops"
_PROCESS = " (with process edges: a process's ops are ordered)."
_REALTIME = " (with realtime edges: an op that completed before another began precedes it)."
_APP, _PIPELINE, _SHARE = ("app",), ("eos-pipeline",), ("share",)

#: the table, in the order docs/anomalies.md lists the names
TABLE: tuple[Anomaly, ...] = (
    # Jepsen parity (jepsen.tests.kafka)
    Anomaly("duplicate", "jepsen", "One value appears at more than one offset of a key.", ("duplicate_cases",)),
    Anomaly("inconsistent-offsets", "jepsen",
            "One offset of a key holds different values in different observations.", ("inconsistent_offsets_cases",)),
    Anomaly("lost-write", "jepsen",
            "A write that must have committed is missing from its key's log, although a later "
            "position of that log was read.", ("lost_write_cases",)),
    Anomaly("unseen", "jepsen",
            "A committed write that no poll had read by the end of the run, after the final drain.", ("unseen_cases",)),
    Anomaly("G1a", "jepsen", "Aborted read: a poll returned a value whose writing op completed fail (aborted).",
            ("g1a_cases",)),
    Anomaly("precommitted-read", "jepsen", "One op polled a value that the same op sent, before its own commit.",
            ("precommitted_read_cases",)),
    Anomaly("int-poll-skip", "jepsen", "Within one poll, the consumer skipped committed positions of the log.",
            ("poll_skip_cases",)),
    Anomaly("poll-skip", "jepsen",
            "Between a consumer's consecutive polls of a key, with no seek or reassignment between, "
            "the consumer skipped committed positions of the log.", ("poll_skip_cases",)),
    Anomaly("int-nonmonotonic-poll", "jepsen", "Within one poll, the positions read went backwards or repeated.",
            ("nonmonotonic_poll_cases",)),
    Anomaly("nonmonotonic-poll", "jepsen",
            "Between a consumer's consecutive polls of a key, with no seek or reassignment between, "
            "the positions read went backwards or repeated.", ("nonmonotonic_poll_cases",)),
    Anomaly("int-nonmonotonic-send", "jepsen",
            "Within one op, a later send to a key landed at an earlier position than an earlier send.",
            ("nonmonotonic_send_cases",)),
    Anomaly("nonmonotonic-send", "jepsen",
            "A process's later send to a key landed at an earlier position than its earlier send.",
            ("nonmonotonic_send_cases",)),
    Anomaly("G0", "jepsen", _G0 + ".", _CYCLES),
    Anomaly("G1c", "jepsen", _G1C + ".", _CYCLES),
    Anomaly("G0-process", "jepsen", _G0 + _PROCESS, _CYCLES),
    Anomaly("G1c-process", "jepsen", _G1C + _PROCESS, _CYCLES),
    Anomaly("G0-realtime", "jepsen", _G0 + _REALTIME, _CYCLES),
    Anomaly("G1c-realtime", "jepsen", _G1C + _REALTIME, _CYCLES),
    # Beyond Jepsen (eos-* of a pipeline: checkers.finders.pipeline; of an app: checkers.finders.app_end_to_end)
    Anomaly("torn-transaction", "beyond-jepsen",
            "In the final complete reads, a transaction's writes are partly visible and partly not.",
            ("torn_transaction_cases",)),
    Anomaly("zombie-write", "beyond-jepsen",
            "After init of a transactional.id completed ok for a newer instance, a value that an older "
            "instance of that id sent becomes visible, or the older instance's commit completes ok.",
            ("zombie_write_cases",)),
    Anomaly("eos-duplicate", "beyond-jepsen",
            "In a consume-transform-produce pipeline, a committed input record yields more than one "
            "committed output record.", ("pipeline_cases", "pipeline_window_cases", "app_cases"), ("eos-pipeline", "app")),
    Anomaly("eos-loss", "beyond-jepsen",
            "In a consume-transform-produce pipeline, a committed input record yields no committed "
            "output record.", ("pipeline_cases", "app_cases"), ("eos-pipeline", "app")),
    Anomaly("offsets-ahead", "beyond-jepsen",
            "A consumer group's committed offsets point past input whose output is not committed.",
            ("pipeline_cases",), _PIPELINE),
    Anomaly("offsets-behind", "beyond-jepsen",
            "A consumer group's committed offsets point before input whose output is committed.",
            ("pipeline_cases",), _PIPELINE),
    Anomaly("sink-duplicate", "beyond-jepsen", "A Spark sink holds a committed record twice.", ("sink_cases",),
            ("spark",)),
    Anomaly("sink-loss", "beyond-jepsen", "A Spark sink misses a committed record.", ("sink_cases",), ("spark",)),
    Anomaly("eos-aborted-read", "beyond-jepsen",
            "An application's output record names an input whose transaction was aborted: the "
            "application read uncommitted data (the app workload).", ("app_cases",), _APP),
    Anomaly("eos-phantom", "beyond-jepsen", "An application's output record names no input the harness wrote.",
            ("app_cases",), _APP),
    Anomaly("eos-reorder", "beyond-jepsen",
            "With order: per-partition, two inputs of one input partition appear in one output "
            "partition in the opposite order of their input offsets.", ("app_cases",), _APP),
    Anomaly("app-verify", "beyond-jepsen",
            "A finding of the user's own verifier (output.verify) of an output that is not one record "
            "per input, such as a word count: its kind and explanation are the verifier's.", ("app_cases",), _APP),
    # Liveness and performance (reports: fail a run only through fail_on)
    Anomaly("stalled-lso", "liveness",
            "A read_committed consumer cannot advance on a key for longer than the scenario's bound "
            "while the key has records: a hanging transaction (KAFKA-17754 family).", ("stalled_lso_cases",)),
    Anomaly("realtime-lag", "liveness", "Time from a write's commit to its first observation by each consumer.",
            ("realtime_lag_cases",)),
    Anomaly("unavailable", "liveness", "Windows with no successful op of a kind.", ("unavailable_cases",)),
    Anomaly("app-stalled", "liveness",
            "An input that reached the application's output more than lag_bound_s after its commit, "
            "or never during the load.", ("app_cases",), _APP),
    Anomaly("pipeline-stalled", "liveness",
            "An input partition of the eos-pipeline whose committed records all lack a committed output: "
            "the processors made no progress on it in the whole run (nothing processed anywhere: unknown).",
            ("pipeline_cases",), _PIPELINE),
    Anomaly("server-error", "liveness",
            "A client op failed with an error a correct broker never returns to a valid request "
            "(UNKNOWN_SERVER_ERROR, CORRUPT_MESSAGE, INVALID_RECORD): the broker failed.", ("server_error_cases",)),
    Anomaly("epoch-exhausted", "liveness",
            "A transactional.id whose init failed again and again at the end of its producer epochs and "
            "never succeeded again (KAFKA-19367), or whose transaction at epoch 32767 its coordinator did "
            "not abort past its timeout (KAFKA-20090).", ("epoch_exhausted_cases",)),
    # Share groups (KIP-932): share-duplicate is counted and always allowed (share groups deliver at
    # least once); the dead-letter queue's (KIP-1191; checkers.finders.share_dlq)
    Anomaly("share-lost", "share",
            "A committed record that by the end no share consumer processed and the group "
            "did not archive (rejected, or delivered up to the delivery-count limit).", ("share_cases",), _SHARE),
    Anomaly("share-aborted-read", "share", "A read_committed share group delivered a record whose transaction aborted.",
            ("share_cases",), _SHARE),
    Anomaly("share-double-acquire", "share",
            "Two consumers acquired one record while the first one's acquisition "
            "lock was held (no acknowledgement, no fault in between).", ("share_cases",), _SHARE),
    Anomaly("share-delivery-count", "share",
            "A record delivered with a delivery count above the group's limit, or "
            "delivered again after an accept or reject of it succeeded.", ("share_cases",), _SHARE),
    Anomaly("share-duplicate", "share",
            "A record processed more than once: share groups deliver at least once (allowed).", ("share_cases",),
            _SHARE, allowed_by_default=True),
    Anomaly("share-dlq-missing", "share",
            "A record the share group archived as undeliverable (rejected, or delivered up "
            "to the delivery-count limit) with no record in its dead-letter queue (KIP-1191).",
            ("share_dlq_cases",), _SHARE),
    Anomaly("share-dlq-spurious", "share",
            "A dead-letter queue record for a record that was never undeliverable: "
            "accepted, aborted, or another value (KIP-1191).", ("share_dlq_cases",), _SHARE),
)

#: name -> its record
BY_NAME: dict[str, Anomaly] = {a.name: a for a in TABLE}


def family(name: str) -> tuple[str, ...]:
    """The names of one family, in the table's order."""
    return tuple(a.name for a in TABLE if a.family == name)


JEPSEN = family("jepsen")
BEYOND = family("beyond-jepsen")
#: the liveness reports: fail a run only through fail_on
LIVENESS_REPORTS = family("liveness")
SHARE = family("share")

ANOMALIES: frozenset[str] = frozenset(BY_NAME)


def allowed_by_default(workload: str) -> tuple[str, ...]:
    """The names a run of ``workload`` allows whether or not its scenario expects them."""
    return tuple(a.name for a in TABLE if a.allowed_by_default and workload in a.workloads)


def run_allowed(meta, allowed: Iterable[str] = ()) -> set[str]:
    """``allowed`` plus what the run itself allows, for ``meta`` (a checkers.run.RunMeta): an
    app that declares at-least-once semantics allows eos-duplicate; a share group allows its
    at-least-once names (``allowed_by_default("share")``). One rule for every engine
    (checkers.verdict.check, checkers.engines.parts.check_parts)."""
    out = set(allowed)
    if meta.app and meta.app.get("semantics") == "at-least-once":  # the app declares its duplicates
        out.add("eos-duplicate")
    if meta.share:  # a share group delivers at least once: its duplicates are counted, allowed
        out.update(allowed_by_default("share"))
    return out


def unknown_names(names: Iterable[str]) -> list[str]:
    """The names in ``names`` that are not in the catalogue, in order, each once."""
    return list(dict.fromkeys(n for n in names if n not in ANOMALIES))


def suggest(name: str) -> str | None:
    """The catalogue name nearest to ``name`` (difflib), case-insensitively; None if none is
    near."""
    by_lower = {a.lower(): a for a in ANOMALIES}
    if str(name).lower() in by_lower:
        return by_lower[str(name).lower()]
    near = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[near[0]] if near else None


def describe_unknown(names: Iterable[str], field: str) -> str | None:
    """One line naming each unknown name of ``field`` (a prefix; "" for none) with the nearest
    known one, or None when every name is known."""
    bad = unknown_names(names)
    if not bad:
        return None
    parts = []
    for n in bad:
        s = suggest(n)
        parts.append(f"{n!r} (did you mean {s!r}?)" if s else repr(n))
    return (f"{field + ': ' if field else ''}unknown anomaly {', '.join(parts)}; the names are in "
            "docs/checkers.md (docs/anomalies.md)")


def check_names(names: Iterable[str], field: str) -> None:
    """Raise ValueError (one line, with the nearest names) when ``names`` holds a name that
    is not in the catalogue."""
    msg = describe_unknown(names, field)
    if msg:
        raise ValueError(msg)
