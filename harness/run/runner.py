"""The run loop: scenario -> cluster and clients -> history -> verdict -> report.

``run_scenario`` goes through these phases, each shown by the ``progress`` object:
waiting (another run holds the machine's cluster lock), cleanup (leftovers of a crashed
earlier run), cluster (network, KRaft nodes, readiness, topics), load (workers, with the
nemesis on its seeded schedule), heal (every fault undone, cluster ready again), drain
(writers stopped, final reads), check (verdict.json), report (report.html). Teardown always
runs; what it could not undo is listed in meta.json and returned.

Everything lands in ``results/<scenario>/<run-id>/``: scenario.yaml (as run), history.jsonl,
schedule.json, meta.json, verdict.json, report.html, logs/.
"""
from __future__ import annotations

import fnmatch
import json
import random
import shutil
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

from checkers.run import RunDir, RunMeta, Verdict
from checkers.verdict import check_run
from harness.cluster.broker_events import scan_broker_logs
from harness.run.client_events import scan_client_logs
from harness.cluster.backends import make_backend
from harness.cluster.client_access import cluster_workload, renamed_targets, run_names
from harness.cluster.service import ClusterService
from harness.cluster.session import ClusterSession
from harness.run.history_writer import HistoryWriter
from harness.run.pool import Pool
from harness.run.scenario import START_AFTER_OK, Scenario
from harness.cluster.releases import feature_mismatches
from harness.run.versions import collect_versions
from harness.run.soak import WindowChecks, rss_mib, stop_line
from harness.workloads import WORKLOADS
from nemesis.core import Composite, NemesisContext
from nemesis.registry import build_nemesis, needs, start_fs

NEMESIS = "nemesis"


@dataclass
class Progress:
    """What the terminal shows while a run goes on."""

    phase: str = "starting"
    started: float = field(default_factory=time.monotonic)
    history: HistoryWriter | None = None
    faults: int = 0
    #: the run's window checks (harness.run.soak) when its scenario has ``windows:``
    windows: WindowChecks | None = None
    _rate: tuple[float, int, float] = (0.0, 0, 0.0)  # (when, ops then, ops/s) of the last sample

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def ops_per_s(self) -> float:
        """Completed client ops per second, over the last few seconds (0 before the load)."""
        now, n = time.monotonic(), sum(self.ops().values())
        t0, n0, rate = self._rate
        if now - t0 >= 2.0:
            rate = (n - n0) / (now - t0) if t0 else 0.0
            self._rate = (now, n, rate)
        return rate

    def rss_mib(self) -> float:
        """The controller's resident set size in MiB."""
        return rss_mib()

    def ops(self) -> dict[str, int]:
        """Completed client ops so far by outcome (ok / fail / info); nemesis events excluded."""
        out = {"ok": 0, "fail": 0, "info": 0}
        if self.history is not None:
            for (proc_is_nemesis, type_), n in list(self.history.counts.items()):
                if type_ in out and not proc_is_nemesis:
                    out[type_] += n
        return out


@dataclass
class RunResult:
    """What ``run_scenario`` returns: the run folder, its verdict (verdict.json), the report's
    path (None when it could not be rendered) and what the run could not do or undo."""

    run_dir: Path
    verdict: Verdict
    report: Path | None
    problems: list[str]

    def __post_init__(self) -> None:
        # a runner passed to the suite, zoo or explore may hand back verdict.json's dict
        self.verdict = Verdict.coerce(self.verdict)


def _run_id(seed: int) -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-s{seed}"


def _link_latest(results_root: Path, run_dir: Path) -> None:
    latest = results_root / "latest"
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(run_dir.relative_to(results_root))
    except OSError:
        pass  # a convenience only


def prepare_run_dir(scn: Scenario, results_root: Path, source: str | None) -> tuple[Scenario, Path]:
    """Fix the seed, make the run folder, write scenario.yaml as run."""
    seed = scn.seed if scn.seed is not None else random.randrange(1, 2**31)
    scn = scn.model_copy(update={"seed": seed})
    run_dir = Path(results_root) / scn.name / _run_id(seed)
    (run_dir / "logs").mkdir(parents=True)
    as_run = scn.model_dump(mode="json")
    as_run.update(source=source, kafka_version=scn.cluster.kafka_version)
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(as_run, sort_keys=False))
    _link_latest(Path(results_root), run_dir)
    return scn, run_dir


def run_scenario(scn: Scenario, results_root: Path, *, source: str | None = None,
                 progress: Progress | None = None, stop: threading.Event | None = None,
                 keep_data: bool = False) -> RunResult:
    """Run one scenario on a fresh cluster; return the run folder, verdict and report path.

    ``scn`` already carries the seed, duration and Kafka version to use (the CLI merges its
    options in). ``stop`` ends the load phase early (Ctrl-C): the run still heals, drains and
    checks. The brokers' log dirs are kept or deleted as ``settle_node_data`` says. Raises
    ValueError before anything starts when the workload needs a newer Kafka (the share
    workload's ``dlq``), ArtifactError / NetError / ClusterError / WaitTimeout when the cluster
    cannot be brought up; teardown runs in every case.
    """
    progress = progress or Progress()
    from harness.workloads.share import check_release as check_share_release

    check_share_release(scn.workload, scn.cluster.kafka_version, scn.cluster.broker)  # ValueError: dlq before 4.4.0
    scn, run_dir = prepare_run_dir(scn, results_root, source)
    progress.phase = "waiting"
    try:
        # _execute's ClusterSession takes the machine's cluster lock (not for an external cluster)
        meta, problems = _execute(scn, run_dir, progress, stop or threading.Event())
    except BaseException:
        discard_node_data(run_dir)
        raise
    progress.phase = "check"
    if scn.windows.every_s:
        # a soak: the final check and the report hold the whole history; in a child process,
        # so the controller's RSS stays what its windows showed (issue 25, section 3)
        verdict, report, more = finish_in_child(run_dir, meta, keep_data)
    else:
        verdict, report, more = finish(run_dir, meta, keep_data, progress)
    progress.phase = "done"
    return RunResult(run_dir, verdict, report, problems + more)


def finish(run_dir: Path, meta: dict, keep_data: bool, progress: Progress | None = None
           ) -> tuple[Verdict, Path | None, list[str]]:
    """Check the run folder (verdict.json), keep or delete the brokers' data
    (``settle_node_data``) and render report.html. Returns the verdict, the report's path
    (None when it could not be rendered) and the problems to add to the run's."""
    # the run folder as any later reader sees it: meta.json, scenario.yaml's expected (checkers.run)
    verdict = check_run(run_dir)
    RunDir(run_dir).write_verdict(verdict)
    problems = settle_node_data(run_dir, verdict, meta, keep_data)
    if progress is not None:
        progress.phase = "report"
    report = None
    try:
        from harness.report import render_report

        report = render_report(run_dir)
    except Exception as exc:  # the verdict stands without a report; say why there is none
        problems.append(f"report could not be rendered: {type(exc).__name__}: {exc}")
    return verdict, report, problems


def _finish_child(run_dir: str, meta: dict, keep_data: bool) -> tuple[str | None, list[str]]:
    _, report, problems = finish(Path(run_dir), meta, keep_data)
    return (str(report) if report else None), problems


def finish_in_child(run_dir: Path, meta: dict, keep_data: bool) -> tuple[Verdict, Path | None, list[str]]:
    """``finish`` in a spawned process (a fresh interpreter: nothing of the controller's memory
    is shared or copied); the verdict is read back from verdict.json. A child that dies (e.g.
    killed for memory) gives an unknown verdict that says so, and no report."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as ex:
            report, problems = ex.submit(_finish_child, str(run_dir), meta, keep_data).result()
    except Exception as exc:  # BrokenProcessPool, or what finish raised (FileNotFoundError ...)
        why = f"the final check's child process failed: {type(exc).__name__}: {exc}"
        verdict = Verdict.coerce(None)
        verdict.unknown_reasons = [why]
        RunDir(run_dir).write_verdict(verdict)
        return verdict, None, [why]
    return Verdict.coerce(RunDir(run_dir).read_verdict()), (Path(report) if report else None), problems


def discard_node_data(run_dir: Path) -> None:
    """Delete the brokers' log dirs of a run (``nodes/n*/data``)."""
    for d in run_dir.glob("nodes/n*/data"):
        shutil.rmtree(d, ignore_errors=True)


def settle_node_data(run_dir: Path, verdict: Verdict | dict, meta: dict, keep_data: bool) -> list[str]:
    """Keep the brokers' log dirs when the verdict is not valid, when the brokers logged an
    event that threatens exactly-once (``meta["broker_events"]``, harness.cluster.broker_events) or
    when asked; else delete them (a run keeps configs and logs, not megabytes of segments).
    Returns the line for the run's problems that says what was kept and how to read it."""
    verdict = Verdict.coerce(verdict)
    risky = sorted(meta.get("broker_events") or {})
    if verdict.valid is True and not keep_data and not risky:
        discard_node_data(run_dir)
        return []
    kept = sorted(run_dir.glob("nodes/n*/data"))
    if not kept:
        return []
    mib = sum(f.stat().st_size for d in kept for f in d.rglob("*") if f.is_file()) / 2**20
    why = ("run not valid" if verdict.valid is not True else
           "asked to keep them" if keep_data else f"the brokers logged {', '.join(risky)}")
    return [f"{why}: the brokers' log dirs are kept for inspection ({mib:.0f} MiB in "
            f"{run_dir / 'nodes'}/n*/data; `eos-chaos dump-log {run_dir} TOPIC/PARTITION` shows a "
            "partition; delete when done)"]


def _execute(scn: Scenario, run_dir: Path, progress: Progress, stop: threading.Event) -> tuple[dict, list[str]]:
    logs = run_dir / "logs"
    # link faults (issue 4): a toxiproxy proxy in front of every broker when a fault needs it
    # an external cluster is shared: the run's topics, group ids and transactional.ids carry a
    # run prefix (harness.cluster.client_access), and the role targets name them
    names = run_names(scn.cluster, run_dir.name)
    scn = renamed_targets(scn, names)
    service = ClusterService(make_backend(scn.cluster, run_dir / "nodes", logs, run_id=run_dir.name),
                             logs, proxies="toxiproxy" in needs([f.fault for f in scn.nemesis.all_faults()]),
                             seed=scn.seed, delete_topics=scn.cluster.backend == "external",
                             group_prefix=names.prefix)
    pool = history = None
    meta: dict = {"scenario": scn.name, "workload": scn.workload.name, "seed": scn.seed,
                  "kafka_version": scn.cluster.kafka_version, "fail_on": scn.fail_on,
                  "liveness": scn.liveness.model_dump(), "backend": scn.cluster.backend}
    timings: dict[str, float] = {}
    problems: list[str] = []
    # lock, leftovers, start, teardown (harness.cluster.session); its problems land in ours
    session = ClusterSession(service, stop=stop, problems=problems,
                             on_phase=lambda phase: setattr(progress, "phase", phase))
    session.acquire()  # the machine's cluster lock: a run stopped while queued has started nothing
    try:
        session.open()  # phases cleanup and cluster: leftovers removed, brokers registered
        t0 = session.started
        meta.update(service.meta())
        ext = scn.cluster.external
        workload = cluster_workload(WORKLOADS[scn.workload.name], scn.workload, service.bootstrap, scn.seed,
                                    names, service.client_config, ext.java_client if ext else None)
        if hasattr(workload, "prepare"):  # the app workload's work dirs and logs live in the run folder
            workload.prepare(run_dir, service.meta())
        meta.update(workload.meta(), keys=workload.keys())
        # the run contract from the start (issue 23): a controller killed during the load still
        # leaves the keys, pipeline/sink mapping, liveness bounds and versions; completed at the end
        start = {**meta, "versions": collect_versions(scn, meta), "finished": False}
        RunDir(run_dir).write_meta(RunMeta.coerce(start)[0])
        min_isr = scn.cluster.topic_min_isr()  # 2 unless the scenario sets cluster.broker min.insync.replicas
        topics = workload.topics()
        service.create_topics(topics, replication_factor=min(3, scn.cluster.nodes), min_isr=min_isr)
        names = [t.name for t in topics]
        service.wait_ready(names, min_isr, 120, "every partition of the workload's topics to have a leader and an ISR")
        if scn.cluster.backend != "external":  # coordinators elected before the load (not on a cluster not ours)
            problems += service.warm_coordinators(scn.cluster.broker)
        timings["cluster_ready_s"] = round(time.monotonic() - t0, 2)
        if scn.cluster.features:  # the levels set at format time, read back from the brokers
            problems += _check_features(scn, service, logs, meta)

        progress.phase = "load"
        history = HistoryWriter(run_dir / "history.jsonl")
        progress.history = history
        pool = Pool(service.client_host, history, logs, respawn=workload.respawn)
        readers = [pool.spawn(w).name for w in workload.readers()]
        if hasattr(workload, "preload"):  # the app workload's input.preload: committed before any instance starts
            problems += workload.preload(pool, history)
        writers = [pool.spawn(w).name for w in workload.writers()]
        if hasattr(workload, "check_started"):  # the app workload: an app that cannot start ends the run
            workload.check_started(pool)
        ctx = service.nemesis_context(pool)
        timings["load_s"] = _load(scn, run_dir, ctx, history, progress, stop, service)
        if progress.windows is not None:  # the soak's window checks (harness.run.soak)
            w = progress.windows
            meta["windows"] = {"every_s": scn.windows.every_s, "checked": w.checked, "invalid": w.invalid,
                               "controller_rss_mib": rss_mib()}
            if w.stopped:
                meta["stopped_at_window"] = stop_line(w.stopped)

        t0 = time.monotonic()
        service.wait_ready(names, min_isr, 180,
                           "the cluster to recover after healing (all brokers back, every partition led)")
        progress.phase = "drain"
        if hasattr(workload, "settle"):  # the app workload: input stops, the app catches up
            problems += workload.settle(pool)
        problems += pool.stop(writers, timeout=90)
        drain_spec = workload.drain()
        if drain_spec is not None:
            # a transaction the writers left open holds its partitions' last stable offset until
            # its coordinator aborts it: wait for that before the drain reads (issue 46)
            drain_spec = _settle_open_transactions(scn, service, history, run_dir, meta, drain_spec, progress)
            drain = pool.spawn(drain_spec)
            if not drain.wait(timeout=180):
                problems.append("final drain did not finish in 180 s; killed")
                drain.kill()
            drained = next((c for c in drain.control if c.get("drained")), None)
            meta["drain"] = drained
            if hasattr(workload, "drained"):
                workload.drained(drained)
            meta["final_reads_complete"] = bool(drained and drained["complete"])
        meta.update(workload.finish(run_dir, history) or {})
        if (meta.get("cluster_features_check") or {}).get("finalized") is None:  # not read after the start
            # cluster.features against what the brokers finalized, as the Java drain read it
            problems += feature_mismatches(scn.cluster.features, meta.get("broker_features"))
        problems += pool.stop(readers, timeout=30)
        timings["heal_and_drain_s"] = round(time.monotonic() - t0, 2)
    finally:
        progress.phase = "teardown"
        problems += _teardown(pool, history)
        session.close()  # the cluster: what it could not undo goes into problems; lock released
        meta["timings"] = timings
        meta["teardown_problems"] = problems
        meta["broker_events"] = scan_broker_logs(logs)
        meta["client_events"] = scan_client_logs(logs)
        meta["versions"] = collect_versions(scn, meta)
        run_meta, bad = RunMeta.coerce(meta)  # the run contract (checkers.run); never fails a run
        meta["teardown_problems"] += [f"meta.json: {b}" for b in bad]
        RunDir(run_dir).write_meta(run_meta if not bad else meta)  # atomically: never a truncated file
    return meta, problems


def _check_features(scn: Scenario, service: ClusterService, logs: Path, meta: dict) -> list[str]:
    """Read the brokers' finalized feature levels once after the start
    (harness.cluster.features_check, kafka-features.sh describe in the client namespace) into
    meta.json ``cluster_features_check`` ({asked, finalized, note}); a level that differs from
    ``cluster.features`` is a problem of the run. Never raises."""
    from harness.cluster.features_check import read_finalized

    found, why = None, "an external cluster is not formatted by the harness"
    if scn.cluster.backend != "external":
        try:
            found, why = read_finalized(scn.cluster.kafka_version, service.backend.bootstrap,
                                        service.client_host.exec_prefix(), logs / "kafka-features.txt")
        except Exception as exc:  # a backend without a client namespace to run it in
            found, why = None, f"{type(exc).__name__}: {exc}"[:200]
    meta["cluster_features_check"] = {"asked": dict(scn.cluster.features), "finalized": found,
                                      **({"note": why} if why else {})}
    return feature_mismatches(scn.cluster.features, found)


def _settle_open_transactions(scn: Scenario, service: ClusterService, history: HistoryWriter, run_dir: Path,
                              meta: dict, drain_spec, progress: Progress):
    """harness.cluster.open_txns.settle between the writers' stop and the final drain: wait (bounded)
    for the transactions that hold a key's last stable offset to end, record which were open
    (open-transactions.json, logs/kafka-transactions.txt, meta.json ``open_transactions``, a
    nemesis info event ``open-transactions``) and leave out of the drain the keys still held by
    a transaction its coordinator lists as open. Returns the drain's spec; never raises."""
    from harness.cluster import open_txns

    keys = meta.get("keys") or []
    if not keys or not getattr(service, "agent", None):
        return drain_spec
    progress.phase = "open transactions"
    interval = int(scn.cluster.broker.get("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                                          open_txns.ABORT_INTERVAL_MS))
    tool, why = None, ""
    if scn.cluster.backend == "external" and service.client_config:
        why = "the external cluster's clients need settings kafka-transactions.sh is not given"
    else:
        try:
            tool, why = open_txns.make_tool(scn.cluster.kafka_version, service.backend.bootstrap,
                                            service.client_host.exec_prefix(),
                                            run_dir / "logs" / "kafka-transactions.txt")
        except Exception as exc:  # a backend without a client namespace to run it in
            why = f"{type(exc).__name__}: {exc}"[:200]
    try:
        res = open_txns.settle(lambda: service.agent.request("offsets", timeout=10, keys=keys), tool,
                               run_s=lambda: history.now() / 1e9, abort_interval_ms=interval, tool_note=why)
        res.write(run_dir)
    except Exception as exc:  # the record is a help, never a reason for a run to fail
        meta["open_transactions"] = {"notes": [f"not asked: {type(exc).__name__}: {exc}"[:300]]}
        return drain_spec
    value = res.event_value()
    history.append({"process": NEMESIS, "type": "info", "f": open_txns.EVENT_F, "value": value})
    meta["open_transactions"] = value
    cfg_keys = drain_spec.cfg.get("keys") if isinstance(drain_spec.cfg, dict) else None
    if res.unjudged and isinstance(cfg_keys, list):
        cfg = dict(drain_spec.cfg, keys=[k for k in cfg_keys if k not in res.unjudged])
        drain_spec = type(drain_spec)(drain_spec.name, drain_spec.role, cfg)
    return drain_spec


def _load(scn: Scenario, run_dir: Path, ctx: NemesisContext, history: HistoryWriter,
          progress: Progress, stop: threading.Event, service: ClusterService) -> float:
    """The load phase: the nemesis follows its schedule until ``scn.duration``, then heals."""
    nemesis = build_nemesis([f.fault for f in scn.nemesis.all_faults()], ctx)
    nemesis.setup()
    # the seeded draw, or the scenario's explicit nemesis.schedule (eos-chaos explore)
    schedule = scn.nemesis.steps(scn.seed, scn.duration, ctx.cluster.node_ids(), ctx.clients.client_names())
    (run_dir / "schedule.json").write_text(json.dumps([s.to_dict() for s in schedule], indent=1))
    starts = start_fs()
    if scn.nemesis.start_after_ok and not stop.is_set():
        _await_first_ok(scn, history, ctx.clients, stop)
    load_start = time.monotonic()
    if scn.windows.every_s:  # soak: check closed windows of the history while the load runs
        progress.windows = WindowChecks(history, run_dir, scn.windows.every_s, allowed=scn.expected,
                                        stop_on_invalid=scn.windows.stop_on_invalid, stop=stop).start()
    try:
        for step in schedule:
            if stop.wait(max(0.0, load_start + step.at - time.monotonic())):
                break
            nemesis_op(history, nemesis, step.op())
            progress.faults += step.f in starts
        stop.wait(max(0.0, load_start + scn.duration - time.monotonic()))
    finally:
        if progress.windows is not None:
            progress.windows.close()
        progress.phase = "heal"
        _heal(history, nemesis, service)
    return round(time.monotonic() - load_start, 2)


def _await_first_ok(scn: Scenario, history: HistoryWriter, pool: Pool, stop: threading.Event) -> None:
    """nemesis.start_after_ok: hold the fault schedule and the load's clock until the named
    clients have each completed an ok op (at most ``nemesis.start_after_ok_bound``), recorded as a pair of
    nemesis info events so the history says when the clock started and how long it waited."""
    patterns = list(scn.nemesis.start_after_ok)
    history.append({"process": NEMESIS, "type": "info", "f": START_AFTER_OK, "value": {"clients": patterns}})
    t0 = time.monotonic()
    names = pool.client_names()
    unknown = [p for p in patterns if not any(fnmatch.fnmatch(n, p) for n in names)]
    # a glob that names no client would hold the faults back for the whole load: not waited for
    bound = scn.nemesis.start_after_ok_bound(scn.duration)
    missing = pool.wait_first_ok([p for p in patterns if p not in unknown], timeout=bound, stop=stop)
    result = (f"no client matches {unknown} (clients: {names}); " if unknown else "") + (
        f"no ok op from {missing} within {bound:g} s; " if missing else "")
    history.append({"process": NEMESIS, "type": "info", "f": START_AFTER_OK,
                    "value": {"clients": patterns, "waited_s": round(time.monotonic() - t0, 2),
                              "result": result + "started anyway" if result else "ok"}})


def nemesis_op(history: HistoryWriter, nemesis: Composite, op: dict) -> None:
    """Apply one fault and record it: an info event when it begins and one when it is done."""
    history.append({"process": NEMESIS, "type": "info", "f": op["f"], "value": op["value"]})
    try:
        done = nemesis.invoke(op)
    except Exception as exc:  # a fault that could not be applied is recorded, not fatal
        done = {"f": op["f"], "value": dict(op["value"], result=f"error: {type(exc).__name__}: {exc}")}
    history.append({"process": NEMESIS, "type": "info", "f": done["f"], "value": done["value"]})


def _heal(history: HistoryWriter, nemesis: Composite, cluster: ClusterService) -> None:
    history.append({"process": NEMESIS, "type": "info", "f": "heal", "value": None})
    problems = nemesis.teardown()
    done = cluster.heal()  # also starts a node that died on its own
    history.append({"process": NEMESIS, "type": "info", "f": "heal",
                    "value": {"result": done, "problems": problems}})


def _teardown(pool, history) -> list[str]:
    """The run's workers and history, before the cluster's own teardown (ClusterSession.close)."""
    problems: list[str] = []
    steps = [
        ("workers", lambda: pool.shutdown() if pool else []),
        ("history", lambda: history.close() if history else None),
    ]
    for what, step in steps:
        try:
            problems += step() or []
        except Exception as exc:  # keep tearing down; report what was left
            problems.append(f"teardown of {what} failed: {type(exc).__name__}: {exc}")
    return problems
