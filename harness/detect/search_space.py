"""The configuration space ``eos-chaos hunt`` draws from (issue 44): client, broker and workload
settings within their DOCUMENTED ranges, each range with its source beside it, never a
catalogued bug's trigger.

What is drawn, and where it goes (only settings the harness applies):

* producer settings: ``workload.producer`` (harness.workloads.txn_queue / eos_pipeline pass it
  to every producer worker's ``producer`` config, which the librdkafka worker merges over its
  own defaults, harness/workers/txn_producer.py ``conf``, and the Java worker into its
  Properties, harness/workers/java/src/eosc/TxnProducer.java); one table per client, since
  the keys and the documented ranges differ (``PRODUCER``);
* ``compression.type``: ``workload.compression`` (harness.workloads.base.ClientSpec merges it
  into ``producer``);
* the client (``workload.client``) for workloads whose workers exist in both clients;
* broker settings: ``cluster.broker``, written into every node's server.properties
  (harness/cluster/kafka.py ``KafkaNode.write_config``); ``BROKER``;
* the transaction protocol version (``cluster.features``) only when the scenario model has
  ``cluster.features`` and the release finalizes a choice (``Release.supports_transaction_version_2``);
* workload shape (``WORKLOAD``): producers, records per transaction, aborts, the pause between
  a producer's transactions (txn rate per transactional.id), the abort behaviour with records
  in flight (``inflight_abort``, ``flush_timeout_s``), and restarts of transactional.ids (a
  ``kill-client`` fault on the producers added to the faults the schedule draws from).

Not drawn, and why (``NOT_DRAWN``): the ``isolation.level`` of extra readers (the harness has
no reader whose reads stay out of the verdict: a read_uncommitted consumer is the checkers'
negative control, G1a by design); the epoch-burn worker (``epoch_burn``: KAFKA-19367's and
KAFKA-20090's trigger in scenarios/zoo); log retention below the run's own length (deleting
the run's records is not a bug).

Every numeric setting is drawn from a *grid*: its documented default, the default doubled and
halved while within the documented range and the run cap, and the documented ends inside the
cap; the grid is sorted by distance from the default (in log scale), and ``sampled_from``
shrinks toward its first element. Each setting is first a coin "leave it unset" (None: the
harness's own value, which the scenario runs with), so Hypothesis shrinks every draw to
"unset", then to the documented default. A *run cap* narrows a documented range where a run
of a minute cannot use the rest of it (a 15-minute timeout in a 60 s load); each cap says why.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: librdkafka's configuration reference (the version pinned: confluent-kafka 2.16.1 / librdkafka 2.16.0)
LIBRDKAFKA_DOC = "librdkafka CONFIGURATION.md (https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md)"
#: Kafka's producer configs (ProducerConfig.java; the documentation page renders its ConfigDef)
KAFKA_PRODUCER_DOC = "Kafka producer configs (https://kafka.apache.org/documentation/#producerconfigs; ProducerConfig.java)"
#: Kafka's broker configs (https://kafka.apache.org/documentation/#brokerconfigs)
KAFKA_BROKER_DOC = "Kafka broker configs (https://kafka.apache.org/documentation/#brokerconfigs)"
#: the harness's own bounds (a scenario field's pydantic bounds)
HARNESS_DOC = "harness scenario model"

#: the broker's transaction.max.timeout.ms the harness starts every cluster with
#: (harness/cluster/kafka.py BROKER_DEFAULTS): a larger client transaction.timeout.ms fails init
TXN_MAX_TIMEOUT_MS = 900_000

INT32_MAX = 2**31 - 1

#: the run cap of every client timeout: a hunt run's load lasts at most 60 s (harness.detect.hunt
#: MAX_LOAD_S); a longer timeout only lengthens the run's end, where the runner waits up to the
#: transaction timeout for open transactions (open-transactions.json) and a writer for its flush
RUN_TIMEOUT_CAP_MS = 120_000
TIMEOUT_CAP_WHY = "a hunt run's load is at most 60 s: a timeout past 2 minutes only lengthens the run's end"


class SearchSpaceError(ValueError):
    """A draw or a space that cannot be built; says what to fix (one line)."""


@dataclass(frozen=True)
class Setting:
    """One drawable setting: ``key`` as the target spells it, where it goes (``scope``:
    producer | broker | workload), its documented range ``lo``..``hi`` and ``default`` (as the
    ``source`` says), the run cap ``cap`` (None: none) with ``cap_why``, or ``choices`` for an
    enumeration (the first is the default)."""

    key: str
    scope: str
    source: str
    default: Any
    lo: float | None = None
    hi: float | None = None
    choices: tuple = ()
    cap: float | None = None
    cap_why: str = ""
    #: the lower end drawn (documented lo, raised when lo itself cannot run: cap_why says why)
    floor: float | None = None
    #: a float setting (abort probability): drawn from ``choices`` only
    note: str = ""

    @property
    def draw_lo(self) -> float:
        return self.lo if self.floor is None else max(self.lo, self.floor)

    @property
    def draw_hi(self) -> float:
        return self.hi if self.cap is None else min(self.hi, self.cap)

    def grid(self) -> list:
        """The values drawn, default first, then by distance from the default (module docstring)."""
        if self.choices:
            return list(self.choices)
        lo, hi, d = self.draw_lo, self.draw_hi, self.default
        vals = {int(lo), int(hi)}
        if lo <= d <= hi:
            vals.add(int(d))
        base = d if d > 0 else max(1, lo)
        v = base
        while v * 2 <= hi:
            v *= 2
            vals.add(int(v))
        v = base
        while v / 2 >= max(lo, 1):
            v /= 2
            vals.add(int(math.floor(v)))
        vals = {x for x in vals if lo <= x <= hi}

        def dist(x):
            return (abs(math.log(max(x, 0.5) / max(d, 0.5))), x)
        return sorted(vals, key=dist)

    def contains(self, value) -> bool:
        """True when ``value`` is within the documented range (or one of the choices)."""
        if self.choices:
            return value in self.choices
        return self.lo <= value <= self.hi and (self.cap is None or value <= self.cap)


# ---------------------------------------------------------------- the tables

def _p(key, source, default, lo, hi, **kw) -> Setting:
    return Setting(key, "producer", source, default, lo, hi, **kw)


#: producer settings per client; defaults and ranges as the source documents them
PRODUCER: dict[str, list[Setting]] = {
    "librdkafka": [
        # socket.timeout.ms: 10 .. 300000, default 60000 (the client-side request timeout)
        _p("socket.timeout.ms", LIBRDKAFKA_DOC, 60000, 10, 300000, floor=100, cap=RUN_TIMEOUT_CAP_MS,
           cap_why="below 100 ms every request to a loaded broker times out (a flood of retries, not a run); "
                   + TIMEOUT_CAP_WHY),
        # request.timeout.ms: 1 .. 900000, default 30000 (the broker's ack timeout of a ProduceRequest)
        _p("request.timeout.ms", LIBRDKAFKA_DOC, 30000, 1, 900000, cap=RUN_TIMEOUT_CAP_MS, cap_why=TIMEOUT_CAP_WHY),
        # message.timeout.ms (alias delivery.timeout.ms): 0 .. 2147483647, default 300000; 0 = infinite
        _p("message.timeout.ms", LIBRDKAFKA_DOC, 300000, 0, INT32_MAX, floor=100, cap=RUN_TIMEOUT_CAP_MS,
           cap_why="0 (infinite) would hold a flush past the run; " + TIMEOUT_CAP_WHY),
        # transaction.timeout.ms: 1000 .. 2147483647, default 60000
        _p("transaction.timeout.ms", LIBRDKAFKA_DOC, 60000, 1000, INT32_MAX, cap=RUN_TIMEOUT_CAP_MS,
           cap_why="the brokers' transaction.max.timeout.ms (900000) refuses more than 900000 at init; "
                   + TIMEOUT_CAP_WHY),
        # max.in.flight.requests.per.connection: 1 .. 1000000, default 1000000; enable.idempotence
        # sets it to 5 and requires <= 5
        _p("max.in.flight.requests.per.connection", LIBRDKAFKA_DOC, 5, 1, 1000000, cap=5,
           cap_why="enable.idempotence requires <= 5 (the same row)"),
        # linger.ms (alias queue.buffering.max.ms): 0 .. 900000, default 5
        _p("linger.ms", LIBRDKAFKA_DOC, 5, 0, 900000, cap=5000,
           cap_why="a linger longer than a few seconds holds every record of a one-minute load"),
        # batch.size: 1 .. 2147483647, default 1000000
        _p("batch.size", LIBRDKAFKA_DOC, 1000000, 1, INT32_MAX, cap=1000000,
           cap_why="message.max.bytes (default 1000000) bounds a batch anyway"),
    ],
    "java": [
        # request.timeout.ms: [0,...], default 30000
        _p("request.timeout.ms", KAFKA_PRODUCER_DOC, 30000, 0, INT32_MAX, floor=100, cap=RUN_TIMEOUT_CAP_MS,
           cap_why="0 times out every request at once; " + TIMEOUT_CAP_WHY),
        # delivery.timeout.ms: [0,...], default 120000; must be >= linger.ms + request.timeout.ms
        _p("delivery.timeout.ms", KAFKA_PRODUCER_DOC, 120000, 0, INT32_MAX, floor=100, cap=RUN_TIMEOUT_CAP_MS,
           cap_why="0 expires every record at once; " + TIMEOUT_CAP_WHY),
        # transaction.timeout.ms: default 60000 (no client-side validator; the broker's
        # transaction.max.timeout.ms bounds it)
        _p("transaction.timeout.ms", KAFKA_PRODUCER_DOC, 60000, 1, INT32_MAX, floor=1000, cap=RUN_TIMEOUT_CAP_MS,
           cap_why="1000 is librdkafka's documented minimum, kept for both clients; " + TIMEOUT_CAP_WHY),
        # max.in.flight.requests.per.connection: [1,...], default 5; idempotence requires <= 5
        _p("max.in.flight.requests.per.connection", KAFKA_PRODUCER_DOC, 5, 1, INT32_MAX, cap=5,
           cap_why="enable.idempotence requires <= 5 (ProducerConfig)"),
        # linger.ms: [0,...], default 5 (kafka-clients 4.0 on, KIP-1030; 0 before)
        _p("linger.ms", KAFKA_PRODUCER_DOC, 5, 0, INT32_MAX, cap=5000,
           cap_why="a linger longer than a few seconds holds every record of a one-minute load"),
        # batch.size: [0,...], default 16384
        _p("batch.size", KAFKA_PRODUCER_DOC, 16384, 0, INT32_MAX, cap=1048576,
           cap_why="max.request.size (default 1048576) bounds a batch anyway"),
    ],
}

#: compression.type: none, gzip, snappy, lz4, zstd in both clients (default none)
COMPRESSION = Setting("compression", "workload", f"{LIBRDKAFKA_DOC}; {KAFKA_PRODUCER_DOC}", "none",
                      choices=("none", "gzip", "snappy", "lz4", "zstd"))

#: broker settings (server.properties, every node)
BROKER: list[Setting] = [
    # transactional.id.expiration.ms: [1,...], default 604800000 (7 days)
    Setting("transactional.id.expiration.ms", "broker", KAFKA_BROKER_DOC, 604800000, 1, INT32_MAX, floor=1000,
            cap_why="below a second every restart of a transactional.id meets an expired one; 1000 keeps the run's "
                    "own restarts meaningful"),
    # producer.id.expiration.ms: [1,...], default 86400000 (1 day; KIP-854, 3.4.0 on)
    Setting("producer.id.expiration.ms", "broker", KAFKA_BROKER_DOC, 86400000, 1, INT32_MAX, floor=1000,
            cap_why="as transactional.id.expiration.ms"),
    # min.insync.replicas: [1,...], default 1 (the harness runs 2; the cap is the replication factor 3)
    Setting("min.insync.replicas", "broker", KAFKA_BROKER_DOC, 1, 1, INT32_MAX, cap=3,
            cap_why="the workload's topics have 3 replicas"),
    # unclean.leader.election.enable: true/false, default false
    Setting("unclean.leader.election.enable", "broker", KAFKA_BROKER_DOC, "false", choices=("false", "true"),
            note="true permits losing acknowledged records by design: a finding in such a run is labelled so"),
    # log.segment.bytes: [14,...] on 3.x, [1048576,...] on 4.x; default 1073741824
    Setting("log.segment.bytes", "broker", KAFKA_BROKER_DOC, 1073741824, 1048576, INT32_MAX, cap=1073741824,
            cap_why="1048576 is the documented minimum on 4.x (14 on 3.x): one floor valid on every release"),
    # log.retention.ms: default 604800000 (-1: unlimited)
    Setting("log.retention.ms", "broker", KAFKA_BROKER_DOC, 604800000, -1, INT32_MAX * 1000, floor=3600000,
            cap=604800000, cap_why="retention that deletes the run's own records inside a run is not a bug: at least an hour"),
]

#: workload shape; ``workloads`` says which workload names take it
@dataclass(frozen=True)
class Shape:
    setting: Setting
    workloads: tuple[str, ...]
    clients: tuple[str, ...] = ("librdkafka", "java")


def _w(key, default, choices, why) -> Setting:
    return Setting(key, "workload", HARNESS_DOC + ": " + why, default, choices=choices)


WORKLOAD: list[Shape] = [
    Shape(_w("producers", 4, (4, 2, 1, 8), "txn-queue producers 1..64 (each its own transactional.id)"),
          ("txn-queue",)),
    Shape(_w("max_sends_per_txn", 4, (4, 2, 1, 8, 16, 64), "records per transaction 1..10000"),
          ("txn-queue", "eos-pipeline")),
    Shape(_w("abort_probability", 0.1, (0.1, 0.0, 0.05, 0.2, 0.5), "transactions aborted on purpose, 0..1"),
          ("txn-queue", "eos-pipeline")),
    # the pause between a producer's transactions: the txn rate per transactional.id (txn-producers role;
    # librdkafka only: client java has no txn-producers worker)
    Shape(_w("think_time_ms", 0.0, (0.0, 10.0, 100.0, 1000.0), "pause between a producer's transactions, ms"),
          ("txn-queue",), clients=("librdkafka",)),
    Shape(_w("inflight_abort", "replace", ("replace", "reuse"),
             "after an abort with records in flight, replace the producer instance or reuse it"),
          ("txn-queue",)),
    # seconds the producer waits for delivery reports before aborting (None: message timeout + 2 s)
    Shape(_w("flush_timeout_s", None, (None, 30.0, 10.0, 5.0, 2.0, 1.0), "flush before commit, s (None: the client's timeout + 2 s)"),
          ("txn-queue",)),
    Shape(_w("processors", 3, (3, 2, 1, 4, 6), "eos-pipeline processors 1..32"), ("eos-pipeline",)),
    Shape(_w("max_batch", 50, (50, 10, 1, 200, 500), "input records per processor transaction 1..100000"),
          ("eos-pipeline",)),
    Shape(_w("processor_abort_probability", 0.05, (0.05, 0.0, 0.2, 0.5), "processor transactions aborted on purpose"),
          ("eos-pipeline",)),
]

#: restarts of transactional.ids: a kill-client fault on the producers joins the faults drawn from
RESTARTS = Setting("restart_producers", "nemesis", HARNESS_DOC + ": nemesis.faults kill-client (docs/faults.md)",
                   False, choices=(False, True))

NOT_DRAWN = {
    "isolation.level of extra readers": "the harness has no reader whose reads stay out of the verdict; a "
                                        "read_uncommitted consumer is the checkers' negative control (G1a by design)",
    "epoch_burn (long-lived ids at the end of their epochs)": "the epoch-burn worker is KAFKA-19367's and "
                                                              "KAFKA-20090's trigger (scenarios/zoo), and a pool run "
                                                              "cannot climb there: on the pool's 3-node cluster one "
                                                              "id's InitProducerId took 7.8 ms (the end 4.3 minutes "
                                                              "away), four ids under kills 64-80 ms each, against "
                                                              "30-60 s loads (docs/records/2026-11-29-hunt-epoch-"
                                                              "climb-preflight.md); epochs climb here only through "
                                                              "restarts and instance replacement",
    "retention below an hour": "deleting the run's own records is not a bug",
}

#: the harness's worker defaults (harness/workers/txn_producer.py conf, TxnProducer.java conf):
#: what an unset setting runs with; the repairs below read them
WORKER_DEFAULTS = {
    "librdkafka": {"transaction.timeout.ms": 30000, "message.timeout.ms": 20000, "socket.timeout.ms": 10000,
                   "linger.ms": 5},
    "java": {"transaction.timeout.ms": 30000, "delivery.timeout.ms": 20000, "request.timeout.ms": 10000,
             "linger.ms": 5},
}

#: workloads whose workers exist in both clients (harness.workloads.WORKLOADS with_client)
CLIENT_WORKLOADS = ("txn-queue", "eos-pipeline")


# ---------------------------------------------------------------- draws

@dataclass
class Draw:
    """One configuration draw: ``client``, ``producer`` / ``broker`` / ``workload`` settings
    (only the drawn ones: unset ones are absent), ``compression``, ``features``,
    ``restart_producers``; ``repaired``: settings raised so the client accepts the combination
    (``repair``)."""

    client: str
    producer: dict = field(default_factory=dict)
    broker: dict = field(default_factory=dict)
    workload: dict = field(default_factory=dict)
    compression: str | None = None
    features: dict = field(default_factory=dict)
    restart_producers: bool = False
    repaired: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"client": self.client, "producer": dict(self.producer), "broker": dict(self.broker),
                "workload": dict(self.workload), "compression": self.compression,
                "features": dict(self.features), "restart_producers": self.restart_producers,
                "repaired": dict(self.repaired)}

    def size(self) -> int:
        """How far from the defaults: the number of settings set (shrinking lowers it)."""
        return (len(self.producer) + len(self.broker) + len(self.workload) + (self.compression is not None)
                + len(self.features) + int(self.restart_producers))


def repair(client: str, producer: dict) -> dict:
    """The settings raised so that ``client`` accepts ``producer`` with the worker's defaults;
    returns {key: new value} (also applied to ``producer``). librdkafka: message.timeout.ms >
    linger.ms (librdkafka refuses the configuration otherwise), message.timeout.ms <=
    transaction.timeout.ms and socket.timeout.ms <= transaction.timeout.ms - 100 (CONFIGURATION.md,
    transaction.timeout.ms); Java: delivery.timeout.ms >= linger.ms + request.timeout.ms
    (ProducerConfig). Only the message / transaction / delivery timeout is raised, within its
    documented range."""
    eff = {**WORKER_DEFAULTS[client], **producer}
    out: dict = {}
    if client == "librdkafka":
        if int(eff["message.timeout.ms"]) <= float(eff["linger.ms"]):  # "must be greater than linger.ms"
            out["message.timeout.ms"] = eff["message.timeout.ms"] = int(eff["linger.ms"]) + 100
        need = max(int(eff["message.timeout.ms"]), int(eff["socket.timeout.ms"]) + 100)
        if int(eff["transaction.timeout.ms"]) < need:
            out["transaction.timeout.ms"] = min(need, TXN_MAX_TIMEOUT_MS)
    else:
        need = int(eff["linger.ms"]) + int(eff["request.timeout.ms"])
        if int(eff["delivery.timeout.ms"]) < need:
            out["delivery.timeout.ms"] = need
    producer.update(out)
    return out


def applicable_shapes(workload: str, client: str) -> list[Setting]:
    return [s.setting for s in WORKLOAD if workload in s.workloads and client in s.clients]


def transaction_version_choice(kafka_version: str) -> tuple[int, ...] | None:
    """The transaction.version levels a draw may ask for on ``kafka_version`` (the release's
    default first), or None when none can be drawn: the release finalizes one level only
    (before 4.0.0) or the scenario model has no ``cluster.features`` to pass it."""
    from harness.cluster.releases import release
    from harness.run.scenario import ClusterSpec

    if "features" not in ClusterSpec.model_fields or not release(kafka_version).supports_transaction_version_2():
        return None
    return (2, 1)


def draws(workload: str, kafka_version: str, clients: tuple[str, ...]):
    """Hypothesis strategy of ``Draw`` for a scenario of ``workload`` on ``kafka_version``;
    ``clients``: those the client is drawn from (first: where it shrinks to). Every setting
    is None (unset) or a grid value (module docstring)."""
    from hypothesis import strategies as st

    def opt(s: Setting):
        return st.one_of(st.none(), st.sampled_from(s.grid()))

    tv = transaction_version_choice(kafka_version)

    @st.composite
    def draw(d):
        client = d(st.sampled_from(clients)) if workload in CLIENT_WORKLOADS else "librdkafka"
        producer = {s.key: v for s in PRODUCER[client] if (v := d(opt(s))) is not None}
        comp = d(opt(COMPRESSION))
        broker = {s.key: v for s in BROKER if (v := d(opt(s))) is not None}
        shape = {s.key: v for s in applicable_shapes(workload, client) if (v := d(opt(s))) is not None}
        features = {}
        if tv is not None and (lvl := d(st.one_of(st.none(), st.sampled_from(tv)))) is not None:
            features["transaction.version"] = lvl
        restart = d(st.sampled_from(RESTARTS.choices))
        out = Draw(client, producer, broker, shape, comp, features, restart)
        out.repaired = repair(client, out.producer)
        return out

    return draw()


def every_setting(workload: str, client: str) -> list[Setting]:
    """Every setting a draw of ``workload`` with ``client`` may set (tests, the plan)."""
    return [*PRODUCER[client], COMPRESSION, *BROKER, *applicable_shapes(workload, client), RESTARTS]


def default_of(s: Setting):
    return s.default


# ---------------------------------------------------------------- a draw onto a scenario

def apply(base, d: Draw, *, name: str | None = None):
    """``base`` (a harness.run.scenario.Scenario) with the draw ``d`` applied, validated again:
    producer settings into ``workload.producer``, ``compression`` and ``client`` into the
    workload, shape fields into the workload, broker settings into ``cluster.broker`` (as
    text, server.properties values), features into ``cluster.features``, a kill-client fault
    on the producers into ``nemesis.faults`` when ``restart_producers`` and the scenario has
    none. The description says what was drawn (so the run's scenario.yaml holds it twice).
    Raises SearchSpaceError in one line when the result is not a valid scenario."""
    import json

    from pydantic import ValidationError

    from harness.run.scenario import Scenario

    data = base.model_dump(mode="json", exclude_none=True)
    wl = data["workload"]
    if wl["name"] in CLIENT_WORKLOADS:
        wl["client"] = d.client
        if d.client != "java":
            wl.pop("java_client_version", None)
    elif d.client != "librdkafka":
        raise SearchSpaceError(f"workload {wl['name']} runs librdkafka only, not {d.client}")
    if d.producer:
        prod = dict(wl.get("producer") or {})
        if d.compression is not None:
            prod.pop("compression.type", None)
            prod.pop("compression.codec", None)
        wl["producer"] = {**prod, **d.producer}
    if d.compression is not None:
        wl["compression"] = d.compression
        wl["producer"] = {k: v for k, v in (wl.get("producer") or {}).items()
                          if k not in ("compression.type", "compression.codec")}
    for k, v in d.workload.items():
        if v is None:
            wl.pop(k, None)
        else:
            wl[k] = v
    if d.broker:
        data["cluster"]["broker"] = {**data["cluster"].get("broker", {}), **{k: str(v) for k, v in d.broker.items()}}
    if d.features:
        data["cluster"]["features"] = {**data["cluster"].get("features", {}), **d.features}
    if d.restart_producers:
        faults = data["nemesis"].setdefault("faults", [])
        if not any(f.get("fault") == "kill-client" for f in faults):
            faults.append({"fault": "kill-client", "clients": ["producer-*"]})
    if name:
        data["name"] = name
    data["description"] = (data.get("description", "") + " | hunt draw: " + json.dumps(d.as_dict(), sort_keys=True)).strip(" |")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        msg = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise SearchSpaceError(f"scenario {base.name} with the draw {json.dumps(d.as_dict(), sort_keys=True)}: {msg}") from None
