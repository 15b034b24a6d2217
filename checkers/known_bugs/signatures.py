"""The signatures of the known-bug catalogue (checkers/known_bugs/bugs.py, docs/known-bugs.md):
what a verdict and a run's facts must show for an entry to be named, and each entry's
affected range. Pure functions of a ``Verdict`` and ``RunFacts`` (checkers/known_bugs/facts.py, with
the evidence and range helpers); checkers never import harness.

A signature returns a ``Fit`` (why, evidence, doubt) or None; a range function returns None
when the run's Kafka release, client and transaction protocol version are in the entry's
affected range, else why not (then the match says "resembles").
"""
from __future__ import annotations

import re

from .facts import (
    Fit,
    RunFacts,
    event_text,
    evidence,
    failing,
    found,
    kafka_between,
    needs_client,
    needs_tv2,
    skipped_markers,
    truncated_tail_markers,
)
from ..run import Verdict
from ..version_numbers import older_than

#: what a hanging transaction does to a read_committed history (docs/anomalies.md): writes of
#: committed transactions never seen (unseen, torn-transaction, lost-write), readers stopped
#: at the stalled last stable offset or moved past a hidden range (stalled-lso, poll-skip)
HANGING_TXN_KINDS = frozenset({"torn-transaction", "unseen", "lost-write", "stalled-lso", "poll-skip",
                               "int-poll-skip"})
#: KAFKA-20734's further consequences, each seen in a soak (docs/findings/F2.md): a skipped ABORT
#: closed by a later COMMIT (G1a), a skipped COMMIT closed by a later ABORT in a pipeline
#: (eos-loss, offsets-ahead)
F2_KINDS = HANGING_TXN_KINDS | {"G1a", "eos-loss", "offsets-ahead"}
#: F9's consequences (docs/findings/F9.md): the partitions that got the stale COMMIT markers are
#: committed, the others hang open until the new coordinator aborts the transaction, so the
#: hanging kinds; G1a when the producer's abort reached the new coordinator (its log lacks the
#: PREPARE_COMMIT, so the abort succeeds) after a partition had taken the stale COMMIT; in a
#: consume-transform-produce pipeline the tear splits the outputs from the offsets commit either
#: way: offsets committed, outputs aborted (eos-loss, offsets-ahead), or outputs committed,
#: offsets aborted (eos-duplicate). Measured: torn-transaction (eos-chaos repro f9), with unseen,
#: lost-write, poll-skip and int-poll-skip (the blind hunt run of F9.md); the others by mechanism only.
F9_KINDS = F2_KINDS | {"eos-duplicate"}
#: the summary's cap (checkers.finders.reprocessing.summary): at the cap, ranges beyond it are unseen
RANGES_CAP = 50


# -- F2 / F4 / F5 logic the integration tests' xfail helpers share ----------------------------
def kafka_20734_fit(v: Verdict, facts: RunFacts, kinds: frozenset[str] = F2_KINDS) -> Fit | None:
    """KAFKA-20734 (docs/findings/F2.md): an INVALID verdict whose failing names are all in
    ``kinds`` and a ``skipped-txn-markers`` broker event (the coordinator took a leaderless
    partition for a deleted one and skipped its COMMIT/ABORT markers). None otherwise."""
    ev = skipped_markers(facts)
    bad = set(v.failing_names)
    if v.valid is not False or not ev or not bad or not bad <= kinds:
        return None
    return Fit(f"the coordinator skipped the markers of {', '.join(ev.get('transactional_ids') or []) or '?'} on "
               f"leaderless {', '.join(ev.get('partitions') or []) or '?'}; verdict INVALID with "
               f"{', '.join(sorted(bad))}", [event_text("skipped-txn-markers", ev), *evidence(v, sorted(bad))],
               rests_on=tuple(sorted(bad)))


def f9_fit(v: Verdict, facts: RunFacts, kinds: frozenset[str] = F9_KINDS) -> Fit | None:
    """F9 (docs/findings/F9.md): an INVALID verdict whose failing names are all in ``kinds`` and
    a ``txn-markers-from-truncated-tail`` broker event (a transaction coordinator sent markers
    after loading a __transaction_state partition and then truncated it: markers that may rest
    on a PREPARE_COMMIT the partition's new leader never had). None otherwise."""
    ev = truncated_tail_markers(facts)
    bad = set(v.failing_names)
    if v.valid is not False or not ev or not bad or not bad <= kinds:
        return None
    return Fit(f"the transaction coordinator on {ev.get('node') or '?'} sent the markers of "
               f"{', '.join(ev.get('transactional_ids') or []) or '?'} after loading "
               f"{', '.join(ev.get('partitions') or []) or '?'}, then truncated that partition: the markers may "
               f"rest on a record above the high watermark that the new coordinator never had; verdict INVALID with "
               f"{', '.join(sorted(bad))}", [event_text("txn-markers-from-truncated-tail", ev),
                                              *evidence(v, sorted(bad))],
               rests_on=tuple(sorted(bad)))


def restarted_ranges(v: Verdict) -> list[dict] | None:
    """The reprocessed ranges (``stats.reprocessed_ranges``, checkers.finders.reprocessing.summary) when
    eos-duplicate fails the run and every range has a restart behind the committed offset;
    None otherwise (also at the summary's cap, where unseen ranges may have none)."""
    ranges = v.stats.get("reprocessed_ranges") or []
    if v.valid is not False or "eos-duplicate" not in v.failing_names or not ranges:
        return None
    if len(ranges) >= RANGES_CAP or not all(isinstance(r, dict) and r.get("restarts") for r in ranges):
        return None
    return ranges


def range_text(r: dict) -> str:
    rs = ", ".join(f"{s.get('kind')} at assign op {s.get('assign_index')} (first read @{s.get('first_offset')}, "
                   f"committed @{s.get('committed_offset')}, {s.get('pending') or 0} open txn(s))"
                   for s in r.get("restarts") or [])
    return f"reprocessed {r.get('key')} offsets {r.get('from_offset')}-{r.get('to_offset')} ({r.get('inputs')} inputs): {rs}"


def _kinds(r: dict) -> set[tuple[str, bool]]:
    return {(s.get("kind"), bool(s.get("pending"))) for s in r.get("restarts") or []}


# -- signatures -------------------------------------------------------------------------------
def sig_kafka_20734(v: Verdict, f: RunFacts) -> Fit | None:
    return kafka_20734_fit(v, f)


def range_kafka_20734(f: RunFacts) -> str | None:
    return kafka_between(f, "4.0.0", None, "older releases resolved a leaderless partition to noNode and "
                         "kept its markers queued (before the Java KRaftMetadataCache, docs/findings/F2.md)")


def g1a_read_committed(v: Verdict, f: RunFacts) -> tuple[list[str], str | None]:
    """(["G1a"] or [], doubt): whether the failing G1a came from a read_committed reader. Per
    example case, the reader's isolation level (``reader_isolation_level``, checkers/finders/g1a.py: its
    process's assign or poll meta), else the run's (meta.json or scenario.yaml
    ``isolation_level``). A read_uncommitted reader returns aborted writes by design: such
    cases do not count. Cases of an unknown reader count, with a doubt."""
    if "G1a" not in v.failing_names:
        return [], None
    cases = [c for c in v.anomalies.get("G1a") or [] if isinstance(c, dict)]
    levels = [c.get("reader_isolation_level") or f.isolation_level for c in cases] or [f.isolation_level]
    if "read_committed" in levels:
        return ["G1a"], None
    if all(x == "read_uncommitted" for x in levels):
        return [], None
    return ["G1a"], ("the G1a's reader is not known to have read committed (no isolation_level in its ops, "
                     "meta.json or scenario.yaml): a read_uncommitted consumer returns aborted writes by design")


def sig_kafka_14402(v: Verdict, f: RunFacts) -> Fit | None:
    """A late Produce appended after its transaction ended opens a transaction on the partition
    that its coordinator does not know: either nothing ends it (the last stable offset stops:
    stalled-lso, with unseen, torn-transaction, lost-write or poll-skip failing the run) or a
    later transaction of the same producer id ends it with its own marker and commits the
    aborted record (G1a from a read_committed reader; measured: scenarios/zoo/kafka-14402.yaml,
    3.5.2). Skipped transaction markers (the brokers' skipped-txn-markers event) explain both
    another way: KAFKA-20734, no fit here."""
    if skipped_markers(f) or v.valid is not False:
        return None  # with skipped markers the brokers say why the LSO hangs: KAFKA-20734
    g1a, g1a_doubt = g1a_read_committed(v, f)
    hang = failing(v, "stalled-lso", "unseen", "torn-transaction", "lost-write", "poll-skip") \
        if found(v, "stalled-lso") else []
    if not (g1a or hang):
        return None
    if hang:
        names = ["stalled-lso", *[n for n in found(v, "unseen", "torn-transaction", "lost-write") if n != "stalled-lso"]]
        return Fit("a read_committed consumer stalled behind a last stable offset that did not move (stalled-lso) "
                   f"and the run fails with {', '.join(hang)}, with no skipped-txn-markers broker event: a hanging "
                   "transaction (a late Produce after its transaction ended)", evidence(v, names + g1a),
                   rests_on=tuple(hang + g1a))
    torn = failing(v, "torn-transaction", "lost-write", "unseen")
    return Fit("an aborted transaction's write read as committed (G1a) by a read_committed reader, with no "
               "skipped-txn-markers broker event: a late Produce appended after its transaction was aborted, then "
               "ended by a later transaction's marker of the same producer id", evidence(v, g1a + torn),
               g1a_doubt, rests_on=("G1a",))


def range_kafka_14402(f: RunFacts) -> str | None:
    return kafka_between(f, None, "3.6.0", "from 3.6.0 the partition leader verifies a transactional produce "
                         "against the coordinator (KIP-890 part 1, transaction.partition.verification.enable)")


def sig_kafka_17754(v: Verdict, f: RunFacts) -> Fit | None:
    """G1a, lost-write or torn-transaction failing on a run whose producers used transaction
    version 1. The same lost or torn write is F1's when the producer is librdkafka's (its abort
    with records in flight): with librdkafka, or an unknown client, and no G1a (which F1 never
    makes) the fit doubts unless F1 itself looks like the cause (then it yields to F1). Where
    the name stays, ``also`` says what else explains the anomalies."""
    g1a, g1a_doubt = g1a_read_committed(v, f)
    bad = g1a + failing(v, "lost-write", "torn-transaction")
    if not bad:
        return None
    ev = skipped_markers(f)
    doubt = ("the brokers logged skipped transaction markers, which KAFKA-20734 turns into the same anomalies"
             if ev else None)
    if doubt is None and f.inflight_abort == "replace":
        # the only aborts that leave a record on the wire are the in-flight ones, after which the
        # txn-producer starts a new instance: its later transactions have another epoch
        doubt = ("the txn-producer replaces its producer after an abort with records in flight "
                 "(inflight_abort: replace), so no later transaction shares the aborted one's epoch")
    f1_fits = not g1a and f.client in ("librdkafka", None)
    if doubt is None and f1_fits and f.inflight_abort != "reuse":
        # reuse: F1 looks like the cause and this entry yields to it (match)
        doubt = ("F1 explains it as well: " + ("the producer is librdkafka's" if f.client == "librdkafka" else
                                                "the run's client is not known (librdkafka's would be F1's)")
                 + ", whose abort with records in flight loses the next transaction's write, and whether an "
                 "aborted producer was used again (inflight_abort) is not known")
    if doubt is None and g1a_doubt and not failing(v, "lost-write", "torn-transaction"):
        doubt = g1a_doubt
    others = []
    if failing(v, "lost-write", "torn-transaction"):
        if f1_fits:
            others.append("librdkafka's abort with records in flight (F1)")
        others += ["a write the brokers lost (an unclean leader election, unsynced writes lost in a crash)",
                   "a transaction left open or its markers skipped (KAFKA-14402 before 3.6.0, KAFKA-20734)",
                   "COMMIT markers sent from a coordinator's truncated __transaction_state tail (F9)"]
    if g1a:
        others.append("a late Produce of an older epoch appended without verification (KAFKA-14402, before 3.6.0)")
    return Fit(f"{', '.join(bad)}: an aborted write read as committed, or committed writes lost or torn, as a "
               "delayed Produce or EndTxn applied to a later transaction of the same producer epoch makes them",
               evidence(v, bad) + ([event_text("skipped-txn-markers", ev)] if ev else []),
               doubt,
               # F1 loses the next transaction's write; it never commits an aborted one (G1a)
               not_explained_by=("F1",) if g1a else (),
               rests_on=tuple(bad), also="; ".join(others) or None)


def range_kafka_17754(f: RunFacts) -> str | None:
    if 1 in f.tv:
        return None
    if f.tv:
        return ("the producers used transaction version 2 only (KIP-890 part 2: the epoch is bumped every "
                "transaction, so a late request of an older one is fenced)")
    return "meta.json does not say which transaction protocol version the producers used (the bug needs 1)"


def sig_f1(v: Verdict, f: RunFacts) -> Fit | None:
    bad = failing(v, "lost-write", "torn-transaction", "unseen")
    if not bad:
        return None
    impossible = "G0-realtime" in v.impossible
    ev = evidence(v, bad) + (evidence(v, ["G0-realtime"], 1) if impossible else [])
    if f.inflight_abort == "reuse":
        ev.append("workload inflight_abort: reuse (a producer aborted with records in flight is used again)")
    doubt = None
    if f.inflight_abort != "reuse" and not impossible:
        doubt = ("the txn-producer replaces its producer after an abort with records in flight (inflight_abort: "
                 "replace), which avoids F1, and no acknowledged offset lies below one already read (impossible "
                 "G0-realtime)" if f.inflight_abort == "replace" else
                 "whether an aborted producer with records in flight was used again is not known, and no "
                 "acknowledged offset lies below one already read (impossible G0-realtime)")
    return Fit(f"{', '.join(bad)} with librdkafka's producer: an abort with records in flight drops a possibly "
               "written record without an epoch bump, and the next transaction's record is acknowledged as its "
               "duplicate" + (" (an offset acknowledged below one already read: impossible G0-realtime)"
                              if impossible else ""), ev, doubt, rests_on=tuple(bad))


def range_f1(f: RunFacts) -> str | None:
    return needs_client(f, "librdkafka", "the Java producer retries a sent batch on abort instead of dropping it")


def sig_f4(v: Verdict, f: RunFacts) -> Fit | None:
    ranges = restarted_ranges(v)
    reset = [r for r in ranges or [] if any(k == "offset-reset" for k, _ in _kinds(r))]
    if not reset:
        return None
    pending = [r for r in reset if ("offset-reset", True) in _kinds(r)]
    return Fit(f"eos-duplicate: {len(reset)} of {len(ranges)} reprocessed range(s) restarted at the partition's "
               "log start (auto.offset.reset) after an assign, behind the group's committed offset"
               + (", with another transaction's offsets pending across the assign" if pending else ""),
               [range_text(r) for r in (pending or reset)[:4]],
               None if pending else "no other transaction was open across the assign in the history (F4 needs "
               "pending offsets; F5 also restarts a consumer at auto.offset.reset)", rests_on=("eos-duplicate",))


def range_f4(f: RunFacts) -> str | None:
    return needs_client(f, "librdkafka", "the Java consumer is not librdkafka")


def sig_f5(v: Verdict, f: RunFacts) -> Fit | None:
    ranges = restarted_ranges(v) or []
    behind = [r for r in ranges if any(k == "behind-committed" for k, _ in _kinds(r))]
    reset = [r for r in ranges if ("offset-reset", False) in _kinds(r) and ("offset-reset", True) not in _kinds(r)]
    if not behind and not reset:
        return None
    return Fit(f"eos-duplicate: {len(behind)} reprocessed range(s) restarted at an older committed offset "
               f"(behind-committed), {len(reset)} at auto.offset.reset with no transaction open across the "
               "assign: committed offsets answered from a coordinator shard not yet loaded",
               [range_text(r) for r in (behind + reset)[:4]],
               None if behind else "only restarts at auto.offset.reset: F4 with pending offsets the history "
               "does not show fits as well", rests_on=("eos-duplicate",))


def range_f5(f: RunFacts) -> str | None:
    return kafka_between(f, "4.0.0", None, "the group coordinator of KIP-848's runtime, where F5 is, is the "
                         "default only from 4.0")


def sig_f6(v: Verdict, f: RunFacts) -> Fit | None:
    """F6: share-dlq-spurious failing with DLQ records whose copied value has a transaction
    marker's form (checkers/finders/share_dlq.py says so in the case's explanation); spurious records
    of another kind only (an accepted record, an aborted write) are not F6."""
    if "share-dlq-spurious" not in v.failing_names:
        return None
    cases = [c for c in v.anomalies.get("share-dlq-spurious") or [] if isinstance(c, dict)]
    markers = [c for c in cases if "transaction marker" in str(c.get("explanation", ""))]
    if not markers:
        return None
    ex = "; ".join(f"{c.get('key')}@{c.get('offset')} ({c.get('message') or 'no reason'})" for c in markers[:3])
    return Fit(f"share-dlq-spurious: {len(markers)} DLQ record(s) of the share group copy a transaction marker's "
               "control record (never handed to a member): librdkafka's share consumer does not acknowledge "
               "(GAP) the acquired offsets of a ShareFetch response without a message, so the broker delivers "
               "the marker up to the delivery-count limit and dead-letters it",
               [f"share-dlq-spurious ({v.counts.get('share-dlq-spurious', 0)}, {len(markers)} marker-shaped): e.g. {ex}"],
               None if len(markers) == len(cases) else
               f"{len(cases) - len(markers)} other share-dlq-spurious case(s) are no marker: something else as well",
               rests_on=("share-dlq-spurious",))


def range_f6(f: RunFacts) -> str | None:
    return (needs_client(f, "librdkafka", "kafka-clients' KafkaShareConsumer acknowledges control-record offsets "
                         "as GAP (apache/kafka#19295)")
            or kafka_between(f, "4.4.0", None, "share groups' dead-letter queues (KIP-1191) came with 4.4.0"))


#: the protocol errors KAFKA-15653 returns (3.6.0's upgrade note: "InvalidRecordExceptions and
#: UnknownServerExceptions"; the NullPointerException of the shared BufferSupplier answers
#: UNKNOWN_SERVER_ERROR, a corrupted decompression INVALID_RECORD)
KAFKA_15653_ERRORS = ("UNKNOWN_SERVER_ERROR", "INVALID_RECORD")


def sig_kafka_15653(v: Verdict, f: RunFacts) -> Fit | None:
    """The server-error report (checkers/finders/server_error.py) with KAFKA-15653's own mark: a case of
    a transactional op (verification runs for transactional produce only) answered
    UNKNOWN_SERVER_ERROR or INVALID_RECORD. Doubts: producers not known to compress, or did
    not (the bug is in the decompression buffer); every marked case with a broker fault while
    its op was in flight (``node_faults``: a broker killed or restarted under the request is
    another cause). Named only when server-error fails the run (``rests_on``)."""
    if not found(v, "server-error"):
        return None
    cases = [c for c in v.anomalies.get("server-error") or [] if isinstance(c, dict)]
    marked = [c for c in cases if c.get("protocol_error") in KAFKA_15653_ERRORS
              and (c.get("op") or {}).get("transactional_id")]
    if not marked:
        return None
    ev = evidence(v, ["server-error"])
    doubts = []
    comp = (f.producer or {}).get("compression.type") or (f.producer or {}).get("compression.codec")
    if comp and str(comp) != "none":
        ev.append(f"producer compression.type {comp}")
    elif f.producer is None:
        doubts.append("whether the producers compressed is not known (no scenario.yaml workload): the bug needs "
                      "compressed batches")
    else:
        doubts.append("the producers did not compress (no compression.type in the workload's producer settings)")
    faulted = [c for c in marked if c.get("node_faults")]
    if faulted and len(faulted) == len(marked):
        what = ", ".join(f"{e.get('f')} node {(e.get('value') or {}).get('node')}"
                         for e in faulted[0]["node_faults"][:3])
        doubts.append(f"a broker fault was on while each such op was in flight (e.g. {what}): a broker killed, "
                      "paused or restarting under the request explains the error as well")
    return Fit(f"{len(marked)} transactional op(s) answered {'/'.join(sorted({c['protocol_error'] for c in marked}))} "
               "(server-error), an error a correct broker never returns to a valid request, as 3.6.0's verification "
               "callback does to compressed batches", ev, "; ".join(doubts) or None, rests_on=("server-error",))


def range_kafka_15653(f: RunFacts) -> str | None:
    return kafka_between(f, "3.6.0", "3.6.1", "KAFKA-15653 is in 3.6.0 only")


def sig_epoch_exhausted(v: Verdict, f: RunFacts) -> Fit | None:
    """KAFKA-19367, KAFKA-20090: epoch-exhausted cases that show the epoch's end
    (``epoch_evidence``, checkers/finders/epoch_exhausted.py: the last ok init's epoch near 32767, or an
    init error naming the overflow). A case without it (a verdict written before the checker
    read the epoch) is not this bug's mark: no fit. Named only when epoch-exhausted fails the run
    (``rests_on``)."""
    if not found(v, "epoch-exhausted"):
        return None
    cases = [c for c in v.anomalies.get("epoch-exhausted") or [] if isinstance(c, dict) and c.get("epoch_evidence")]
    if not cases:
        return None
    return Fit("a transactional.id whose producer epoch reached its end (32767) could not initialise or "
               f"complete a transaction again (epoch-exhausted): {cases[0]['epoch_evidence']}",
               evidence(v, ["epoch-exhausted"]), rests_on=("epoch-exhausted",))


def range_kafka_19367(f: RunFacts) -> str | None:
    return kafka_between(f, "4.0.0", "4.0.1", "KAFKA-19367 is in 4.0.0 only") or needs_tv2(f)


def range_kafka_20090(f: RunFacts) -> str | None:
    return kafka_between(f, "4.0.0", "4.3.0", "KAFKA-20090 is in 4.0.0-4.2.x") or needs_tv2(f)


#: the liveness reports a consumer that stopped making progress on its partitions leaves
STALL_KINDS = ("app-stalled", "pipeline-stalled", "unavailable")


def client_event_fit(v: Verdict, f: RunFacts, name: str, happened: str) -> Fit | None:
    """The fit of an entry keyed on client event ``name`` (harness.run.client_events, meta.json
    ``client_events``) with a stall report as support: None without the event; the event and no
    stall (app-stalled, pipeline-stalled, unavailable) is a doubt. ``happened`` says in a few
    words what the event's line shows."""
    ev = f.client_events.get(name)
    if not isinstance(ev, dict) or not ev:
        return None
    stalls = found(v, *STALL_KINDS)
    where = f"{ev.get('count', '?')} line(s) in {', '.join(ev.get('logs') or [ev.get('log') or '?'])}"
    line = f"client event {name} ({where}): {str(ev.get('first', ''))[:200]}"
    if not stalls:
        return Fit(f"{happened}, but no stall was reported", [line],
                   doubt="no stall report (app-stalled, pipeline-stalled, unavailable) in the verdict")
    return Fit(f"{happened} ({where}) and the run reports {', '.join(stalls)}", [line, *evidence(v, stalls)],
               rests_on=tuple(stalls))


def sig_kafka_20765(v: Verdict, f: RunFacts) -> Fit | None:
    """KAFKA-20765: the clients' offset-fetch-dedup-spin event (harness.run.client_events: a
    line only an affected kafka-clients writes) with a stall report; the event alone, no stall
    reported, is a doubt."""
    return client_event_fit(v, f, "offset-fetch-dedup-spin", "a consumer spun on a chained OffsetFetch")


def sig_librdkafka_5511(v: Verdict, f: RunFacts) -> Fit | None:
    """librdkafka#5511: the clients' send-offsets-stuck event (harness.run.client_events: an
    application's line that send_offsets_to_transaction did not return past its timeout); with
    a stall report as support, without one a doubt."""
    return client_event_fit(v, f, "send-offsets-stuck", "send_offsets_to_transaction did not return past its timeout")


def range_librdkafka_5511(f: RunFacts) -> str | None:
    """librdkafka 2.10.0 and later (brokers dropped from the metadata are decommissioned,
    librdkafka f7c42733, #4557). The version is the one the event's line names (the application's
    own client), else the run's librdkafka; unknown counts as in range."""
    ev = f.client_events.get("send-offsets-stuck")
    m = re.search(r"librdkafka (\d+\.\d+\.\d+)", str((ev or {}).get("first", "")))
    version = m.group(1) if m else (f.client_version if f.client != "java" else None)
    if older_than(version, "2.10.0"):
        return (f"librdkafka {version} is older than 2.10.0, which began decommissioning brokers: a stuck "
                "send_offsets_to_transaction there is #5456's alone")
    return None


def sig_f7(v: Verdict, f: RunFacts) -> Fit | None:
    """F7 (docs/findings/F7.md): the clients' flink-taskmanager-lost event (Flink's "FATAL -
    exception in exception handler of task", or the example deployment's watchdog line) with
    flink-kafka-writer-close-threw (a KafkaWriter.close frame: the KafkaSink writer's close()
    threw) and a stall report. Without the frame the TaskManager may have died of anything else;
    without a stall (flink_app.py's watchdog restarted the job) F7 explains none of the
    verdict's anomalies: either is a doubt. No lost TaskManager: not F7."""
    lost = f.client_events.get("flink-taskmanager-lost")
    if not isinstance(lost, dict) or not lost:
        return None
    threw = f.client_events.get("flink-kafka-writer-close-threw")
    threw = threw if isinstance(threw, dict) and threw else None

    def line(name: str, ev: dict) -> str:
        where = f"{ev.get('count', '?')} line(s) in {', '.join(ev.get('logs') or [ev.get('log') or '?'])}"
        return f"client event {name} ({where}): {str(ev.get('first', ''))[:200]}"

    lines = [line("flink-taskmanager-lost", lost)] + ([line("flink-kafka-writer-close-threw", threw)] if threw else [])
    stalls = found(v, *STALL_KINDS)
    doubts = []
    if not threw:
        doubts.append("no KafkaWriter.close frame in the logs: the TaskManager may have been lost for another reason")
    if not stalls:
        doubts.append("no stall report (app-stalled, pipeline-stalled, unavailable) in the verdict: the job was "
                      "restarted or recovered, so F7 explains none of its anomalies")
    what = ("a Flink TaskManager was lost after the KafkaSink writer's close() threw" if threw
            else "a Flink TaskManager was lost")
    why = what + (f" and the run reports {', '.join(stalls)}" if stalls else "")
    return Fit(why, [*lines, *evidence(v, stalls)], doubt="; ".join(doubts) or None, rests_on=tuple(stalls))


def range_f7(f: RunFacts) -> str | None:
    """Flink 2.2.0 and later (meta.json ``versions.flink``): FLINK-38180 put the failed task's
    cleanup inside the handler whose exceptions are fatal; 2.1.x added a cleanup exception to the
    failure as a suppressed one (checked in the 2.1.0, 2.1.1, 2.2.0, 2.2.1 and 2.3.0 sources).
    Unknown counts as in range."""
    version = f.versions.get("flink") if isinstance(f.versions, dict) else None
    if older_than(version, "2.2.0"):
        return (f"Flink {version} is older than 2.2.0: its Task adds an exception from a failed task's cleanup to "
                "the failure as a suppressed one, the TaskManager survives")
    return None


def sig_f9(v: Verdict, f: RunFacts) -> Fit | None:
    return f9_fit(v, f)


def sig_never(v: Verdict, f: RunFacts) -> Fit | None:
    """For an entry whose evidence is in no verdict or meta.json (F3: the instances' logs)."""
    return None


def range_any(f: RunFacts) -> str | None:
    return None
