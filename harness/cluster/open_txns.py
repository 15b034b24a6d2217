"""Which transactions are still open at the end of a run, and which partitions they hold.

A read_committed reader cannot read past a partition's last stable offset (LSO), the first
offset of the oldest transaction still open on it (KIP-98). When the writers stop, a
transaction they left open is ended by its coordinator once it outlives its
``transaction.timeout.ms``: the coordinator looks for such transactions every
``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10 s by default), and a
coordinator that has just taken over a ``__transaction_state`` partition looks first after
that interval too. A final drain that reads before then sees a partition held by a
transaction that is still doing what Kafka promises (issue 46: a run ended 5 s after the
last coordinator fail-over read t0/3 held at 135, and its torn-transaction and unseen cases
came from that).

``settle(...)``, called by the runner between stopping the writers and the final drain:

1. asks the admin agent (``offsets``) for every key's LSO and high watermark; a key whose
   LSO is below its high watermark is *held*;
2. asks Kafka's own tool which transactions hold them (``kafka-transactions.sh``, i.e.
   ``org.apache.kafka.tools.TransactionsCommand`` of the run's release, KIP-664): ``list``
   (transactional id, coordinator, producer id, state), ``describe-producers`` of each held
   partition (the producer whose ``CurrentTransactionStartOffset`` is the LSO) and
   ``describe`` of each holder's transactional id (state, timeout, start time, partitions);
3. waits, polling the offsets each second, until no key is held by a transaction its
   coordinator still lists as open, at most ``transaction.timeout.ms`` + the cleanup interval
   + a margin after the writers stopped (``bound_s``). A holder its coordinator does not list
   as open on that partition is a *hanging* transaction (finding F2, ``find-hanging``'s
   definition): no marker will come, so it is not waited for;
4. asks the tool once more about what is still held, and returns an ``OpenTxns`` record.
   Keys still held after the bound by a transaction its coordinator lists as open are
   *unjudged*: the runner leaves them out of the final drain and the verdict is unknown
   with that reason (the stalled-lso finder says it); never torn or unseen for them.

Why Kafka's tool and not the Python admin client: confluent-kafka 2.16.1 has no
ListTransactions / DescribeTransactions / DescribeProducers (its AdminClient has list_offsets
but none of KIP-664's calls), and the tool is the one Kafka ships for exactly this, from the
kafka-tools jar the harness fetches already for DumpLogSegments on 4.x
(harness.cluster.artifacts.kafka_tools_command). It costs one JVM per call (1-3 s); the
runner calls ``list`` once a run and the other two only for held keys. Where the tool cannot
run (Kafka 3.x, whose kafka-tools jar the harness does not fetch; an external cluster whose
clients need security settings) the offsets are still asked and waited for, and the record
says the coordinator state is unknown.

The record goes into the run folder (``open-transactions.json``, the tool's calls and output in
``logs/kafka-transactions.txt``), meta.json (``open_transactions``) and the history, as one
nemesis info event ``f: "open-transactions"`` that checkers/finders/stalled_lso.py reads (``event()``).
"""
from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

#: the history event's ``f``
EVENT_F = "open-transactions"
#: a coordinator's states in which the transaction is still its to end (TransactionState)
OPEN_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
#: Kafka's default transaction.abort.timed.out.transaction.cleanup.interval.ms
ABORT_INTERVAL_MS = 10_000
#: a producer's transaction.timeout.ms when the tool cannot say (librdkafka's and Java's default)
DEFAULT_TXN_TIMEOUT_MS = 60_000
#: added to the bound: the abort's markers still have to be written
MARGIN_S = 5.0
#: the wait never exceeds this, whatever the timeouts say
MAX_WAIT_S = 180.0

LIST_COLUMNS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_COLUMNS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")
PRODUCER_COLUMNS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                    "CurrentTransactionStartOffset")


class ToolOutputError(ValueError):
    """The tool's output is not the table it prints (one line)."""


# -- the tool's output -------------------------------------------------------------------
def _int(v: str) -> int | None:
    """An integer cell; "None" (an absent OptionalLong) and "-1" start offsets stay as given."""
    if v in ("None", "null", ""):
        return None
    try:
        return int(v)
    except ValueError as exc:
        raise ToolOutputError(f"not a number in the tool's table: {v!r}") from exc


def parse_table(text: str, columns: tuple[str, ...], *, last_optional: bool = False) -> list[list[str]]:
    """The rows of the whitespace-padded table TransactionsCommand prints (ToolsUtils
    prettyPrintTable: a header line naming ``columns``, then one line per row). Lines before the
    header (JVM warnings) are skipped; raises ToolOutputError when there is no header or a row
    has the wrong number of cells (``last_optional``: the last cell may be empty)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.split()[:len(columns)] == list(columns)), None)
    if start is None:
        first = next((ln.strip() for ln in lines if ln.strip()), "(no output)")
        raise ToolOutputError(f"no {columns[0]} table in the tool's output: {first[:160]}")
    rows = []
    for ln in lines[start + 1:]:
        cells = ln.split()
        if not cells:
            continue
        if last_optional and len(cells) == len(columns) - 1:
            cells.append("")
        if len(cells) != len(columns):
            raise ToolOutputError(f"a row of {len(cells)} cells, {len(columns)} expected: {ln.strip()[:160]}")
        rows.append(cells)
    return rows


def parse_list(text: str) -> list[dict]:
    """``list``: [{transactional_id, coordinator, producer_id, state}]."""
    return [{"transactional_id": t, "coordinator": _int(c), "producer_id": _int(p), "state": s}
            for t, c, p, s in parse_table(text, LIST_COLUMNS)]


def _partition(tp: str) -> str:
    """"t0-3" -> "t0/3" (the harness's key; a topic name may hold dashes)."""
    topic, _, part = tp.rpartition("-")
    if not topic or not part.isdigit():
        raise ToolOutputError(f"not a topic-partition: {tp!r}")
    return f"{topic}/{part}"


def parse_describe(text: str) -> dict:
    """``describe --transactional-id X``: {coordinator, transactional_id, producer_id,
    producer_epoch, state, timeout_ms, start_ms (None: no transaction), duration_ms (None),
    partitions (keys "t0/3")}."""
    rows = parse_table(text, DESCRIBE_COLUMNS, last_optional=True)
    if len(rows) != 1:
        raise ToolOutputError(f"describe printed {len(rows)} rows, 1 expected")
    c, t, p, e, s, to, st, d, tps = rows[0]
    return {"coordinator": _int(c), "transactional_id": t, "producer_id": _int(p), "producer_epoch": _int(e),
            "state": s, "timeout_ms": _int(to), "start_ms": _int(st), "duration_ms": _int(d),
            "partitions": [_partition(x) for x in tps.split(",") if x]}


def parse_producers(text: str) -> list[dict]:
    """``describe-producers --topic T --partition P``: [{producer_id, producer_epoch,
    coordinator_epoch, last_sequence, last_timestamp_ms, start_offset (None: no open
    transaction)}]."""
    out = []
    for p, e, ce, seq, ts, so in parse_table(text, PRODUCER_COLUMNS):
        start = _int(so)
        out.append({"producer_id": _int(p), "producer_epoch": _int(e), "coordinator_epoch": _int(ce),
                    "last_sequence": _int(seq), "last_timestamp_ms": _int(ts),
                    "start_offset": start if start is not None and start >= 0 else None})
    return out


# -- running the tool ----------------------------------------------------------------------
@dataclass
class TxnTool:
    """``kafka-transactions.sh`` of one release, run in the client namespace. ``argv`` is the
    java command line (harness.cluster.artifacts.kafka_tools_command); ``prefix`` what puts it
    in the client namespace; every call and its output is appended to ``log``."""

    argv: list[str]
    bootstrap: str
    prefix: list[str] = field(default_factory=list)
    log: Path | None = None
    timeout: float = 60.0

    def run(self, *args: str) -> str:
        """The tool's stdout for one command; raises ToolOutputError (one line) when it exits
        non-zero or does not answer within ``timeout``."""
        cmd = self.prefix + self.argv + ["--bootstrap-server", self.bootstrap, *args]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout)
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = -1, "", f"(no answer in {self.timeout:.0f} s)"
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log, "a") as fh:
                fh.write(f"$ kafka-transactions.sh --bootstrap-server {self.bootstrap} {' '.join(args)}   (exit {rc})\n"
                         f"{out}{err if rc else ''}\n")
        if rc != 0:
            last = next((ln for ln in reversed((err or out).strip().splitlines()) if ln.strip()), "")
            raise ToolOutputError(f"kafka-transactions.sh {args[0]} exited {rc}: {last[:200]}")
        return out


def make_tool(kafka_version: str, bootstrap: str, prefix: list[str], log: Path | None) -> tuple[TxnTool | None, str]:
    """(the tool, "") or (None, why it cannot run here): Kafka 3.x (no kafka-tools jar fetched)
    or a jar Maven cannot fetch."""
    from harness.cluster.artifacts import ArtifactError, kafka_tools_command

    try:
        argv = kafka_tools_command(kafka_version, "org.apache.kafka.tools.TransactionsCommand")
    except ArtifactError as exc:
        return None, str(exc).splitlines()[0][:200]
    return TxnTool(argv, bootstrap, prefix, log), ""


# -- who holds a key ------------------------------------------------------------------------
def holders(key: str, lso: int, producers: list[dict], listed: list[dict], described: dict[str, dict]) -> list[dict]:
    """The transactions holding ``key`` at ``lso``: the producers of the partition with an open
    transaction (``start_offset``), the one starting at the LSO first, each with what its
    coordinator says: ``status`` "open" (its coordinator lists it in an open state with this
    partition), "hanging" (it does not: no marker will come) or "unknown" (no description)."""
    by_pid = {r["producer_id"]: r for r in listed}
    out = []
    for p in sorted((p for p in producers if p["start_offset"] is not None),
                    key=lambda p: (p["start_offset"] != lso, p["start_offset"])):
        row = {"key": key, "lso": lso, **{k: p[k] for k in ("producer_id", "producer_epoch", "start_offset",
                                                             "coordinator_epoch", "last_timestamp_ms")}}
        tid = (by_pid.get(p["producer_id"]) or {}).get("transactional_id")
        d = described.get(tid) if tid else None
        if tid is None and listed:
            row.update(status="hanging", why="no coordinator lists producer id "
                                             f"{p['producer_id']} (kafka-transactions.sh list)")
        elif d is None:
            row.update(transactional_id=tid, status="unknown", why="its transaction was not described")
        else:
            row.update(transactional_id=tid, coordinator=d["coordinator"], state=d["state"],
                       timeout_ms=d["timeout_ms"], start_ms=d["start_ms"], duration_ms=d["duration_ms"],
                       partitions=d["partitions"])
            mine = d["producer_id"] == p["producer_id"] and key in d["partitions"]
            if d["state"] in OPEN_STATES and mine:
                row.update(status="open", why=f"its coordinator (broker {d['coordinator']}) lists it {d['state']}")
            else:
                row.update(status="hanging", why=f"its coordinator (broker {d['coordinator']}) lists "
                                                 f"{tid} {d['state']} with {d['partitions'] or 'no partitions'}")
        out.append(row)
    return out


def ask(tool: TxnTool | None, held: dict[str, tuple[int, int]], run_s: Callable[[], float]) -> dict:
    """One look at the coordinators: {"at_s", "wall_ms", "transactions" (list), "holders":
    {key: [holder]}, "errors"}. ``held``: key -> (lso, hw). Never raises."""
    snap: dict[str, Any] = {"at_s": round(run_s(), 3), "wall_ms": int(time.time() * 1000), "transactions": [],
                            "holders": {}, "errors": []}
    if tool is None:
        return snap
    try:
        snap["transactions"] = parse_list(tool.run("list"))
    except ToolOutputError as exc:
        snap["errors"].append(str(exc))
    producers: dict[str, list[dict]] = {}
    for key in held:
        topic, part = key.rsplit("/", 1)
        try:
            producers[key] = parse_producers(tool.run("describe-producers", "--topic", topic, "--partition", part))
        except ToolOutputError as exc:
            snap["errors"].append(f"{key}: {exc}")
            producers[key] = []
    by_pid = {r["producer_id"]: r["transactional_id"] for r in snap["transactions"]}
    want = sorted({by_pid[p["producer_id"]] for ps in producers.values() for p in ps
                   if p["start_offset"] is not None and p["producer_id"] in by_pid}
                  | {r["transactional_id"] for r in snap["transactions"] if r["state"] in OPEN_STATES})
    described: dict[str, dict] = {}
    for tid in want:
        try:
            described[tid] = parse_describe(tool.run("describe", "--transactional-id", tid))
        except ToolOutputError as exc:
            snap["errors"].append(f"{tid}: {exc}")
    snap["described"] = described
    for key, (lso, _) in held.items():
        hs = holders(key, lso, producers[key], snap["transactions"], described)
        for h in hs:  # the coordinator's wall-clock start on the run's clock (s)
            if h.get("start_ms"):
                h["started_s"] = round(snap["at_s"] - (snap["wall_ms"] - h["start_ms"]) / 1000, 2)
        snap["holders"][key] = hs
    return snap


# -- the wait before the final drain ------------------------------------------------------
@dataclass
class OpenTxns:
    """What ``settle`` found: ``held`` (key -> [lso, hw] when first asked), ``holders`` (key ->
    the holders first seen, each with ``released_s`` when the key stopped being held during
    the wait, and the final look's status for those still held), ``unjudged`` (key -> why it
    is left out of the final drain), ``waited_s``, ``bound_s``, ``notes`` (what could not be
    asked), ``snapshots`` (every look at the coordinators, for open-transactions.json)."""

    held: dict[str, list[int]] = field(default_factory=dict)
    holders: dict[str, list[dict]] = field(default_factory=dict)
    unjudged: dict[str, str] = field(default_factory=dict)
    released: dict[str, float] = field(default_factory=dict)
    open_at_end: list[dict] = field(default_factory=list)
    waited_s: float = 0.0
    bound_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    snapshots: list[dict] = field(default_factory=list)

    def event_value(self) -> dict:
        """The history event's value (compact: no raw snapshots)."""
        return {"held": self.held, "holders": self.holders, "released": self.released,
                "unjudged": self.unjudged, "open_at_end": self.open_at_end,
                "waited_s": self.waited_s, "bound_s": self.bound_s, "notes": self.notes}

    def write(self, run_dir: Path) -> None:
        (Path(run_dir) / "open-transactions.json").write_text(
            json.dumps({**self.event_value(), "snapshots": self.snapshots}, indent=1, default=str))


def _held(offsets: dict) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Keys whose LSO is below the high watermark, and the keys the agent could not answer for."""
    held, bad = {}, []
    for k, v in offsets.items():
        if not isinstance(v, list) or v[0] is None or v[1] is None:
            bad.append(f"{k}: {v}")
        elif v[0] < v[1]:
            held[k] = (int(v[0]), int(v[1]))
    return held, bad


def bound_s(holders_: dict[str, list[dict]], abort_interval_ms: int) -> float:
    """How long to wait after the writers stopped: the longest holder's transaction timeout
    (DEFAULT_TXN_TIMEOUT_MS when none is known) + the coordinator's cleanup interval + MARGIN_S,
    at most MAX_WAIT_S."""
    timeouts = [h["timeout_ms"] for hs in holders_.values() for h in hs if h.get("timeout_ms")]
    t = max(timeouts) if timeouts else DEFAULT_TXN_TIMEOUT_MS
    return min(MAX_WAIT_S, (t + abort_interval_ms) / 1000 + MARGIN_S)


def settle(offsets: Callable[[], dict], tool: TxnTool | None, *, run_s: Callable[[], float],
           abort_interval_ms: int = ABORT_INTERVAL_MS, tool_note: str = "",
           sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
           poll_s: float = 1.0) -> OpenTxns:
    """Wait until no key is held by a transaction that is not hanging, at most ``bound_s`` after
    the call (the writers have stopped: every open transaction began before it); see the module
    docstring. ``offsets()`` returns {key: [lso, hw]} (the agent's ``offsets``) and may raise;
    ``run_s()`` the run's clock in seconds. Never raises: what it could not ask is in ``notes``."""
    res = OpenTxns()
    if tool is None and tool_note:
        res.notes.append(f"coordinator state not asked: {tool_note}")
    t0 = clock()

    def look() -> dict[str, tuple[int, int]] | None:
        try:
            held, bad = _held(offsets())
        except Exception as exc:  # the agent could not answer: nothing to wait on
            res.notes.append(f"offsets not asked: {type(exc).__name__}: {exc}"[:300])
            return None
        if bad:
            res.notes.append("no offsets for " + "; ".join(bad)[:300])
        return held

    held = look()
    if not held:
        snap = ask(tool, {}, run_s)  # the record every run keeps: which transactions are open
        res.snapshots.append(snap)
        res.notes += snap["errors"]
        res.open_at_end = [r for r in snap["transactions"] if r["state"] in OPEN_STATES]
        return res
    res.held = {k: list(v) for k, v in held.items()}
    first = ask(tool, held, run_s)
    res.snapshots.append(first)
    res.notes += first["errors"]
    res.holders = {k: [dict(h) for h in hs] for k, hs in first["holders"].items()}
    res.bound_s = round(bound_s(first["holders"], abort_interval_ms), 1)
    # a hanging holder will never end: not waited for (its key is judged as it stands)
    hanging = {k: v[0] for k, v in held.items()
               if first["holders"].get(k) and first["holders"][k][0]["status"] == "hanging"}
    while True:
        now = look()
        if now is None:
            break
        for k in list(res.held):
            if k not in now and k not in res.released:
                res.released[k] = round(run_s(), 3)
        waiting = {k for k, (lso, _) in now.items() if hanging.get(k) != lso}
        if not waiting or clock() - t0 >= res.bound_s:
            break
        sleep(poll_s)
    res.waited_s = round(clock() - t0, 2)
    still = now or {}
    for k, hs in res.holders.items():
        for h in hs:
            h["released_s"] = res.released.get(k)
    last = ask(tool, still, run_s) if (tool is not None and still) else None
    if last is not None:
        res.snapshots.append(last)
        res.notes += [e for e in last["errors"] if e not in res.notes]
        res.open_at_end = [r for r in last["transactions"] if r["state"] in OPEN_STATES]
    for k, (lso, hw) in still.items():
        final = (last or {}).get("holders", {}).get(k) or []
        if final:  # the last look is what the drain reads behind
            res.holders[k] = [dict(h, released_s=None) for h in final]
        top = final[0] if final else None
        if top is not None and top["status"] == "open":
            res.unjudged[k] = (f"{k} last stable offset still held at {lso} (high watermark {hw}) "
                               f"{res.waited_s:.0f} s after the writers stopped (bound {res.bound_s:.0f} s) "
                               f"by producer id {top['producer_id']} epoch {top['producer_epoch']} "
                               f"({top.get('transactional_id')}), which {top['why']}: the final drain "
                               "left it out, its reads are not judged")
    return res

