"""The run loop: scenario -> cluster and clients -> history -> verdict -> report.

``run_scenario`` goes through these phases, each reported to the ``progress`` callback:
cleanup (leftovers of a crashed earlier run), cluster (network, KRaft nodes, readiness, topics),
load (workers, with the nemesis on its seeded schedule), heal (every fault undone, cluster
ready again), drain (producers stopped, final reads), check (verdict.json), report
(report.html). Teardown always runs and its problems end up in the run's meta.json.

Everything lands in ``results/<scenario>/<run-id>/``: scenario.yaml (as run), history.jsonl,
schedule.json, meta.json, verdict.json, report.html, logs/.
"""
from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import yaml

import checkers
from harness import net
from harness.agent import Agent
from harness.artifacts import kafka_dist
from harness.cluster import Cluster
from harness.history import HistoryWriter
from harness.pool import Pool
from harness.scenario import Scenario
from harness.util import wait_until
from harness.workloads import WORKLOADS
from nemesis.core import Composite
from nemesis.process import FAULTS
from nemesis.schedule import node_fault_schedule


@dataclass
class Progress:
    """What the terminal shows while a run goes on."""

    phase: str = "starting"
    started: float = field(default_factory=time.monotonic)
    history: HistoryWriter | None = None
    faults: int = 0
    note: str = ""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def ops(self) -> dict[str, int]:
        """Completed client ops so far by outcome (ok / fail / info)."""
        out = {"ok": 0, "fail": 0, "info": 0}
        if self.history is not None:
            for (f, type_), n in list(self.history.counts.items()):
                if type_ in out and f not in NEMESIS_FS:
                    out[type_] += n
        return out


NEMESIS_FS = {"kill", "start", "pause", "resume", "heal"}


@dataclass
class RunResult:
    run_dir: Path
    verdict: dict
    report: Path | None
    problems: list[str]


def _run_id(seed: int) -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-s{seed}"


def _ready(agent: Agent, nodes: int, topics: list[str] | None = None, min_isr: int = 2) -> bool:
    d = agent.request("describe", timeout=5, topics=topics)
    if len(d["brokers"]) < nodes or d["controller"] in (-1, None):
        return False
    for name in topics or []:
        t = d["topics"].get(name)
        if t is None or t["error"] or not t["partitions"]:
            return False
        if any(p["leader"] < 0 or len(p["isr"]) < min_isr for p in t["partitions"].values()):
            return False
    return True


def _link_latest(results_root: Path, run_dir: Path) -> None:
    latest = results_root / "latest"
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(run_dir.relative_to(results_root))
    except OSError:
        pass  # a convenience only


def run_scenario(scn: Scenario, results_root: Path, *, source: str | None = None,
                 progress: Progress | None = None, stop: threading.Event | None = None) -> RunResult:
    """Run one scenario on a fresh cluster; return the run folder and verdict.

    ``scn`` already carries the seed, duration and Kafka version to use (the CLI merges its
    options in). ``stop`` ends the load phase early (Ctrl-C): the run still heals, drains and
    checks. Raises ArtifactError / NetError / ClusterError / WaitTimeout when the cluster
    cannot be brought up; teardown runs in every case.
    """
    progress = progress or Progress()
    stop = stop or threading.Event()
    seed = scn.seed if scn.seed is not None else random.randrange(1, 2**31)
    scn = scn.model_copy(update={"seed": seed})
    results_root = Path(results_root)
    run_dir = results_root / scn.name / _run_id(seed)
    logs = run_dir / "logs"
    logs.mkdir(parents=True)
    as_run = scn.model_dump(mode="json")
    as_run.update(source=source, kafka_version=scn.cluster.kafka_version)
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(as_run, sort_keys=False))
    _link_latest(results_root, run_dir)

    progress.phase = "cleanup"
    problems = [f"leftover of an earlier run: {p}" for p in net.cleanup()]
    dist = kafka_dist(scn.cluster.kafka_version)
    node_ids = list(range(1, scn.cluster.nodes + 1))
    network = net.TestNetwork(node_ids)
    cluster = agent = pool = history = None
    meta: dict = {"scenario": scn.name, "workload": scn.workload.name, "seed": seed,
                  "kafka_version": dist.version, "isolation_level": scn.workload.isolation_level,
                  "fail_on": scn.fail_on, "stalled_lso_bound_s": scn.stalled_lso_bound_s,
                  "transactional": True}
    timings: dict[str, float] = {}
    try:
        progress.phase = "cluster"
        t0 = time.monotonic()
        network.up()
        cluster = Cluster(dist, network, run_dir / "nodes", logs, nodes=scn.cluster.nodes,
                          heap_mb=scn.cluster.heap_mb, overrides=scn.cluster.broker)
        cluster.format_and_start()
        agent = Agent(network.client, cluster.bootstrap, logs / "agent.log")
        wait_until(lambda: _ready(agent, scn.cluster.nodes), 180,
                   f"{scn.cluster.nodes} brokers registered with an active controller (see logs/n*.log)")
        workload = WORKLOADS[scn.workload.name](scn.workload, cluster.bootstrap, seed)
        meta["keys"] = workload.keys()
        min_isr = min(2, scn.cluster.nodes)
        agent.request("create_topics", timeout=30, names=workload.topics(),
                      partitions=scn.workload.partitions, replication_factor=min(3, scn.cluster.nodes),
                      configs={"min.insync.replicas": str(min_isr)})
        wait_until(lambda: _ready(agent, scn.cluster.nodes, workload.topics(), min_isr), 120,
                   "every partition of the workload's topics to have a leader and an ISR")
        timings["cluster_ready_s"] = round(time.monotonic() - t0, 2)

        progress.phase = "load"
        history = HistoryWriter(run_dir / "history.jsonl")
        progress.history = history
        pool = Pool(network.client, history, logs)
        consumers = [pool.spawn(w.name, w.role, w.cfg).name for w in workload.consumers()]
        producers = [pool.spawn(w.name, w.role, w.cfg).name for w in workload.producers()]
        nemesis = Composite([FAULTS[f][0](cluster) for f in scn.nemesis.faults])
        nemesis.setup()
        schedule = node_fault_schedule(seed, scn.nemesis.faults, node_ids, scn.duration,
                                       scn.nemesis.interval_s, scn.nemesis.fault_duration_s,
                                       scn.nemesis.first_fault_s)
        (run_dir / "schedule.json").write_text(json.dumps([s.to_dict() for s in schedule], indent=1))
        load_start = time.monotonic()
        try:
            for step in schedule:
                if stop.wait(max(0.0, load_start + step.at - time.monotonic())):
                    break
                _nemesis_op(history, nemesis, step.op())
                progress.faults += step.f in {FAULTS[f][1] for f in FAULTS}
            stop.wait(max(0.0, load_start + scn.duration - time.monotonic()))
        finally:
            progress.phase = "heal"
            _nemesis_heal(history, nemesis, cluster)
        timings["load_s"] = round(time.monotonic() - load_start, 2)

        t0 = time.monotonic()
        wait_until(lambda: _ready(agent, scn.cluster.nodes, workload.topics(), min_isr), 180,
                   "the cluster to recover after healing (all brokers back, every partition led)")
        progress.phase = "drain"
        problems += pool.stop(producers, timeout=90)
        drain = pool.spawn(*_spec(workload.drain()))
        if not drain.wait(timeout=180):
            problems.append("final drain did not finish in 180 s; killed")
            drain.kill()
        drained = next((c for c in drain.control if c.get("drained")), None)
        meta["drain"] = drained
        meta["final_reads_complete"] = bool(drained and drained["complete"])
        problems += pool.stop(consumers, timeout=30)
        timings["heal_and_drain_s"] = round(time.monotonic() - t0, 2)
    finally:
        progress.phase = "teardown"
        problems += _teardown(pool, history, agent, cluster, network)
        meta["timings"] = timings
        meta["teardown_problems"] = problems
        (run_dir / "meta.json").write_text(json.dumps(meta, indent=1))

    progress.phase = "check"
    verdict = checkers.check(run_dir / "history.jsonl", meta=meta, allowed=scn.expected)
    (run_dir / "verdict.json").write_text(json.dumps(verdict, indent=1, default=str))
    progress.phase = "report"
    report = None
    try:
        from harness.report import render_report

        report = render_report(run_dir)
    except Exception as exc:  # the verdict stands without a report; say why there is none
        problems.append(f"report could not be rendered: {type(exc).__name__}: {exc}")
    progress.phase = "done"
    return RunResult(run_dir, verdict, report, problems)


def _spec(w) -> tuple:
    return w.name, w.role, w.cfg


def _nemesis_op(history: HistoryWriter, nemesis: Composite, op: dict) -> None:
    history.append({"process": "nemesis", "type": "info", "f": op["f"], "value": op["value"]})
    try:
        done = nemesis.invoke(op)
    except Exception as exc:  # a fault that could not be applied is recorded, not fatal
        done = {"f": op["f"], "value": dict(op["value"], result=f"error: {exc}")}
    history.append({"process": "nemesis", "type": "info", "f": done["f"], "value": done["value"]})


def _nemesis_heal(history: HistoryWriter, nemesis: Composite, cluster: Cluster) -> None:
    history.append({"process": "nemesis", "type": "info", "f": "heal", "value": None})
    problems = nemesis.teardown()
    done = cluster.heal()  # belt and braces: a node that died on its own is started too
    history.append({"process": "nemesis", "type": "info", "f": "heal",
                    "value": {"result": done, "problems": problems}})


def _teardown(pool, history, agent, cluster, network) -> list[str]:
    problems: list[str] = []
    steps = [
        ("workers", lambda: pool.shutdown() if pool else []),
        ("history", lambda: history.close() if history else None),
        ("admin agent", lambda: agent.close() if agent else None),
        ("cluster", lambda: cluster.shutdown() if cluster else []),
        ("network", network.down),
    ]
    for what, step in steps:
        try:
            problems += step() or []
        except Exception as exc:  # keep tearing down; report what was left
            problems.append(f"teardown of {what} failed: {type(exc).__name__}: {exc}")
    return problems

