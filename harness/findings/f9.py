"""``eos-chaos repro f9``: finding F9 driven step by step on the harness's own 3-node cluster:
a transaction coordinator killed right after it appended an unreplicated PREPARE_COMMIT, then
restarted while the transaction is still open at the coordinator that replaced it
(docs/findings/F9.md).

Roles, from the transactional.id's coordinator C (the leader of its ``__transaction_state``
partition p): F and G are the two other nodes. Topic ``f9``: partition 0 = [F, G] (leader F),
partition 1 = [G, F] (leader G), replication factor 2, ``min.insync.replicas`` 1, so that C
leads no data partition and the data partitions stay writable while C is down. Brokers with
``replica.lag.time.max.ms`` 4000 (as F2's driver), a 30 s broker lease and a 2 s check for
timed-out transactions (``BROKER9``). The producer's ``transaction.timeout.ms`` is 20 s
(``TXN_TIMEOUT_MS``), so the coordinator that replaces C aborts the open transaction as soon
as it takes over, about 30 s after C's start.

Steps (each recorded with its time in ``steps.jsonl``):
 1. producer T (confluent-kafka, in the client namespace) inits; C found; topic created;
 2. T begins and writes v0 to f9-0 and v1 to f9-1 (both acknowledged);
 3. cuts on the broker port 9092, in C's namespace (the KRaft port 9093 stays open, so no
    node is fenced for them): F cannot fetch from C (one way: C still reaches F as a client,
    for its markers); C and G cannot reach each other at all; 1.5 s for the fetches parked in
    C's purgatory before the cut to expire;
 4. T asks for the commit (not awaited); 1 s later T's process and C are SIGKILLed: C has
    appended PREPARE_COMMIT to its own log, and no follower has it;
 5. variant ``stale-restart``: C is started again at once, before the controller has noticed
    its death (``broker.session.timeout.ms``, 30 s here: ``BROKER9``), so the metadata C reads on
    start still makes it p's leader; then wait until the controller has moved p to F or G
    (the new coordinator N, whose log ends before the PREPARE_COMMIT: the transaction is
    Ongoing there). Variant ``fenced-restart`` (the control, which differs only in when C
    starts): wait until p has moved to N first, then start C;
 6. wait for C's "The broker has caught up", then until N has ended the transaction (it
    aborts it once ``transaction.timeout.ms`` has passed): f9-0's and f9-1's last stable
    offsets at their high watermarks; the cuts removed;
 7. reads: read_committed and read_uncommitted of both partitions; the history is judged by
    the checkers (T's transaction is ``info``: its commit was in flight when it was killed);
 8. after teardown: C's log lines about p and T (logs/n<C>.log), DumpLogSegments of f9-0
    and f9-1 on both replicas.

One transaction, two outcomes: v0 read_committed-visible and v1 not (or the reverse) is the
torn transaction F9 reports. Result (``f9.json``): ``v0_visible``, ``v1_visible``, ``torn``,
``coordinator_lines`` (C's log about p and T), ``markers`` (each partition's control records
for T's producer id) and the verdict.
"""
from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
from harness.findings.bringup import write_evidence
from harness.findings.driver import ClientProc, DriverError, DriverResult, Recorder, judge, partition, wait_for
from harness.findings.f2 import BROKER
from harness.findings.f1_repro import txn_partition_for

TOPIC = "f9"
#: F2's brokers (``replica.lag.time.max.ms`` 4000) with a broker lease of 30 s instead of 9 s
#: (``broker.session.timeout.ms``, a controller setting, Kafka's configuration docs): a node
#: started again within its lease reads metadata that still makes it the leaders it was. F9's
#: run hit that inside the default 9 s (its n1 was started again 4.7 s after its kill); a JVM
#: start here takes 5-12 s on 2 cores, so the longer lease makes the restart land inside it
#: every time, and the control (``fenced-restart``) waits it out. The coordinator looks for
#: timed-out transactions every 2 s instead of 10 s
#: (``transaction.abort.timed.out.transaction.cleanup.interval.ms``), so that the new
#: coordinator aborts T's transaction as soon as it takes over
BROKER9 = {**BROKER, "broker.session.timeout.ms": "30000",
           "transaction.abort.timed.out.transaction.cleanup.interval.ms": "2000"}
#: T's ``transaction.timeout.ms``: past by the time the lease ends (about 40 s into the steps),
#: and long after C's stale markers (about 12 s after its start)
TXN_TIMEOUT_MS = 20000
VARIANTS = ("stale-restart", "fenced-restart")
#: C's log lines that tell the story: the first metadata image its broker applied, its
#: coordinator role for p and the loading of p, the markers it sent and cancelled, its
#: metadata catch-up, and the truncation of p's log
_C_LINES = (r"(txn coordinator for partition {p} |Transaction State Manager.*__transaction_state-{p} |{tid}|"
            r"has caught up|initializing BrokerMetadataPublisher|partition=__transaction_state-{p},.*Truncating to)")


def _cut(host, peer: str, add: bool, *, one_way: bool = False) -> None:
    """Drop broker-port (9092) packets between ``host`` and ``peer``, in ``host``'s namespace.
    ``one_way``: only ``peer``'s connections to ``host``'s 9092 (its requests in, the answers
    out): ``peer`` cannot fetch from ``host``, ``host`` still reaches ``peer`` as a client (its
    transaction markers). Otherwise both directions, both ends' ports, so that not even the
    answer to a fetch parked before the cut in the leader's purgatory gets out."""
    op = "-I" if add else "-D"
    rules = [("INPUT", "-s", "--dport"), ("OUTPUT", "-d", "--sport")]
    if not one_way:
        rules += [("INPUT", "-s", "--sport"), ("OUTPUT", "-d", "--dport")]
    for chain, addr, port in rules:
        host.run("iptables", op, chain, addr, peer, "-p", "tcp", port, "9092", "-j", "DROP")


def _closed(agent, keys: list[str]) -> bool:
    """Every key's last stable offset equals its high watermark: no open transaction."""
    offs = agent.request("offsets", timeout=15, keys=keys)
    return all(isinstance(o, list) and o[0] is not None and o[0] == o[1] for o in offs.values())


def _caught_up(log: Path, since: int) -> bool:
    text = log.read_text(errors="replace") if log.is_file() else ""
    return "The broker has caught up" in text[since:]


def run_f9(results: Path, *, kafka_version: str = DEFAULT_KAFKA_VERSION, variant: str = "stale-restart") -> DriverResult:
    """Drive the steps of the module docstring once as ``variant`` (VARIANTS); return what they
    showed. Raises DriverError naming the step that failed, ValueError for an unknown variant, and
    what harness.findings.bringup raises."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    from harness.cluster.broker_events import scan_broker_logs
    from harness.findings.bringup import findings_cluster
    from harness.findings.f1 import replica_lines

    run_dir = Path(results) / f"f9-{variant}" / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    logs = run_dir / "logs"
    steps: list[dict] = []
    res: dict = {"kafka_version": kafka_version, "broker": BROKER9, "variant": variant,
                 "transaction_timeout_ms": TXN_TIMEOUT_MS}
    t_start = [time.monotonic()]

    def step(name: str, **info) -> None:
        steps.append({"t": round(time.monotonic() - t_start[0], 2), "step": name, **info})
        (run_dir / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))

    keys = [f"{TOPIC}/0", f"{TOPIC}/1"]
    tid = f"f9-txn-{datetime.now(timezone.utc).strftime('%H%M%S')}"
    p = txn_partition_for(tid, 50)
    c = None
    with findings_cluster(run_dir, kafka_version=kafka_version, proxies=False, broker=BROKER9) as fc:
        t_start[0] = time.monotonic()
        agent, net = fc.service.agent, fc.backend.network
        client = ClientProc(fc, logs / "f9-client.err")
        rec = Recorder(run_dir / "history.jsonl")
        cuts: list[tuple[int, bool]] = []
        try:
            t0 = rec.now()
            client("init", name="T", transactional_id=tid, transaction_timeout_ms=TXN_TIMEOUT_MS)
            rec.op(0, "init", None, None, t0, {"transactional_id": tid, "worker": "producer-T"})
            c = client("coordinator", transactional_id=tid)
            f, g = [n for n in fc.service.node_ids() if n != c][:2]
            res.update(transactional_id=tid, txn_partition=p, coordinator=c, f=f, g=g)
            step("init", transactional_id=tid, coordinator=c, txn_partition=p)
            client("create_topic", name=TOPIC, assignment=[[f, g], [g, f]], configs={"min.insync.replicas": "1"})
            wait_for("f9's leaders F and G", lambda: (partition(agent, TOPIC, 0) or {}).get("leader") == f
                  and (partition(agent, TOPIC, 1) or {}).get("leader") == g, 60)

            t_txn = rec.now()
            client("begin", name="T")
            v0, v1 = 100000001, 100000002
            res["values"] = {"v0": v0, "v1": v1}
            res["v0_offset"] = client("produce", name="T", topic=TOPIC, partition=0, value=str(v0))
            res["v1_offset"] = client("produce", name="T", topic=TOPIC, partition=1, value=str(v1))
            step("written", v0=[0, res["v0_offset"]], v1=[1, res["v1_offset"]])

            # F may not fetch from C (one way: C still reaches F as a client, for its markers);
            # G and C cannot reach each other at all (C's marker for f9-1 cannot be delivered)
            rec.h.append({"process": "nemesis", "type": "info", "f": "start-partition",
                          "value": {"grudge": "replication", "cut": {f"n{c}": [f"n{g}"], f"n{f}->n{c}": "one way"},
                                    "port": 9092}})
            _cut(net.node(c), net.node(f).address, True, one_way=True)
            cuts.append((f, True))
            _cut(net.node(c), net.node(g).address, True)
            cuts.append((g, False))
            step("cut", node=c, one_way_from=f, both_ways=g)
            time.sleep(1.5)  # fetches parked in C's purgatory before the cut expire (replica.fetch.wait.max.ms 500)
            commit_ns = rec.now()
            client.proc.stdin.write(json.dumps({"cmd": "commit", "name": "T"}) + "\n")
            client.proc.stdin.flush()
            time.sleep(1.0)  # EndTxn reaches C within ms; its PREPARE_COMMIT waits for followers that cannot fetch
            rec.h.append({"process": "nemesis", "type": "info", "f": "kill", "value": {"node": c}})
            client.proc.kill()
            fc.backend.node(c).kill()
            rec.h.append({"process": "nemesis", "type": "info", "f": "kill", "value": {"node": c, "result": "killed"}})
            rec.op(0, "txn", [["send", keys[0], v0], ["send", keys[1], v1]],
                   [["send", keys[0], [res["v0_offset"], v0]], ["send", keys[1], [res["v1_offset"], v1]]],
                   t_txn, {"transactional_id": tid, "worker": "producer-T", "commit_ns": commit_ns}, "info")
            step("killed", node=c, producer="T", commit_asked_s_before=1.0)

            def moved() -> float:
                waited = wait_for(f"__transaction_state-{p} led by n{f} or n{g}",
                               lambda: (partition(agent, "__transaction_state", p) or {}).get("leader") in (f, g), 120)
                tp = partition(agent, "__transaction_state", p)
                res["new_coordinator"] = tp["leader"]
                step("moved", after_s=waited, txn_partition=tp)
                return waited

            if variant == "fenced-restart":  # the control: C starts only once the controller has fenced it
                moved()
            log = logs / f"n{c}.log"
            since = log.stat().st_size if log.is_file() else 0
            rec.h.append({"process": "nemesis", "type": "info", "f": "start", "value": {"node": c}})
            fc.backend.node(c).start()
            rec.h.append({"process": "nemesis", "type": "info", "f": "start", "value": {"node": c, "result": "started"}})
            step("restarted", node=c)
            if variant == "stale-restart":
                moved()
            waited = wait_for(f"n{c}'s 'The broker has caught up'", lambda: _caught_up(log, since), 120)
            step("caught-up", after_s=waited)
            waited = wait_for("f9's LSOs at their high watermarks", lambda: _closed(agent, keys), 150)
            step("closed", after_s=waited)
            rec.h.append({"process": "nemesis", "type": "info", "f": "heal", "value": None})
            while cuts:
                peer, one_way = cuts.pop()
                _cut(net.node(c), net.node(peer).address, False, one_way=one_way)
            rec.h.append({"process": "nemesis", "type": "info", "f": "heal",
                          "value": {"result": ["cuts removed"], "problems": []}})

            reader = ClientProc(fc, logs / "f9-reader.err")  # T's process was killed
            try:
                reads, res["drain"] = rec.final_reads(reader, keys)
            finally:
                reader.close()
            res["reads"] = reads
            res["v0_visible"] = v0 in {int(v) for v in reads[f"{TOPIC}/0/read_committed"]["records"].values()}
            res["v1_visible"] = v1 in {int(v) for v in reads[f"{TOPIC}/1/read_committed"]["records"].values()}
            res["torn"] = res["v0_visible"] != res["v1_visible"]
            step("read", v0_visible=res["v0_visible"], v1_visible=res["v1_visible"], torn=res["torn"])
        except DriverError as exc:  # the run folder still gets what the steps showed
            res["error"] = str(exc)
            step("error", error=str(exc))
        finally:
            for peer, one_way in cuts:
                try:
                    _cut(net.node(c), net.node(peer).address, False, one_way=one_way)
                except Exception as exc:  # teardown removes the namespaces, and with them the rules
                    res.setdefault("cleanup", []).append(f"cut n{c}-n{peer}: {exc}")
            client.close()
            rec.h.close()
            problems = fc.problems
    events = scan_broker_logs(logs)
    meta = {"scenario": f"f9-{variant}", "workload": "txn-queue", "seed": 0, "kafka_version": kafka_version,
            "fail_on": [], "stalled_lso_bound_s": 300.0, "transactional": True,
            "isolation_level": "read_committed", "keys": keys, "drain": res.get("drain"),
            "final_reads_complete": bool(res.get("drain")), "broker_events": events, "teardown_problems": problems}
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
    res["verdict"] = judge(run_dir, meta)
    pat = re.compile(_C_LINES.format(p=p, tid=re.escape(tid)))
    clog = logs / f"n{c}.log"
    res["coordinator_lines"] = ([x.strip()[:400] for x in clog.read_text(errors="replace").splitlines() if pat.search(x)]
                                if c and clog.is_file() else [])
    evidence = [f"# variant {variant}, Kafka {kafka_version}: {tid} (__transaction_state-{p}), coordinator C=n{c}, "
                f"then n{res.get('new_coordinator')}; f9-0 led by n{res.get('f')}, f9-1 by n{res.get('g')}; "
                f"error: {res.get('error')}; v0 (f9-0) visible={res.get('v0_visible')}, v1 (f9-1) visible="
                f"{res.get('v1_visible')}, torn={res.get('torn')}; verdict {res['verdict'].get('anomaly_counts')}"]
    evidence += [f"  n{c}: {line}" for line in res["coordinator_lines"]]
    for q in (0, 1):
        evidence += replica_lines(run_dir, f"{TOPIC}-{q}", kafka_version, set(range(0, 10)))
    (run_dir / "f9.json").write_text(json.dumps(res, indent=1, default=str))
    write_evidence(run_dir, evidence)
    return DriverResult(run_dir, res, evidence, problems)
