"""A simulated CORRECT Kafka, for property tests and the checker benchmark.

``simulate(n_ops, seed)`` plays several transactional producers (commits, aborts, rare
crashes whose replacement fences the old instance with ``init``), one idempotent
non-transactional producer, several read_committed consumers that poll concurrently, and a
final drain by a fresh consumer (``meta.final``) after every transaction is resolved. Each
partition's log holds data records, control records (one marker per partition per
commit/abort) and aborted data, so offsets have gaps exactly where a real broker's would.

The history it writes obeys docs/history.md and every guarantee of Kafka's exactly-once design, KIP-98/KIP-447, so ``check``
must find it valid; ``inject`` then breaks exactly one thing.

With ``n_processors`` > 0 it simulates the eos-pipeline workload instead (harness.workloads.
eos_pipeline, harness.workers.processor): the producers write input keys ``in/p``, processors
in one consumer group copy each committed input value to ``out/p`` in a transaction that also
commits the group's offsets (KIP-98, KIP-447), as ``value * PIPELINE_FACTOR + spawn * 1000 +
attempt``; an aborted batch is rewound and processed again, a crashed processor's replacement
fences it and resumes from the committed offsets, rebalances move input keys between idle
processors; the drain records the group's committed offsets. ``pipeline_meta`` is its
meta.json (what ``checkers.finders.pipeline`` needs).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

OPEN, COMMITTED, ABORTED, MARKER = range(4)
#: output value = input value * PIPELINE_FACTOR + attempt tag (harness.workers.processor.OUTPUT_FACTOR)
PIPELINE_FACTOR = 1_000_000
PIPELINE_GROUP = "eosc-proc"


@dataclass
class _Producer:
    process: int
    tid: str | None
    txn: list | None = None  # [(key, offset, value)] appended by the open transaction
    inflight: bool = False
    pending: list = field(default_factory=list)  # [(key, value)] a long transaction has yet to append


@dataclass
class _Consumer:
    process: int
    keys: list[str]
    pos: dict = field(default_factory=dict)  # key -> index into the partition's entries


@dataclass
class _Processor:
    """One processor instance (a history process): its assigned input keys, its consumer's
    positions, its open transaction."""

    process: int
    tid: str
    spawn: int
    keys: list[str]
    pos: dict = field(default_factory=dict)  # input key -> index into the partition's entries
    txn: list | None = None  # [(out key, offset, value)] of the open transaction
    batch: dict = field(default_factory=dict)  # input key -> [[offset, value], ...] polled
    first: dict = field(default_factory=dict)  # input key -> entry index of the batch's first record
    next: dict = field(default_factory=dict)  # input key -> (entry index, offset) after its last record
    attempts: dict = field(default_factory=dict)  # input value -> attempts of this spawn


class _Sim:
    def __init__(self, seed: int, n_keys: int, n_producers: int, n_consumers: int,
                 abort_rate: float, crash_rate: float, emit: Callable[[dict], None],
                 long_txn_rate: float = 0.0, long_txn_sends: int = 16, n_processors: int = 0):
        self.rnd = random.Random(seed)
        if n_processors:  # the producers write the pipeline's input keys
            self.keys = [f"in/{i}" for i in range(n_keys)]
            self.out_keys = [f"out/{i}" for i in range(n_keys)]
        else:
            self.keys = [f"t{i % 2}/{i // 2}" for i in range(n_keys)]
            self.out_keys = []
        self.read_keys = self.keys + self.out_keys  # what consumers and the final drain read
        self.entries: dict[str, list] = {k: [] for k in self.read_keys}  # [offset, value, state]
        self.next_offset = {k: 0 for k in self.read_keys}
        self.value = 0
        self.time = 0
        self.index = 0
        self.ops = 0
        self.emit = emit
        self.abort_rate, self.crash_rate = abort_rate, crash_rate
        self.long_txn_rate, self.long_txn_sends = long_txn_rate, long_txn_sends
        self.next_process = 0
        self.producers = [self._producer(f"eosc-txn-{i}") for i in range(n_producers)]
        self.plain = self._producer(None)
        self.consumers = [_Consumer(self._proc(), list(self.read_keys)) for _ in range(n_consumers)]
        for c in self.consumers:
            self.assign(c)
        # the group's committed position of each input key: (entry index, offset or None)
        self.group = {k: (0, None) for k in self.keys} if n_processors else {}
        self.spawns = 0
        self.processors = []
        for i in range(n_processors):
            q = self._processor(f"eosc-proc-{i}", self.keys[i::n_processors])
            self.processors.append(q)

    def _proc(self) -> int:
        self.next_process += 1
        return self.next_process - 1

    def _producer(self, tid: str | None) -> _Producer:
        p = _Producer(self._proc(), tid)
        if tid is not None:
            self.event(p.process, "invoke", "init", None, {"transactional_id": tid})
            self.event(p.process, "ok", "init", None, {"transactional_id": tid})
        return p

    def event(self, process, type_, f, value, meta=None):
        self.time += self.rnd.randint(50_000, 2_000_000)
        ev = {"index": self.index, "time": self.time, "process": process, "type": type_,
              "f": f, "value": value}
        if meta:
            ev["meta"] = meta
        self.index += 1
        if type_ == "invoke":
            self.ops += 1
        self.emit(ev)

    # -- producers -----------------------------------------------------------------
    def append(self, key: str, state: int, value: int | None = None) -> tuple[int, int]:
        if value is None:
            self.value += 1
            value = self.value
        off = self.next_offset[key]
        self.next_offset[key] = off + 1
        self.entries[key].append([off, value, state])
        return off, value

    def marker(self, key: str) -> None:
        off = self.next_offset[key]
        self.next_offset[key] = off + 1
        self.entries[key].append([off, None, MARKER])

    def begin(self, p: _Producer) -> None:
        if p.tid and self.long_txn_rate and self.rnd.random() < self.long_txn_rate:
            # a long transaction: its values are fixed at invoke, its records appended one
            # per turn of its producer (send_later), so others' records land between them
            keys = [self.rnd.choice(self.keys) for _ in range(self.long_txn_sends)]
            vals = list(range(self.value + 1, self.value + 1 + len(keys)))
            self.value += len(keys)
            p.txn, p.pending, p.inflight = [], list(zip(keys, vals)), True
            self.event(p.process, "invoke", "txn", [["send", k, v] for k, v in p.pending],
                       {"transactional_id": p.tid})
            self.send_later(p)
            return
        keys = self.rnd.sample(self.keys, self.rnd.randint(1, 3))
        sends = [(k, *self.append(k, OPEN if p.tid else COMMITTED)) for k in keys]
        p.txn, p.inflight = sends, True
        meta = {"transactional_id": p.tid} if p.tid else None
        self.event(p.process, "invoke", "txn" if p.tid else "send",
                   [["send", k, v] for k, _o, v in sends], meta)

    def send_later(self, p: _Producer) -> None:
        """Append the next record of a long transaction (no event: the op is in flight)."""
        k, v = p.pending.pop(0)
        p.txn.append((k, *self.append(k, OPEN, v)))

    def resolve(self, p: _Producer, commit: bool) -> None:
        state = COMMITTED if commit else ABORTED
        touched = []
        for k, o, v in p.txn:
            for e in reversed(self.entries[k]):
                if e[0] == o:
                    e[2] = state
                    break
            if k not in touched:
                touched.append(k)
        for k in touched:
            self.marker(k)

    def finish(self, p: _Producer, outcome: str | None = None) -> None:
        meta = {"transactional_id": p.tid} if p.tid else None
        value = [["send", k, [o, v]] for k, o, v in p.txn]
        if p.tid is None:
            self.event(p.process, "ok", "send", value, meta)
        else:
            if outcome is None:
                outcome = "fail" if self.rnd.random() < self.abort_rate else "ok"
            self.resolve(p, outcome == "ok")
            if outcome == "ok":  # as the txn-producer does: when commit was asked for
                meta = {**meta, "commit_ns": self.time + 1}
            self.event(p.process, outcome, "txn", value, meta)
        p.txn, p.inflight = None, False

    def crash(self, i: int) -> None:
        """The producer dies mid-transaction; a replacement's init fences it and aborts its
        open transaction. Half the time the harness saw an info completion first."""
        p = self.producers[i]
        if self.rnd.random() < 0.5:
            sent = [(k, v) for k, _o, v in p.txn] + p.pending
            self.event(p.process, "info", "txn", [["send", k, [None, v]] for k, v in sent],
                       {"transactional_id": p.tid})
        new = _Producer(self._proc(), p.tid)
        self.event(new.process, "invoke", "init", None, {"transactional_id": p.tid})
        self.resolve(p, False)
        self.event(new.process, "ok", "init", None, {"transactional_id": p.tid})
        self.producers[i] = new

    # -- consumers -----------------------------------------------------------------
    def assign(self, c: _Consumer, rewind: bool = False) -> None:
        """Assign from the beginning, or (``rewind``) re-assign at explicit offsets a few
        records back from where the consumer is: after an assign/seek, re-reading is legal."""
        if rewind and c.pos:
            starts = {}
            for k in c.keys:
                i = max(0, c.pos[k] - self.rnd.randint(0, 5))
                es = self.entries[k]
                c.pos[k] = i
                starts[k] = es[i][0] if i < len(es) else self.next_offset[k]
            meta = {"offsets": starts}
        else:
            c.pos = {k: 0 for k in c.keys}
            meta = {"from": "beginning"}
        self.event(c.process, "invoke", "assign", list(c.keys), meta)
        self.event(c.process, "ok", "assign", list(c.keys), meta)

    def _read_committed(self, k: str, i: int, max_records: int) -> tuple[list[tuple[int, int, int]], int]:
        """read_committed from entry ``i`` of key ``k``: up to ``max_records`` committed records
        as (entry index, offset, value), in offset order, stopping at the first open record
        (the LSO), skipping aborted data and markers; and the entry index reached."""
        es, got = self.entries[k], []
        while i < len(es) and len(got) < max_records:
            off, v, st = es[i]
            if st == OPEN:
                break
            if st == COMMITTED:
                got.append((i, off, v))
            i += 1
        return got, i

    def poll(self, c: _Consumer, final: bool = False, max_records: int = 20) -> bool:
        """read_committed: committed data in offset order, up to the first open record
        (the LSO), skipping aborted data and markers. Empty polls are not recorded."""
        out = {}
        for k in c.keys:
            got, c.pos[k] = self._read_committed(k, c.pos[k], max_records)
            if got:
                out[k] = [[off, v] for _i, off, v in got]
        if not out:
            return False
        meta = {"final": True} if final else None
        self.event(c.process, "invoke", "poll", [["poll"]], meta)
        self.event(c.process, "ok", "poll", [["poll", out]], meta)
        return True

    # -- processors (n_processors > 0) --------------------------------------------------
    def _processor(self, tid: str, keys: list[str]) -> _Processor:
        """A new processor instance: ``init`` (fences the older one of ``tid``), then it joins
        the group with ``keys``, at the group's committed positions."""
        q = _Processor(self._proc(), tid, self.spawns, sorted(keys))
        self.spawns += 1
        self.event(q.process, "invoke", "init", None, {"transactional_id": tid})
        self.event(q.process, "ok", "init", None, {"transactional_id": tid})
        self.join(q)
        return q

    def join(self, q: _Processor) -> None:
        """A rebalance gave ``q`` its keys: its positions are the group's committed ones."""
        q.pos = {k: self.group[k][0] for k in q.keys}
        meta = {"group_id": PIPELINE_GROUP, "via": "rebalance", "transactional_id": q.tid}
        self.event(q.process, "invoke", "assign", list(q.keys), meta)
        self.event(q.process, "ok", "assign", list(q.keys), meta)

    def proc_begin(self, q: _Processor, max_records: int) -> bool:
        """Poll committed input records (read_committed, as ``poll``) and open a transaction
        that sends one output record per input record. False when there was nothing to read."""
        batch, first, nxt = {}, {}, {}
        for k in q.keys:
            got, q.pos[k] = self._read_committed(k, q.pos[k], max_records)
            if got:
                first[k] = got[0][0]
                nxt[k] = (got[-1][0] + 1, got[-1][1] + 1)
            recs = [[off, v] for _i, off, v in got]
            max_records -= len(recs)
            if recs:
                batch[k] = recs
        if not batch:
            return False
        sends = []
        for k, recs in batch.items():
            out = "out/" + k.rsplit("/", 1)[1]
            for _off, v in recs:
                n = q.attempts.get(v, 0)
                q.attempts[v] = n + 1
                sends.append((out, *self.append(out, OPEN, v * PIPELINE_FACTOR + q.spawn * 1000 + n)))
        q.txn, q.batch, q.first, q.next = sends, batch, first, nxt
        self.event(q.process, "invoke", "txn", [["poll"]] + [["send", k, v] for k, _o, v in sends],
                   {"transactional_id": q.tid, "group_id": PIPELINE_GROUP})
        return True

    def _proc_value(self, q: _Processor, offsets: bool = True) -> list:
        return [["poll", q.batch]] + [["send", k, [o if offsets else None, v]] for k, o, v in q.txn]

    def proc_finish(self, q: _Processor, outcome: str | None = None) -> None:
        """Commit (the outputs and the group's offsets at once) or abort the open transaction;
        after an abort the consumer is rewound to the batch's first records."""
        if outcome is None:
            outcome = "fail" if self.rnd.random() < self.abort_rate else "ok"
        self.resolve(q, outcome == "ok")
        meta = {"transactional_id": q.tid, "group_id": PIPELINE_GROUP}
        if outcome == "ok":
            for k, at in q.next.items():
                self.group[k] = at
            self.event(q.process, "ok", "txn", self._proc_value(q), {**meta, "commit_ns": self.time + 1})
        else:
            self.event(q.process, "fail", "txn", self._proc_value(q), {**meta, "abort": "chosen"})
            back = {k: i for k, i in q.first.items() if k in q.keys}
            for k, i in back.items():
                q.pos[k] = i
            sought = {k: self.entries[k][i][0] for k, i in back.items()}
            self.event(q.process, "invoke", "rewind", sought, meta)
            self.event(q.process, "ok", "rewind", sought, meta)
        q.txn, q.batch = None, {}

    def proc_crash(self, i: int) -> None:
        """The processor dies mid-transaction (half the time the harness saw an ``info``
        completion first); its replacement's ``init`` aborts the transaction and it resumes
        from the group's committed offsets, under a new spawn number."""
        q = self.processors[i]
        if self.rnd.random() < 0.5:
            self.event(q.process, "info", "txn", self._proc_value(q, offsets=self.rnd.random() < 0.5),
                       {"transactional_id": q.tid, "group_id": PIPELINE_GROUP})
        new = _Processor(self._proc(), q.tid, self.spawns, list(q.keys))
        self.spawns += 1
        self.event(new.process, "invoke", "init", None, {"transactional_id": q.tid})
        self.resolve(q, False)
        self.event(new.process, "ok", "init", None, {"transactional_id": q.tid})
        self.join(new)
        self.processors[i] = new

    def rebalance(self, q: _Processor) -> None:
        """Move one input key of the idle ``q`` to another idle processor."""
        others = [r for r in self.processors if r is not q and r.txn is None]
        if not q.keys or not others:
            return
        r = self.rnd.choice(others)
        k = self.rnd.choice(q.keys)
        q.keys.remove(k)
        r.keys = sorted(r.keys + [k])
        self.join(q)
        self.join(r)

    def proc_turn(self, i: int) -> None:
        q = self.processors[i]
        if q.txn is None:
            if self.rnd.random() < 0.02:
                self.rebalance(q)
            else:
                self.proc_begin(q, self.rnd.randint(1, 8))
        elif self.rnd.random() < self.crash_rate:
            self.proc_crash(i)
        else:
            self.proc_finish(q)

    def proc_drain(self) -> None:
        """After the load: open transactions commit, then the processors catch up (every
        committed input processed), then the drain reads the group's committed offsets."""
        for q in self.processors:
            if q.txn is not None:
                self.proc_finish(q, "ok")
        busy = True
        while busy:
            busy = False
            for q in self.processors:
                if self.proc_begin(q, 50):
                    self.proc_finish(q, "ok")
                    busy = True

    # -- run -----------------------------------------------------------------------
    def run(self, n_ops: int) -> None:
        rnd = self.rnd
        actors = len(self.producers) + 1 + len(self.consumers) + len(self.processors)
        n_clients = len(self.producers) + 1 + len(self.consumers)
        while self.ops < n_ops:
            a = rnd.randrange(actors)
            if a < len(self.producers):
                p = self.producers[a]
                if not p.inflight:
                    self.begin(p)
                elif p.pending:
                    self.send_later(p)
                elif rnd.random() < self.crash_rate:
                    self.crash(a)
                else:
                    self.finish(p)
            elif a == len(self.producers):
                self.begin(self.plain)
                self.finish(self.plain)
            elif a >= n_clients:
                self.proc_turn(a - n_clients)
            else:
                c = self.consumers[a - len(self.producers) - 1]
                if rnd.random() < 0.01:
                    self.assign(c, rewind=True)
                else:
                    self.poll(c)
        for p in self.producers:  # every transaction resolved before the final drain
            if p.inflight:
                while p.pending:
                    self.send_later(p)
                self.finish(p, "ok")
        final = _Consumer(self._proc(), list(self.read_keys))
        if self.processors:
            self.proc_drain()
            meta = {"group_id": PIPELINE_GROUP, "final": True}
            self.event(final.process, "invoke", "committed-offsets", list(self.keys), meta)
            self.event(final.process, "ok", "committed-offsets", {k: o for k, (_i, o) in self.group.items()}, meta)
        self.assign(final)
        while self.poll(final, final=True, max_records=500):
            pass


def simulate(n_ops: int, seed: int = 0, path: str | Path | None = None, *, n_keys: int = 8,
             n_producers: int = 4, n_consumers: int = 3, abort_rate: float = 0.1,
             crash_rate: float = 0.002, long_txn_rate: float = 0.0,
             long_txn_sends: int = 16, n_processors: int = 0) -> list[dict] | Path:
    """Simulate a correct run of about ``n_ops`` client ops (plus the final drain).

    Shape: ``n_keys`` partitions; ``n_producers`` transactional producers, each with one
    transaction in flight, of 1-3 records (one per distinct key) appended when it is invoked;
    ``abort_rate`` and ``crash_rate`` are probabilities per transaction outcome and per turn
    of a producer with a transaction open. ``long_txn_rate`` (probability per transaction,
    default 0: the histories of earlier versions, seed for seed) makes a transaction long:
    ``long_txn_sends`` records on random keys, appended one per turn of its producer, so
    other producers' records and whole transactions land between its first and last record
    while read_committed consumers wait at its first. Such histories hold the G0-realtime
    cycles of correct smoke runs (docs/checkers.md "Realtime cycles in Kafka"), which no
    cycle of events closes (checkers.finders.event_order). Times: 50 us to 2 ms between events, ns.
    ``n_processors`` > 0: the eos-pipeline (module docstring), ``n_keys`` input and as many
    output partitions, batches of 1-8 records, ``abort_rate`` and ``crash_rate`` for the
    processors' transactions too; judge it with ``pipeline_meta(n_keys)``.

    With ``path`` the events are streamed to that history.jsonl (constant memory) and the
    path is returned; otherwise the list of event dicts is returned.
    """
    shape = (abort_rate, crash_rate)
    more = {"long_txn_rate": long_txn_rate, "long_txn_sends": long_txn_sends, "n_processors": n_processors}
    if path is None:
        events: list[dict] = []
        _Sim(seed, n_keys, n_producers, n_consumers, *shape, events.append, **more).run(n_ops)
        return events
    path = Path(path)
    with open(path, "w", buffering=1 << 20) as fh:
        dumps = json.JSONEncoder(separators=(",", ":")).encode

        def emit(ev):
            fh.write(dumps(ev))
            fh.write("\n")
        _Sim(seed, n_keys, n_producers, n_consumers, *shape, emit, **more).run(n_ops)
    return path


def pipeline_meta(n_keys: int = 8) -> dict:
    """The meta.json of ``simulate(..., n_processors=N)`` with ``n_keys`` partitions: the
    pipeline mapping ``in/p`` -> ``out/p`` (harness.workloads.eos_pipeline ``meta()``)."""
    return {"pipeline": {"keys": {f"in/{i}": f"out/{i}" for i in range(n_keys)},
                         "group_id": PIPELINE_GROUP, "value_divisor": PIPELINE_FACTOR}}
