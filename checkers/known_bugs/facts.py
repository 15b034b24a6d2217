"""What a known-bug signature reads of a run (checkers/known_bugs/signatures.py, checkers/known_bugs/bugs.py):
``RunFacts`` (the Kafka release, client and version, transaction protocol versions, broker and
client events, producer settings: ``run_facts`` builds them from meta.json and the scenario's
workload), a signature's ``Fit``, the evidence helpers that turn a verdict's cases into short
lines (``evidence``, ``case_ref``), and the range helpers (``kafka_between``, ``needs_tv2``,
``needs_client``). Versions are read with checkers.version_numbers, the one parser
(``release`` is its ``version_tuple``: ``release("3.5.2") < release("3.6.0")``). Pure
functions; checkers never import harness.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..run import RunMeta, Verdict
from ..version_numbers import between, older_than, version_tuple


def release(version: Any) -> tuple[int, ...] | None:
    """A release as a tuple of ints ("3.5.2" -> (3, 5, 2); "4.0.0-rc1" -> (4, 0, 0); "4.1" ->
    (4, 1, 0)); None when ``version`` does not start with a number (checkers.version_numbers)."""
    return version_tuple(version)


@dataclass(frozen=True)
class RunFacts:
    """What a signature and a range read of a run besides its verdict (``run_facts``)."""

    kafka: str | None = None             # the brokers' Apache Kafka release
    client: str | None = None            # "librdkafka" | "java" | None (unknown: an app, another tool)
    client_version: str | None = None
    tv: tuple[int, ...] = ()             # transaction protocol versions the producers used; () unknown
    broker_events: dict = field(default_factory=dict)   # harness.cluster.broker_events
    client_events: dict = field(default_factory=dict)   # harness.run.client_events
    producer: dict | None = None         # the workload's producer settings; None unknown
    inflight_abort: str | None = None    # txn-queue: "replace" | "reuse"; None unknown
    workload: str | None = None
    isolation_level: str | None = None   # the consumers'; "read_uncommitted" reads aborted writes by design
    versions: dict = field(default_factory=dict)   # meta.json ``versions`` (flink, flink-connector-kafka, ...)

    @property
    def kafka_v(self) -> tuple[int, ...] | None:
        return release(self.kafka)


def run_facts(meta: RunMeta | dict | None, workload: dict | None = None) -> RunFacts:
    """RunFacts from meta.json (and the scenario's ``workload`` mapping). The client: meta's
    ``client.name``, else the scenario's ``workload.client``, else ``java`` when ``versions``
    has ``java-client``, else ``librdkafka`` for the workloads whose workers were only
    confluent-kafka before ``client`` existed (txn-queue, eos-pipeline, idempotent). The
    transaction protocol versions: meta's ``transaction_version.client``, else [1] for
    librdkafka (it implements protocol v1 only) or for Kafka before 4.0 (no v2 there)."""
    m = meta.model_dump() if isinstance(meta, RunMeta) else dict(meta or {})
    w = workload if isinstance(workload, dict) else {}
    versions = m.get("versions") if isinstance(m.get("versions"), dict) else {}
    kafka = m.get("kafka_version") or versions.get("kafka")
    c = m.get("client")
    client, client_version = (c.get("name"), c.get("version")) if isinstance(c, dict) else (c, None)
    if not isinstance(client, str):
        client = w.get("client") if isinstance(w.get("client"), str) else None
    if client is None:
        if "java-client" in versions:
            client = "java"
        elif m.get("workload") in ("txn-queue", "eos-pipeline", "idempotent"):
            client = "librdkafka"
    if client_version is None:
        client_version = versions.get("java-client" if client == "java" else "librdkafka")
    tvm = m.get("transaction_version")
    tv = tuple(sorted({int(x) for x in (tvm.get("client") or []) if isinstance(x, int)})) \
        if isinstance(tvm, dict) else ()
    # transaction version 2 came in Kafka 4.0.0 (KIP-890 part 2; harness.cluster.releases
    # Release.supports_transaction_version_2): an older release, or librdkafka, ran version 1
    if not tv and (client == "librdkafka" or older_than(kafka, "4.0.0")):
        tv = (1,)
    prod = w.get("producer") if isinstance(w.get("producer"), dict) else (None if not w else {})
    if prod is not None and w.get("compression") and "compression.type" not in prod:
        prod = {**prod, "compression.type": w["compression"]}  # workload.compression (ClientSpec)
    return RunFacts(kafka=str(kafka) if kafka else None, client=client, client_version=client_version, tv=tv,
                    broker_events=m.get("broker_events") if isinstance(m.get("broker_events"), dict) else {},
                    client_events=m.get("client_events") if isinstance(m.get("client_events"), dict) else {},
                    producer=prod, inflight_abort=w.get("inflight_abort"),
                    workload=m.get("workload") or w.get("name"),
                    isolation_level=next((x for x in (w.get("isolation_level"), m.get("isolation_level"))
                                          if isinstance(x, str)), None),
                    versions=versions)


@dataclass(frozen=True)
class Fit:
    """A signature's fit: ``why`` (one line), ``evidence`` (report names with example op refs,
    broker events), ``doubt``: set when the signature fits only in part (then "resembles"),
    ``rests_on``: the report names it needs failing to name a bug at all, ``also``: what else
    would explain the same anomalies."""

    why: str
    evidence: list[str]
    doubt: str | None = None
    #: entries whose looking-like does not demote this fit: they cannot explain the anomaly it
    #: rests on (F1 explains a lost write, not an aborted write read as committed)
    not_explained_by: tuple[str, ...] = ()
    #: the report names the fit rests on: the entry is named ("looks like", "resembles") only
    #: when one of them fails the run; otherwise the match is "seen" (a valid run, or a failure
    #: it does not explain: checkers.known_bugs.bugs.match). () rests on nothing: always "seen"
    rests_on: tuple[str, ...] = ()
    #: other causes the history does not rule out, said in the verdict even where the name stays
    #: ("looks like ...; also explained by ...")
    also: str | None = None


# -- evidence helpers -------------------------------------------------------------------
def found(v: Verdict, *names: str) -> list[str]:
    """The names among ``names`` the verdict found (any case, failing or not)."""
    counts = v.counts
    return [n for n in names if counts.get(n)]


def failing(v: Verdict, *names: str) -> list[str]:
    return [n for n in names if n in v.failing_names]


def _ref(r: Any, what: str) -> str | None:
    if not isinstance(r, dict) or r.get("invoke_index") is None:
        return None
    tid = r.get("transactional_id")
    return (f"{what + ' ' if what else ''}op {r['invoke_index']} ({r.get('f')} {r.get('type')}, process {r.get('process')}"
            f"{', ' + str(tid) if tid else ''})")


def case_ref(c: dict) -> str:
    """A case in a few words: key@offset and the ops it names (docs/history.md op refs)."""
    where = f"{c['key']}@{c['offset']}" if c.get("key") is not None and c.get("offset") is not None \
        else str(c.get("key") or "")
    if c.get("anomaly") == "stalled-lso":
        at = (c.get("stuck_at") or {}).get("offset")
        return f"process {c.get('process')} stuck on {c.get('key')} at offset {at} for {c.get('stalled_ms', 0) / 1000:.1f} s"
    refs = [x for x in (_ref(c.get(k), "" if k == "op" else k) for k in ("writer", "op", "reader")) if x]
    return ", ".join(x for x in [where, *refs] if x) or str(c.get("explanation", ""))[:120]


def evidence(v: Verdict, names: list[str], n: int = 2) -> list[str]:
    """"name (count): example; example" for each name, examples from ``v.anomalies``."""
    out = []
    for name in names:
        cases = [c for c in (v.anomalies.get(name) or []) if isinstance(c, dict)][:n]
        ex = "; ".join(case_ref(c) for c in cases)
        out.append(f"{name} ({v.counts.get(name, 0)}){': e.g. ' + ex if ex else ''}")
    return out


def broker_event(facts: RunFacts, name: str) -> dict | None:
    """meta.json ``broker_events[name]`` (harness.cluster.broker_events: count, partitions,
    transactional_ids, first, node) when the brokers logged it; else None."""
    ev = facts.broker_events.get(name)
    return ev if isinstance(ev, dict) and ev else None


def skipped_markers(facts: RunFacts) -> dict | None:
    return broker_event(facts, "skipped-txn-markers")


def truncated_tail_markers(facts: RunFacts) -> dict | None:
    """The txn-markers-from-truncated-tail event (finding F9) when the brokers logged it."""
    return broker_event(facts, "txn-markers-from-truncated-tail")


def event_text(name: str, ev: dict) -> str:
    return (f"broker event {name} ({ev.get('count', '?')} log line(s)"
            f"{' on ' + str(ev['node']) if ev.get('node') else ''}): partitions "
            f"{', '.join(ev.get('partitions') or []) or '?'}; transactional.ids "
            f"{', '.join(ev.get('transactional_ids') or []) or '?'}")


# -- ranges ---------------------------------------------------------------------------------
def kafka_between(f: RunFacts, lo: str | None, hi: str | None, why_outside: str) -> str | None:
    """None when lo <= the run's Kafka < hi (releases such as "4.0.0"; None: unbounded); else
    why not."""
    inside = between(f.kafka, lo, hi)
    if inside is None:
        return "meta.json names no Kafka release, so the affected range cannot be checked"
    if not inside:
        return f"the run is on Kafka {f.kafka}: {why_outside}"
    return None


def needs_tv2(f: RunFacts) -> str | None:
    if 2 in f.tv:
        return None
    if f.tv:
        return "the producers used transaction version 1 only: the bug is in transaction version 2's epoch bumps"
    return "meta.json does not say which transaction protocol version the producers used (needs 2)"


def needs_client(f: RunFacts, client: str, other: str) -> str | None:
    if f.client == client:
        return None
    if f.client is None:
        return f"the run's client is not known (the bug is {client}'s)"
    return f"the run's client is {f.client}: {other}"
