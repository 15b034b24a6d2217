"""``eos-chaos repro f2``: finding F2 (KAFKA-20734) driven step by step on the harness's own
3-node cluster, no luck needed: a committed transaction's marker is skipped for a partition
whose leader is offline, and the partition keeps an open transaction (docs/findings/F2.md).

Roles, from the transactional.id's coordinator C: L and F are the two other nodes.
Topic ``f2``: partition 0 = [L, F] (the victim, leader L), partition 1 = [C, F] (the control,
leader C), replication factor 2, ``min.insync.replicas`` 1; brokers with
``replica.lag.time.max.ms`` 4000 so that a cut-off follower leaves the ISR within seconds.

Steps (each recorded with its time in ``steps.jsonl``):
 1. cut F from L on the broker port 9092 (iptables in F's namespace; the KRaft port 9093 stays
    open, so neither is fenced); producer T commits v0 to f2-0, acknowledged once L has dropped
    F from the ISR (an idle follower stays in sync); wait until f2-0's ISR is [L];
 2. producer T: begin, write v1 to f2-0 (acked by L alone) and v2 to f2-1;
 3. SIGKILL L and wait until the controller fenced it: f2-0 has no leader (leader -1), no
    in-sync replica left to elect;
 4. T commits: the coordinator writes PrepareCommit and sends markers; KRaftMetadataCache
    gives no endpoint for f2-0's leader (-1), TransactionMarkerChannelManager takes the
    partition for deleted and skips its marker ("likely deleted already"), then completes;
 5. heal: the cut removed, L restarted, f2-0 led by L again;
 6. producer U (another transactional.id) commits v3 to f2-0;
 7. reads: read_committed and read_uncommitted of both partitions with their watermarks (the
    read_committed high watermark is the last stable offset); ``kafka-transactions.sh
    find-hanging`` (harness.findings.hanging) into ``logs/find-hanging.txt``;
 8. after teardown: broker events (harness.cluster.broker_events) and DumpLogSegments of f2-0.

Modes (``mode``): ``hang`` (the steps above); ``aborted-becomes-committed``: T aborts in step 4
(its ABORT marker for f2-0 is skipped) and in step 6 T itself, the same producer instance and
epoch, commits v3 to f2-0: that COMMIT marker closes T's open transaction on f2-0 from v1 on, so
the aborted v1 is read by read_committed consumers (G1a); ``committed-becomes-aborted``: T
commits in step 4 and in step 6 writes v3 to f2-0 and aborts: the ABORT marker discards the
committed v1 (a lost write).

Result (``f2.json``): ``committed`` (T's commit returned), ``v1_visible`` / ``v2_visible`` /
``v3_visible`` (read_committed), ``lso`` / ``high_watermark`` of f2-0, ``hanging`` (the
find-hanging rows), ``skipped_marker_lines`` and the evidence lines.
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
from harness.findings.bringup import write_evidence
from harness.findings.driver import ClientProc, DriverError, DriverResult, Recorder, judge, partition, wait_for

TOPIC = "f2"
BROKER = {"replica.lag.time.max.ms": "4000"}


def _cut(host, peer: str, add: bool) -> None:
    """Drop broker-port (9092) traffic between ``host`` and ``peer`` in ``host``'s namespace
    (both directions: connections to the peer's 9092 and the peer's connections to ours)."""
    op = "-I" if add else "-D"
    host.run("iptables", op, "OUTPUT", "-d", peer, "-p", "tcp", "--dport", "9092", "-j", "DROP")
    host.run("iptables", op, "INPUT", "-s", peer, "-p", "tcp", "--dport", "9092", "-j", "DROP")


MODES = ("hang", "aborted-becomes-committed", "committed-becomes-aborted")


def run_f2(results: Path, *, kafka_version: str = DEFAULT_KAFKA_VERSION, mode: str = "hang") -> DriverResult:
    """Drive the steps of the module docstring once in ``mode`` (MODES); return what they
    showed. Raises DriverError naming the step that failed, ValueError for an unknown mode, and what
    harness.findings.bringup raises."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    from harness.cluster.broker_events import scan_broker_logs
    from harness.findings.bringup import findings_cluster
    from harness.findings.f1 import replica_lines
    from harness.findings.hanging import find_hanging

    run_dir = (Path(results) / ("f2-leaderless-marker" if mode == "hang" else f"f2-{mode}")
               / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    logs = run_dir / "logs"
    steps: list[dict] = []
    res: dict = {"kafka_version": kafka_version, "broker": BROKER, "mode": mode}
    t_start = [time.monotonic()]  # reset once the cluster is up (the lock may be held by others)

    def step(name: str, **info) -> None:
        steps.append({"t": round(time.monotonic() - t_start[0], 2), "step": name, **info})
        (run_dir / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))

    keys = [f"{TOPIC}/0", f"{TOPIC}/1"]
    with findings_cluster(run_dir, kafka_version=kafka_version, proxies=False, broker=BROKER) as fc:
        t_start[0] = time.monotonic()
        agent, net = fc.service.agent, fc.backend.network
        client = ClientProc(fc, logs / "f2-client.err")
        rec = Recorder(run_dir / "history.jsonl")
        try:
            tid = f"f2-txn-{run_dir.name}"
            t0 = rec.now()
            client("init", name="T", transactional_id=tid)
            rec.op(0, "init", None, None, t0, {"transactional_id": tid, "worker": "producer-T"})
            c = client("coordinator", transactional_id=tid)
            leader, follower = [n for n in fc.service.node_ids() if n != c][:2]
            res.update(transactional_id=tid, coordinator=c, leader=leader, follower=follower)
            step("init", transactional_id=tid, coordinator=c)
            client("create_topic", name=TOPIC, assignment=[[leader, follower], [c, follower]],
                   configs={"min.insync.replicas": "1"})
            wait_for("f2-0 led by L with ISR [L, F]", lambda: (p := partition(agent, TOPIC, 0)) and p["leader"] == leader
                  and sorted(p["isr"]) == sorted([leader, follower]), 60)
            step("topic", partitions={"0": [leader, follower], "1": [c, follower]})

            rec.h.append({"process": "nemesis", "type": "info", "f": "start-partition",
                          "value": {"grudge": "replication", "cut": [follower, leader], "port": 9092}})
            _cut(net.node(follower), net.node(leader).address, True)
            # a follower that has everything the leader has is in sync however long it does not
            # fetch (Kafka's Replica.isCaughtUp): write v0, acknowledged once L drops F
            v0 = 100000000
            t0 = rec.now()
            client("begin", name="T")
            res["v0_offset"] = client("produce", name="T", topic=TOPIC, partition=0, value=str(v0))
            commit_ns = rec.now()
            client("commit", name="T")
            rec.op(0, "txn", [["send", keys[0], v0]], [["send", keys[0], [res["v0_offset"], v0]]], t0,
                   {"transactional_id": tid, "worker": "producer-T", "commit_ns": commit_ns})
            waited = wait_for("f2-0's ISR to shrink to [L]", lambda: partition(agent, TOPIC, 0)["isr"] == [leader], 90)
            rec.h.append({"process": "nemesis", "type": "info", "f": "start-partition",
                          "value": {"grudge": "replication", "cut": [follower, leader], "port": 9092,
                                    "result": f"f2-0 ISR [{leader}]"}})
            step("cut", follower=follower, leader=leader, v0=[0, res["v0_offset"]],
                 v0_acked_after_s=round((commit_ns - t0) / 1e9, 2))

            t_txn = rec.now()
            client("begin", name="T")
            v1, v2, v3 = 100000001, 100000002, 200000001  # integers: the harness's value domain
            res["values"] = {"v1": v1, "v2": v2, "v3": v3}
            res["v1_offset"] = client("produce", name="T", topic=TOPIC, partition=0, value=str(v1))
            res["v2_offset"] = client("produce", name="T", topic=TOPIC, partition=1, value=str(v2))
            step("written", v1=[0, res["v1_offset"]], v2=[1, res["v2_offset"]])

            rec.h.append({"process": "nemesis", "type": "info", "f": "kill", "value": {"node": leader}})
            fc.backend.node(leader).kill()
            rec.h.append({"process": "nemesis", "type": "info", "f": "kill",
                          "value": {"node": leader, "result": "killed"}})
            step("killed", node=leader)
            waited = wait_for("f2-0 to lose its leader", lambda: partition(agent, TOPIC, 0)["leader"] == -1, 90)
            step("leaderless", after_s=waited, partition=partition(agent, TOPIC, 0))
            time.sleep(1)  # the coordinator's metadata image follows the controller's within ms

            commit_ns = rec.now()
            end = "abort" if mode == "aborted-becomes-committed" else "commit"
            try:
                client(end, name="T")
                res["committed"] = end == "commit"
                res["aborted"] = end == "abort"
            except DriverError as exc:
                res["committed"], res["commit_error"] = False, str(exc)
            rec.op(0, "txn", [["send", keys[0], v1], ["send", keys[1], v2]],
                   [["send", keys[0], [res["v1_offset"], v1]], ["send", keys[1], [res["v2_offset"], v2]]],
                   t_txn, {"transactional_id": tid, "worker": "producer-T", "commit_ns": commit_ns},
                   "ok" if res["committed"] else ("fail" if res.get("aborted") else "info"))
            step(end, committed=res["committed"], aborted=res.get("aborted"), error=res.get("commit_error"))
            time.sleep(3)

            rec.h.append({"process": "nemesis", "type": "info", "f": "heal", "value": None})
            _cut(net.node(follower), net.node(leader).address, False)
            fc.backend.node(leader).start()
            waited = wait_for("f2-0 to be led again", lambda: partition(agent, TOPIC, 0)["leader"] >= 0, 180)
            rec.h.append({"process": "nemesis", "type": "info", "f": "heal",
                          "value": {"result": [f"cut removed, started n{leader}"], "problems": []}})
            step("healed", after_s=waited, partition=partition(agent, TOPIC, 0))

            if mode == "hang":  # another producer, U, commits v3 behind T's open transaction
                later, process, later_tid, end = "U", 1, f"f2-later-{run_dir.name}", "commit"
                t0 = rec.now()
                client("init", name="U", transactional_id=later_tid)
                rec.op(1, "init", None, None, t0, {"transactional_id": later_tid, "worker": "producer-U"})
            else:  # T itself, same instance and epoch: its next marker on f2-0 ends v1's transaction too
                later, process, later_tid = "T", 0, tid
                end = "commit" if mode == "aborted-becomes-committed" else "abort"
            t0 = rec.now()
            client("begin", name=later)
            res["v3_offset"] = client("produce", name=later, topic=TOPIC, partition=0, value=str(v3))
            commit_ns = rec.now()
            client(end, name=later)
            rec.op(process, "txn", [["send", keys[0], v3]], [["send", keys[0], [res["v3_offset"], v3]]], t0,
                   {"transactional_id": later_tid, "worker": f"producer-{later}", "commit_ns": commit_ns},
                   "ok" if end == "commit" else "fail")
            step(f"later-{end}", producer=later, v3=[0, res["v3_offset"]])

            reads, res["drain"] = rec.final_reads(client, keys)
            res["reads"] = reads
            committed0 = {int(v) for v in reads[f"{TOPIC}/0/read_committed"]["records"].values()}
            res["v1_visible"] = v1 in committed0
            res["v3_visible"] = v3 in committed0
            res["v2_visible"] = v2 in {int(v) for v in reads[f"{TOPIC}/1/read_committed"]["records"].values()}
            res["lso"] = reads[f"{TOPIC}/0/read_committed"]["high"]
            res["high_watermark"] = reads[f"{TOPIC}/0/read_uncommitted"]["high"]
            step("read", v1_visible=res["v1_visible"], v2_visible=res["v2_visible"],
                 v3_visible=res["v3_visible"], lso=res["lso"], high_watermark=res["high_watermark"])

            fh = find_hanging(fc.service.client_host, fc.backend.bootstrap, kafka_version, fc.service.node_ids(),
                              logs / "find-hanging.txt")
            res["hanging"] = fh.rows
            res["find_hanging_ok"] = fh.ok
            step("find-hanging", rows=fh.rows, ok=fh.ok)
        except DriverError as exc:  # the run folder still gets what the steps showed
            res["error"] = str(exc)
            step("error", error=str(exc))
        finally:
            client.close()
            rec.h.close()
            problems = fc.problems
    events = scan_broker_logs(logs)
    meta = {"scenario": "f2-leaderless-marker", "workload": "txn-queue", "seed": 0,
            "kafka_version": kafka_version, "fail_on": [], "stalled_lso_bound_s": 30.0, "transactional": True,
            "isolation_level": "read_committed", "keys": keys, "drain": res.get("drain"),
            "final_reads_complete": bool(res.get("drain")), "broker_events": events,
            "teardown_problems": problems}
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
    res["verdict"] = judge(run_dir, meta)
    res["broker_events"] = events
    res["skipped_marker_lines"] = [line for f in sorted(logs.glob("n*.log"))
                                   for line in f.read_text(errors="replace").splitlines()
                                   if "likely deleted" in line and TOPIC + "-0" in line]
    evidence = [f"# mode {mode}: f2-0 (leader n{res.get('leader')}, follower n{res.get('follower')}), coordinator "
                f"n{res.get('coordinator')}; error: {res.get('error')}; "
                f"T committed={res.get('committed')}, aborted={res.get('aborted')}, v1 visible={res.get('v1_visible')}, v2 visible="
                f"{res.get('v2_visible')}, v3 visible={res.get('v3_visible')}, LSO {res.get('lso')} / high "
                f"watermark {res.get('high_watermark')}; find-hanging rows {len(res.get('hanging') or [])}"]
    evidence += [f"  broker log: {line.strip()[:400]}" for line in res["skipped_marker_lines"]]
    evidence += replica_lines(run_dir, f"{TOPIC}-0", kafka_version, set(range(0, 20)))
    (run_dir / "f2.json").write_text(json.dumps(res, indent=1, default=str))
    write_evidence(run_dir, evidence)
    return DriverResult(run_dir, res, evidence, problems)
