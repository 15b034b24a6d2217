#!/usr/bin/env python3
"""Candidate finding F5, standalone: Kafka 4.x's group coordinator runtime
(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime) lets a *stale* load completion
activate a *newer* coordinator context, so that the broker serves OffsetFetch from a shard that
is still (or forever) only partly loaded: consumers get old committed offsets, or none.

Why (Kafka 4.3.1 sources): ``CoordinatorContext.load()`` registers
``loader.load(tp, coordinator).whenComplete(...)`` whose callback looks the context up by
topic partition (``coordinators.get(tp)``), not by identity or epoch. If the broker leads the
group's __consumer_offsets partition at epoch e1 (load scheduled), loses it at e2 (context
unloaded and removed) and regains it at e3 (a new context, LOADING, its load queued behind the
first on the loader's single thread) before the e1 load is done, then the e1 load's completion
finds the *new* context in LOADING and moves it to ACTIVE ("Finished loading ... with epoch e1",
e1 < e2) while its own load has not started. Its shard is served from then on; the e3 load's
completion is "Ignored load completion ... because context is in ACTIVE state". If anything is
written to the partition while the e3 load runs (an offset commit, a transaction marker), the
loader's next ``updateLastWrittenOffset`` throws, that failure is ignored the same way, and the
shard stays partial until the next leader change.

Needs only confluent-kafka, the standard library, a Kafka cluster of >= 2 brokers, and a way to
freeze and thaw one broker process (SIGSTOP/SIGCONT, ``docker pause``): ``--ctl CMD`` is run as
``CMD pause|resume|restart NODE_ID`` (``--ctl-stdio``: the request is printed as a JSON line
``{"ctl": ACTION, "node": N}`` and the answer read from stdin, for harness/findings/f5.py).
One try, with fresh names::

    setup   topic T (K partitions, RF 1); group G at __consumer_offsets partition P
            (abs(G.hashCode) % 50); ROUNDS synchronous commits of all K partitions of T for G
            (ROUNDS * K offset-commit records in P), the last one at offset ROUNDS; G2, a
            group at the same P (the writer)
    L       P's preferred replica (its leader after a preferred election)
    fresh   make L load P from scratch: ``restart`` L (cold JVM: slow load), or pause L until
            the controller fences it and resume it; wait until L is back in P's ISR
    e1      preferred election of P: L leads and starts loading P; pause L after HEAD_S
    e2      wait until the controller has fenced L and P has another leader; resume L
            (L unloads P: context removed; the e1 load goes on, queued or half done)
    e3      preferred election of P, repeated until L leads again (new context, LOADING)
    observe OBSERVE_S: pollers fetch G's committed offsets (read_committed and
            read_uncommitted consumers) all along; the writer commits for G2 every 50 ms
    check   any answer with an offset of T other than ROUNDS (missing or older) is stale;
            ``--broker-log`` files are searched for P's load/unload lines

Reproduced: a fetch answered by L after e3 with stale offsets. The log pattern (Kafka's own
lines for P): "Finished loading ... with epoch X" after "Finished unloading ... epoch Y", Y > X,
then "Ignored load completion ... ACTIVE state".

Usage: ``python f5_repro.py --bootstrap HOST:PORT[,...] (--ctl CMD | --ctl-stdio) [--tries N]
[--records N] [--restart] [--json] [--broker-log FILE ...]``. Exit code 0 when every try ran
(whatever it showed), 2 on a setup error (the message says what to fix).
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

OFFSETS_TOPIC = "__consumer_offsets"


class SetupError(Exception):
    """The cluster is not usable for the reproducer; the message says why."""


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode of ``s`` (UTF-16 code units), as a signed 32-bit int."""
    data, h = s.encode("utf-16-be"), 0
    for j in range(0, len(data), 2):
        h = (31 * h + (data[j] << 8 | data[j + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition(group: str, partitions: int) -> int:
    """Kafka's GroupCoordinatorService.partitionFor: Utils.abs(groupId.hashCode) % partitions."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# -- the cluster's view ------------------------------------------------------------------
class View:
    def __init__(self, admin: AdminClient):
        self.admin = admin
        self.elect_errors: dict[str, int] = {}

    def partition(self, p: int, timeout: float = 5):
        """(leader, replicas, isr) of __consumer_offsets-p, or None when no answer."""
        try:
            md = self.admin.list_topics(OFFSETS_TOPIC, timeout=timeout).topics[OFFSETS_TOPIC]
            pm = md.partitions[p]
            return pm.leader, list(pm.replicas), list(pm.isrs)
        except (KafkaException, KeyError):
            return None

    def wait(self, what: str, p: int, cond, timeout: float) -> tuple:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            st = self.partition(p)
            if st is not None and cond(*st):
                return st
            time.sleep(0.1)
        raise SetupError(f"timed out after {timeout:.0f} s waiting for {what} "
                         f"(__consumer_offsets-{p}: {self.partition(p)})")

    def elect(self, p: int) -> str | None:
        """Preferred election of __consumer_offsets-p; the error, or None."""
        err = self._elect(p)
        if err is not None:
            self.elect_errors[err[:120]] = self.elect_errors.get(err[:120], 0) + 1
        return err

    def _elect(self, p: int) -> str | None:
        tp = TopicPartition(OFFSETS_TOPIC, p)
        try:
            res = self.admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=15)
            err = next(iter(res.values()), None) if isinstance(res, dict) else None
            return None if err is None else str(err)
        except KafkaException as exc:
            return str(exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else exc)
        except Exception as exc:  # noqa: BLE001 - a timeout of the future
            return f"{type(exc).__name__}: {exc}"



class Ctl:
    """pause / resume / restart of one broker, by an external command or by the driver."""

    def __init__(self, cmd: str | None, stdio: bool):
        self.cmd, self.stdio = cmd, stdio

    def __call__(self, action: str, node: int) -> None:
        if self.stdio:
            print(json.dumps({"ctl": action, "node": node}), flush=True)
            reply = sys.stdin.readline().strip()
            if reply != "ok":
                raise SetupError(f"ctl {action} {node}: {reply or 'no answer'}")
            return
        argv = shlex.split(self.cmd) + [action, str(node)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise SetupError(f"ctl {action} {node} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")


# -- clients -------------------------------------------------------------------------------
class Poller(threading.Thread):
    """Fetches G's committed offsets of T in a loop; records every answer (seconds since t0)."""

    def __init__(self, bootstrap: str, group: str, topic: str, parts: int, expected: int,
                 isolation: str, t0: float):
        super().__init__(daemon=True, name=f"poll-{isolation}")
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": isolation,
                           "enable.auto.commit": False, "socket.timeout.ms": 5000})
        self.tps = [TopicPartition(topic, i) for i in range(parts)]
        self.expected, self.t0 = expected, t0
        self.answers: list[dict] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            t = time.monotonic() - self.t0
            try:
                res = self.c.committed(self.tps, timeout=5)
            except KafkaException as exc:
                self.answers.append({"t": round(t, 3), "error": str(exc.args[0].name() if exc.args else exc)})
                time.sleep(0.05)
                continue
            offs = [tp.offset for tp in res]
            bad = [o for o in offs if o != self.expected]
            a = {"t": round(t, 3), "dt": round(time.monotonic() - self.t0 - t, 3), "stale": len(bad)}
            if bad:
                a.update(min=min(bad), max=max(bad), missing=sum(1 for o in bad if o < 0))
            self.answers.append(a)
            time.sleep(0.02)
        self.c.close()


class Writer(threading.Thread):
    """Commits for G2 (same __consumer_offsets partition) every 50 ms: writes while L loads."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        super().__init__(daemon=True, name="writer")
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        self.topic = topic
        self.ok = self.failed = 0
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                self.c.commit(offsets=[TopicPartition(self.topic, 0, i)], asynchronous=False)
                self.ok += 1
            except KafkaException:
                self.failed += 1
            time.sleep(0.05)
        self.c.close()


def fill(bootstrap: str, group: str, topic: str, parts: int, rounds: int) -> float:
    """``rounds`` synchronous commits of all ``parts`` partitions of ``topic`` for ``group``
    (round i commits offset i+1); the seconds it took."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    t0 = time.monotonic()
    try:
        for i in range(rounds):
            for attempt in range(20):
                try:
                    c.commit(offsets=[TopicPartition(topic, p, i + 1) for p in range(parts)], asynchronous=False)
                    break
                except KafkaException as exc:
                    if attempt == 19:
                        raise SetupError(f"commit {i} for {group} failed: {exc}") from None
                    time.sleep(0.5)
    finally:
        c.close()
    return time.monotonic() - t0


# -- the broker logs ---------------------------------------------------------------------------
_LOGLINE = re.compile(r"^\[(?P<ts>[\d-]+ [\d:,]+)\] \w+ \[GroupCoordinator id=(?P<node>\d+)\] (?P<msg>.*)")
_EVENTS = [
    ("schedule-load", re.compile(r"Scheduling loading of metadata from (?P<tp>\S+) with epoch (?P<e>\d+)")),
    ("schedule-unload", re.compile(r"Scheduling unloading of metadata for (?P<tp>\S+) with epoch OptionalInt\[(?P<e>\d+)\]")),
    ("unloaded", re.compile(r"Finished unloading metadata for (?P<tp>\S+) with epoch OptionalInt\[(?P<e>\d+)\]")),
    ("loaded", re.compile(r"Finished loading of metadata from (?P<tp>\S+) with epoch (?P<e>\d+) in (?P<ms>\d+)ms.*Loaded (?P<n>\d+) records")),
    ("load-failed", re.compile(r"Failed to load metadata from (?P<tp>\S+) with epoch (?P<e>\d+) due to (?P<why>.*)")),
    ("ignored-completion", re.compile(r"Ignored load completion from (?P<tp>\S+) because context is in (?P<state>\w+) state")),
    ("already-loading", re.compile(r"The coordinator (?P<tp>\S+) is already loading metadata")),
    ("out-of-sync", re.compile(r"The state machine of the coordinator (?P<tp>\S+) is out of sync with the underlying log\. "
                               r"The last written offset returned is (?P<returned>\d+) while the coordinator expected (?P<expected>\d+)")),
]


def scan_logs(paths: list[str], partition: int, since: str | None = None) -> dict:
    """The group coordinator's load/unload lines for __consumer_offsets-``partition`` in the broker
    logs (from ``since``, a log timestamp prefix, on), and whether they show the stale completion:
    "Finished loading ... epoch X" after "Finished unloading ... epoch Y" with Y > X on the same
    node, followed by "Ignored load completion ... ACTIVE"."""
    want = f"{OFFSETS_TOPIC}-{partition}"
    events, lines = [], []
    for path in paths:
        try:
            fh = open(path, errors="replace")
        except OSError:
            continue
        with fh:
            for line in fh:
                if want not in line:
                    continue
                m = _LOGLINE.match(line)
                if not m or (since and m["ts"] < since):
                    continue
                for kind, rx in _EVENTS:
                    e = rx.search(m["msg"])
                    if e and e["tp"] == want:
                        ev = {"ts": m["ts"], "node": int(m["node"]), "kind": kind}
                        ev.update({k: v for k, v in e.groupdict().items() if k != "tp"})
                        events.append(ev)
                        lines.append(line.rstrip())
                        break
    order = sorted(range(len(events)), key=lambda i: events[i]["ts"])
    events, lines = [events[i] for i in order], [lines[i] for i in order]
    stale = []
    for i, ev in enumerate(events):
        if ev["kind"] != "loaded":
            continue
        before = [x for x in events[:i] if x["node"] == ev["node"] and x["kind"] == "unloaded" and int(x["e"]) > int(ev["e"])]
        if before:
            after = [x for x in events[i + 1:] if x["node"] == ev["node"] and x["kind"] == "ignored-completion"]
            sync = [x for x in events[i + 1:] if x["node"] == ev["node"] and x["kind"] == "out-of-sync"]
            stale.append({"node": ev["node"], "loaded_epoch": int(ev["e"]), "at": ev["ts"],
                          "unloaded_epoch": int(before[-1]["e"]),
                          "ignored_completion": [[x["ts"], x["state"]] for x in after[:3]],
                          "out_of_sync": [[x["ts"], int(x["returned"]), int(x["expected"])] for x in sync[:3]]})
    return {"events": events, "lines": lines, "stale_completion": stale}


# -- one try -----------------------------------------------------------------------------------
def same_partition_group(prefix: str, p: int, partitions: int) -> str:
    for i in range(100000):
        g = f"{prefix}{i}"
        if offsets_partition(g, partitions) == p:
            return g
    raise SetupError(f"no group name {prefix}N at __consumer_offsets-{p}")


def run_try(args, admin: AdminClient, view: View, ctl: Ctl, n_offsets: int, i: int, nonce: str,
            log) -> dict:
    name = f"f5-{nonce}-{i}"
    topic, group = name, f"{name}-g"
    p = offsets_partition(group, n_offsets)
    writer_group = same_partition_group(f"{name}-w", p, n_offsets)
    rounds = max(1, args.records // args.partitions)
    res: dict = {"try": i, "topic": topic, "group": group, "offsets_partition": p, "writer_group": writer_group,
                 "rounds": rounds, "records": rounds * args.partitions, "restart": args.restart}
    fut = admin.create_topics([NewTopic(topic, args.partitions, 1)], operation_timeout=60)[topic]
    try:
        fut.result(timeout=90)
    except KafkaException as exc:
        raise SetupError(f"cannot create topic {topic}: {exc}") from None
    time.sleep(1)
    log(f"try {i}: filling __consumer_offsets-{p} with {rounds} x {args.partitions} commits for {group}")
    res["fill_s"] = round(fill(args.bootstrap, group, topic, args.partitions, rounds), 1)
    log(f"  filled in {res['fill_s']} s")

    leader, replicas, isr = view.wait("__consumer_offsets partition", p, lambda *_: True, 30)
    L = replicas[0]
    res["L"], res["replicas"] = L, replicas
    if leader != L:
        view.wait(f"preferred leader {L}", p, lambda ld, r, s: (ld == L) or (view.elect(p) and False), 60)

    steps: list = []
    t0 = time.monotonic()

    def step(what: str, **kw) -> None:
        steps.append({"t": round(time.monotonic() - t0, 3), "step": what, **kw})
        log(f"  {steps[-1]}")

    res["log_since"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - 2))
    # a fresh load of P on L: L must first lose P
    if args.restart:
        ctl("restart", L)
        step("restarted", node=L)
    else:
        ctl("pause", L)
        step("paused", node=L)
        view.wait(f"a leader other than {L}", p, lambda ld, r, s: ld not in (L, -1), 60)
        step("moved", leader=view.partition(p)[0])
        ctl("resume", L)
        step("resumed", node=L)
    view.wait(f"{L} back in the ISR", p, lambda ld, r, s: L in s and ld not in (L, -1), 180)
    step("in-isr", partition=view.partition(p))
    time.sleep(args.settle_s)

    pollers = [Poller(args.bootstrap, group, topic, args.partitions, rounds, iso, t0)
               for iso in ("read_committed", "read_uncommitted")]
    writer = Writer(args.bootstrap, writer_group, topic) if args.writer else None
    for t in pollers + ([writer] if writer else []):
        t.start()
    time.sleep(1)

    # e1: L leads P and starts loading it
    view.wait(f"{L} to lead (e1)", p, lambda ld, r, s: ld == L or (view.elect(p) and False), 60)
    step("e1", leader=L)
    time.sleep(args.head_s)
    ctl("pause", L)
    step("paused", node=L)
    # e2: the controller fences L, P moves
    st = view.wait(f"a leader other than {L} (e2)", p, lambda ld, r, s: ld not in (L, -1), 60)
    step("e2", leader=st[0], isr=st[2])
    time.sleep(args.hold_s)
    ctl("resume", L)
    step("resumed", node=L)
    # e3: L leads P again
    t_e3 = time.monotonic()
    view.wait(f"{L} to lead again (e3)", p, lambda ld, r, s: ld == L or (L in s and view.elect(p) and False), 120)
    step("e3", leader=L, after_resume_s=round(time.monotonic() - t_e3, 3))
    e3_t = time.monotonic() - t0
    time.sleep(args.observe_s)
    for t in pollers + ([writer] if writer else []):
        t.stop.set()
    for t in pollers + ([writer] if writer else []):
        t.join(30)
    # the last word, with a fresh consumer
    last = Poller(args.bootstrap, group, topic, args.partitions, rounds, "read_committed", t0)
    try:
        offs = [tp.offset for tp in last.c.committed(last.tps, timeout=30)]
        res["final"] = {"stale": sum(1 for o in offs if o != rounds), "min": min(offs), "max": max(offs)}
    except KafkaException as exc:
        res["final"] = {"error": str(exc)}
    last.c.close()

    res["steps"] = steps
    res["elect_errors"] = dict(view.elect_errors)
    view.elect_errors.clear()
    res["e3_t"] = round(e3_t, 3)
    res["pollers"] = {}
    stale_after_e3 = []
    for pl in pollers:
        ans = pl.answers
        stale = [a for a in ans if a.get("stale")]
        res["pollers"][pl.name] = {"answers": len(ans), "errors": sum(1 for a in ans if "error" in a),
                                   "stale": len(stale), "first_stale": stale[:5], "last_stale": stale[-3:],
                                   "error_kinds": sorted({a["error"] for a in ans if "error" in a})}
        stale_after_e3 += [a for a in stale if a["t"] + a.get("dt", 0) >= e3_t - 0.5]
    if writer:
        res["writer"] = {"ok": writer.ok, "failed": writer.failed}
    res["stale_after_e3"] = len(stale_after_e3)
    res["reproduced"] = bool(stale_after_e3) or bool(res["final"].get("stale"))
    if args.broker_log:
        time.sleep(1)
        scan = scan_logs(args.broker_log, p, res["log_since"])
        res["log"] = scan["lines"][-40:]
        res["stale_completion"] = scan["stale_completion"]
    return res


def verdict(res: dict) -> str:
    s = "REPRODUCED" if res["reproduced"] else "not reproduced"
    parts = [f"{s}: {res['stale_after_e3']} stale answers after e3",
             f"final {res['final']}",
             "pollers " + ", ".join(f"{k}: {v['answers']} answers, {v['stale']} stale, {v['errors']} errors"
                                    for k, v in res["pollers"].items())]
    if "stale_completion" in res:
        parts.append(f"stale completion in the broker log: {res['stale_completion'] or 'none'}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True, help="bootstrap servers")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--ctl", help="command run as 'CMD pause|resume|restart NODE_ID'")
    g.add_argument("--ctl-stdio", action="store_true", help="ask for pause/resume/restart on stdout, answer on stdin")
    ap.add_argument("--tries", type=int, default=1)
    ap.add_argument("--records", type=int, default=300000, help="offset-commit records for G (default 300000)")
    ap.add_argument("--partitions", type=int, default=500, help="partitions of T: records per commit (default 500)")
    ap.add_argument("--restart", action="store_true", help="make L's load fresh by a restart (cold JVM), not a pause")
    ap.add_argument("--head-s", type=float, default=0.0, help="seconds L loads before it is paused (default 0)")
    ap.add_argument("--hold-s", type=float, default=0.0, help="seconds L stays paused after e2 (default 0)")
    ap.add_argument("--settle-s", type=float, default=3.0, help="seconds after L is back in the ISR (default 3)")
    ap.add_argument("--observe-s", type=float, default=20.0, help="seconds observed after e3 (default 20)")
    ap.add_argument("--no-writer", dest="writer", action="store_false", help="no commits for G2 during the churn")
    ap.add_argument("--broker-log", action="append", help="a broker log to search for P's load lines (repeatable)")
    ap.add_argument("--json", action="store_true", help="one JSON object per try, then a summary")
    args = ap.parse_args(argv)
    if args.tries < 1 or args.partitions < 1:
        ap.error("--tries and --partitions must be >= 1")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        # short socket timeouts: requests to a paused broker must not hold the admin client for 60 s
        admin = AdminClient({"bootstrap.servers": args.bootstrap, "socket.timeout.ms": 3000})
        md = admin.list_topics(timeout=15)
        if len(md.brokers) < 2:
            print(f"error: {len(md.brokers)} broker(s) at {args.bootstrap}: F5 needs >= 2", file=sys.stderr)
            return 2
        off = md.topics.get(OFFSETS_TOPIC)
        if off is None or not off.partitions:
            # the first group coordinator lookup creates it
            c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "f5-init"})
            for _ in range(30):
                try:
                    c.committed([TopicPartition("f5-none", 0)], timeout=10)
                    break
                except KafkaException:
                    time.sleep(1)
            c.close()
            off = admin.list_topics(OFFSETS_TOPIC, timeout=15).topics.get(OFFSETS_TOPIC)
            if off is None or not off.partitions:
                print(f"error: no {OFFSETS_TOPIC} topic at {args.bootstrap} after 30 s", file=sys.stderr)
                return 2
        n_offsets = len(off.partitions)
    except KafkaException as exc:
        print(f"error: cannot reach the cluster at {args.bootstrap}: {exc}", file=sys.stderr)
        return 2
    view, ctl = View(admin), Ctl(args.ctl, args.ctl_stdio)
    nonce = uuid.uuid4().hex[:6]
    summary = {"tries": 0, "reproduced": 0, "errors": 0, "stale_completion": 0}
    for i in range(args.tries):
        try:
            res = run_try(args, admin, view, ctl, n_offsets, i, nonce, log)
        except (SetupError, KafkaException) as exc:
            res = {"try": i, "error": f"{type(exc).__name__}: {exc}"}
            summary["errors"] += 1
        summary["tries"] += 1
        summary["reproduced"] += bool(res.get("reproduced"))
        summary["stale_completion"] += bool(res.get("stale_completion"))
        if args.json:
            print(json.dumps({"result": res}), flush=True)
        else:
            print(f"try {i}: {res.get('error') or verdict(res)}", flush=True)
    if args.json:
        print(json.dumps({"summary": summary}), flush=True)
    else:
        print(f"reproduced {summary['reproduced']} of {summary['tries']} tries"
              + (f" ({summary['errors']} errors)" if summary["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
