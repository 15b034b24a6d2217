"""Known bugs: the one catalogue of upstream Kafka and client defects, and of this project's
findings (docs/findings/F*.md), that a run can meet; ``match`` names those whose signature a
verdict shows. docs/known-bugs.md is the catalogue as a table (tests/unit/test_checkers_known_bugs.py
checks every id is there).

``CATALOGUE``: a tuple of frozen ``KnownBug`` entries: id, title, component, affected and fixed
releases (``fixed`` None: open, no fixed release), clients, the signature in words, link, the
finding doc, notes (where the upstream record and the issue that asked for the entry differ,
and why), and two pure functions from checkers/known_bugs/signatures.py: ``signature(verdict, facts)``
-> ``Fit`` | None and ``in_range(facts)`` -> None | why the run is outside the affected range.

``match(verdict, meta, workload=None) -> list[KnownBugMatch]``: ``verdict`` a ``Verdict`` or
verdict.json dict; ``meta`` a ``RunMeta`` or meta.json dict (``kafka_version``/``versions``,
``client`` {name, version}, ``transaction_version`` {broker, client: [1|2 ...]},
``broker_events``; harness.workloads.client_choice writes them); ``workload`` the scenario's
``workload`` mapping as run (scenario.yaml: ``client``, ``producer`` settings such as
compression.type, txn-queue's ``inflight_abort``) when known. A fit in range is "looks-like";
a fit outside the range (release, client or transaction protocol version), or one the
signature itself doubts, is "resembles" with the reason after "but": never a guess presented
as a fact. A name is given only for what fails the run: a fit none of whose ``rests_on``
names fails it (every fit of a valid run, or a report beside a failure it does not explain)
is "seen", listed apart (``Verdict.known_bugs_seen``, the report's "Seen in a valid run"
heading), never "looks-like". "looks-like" first, then "resembles", each in catalogue order,
then "seen". Never raises (an entry whose signature raises is skipped). ``checkers.verdict``
sets ``Verdict.known_bugs`` and ``known_bugs_seen`` with ``assign`` (``fold`` with
meta.json, ``check_run`` again with scenario.yaml's workload).

Adding an entry: a ``KnownBug`` below, its signature and range in checkers/known_bugs/signatures.py
(keyed on report names: a name no finder reports yet never fits), a row in docs/known-bugs.md,
a tiny-history test and a negative control in tests/unit/test_checkers_known_bugs.py.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import signatures as s
from .facts import Fit, RunFacts, run_facts
from ..run import RunMeta, Verdict

JIRA = "https://issues.apache.org/jira/browse/"
FINDINGS = "docs/findings/"


@dataclass(frozen=True)
class KnownBug:
    """One catalogue entry (module docstring; docs/known-bugs.md is its table)."""

    id: str
    title: str
    component: str                      # where the defect is: kafka, librdkafka, ...
    affected: str                       # in words, as the verdict line prints it
    fixed: str | None                   # the first fixed release; None: open, no fixed release
    clients: str
    signature_text: str
    link: str
    doc: str | None
    notes: str
    signature: Callable[[Verdict, RunFacts], Fit | None] = field(repr=False, compare=False)
    in_range: Callable[[RunFacts], str | None] = field(repr=False, compare=False)
    #: ids of more specific entries: when one of them looks like the run's bug, this entry's
    #: fit only resembles (and is left out when it doubted itself already)
    yields_to: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """"KAFKA-14402 (hanging transaction; Kafka <= 3.5.x, fixed in 3.6.0)"."""
        return f"{self.id} ({self.title}; {self.affected}, {fixed_text(self.fixed)})"


def fixed_text(fixed: str | None) -> str:
    return f"fixed in {fixed}" if fixed else "no fixed release"


@dataclass(frozen=True)
class KnownBugMatch:
    """What ``match`` returns for one entry; ``as_dict`` is a ``Verdict.known_bugs`` item:
    {id, title, match: "looks-like" | "resembles", why, evidence: [str], affected, fixed (None:
    no fixed release), link, doc}, or a ``Verdict.known_bugs_seen`` item (match "seen")."""

    id: str
    title: str
    match: str
    why: str
    evidence: list[str]
    affected: str
    fixed: str | None
    link: str
    doc: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe(m: dict) -> str:
    """One verdict-line phrase of a ``Verdict.known_bugs`` item: "looks like KAFKA-14402
    (hanging transaction; Kafka <= 3.5.x, fixed in 3.6.0)" or "resembles ..."; a "seen" item
    (``Verdict.known_bugs_seen``) is "seen: KAFKA-... (...)", never "looks like"."""
    word = {"looks-like": "looks like", "seen": "seen:"}.get(m.get("match"), "resembles")
    return f"{word} {m.get('id')} ({m.get('title')}; {m.get('affected')}, {fixed_text(m.get('fixed'))})"



CATALOGUE: tuple[KnownBug, ...] = (
    KnownBug(
        id="KAFKA-20734", title="transaction markers skipped for a leaderless partition, finding F2", component="kafka",
        affected="Kafka 4.x with the Java KRaftMetadataCache (4.3.1 measured)", fixed=None, clients="any",
        signature_text="the brokers' skipped-txn-markers event and an INVALID verdict whose failing names are all "
        "a hanging transaction's (torn-transaction, unseen, lost-write, stalled-lso, poll-skip) or F2's other "
        "consequences (G1a, eos-loss, offsets-ahead)",
        link=JIRA + "KAFKA-20734", doc=FINDINGS + "F2.md",
        notes="Open upstream (fix PR apache/kafka#22680 open). The lower bound is not pinned: the Scala cache of "
        "apache/kafka 1eb7644 (October 2024) kept the marker queued, so runs before 4.0 say 'resembles'. "
        "G1a, eos-loss and offsets-ahead were added to the hanging-transaction kinds from F2.md's soaks "
        "(a skipped ABORT closed by a COMMIT; a skipped COMMIT closed by an ABORT in a pipeline); the "
        "integration tests' xfail keeps the narrower kinds.",
        signature=s.sig_kafka_20734, in_range=s.range_kafka_20734),
    KnownBug(
        id="KAFKA-14402", title="hanging transaction", component="kafka", affected="Kafka <= 3.5.x", fixed="3.6.0",
        clients="any",
        signature_text="stalled-lso found and the run failing (stalled-lso through fail_on, or unseen, torn-transaction,"
        " lost-write, poll-skip), or G1a failing from a read_committed reader (the case's "
        "reader_isolation_level, else the run's isolation_level; unknown: resembles) (the late write "
        "ended by a later transaction's marker of the same producer id: scenarios/zoo/kafka-14402.yaml on"
        " 3.5.2), with no skipped-txn-markers broker event (that is KAFKA-20734)",
        link=JIRA + "KAFKA-14402", doc=None,
        notes="KAFKA-14402 is KIP-890's umbrella (an improvement, affects 3.5.0, no fix version of its own). Part 1 "
        "(verification of transactional produce on the partition leader, transaction.partition.verification."
        "enable, default true) shipped in 3.6.0 (KAFKA-14884), so 3.6.0 is the first release with the defence "
        "for every client; part 2 (transaction version 2) came in 4.0.0. stalled-lso alone is routine under "
        "faults (a valid 25-min soak reported 24), so the run must fail as well.",
        signature=s.sig_kafka_14402, in_range=s.range_kafka_14402,
        yields_to=("KAFKA-20734", "F1", "KAFKA-17754", "F9")),
    KnownBug(
        id="KAFKA-17754", title="late Produce or EndTxn lands in a later transaction (transaction protocol v1)",
        component="kafka", affected="any release, producers on transaction version 1",
        fixed="4.0.0 (transaction version 2 producers only)", clients="any on transaction version 1 (librdkafka "
        "always: it implements v1 only); Java 4.0+ clients with transaction.version 2 avoid it",
        signature_text="G1a (from a read_committed reader), lost-write or torn-transaction failing the run, on a run "
        "whose producers used transaction version 1 (meta.json transaction_version.client); a lost or "
        "torn write with no G1a on librdkafka or an unknown client only resembles (F1 explains it as "
        "well); the verdict says what else would explain it",
        link=JIRA + "KAFKA-17754", doc=None,
        notes="Found by Jepsen's Bufstream analysis (2024) with the Java client; resolved upstream 2026-08-12 'by "
        "KIP-890 and related fixes', i.e. for transaction version 2 (epoch bump per transaction, Kafka 4.0.0). "
        "Producers on version 1 stay exposed on every release, which is why the range is the protocol version, "
        "not a release. With skipped-txn-markers in the brokers' logs the same anomalies are KAFKA-20734's: "
        "'resembles' then.",
        signature=s.sig_kafka_17754, in_range=s.range_kafka_17754,
        yields_to=("KAFKA-20734", "F1", "KAFKA-14402", "F9")),
    KnownBug(
        id="F1", title="librdkafka's abort with records in flight loses the next transaction's write",
        component="librdkafka", affected="librdkafka (2.16.0 measured)", fixed=None, clients="librdkafka",
        signature_text="lost-write, torn-transaction or unseen failing the run with the librdkafka client, and "
        "either the txn-producer's inflight_abort: reuse (scenario.yaml) or an acknowledged offset below one "
        "already read (an impossible G0-realtime); without either, or with the Java client, 'resembles'",
        link=FINDINGS + "F1.md", doc=FINDINGS + "F1.md",
        notes="Not reported upstream (searched 2026-11-23). The harness's txn-producer avoids it by default "
        "(inflight_abort: replace), so lost writes on such runs only resemble F1.",
        signature=s.sig_f1, in_range=s.range_f1, yields_to=("KAFKA-20734", "F9")),
    KnownBug(
        id="F3", title="a fenced static consumer's _FATAL error with fatal() False", component="confluent-kafka-python",
        affected="confluent-kafka 2.16.1 measured (issue #869, open since 2020)", fixed=None,
        clients="confluent-kafka (Python)",
        signature_text="none from a verdict: an app run UNKNOWN with app-stalled, and the instances' logs show "
        "'Static consumer fenced' with the process left up",
        link="https://github.com/confluentinc/confluent-kafka-python/issues/869", doc=FINDINGS + "F3.md",
        notes="Kept for completeness but never matched: app-stalled has many causes (a slow application, a "
        "stall) and the evidence (the fenced consumer's log line, the process still up) is in the instances' "
        "logs, which neither the history nor meta.json carries. The defect was the example application's "
        "check of fatal() only (fixed in 11e7aa4) on top of the client's behaviour.",
        signature=s.sig_never, in_range=s.range_any),
    KnownBug(
        id="F4", title="librdkafka starts a partition at auto.offset.reset after a rebalance with pending offsets",
        component="librdkafka", affected="librdkafka (2.16.0 measured; the code path dates from 2021)", fixed=None,
        clients="librdkafka consumers",
        signature_text="eos-duplicate failing, every reprocessed range with a restart behind the committed offset, "
        "some of kind offset-reset with another transaction open across the assign (stats.reprocessed_ranges)",
        link=FINDINGS + "F4.md", doc=FINDINGS + "F4.md",
        notes="Not reported upstream (searched 2026-11-25). An offset-reset restart with no transaction open "
        "across the assign fits F5 as well: 'resembles' for both then.",
        signature=s.sig_f4, in_range=s.range_f4),
    KnownBug(
        id="F5", title="stale load completion in the group coordinator answers unloaded offsets",
        component="kafka", affected="Kafka 4.x group coordinator (4.0.0-4.4.0 by a test of its runtime)", fixed=None, clients="any",
        signature_text="eos-duplicate failing, every reprocessed range with a restart behind the committed offset, "
        "some behind-committed (an older non-zero offset), or offset-reset with no transaction open across the assign",
        link=FINDINGS + "F5.md", doc=FINDINGS + "F5.md",
        notes="Not reported upstream (searched 2026-11-27). A deterministic test of CoordinatorRuntime fails on "
        "every 4.x release tried, 4.0.0 to 4.4.0 (eos-chaos repro f5 --runtime); the runtime's group coordinator is "
        "the default from 4.0, so earlier runs say 'resembles' (3.x, where it was opt-in, is not tested).",
        signature=s.sig_f5, in_range=s.range_f5),
    KnownBug(
        id="F6", title="librdkafka's share consumer leaves transaction markers unacknowledged: dead-lettered",
        component="librdkafka", affected="librdkafka share consumer (2.16.0 measured) on Kafka 4.4.0+ (KIP-1191 DLQ)",
        fixed=None, clients="librdkafka share consumers",
        signature_text="share-dlq-spurious failing with DLQ records whose copied value is a transaction marker's "
        "control record (6 bytes: version 0, coordinator epoch)",
        link=FINDINGS + "F6.md", doc=FINDINGS + "F6.md",
        notes="Not reported upstream (searched 2026-11-27). A ShareFetch response whose acquired offsets hold no "
        "message (an aborted transaction's marker) is dropped with its GAP acknowledgements "
        "(rd_kafka_q_serve_share_rkmessages); eos-chaos repro f6: 6 of 6 tries (read_uncommitted: 3 of "
        "3, COMMIT markers too), 0 of 6 without transactions, 0 of 3 with kafka-clients. Without a DLQ (or before 4.4.0) the same markers are only redelivered up to the limit, "
        "which no checker names.",
        signature=s.sig_f6, in_range=s.range_f6),
    KnownBug(
        id="KAFKA-15653", title="compressed transactional produce fails under verification", component="kafka",
        affected="Kafka 3.6.0", fixed="3.6.1", clients="any, compressed batches (compression.type)",
        signature_text="the server-error report failing the run with a transactional op answered UNKNOWN_SERVER_ERROR or"
        " INVALID_RECORD (3.6.0's upgrade note); doubts: producers not known to compress or not "
        "compressing, every such op in flight during a broker fault (node_faults)",
        link=JIRA + "KAFKA-15653", doc=None,
        notes="3.6.0's upgrade note: 'Workloads with compression can experience InvalidRecordExceptions and "
        "UnknownServerExceptions', fixed in 3.6.1; transaction.partition.verification.enable=false avoids it. "
        "The server-error finder is another change (checkers/finders/server_error.py).",
        signature=s.sig_kafka_15653, in_range=s.range_kafka_15653),
    KnownBug(
        id="KAFKA-19367", title="transaction version 2 epoch overflow on InitProducerId", component="kafka",
        affected="Kafka 4.0.0, transaction version 2", fixed="4.0.1", clients="Java 4.0+ (transaction version 2)",
        signature_text="the epoch-exhausted report failing the run, its case showing the epoch's end (last ok init's "
        "epoch near 32766, or an error naming the overflow), on a run whose producers used transaction "
        "version 2",
        link=JIRA + "KAFKA-19367", doc=None,
        notes="apache/kafka#19910 (merged 2025-06-06): InitProducerId aborting an open transaction bumped the "
        "epoch twice; at 32766 the second bump overflowed. Checked in the release jars' bytecode: 4.0.0 writes "
        "the fenced epoch before prepareAbortOrCommit, 4.0.1, 4.1.2 and 4.2.2 do not "
        "(docs/detection-runs/2026-11-26-kafka-19367.md); measured 10/10 on 4.0.0, 0/10 on 4.0.1.",
        signature=s.sig_epoch_exhausted, in_range=s.range_kafka_19367),
    KnownBug(
        id="KAFKA-20090", title="epoch exhaustion with a timed-out transaction and a late EndTxn", component="kafka",
        affected="Kafka 4.0.0-4.2.x, transaction version 2", fixed="4.3.0", clients="Java 4.0+ (transaction version 2)",
        signature_text="the epoch-exhausted report failing the run, its case showing the epoch's end (last ok init's "
        "epoch near 32766, or an error naming the overflow), on a run whose producers used transaction "
        "version 2",
        link=JIRA + "KAFKA-20090", doc=None,
        notes="apache/kafka#21469 and #21506 (merged 2026-02/03): a timeout abort at epoch 32766 bumps to 32767 "
        "and a delayed EndTxn(ABORT) is taken for a retry without rotating the producer id, leaving the "
        "transaction ONGOING. Checked in the release jars' bytecode: the !isEpochFence guard is in 4.0.1, 4.1.2 and "
        "4.2.2 and gone in 4.3.0 (docs/detection-runs/2026-11-26-kafka-19367.md); measured 2/2 on 4.2.2, 0/2 on 4.3.0.",
        signature=s.sig_epoch_exhausted, in_range=s.range_kafka_20090),
    KnownBug(
        id="KAFKA-20765", title="the Java consumer spins on a retried OffsetFetch after STALE_MEMBER_EPOCH",
        component="kafka-clients", affected="kafka-clients 4.x before 4.4.0 (the KIP-848 consumer and Kafka "
        "Streams' streams protocol; 4.3.1 measured)", fixed="4.4.0",
        clients="Java consumers with group.protocol=consumer or streams",
        signature_text="the clients' offset-fetch-dedup-spin event (their log line 'A duplicated, inflight, "
        "request was identified, but unable to find it in the outbound buffer') with app-stalled, "
        "pipeline-stalled or unavailable",
        link=JIRA + "KAFKA-20765", doc=None,
        notes="apache/kafka#22747 (merged 2026-07): a retried OffsetFetch is chained onto the in-flight one that "
        "already failed with STALE_MEMBER_EPOCH and spins until default.api.timeout.ms. Met by "
        "app-streams-protocol (kafka-streams 4.3.1, group.protocol=streams) on 4.3.1 brokers: one task's partition "
        "stalled ~74 s, 707 such lines, then 'Timeout of 60000ms expired before the last committed offset for "
        "partitions [in-2] could be determined'. The message is in kafka-clients 4.3.1's CommitRequestManager and "
        "gone from 4.4.0's (checked in the jars), so the line itself places the client in the range. Liveness only: "
        "the run stayed exactly-once, and VALID (app-stalled a liveness report), so since issue 43 it lists "
        "KAFKA-20765 as seen, not named: a name needs a stall that fails the run.",
        signature=s.sig_kafka_20765, in_range=s.range_any),
    KnownBug(
        id="librdkafka#5511", title="send_offsets_to_transaction() hangs once the group coordinator's broker "
        "was decommissioned", component="librdkafka",
        affected="librdkafka 2.10.0 and later (2.16.0 measured)", fixed=None,
        clients="librdkafka transactional producers (confluent-kafka and other bindings) that call "
        "send_offsets_to_transaction",
        signature_text="the clients' send-offsets-stuck event (an application's line that "
        "send_offsets_to_transaction has not returned past its timeout; the example copy service writes it "
        "before it exits to be restarted) with app-stalled, pipeline-stalled or unavailable",
        link="https://github.com/confluentinc/librdkafka/issues/5511", doc=None,
        notes="Open upstream (fix PR confluentinc/librdkafka#5512 open); with #5456 (creq_ts_timeout is never "
        "checked, since 1.4.0) the call blocks past its timeout for good. Met by app-copy-service seed 3 on "
        "Kafka 4.3.1 and 4.4.0, both group protocols (issue 33's suite: every seed-3 cell UNKNOWN, an instance "
        "that ignored SIGTERM): with debug=eos,cgrp the producer's AddOffsetsToTxn succeeded after the broker "
        "kills, the same process's consumer logged 'Group coordinator decommissioned' for broker 1, and nothing "
        "more came from the producer until the SIGKILL 60 s later (past the call's 28.7 s remaining timeout); "
        "faulthandler put the main thread in send_offsets_to_transaction "
        "(docs/detection-runs/2026-11-27-librdkafka-5511.txt). The producer's own broker handles were not logged "
        "(no 'broker' debug context): its decommissioned coordinator is inferred, the missed timeout is shown.",
        signature=s.sig_librdkafka_5511, in_range=s.range_librdkafka_5511),
    KnownBug(
        id="F7", title="the exactly-once KafkaSink writer's close() rethrows a second failed batch, fatal on Flink 2.2",
        component="flink-connector-kafka (with Flink 2.2's Task)",
        affected="Flink 2.2.0+ with flink-connector-kafka 5.0.0 (2.2.1 and 5.0.0-2.2 measured)", fixed=None,
        clients="Flink jobs with a KafkaSink, DeliveryGuarantee.EXACTLY_ONCE",
        signature_text="the clients' flink-taskmanager-lost event (Flink's 'FATAL - exception in exception handler "
        "of task', or the example deployment's watchdog line) with flink-kafka-writer-close-threw (a "
        "KafkaWriter.close frame) and app-stalled, pipeline-stalled or unavailable",
        link=FINDINGS + "F7.md", doc=FINDINGS + "F7.md",
        notes="Not reported upstream (searched 2026-11-27). A send failure recorded after the writer already threw "
        "one (KafkaWriter.java:295 clears the field, :328 records the next) is rethrown by close() (:210) during "
        "the failed task's cleanup, which Flink 2.2's Task runs inside its fatal exception handler (Task.java:794, "
        "FLINK-38180; 2.1 suppressed it). FLINK-38790 (flink-connector-kafka#247, in 5.0.0) fixed the same symptom "
        "for shutdown-caused failures only. Met by app-flink-short-txn-timeout (pauses past a 5 s "
        "transaction.timeout.ms): 9 of 9 writer failures with two 'Kafka request failed' WARNs ended in the FATAL, "
        "0 of 16 with one; 7 of seeds 1-10. Liveness only: the runs' losses are the dropped commits the scenario is "
        "about. F7 rests on the stall: where the stall does not fail the run (those runs fail on eos-loss, which F7 "
        "does not explain; a valid run), or without a stall (flink_app.py's watchdog restarts the job), it is only "
        "seen, never named.",
        signature=s.sig_f7, in_range=s.range_f7),
    KnownBug(
        id="F9", title="a transaction coordinator restarted within its broker lease sends markers from its "
        "unreplicated __transaction_state tail: a torn transaction", component="kafka",
        affected="Kafka with KRaft, 3.5.2 to 4.4.0 measured (named from 3.9.1 on: 3.5.2 logs neither line)", fixed=None, clients="any",
        signature_text="the brokers' txn-markers-from-truncated-tail event (a coordinator's 'Sending txn markers "
        "... after loading partition P', then on the same node, with no new election as P's coordinator and no "
        "restart between, a truncation of __transaction_state-P) and an INVALID verdict whose failing names are "
        "all a torn or hanging transaction's (torn-transaction, unseen, lost-write, stalled-lso, poll-skip) or "
        "F9's other consequences (G1a, eos-loss, offsets-ahead, eos-duplicate)",
        link=FINDINGS + "F9.md", doc=FINDINGS + "F9.md",
        notes="Not reported upstream yet; shown by eos-chaos repro f9 with its fenced-restart control. Torn on every "
        "release tried (3.5.2, 3.9.1, 4.2.2, 4.3.1, 4.4.0); Kafka 3.5.2 logs neither the markers line nor "
        "the truncation at INFO, so the event, and the name, need 3.9.1 or later (measured). A node SIGKILLed right "
        "after its coordinator appended a PREPARE_COMMIT to __transaction_state-P (not yet replicated) and "
        "started again within broker.session.timeout.ms applies its pre-crash metadata image (the controller "
        "rejects its registration until the old lease expires), is P's coordinator again, loads P to its log end "
        "and sends COMMIT markers; once the controller moves P it truncates P and cancels the undelivered "
        "markers, and the new coordinator aborts the transaction. Measured: torn-transaction (repro f9), with "
        "unseen, lost-write, poll-skip and int-poll-skip (the blind hunt run); G1a (the producer's abort reaching "
        "the new coordinator), eos-loss and offsets-ahead (offsets committed, outputs aborted) and eos-duplicate "
        "(outputs committed, offsets aborted) follow from the mechanism, not measured. KAFKA-14402, KAFKA-17754 "
        "and F1 fit a torn transaction too and yield to F9 when its event is there; KAFKA-20734 has its own "
        "broker event, and with both events both stand.",
        signature=s.sig_f9, in_range=s.range_any),
)

#: id -> the ids it yields to (match: mutual yields let both stand)
BY_ID_YIELDS: dict[str, tuple[str, ...]] = {b.id: b.yields_to for b in CATALOGUE}

BY_ID: dict[str, KnownBug] = {b.id: b for b in CATALOGUE}


def match(verdict: Verdict | dict, meta: RunMeta | dict | None = None,
          workload: dict | None = None) -> list[KnownBugMatch]:
    """The catalogue entries whose signature ``verdict`` shows (module docstring); [] for a
    verdict with no anomaly. A fit none of whose ``rests_on`` names fails the run (every fit
    of a valid run) is "seen": never "looks-like", listed apart (``Verdict.known_bugs_seen``)."""
    v = Verdict.coerce(verdict)
    if not v.counts:
        return []
    facts = run_facts(meta, workload)
    failing_now = v.failing_names if v.valid is False else set()
    fits: list[tuple[KnownBug, Fit, list[str]]] = []
    seen: list[KnownBugMatch] = []
    for bug in CATALOGUE:
        try:
            fit = bug.signature(v, facts)
            if fit is None:
                continue
            outside = bug.in_range(facts)
        except Exception:  # noqa: BLE001 - one entry's defect never breaks a verdict
            continue
        doubts = [d for d in (fit.doubt, outside) if d]
        if not set(fit.rests_on) & failing_now:
            shows = ", ".join(fit.rests_on) or "nothing the verdict reports"
            seen.append(_as_match(bug, fit, "seen", [
                f"{shows} does not fail this run, so the run does not show the bug ({SEEN_NOTE})", *doubts]))
            continue
        fits.append((bug, fit, doubts))
    looks = {bug.id for bug, _, doubts in fits if not doubts}
    out = []
    for bug, fit, doubts in fits:
        # two entries that yield to each other are two readings of one history (KAFKA-14402 and
        # KAFKA-17754 on a release before 3.6.0): both stand
        better = [i for i in bug.yields_to if i in looks and i not in fit.not_explained_by
                  and not (bug.id in BY_ID_YIELDS.get(i, ()) and not doubts)]
        if better and doubts:
            continue  # a doubtful fit another entry explains: not worth a line
        if better:
            doubts = [f"{', '.join(better)} explains the same anomalies more specifically"]
        out.append(_as_match(bug, fit, "resembles" if doubts else "looks-like", doubts))
    return sorted(out, key=lambda m: m.match != "looks-like") + seen


#: why a "seen" match names no bug
SEEN_NOTE = "a name is given only for an anomaly or report that fails the run"


def _as_match(bug: KnownBug, fit: Fit, how: str, doubts: list[str]) -> KnownBugMatch:
    also = f"; also explained by {fit.also}" if fit.also else ""
    return KnownBugMatch(
        id=bug.id, title=bug.title, match=how,
        why=fit.why + "".join(f"; but {d}" for d in doubts) + also, evidence=list(fit.evidence),
        affected=bug.affected, fixed=bug.fixed, link=bug.link, doc=bug.doc)


def match_dicts(verdict: Verdict | dict, meta: RunMeta | dict | None = None,
                workload: dict | None = None) -> list[dict]:
    """``match`` as ``Verdict.known_bugs`` items, the "seen" ones included."""
    return [m.as_dict() for m in match(verdict, meta, workload)]


def assign(v: Verdict, meta: RunMeta | dict | None = None, workload: dict | None = None) -> Verdict:
    """Set ``v.known_bugs`` (the entries named: "looks-like", "resembles") and
    ``v.known_bugs_seen`` (the "seen" ones: a valid run's, or a failure's they do not explain)
    from ``match``; returns ``v``."""
    ms = match_dicts(v, meta, workload)
    v.known_bugs = [m for m in ms if m["match"] != "seen"]
    v.known_bugs_seen = [m for m in ms if m["match"] == "seen"]
    return v


def scenario_workload(path: str | Path) -> dict | None:
    """The ``workload`` mapping of a run's scenario.yaml as run (``path``); None when absent
    or unreadable (checkers.safe_load's limits)."""
    from ..safe_load import read_yaml
    try:
        data = read_yaml(path)
    except Exception:  # noqa: BLE001 - absent or unreadable: the facts stay unknown
        return None
    w = data.get("workload") if isinstance(data, dict) else None
    return w if isinstance(w, dict) else None
