"""``app``: the user's own exactly-once application under the nemesis, checked end to end.

The harness writes unique integer values into the input topics (``input``: transactional or
idempotent producers, as txn-queue's, aborting on purpose with ``abort_probability``), the
application (``app``: ``instances`` processes of the user's ``command``, each supervised by an
``app`` worker, harness.workers.app_instance) turns them into output records, and the
harness's read_committed readers observe the output topics during the run and drain them at the
end. ``output.match`` says how an output record names its input (harness.workers.app_match);
checkers.finders.app_end_to_end judges loss, duplicates, aborted reads, phantoms, order and lag.

Instances run in the client namespace beside the harness's own clients; they are client
workers named ``app-<i>``, so every client fault applies to them by name (``clients:
["app-*"]``): kill-client (SIGKILL, restarted per the pool), pause-client, stop-client (SIGTERM,
then started again: a rolling deploy) and zombie (paused, a replacement started with the same
arguments, the paused one resumed: the application must fence it).

After the load: the input producers stop, then the application gets ``output.catch_up_s``
seconds to name every committed input in its output (harness.workers.app_catch_up, ending early
when no new output arrives for ``output.quiet_s``), then it is stopped (SIGTERM) and the final
drain reads input and output to their ends.

A batch application: ``input.preload`` commits that many records before any instance starts
(``preload``); with ``app.done: exit`` the settle first waits for every instance to exit 0
(``await_done``). An aggregation: ``output.verify`` runs the user's verifier on the committed
input and the drained output after the drain (``verify``; harness.workloads.app_verify).

A PySpark job (``app.pyspark``, harness.workers.app_pyspark) writes to a topic (``sink: kafka``)
or to Spark's file sink (``sink: parquet``): parquet files in ``<run>/app/<i>/sink``, the
instance's work dir beside its checkpoint. There the output is not a topic: each sink folder is
one output key, ``app/<i>/sink``, and an output record's offset its position in the sink's
committed order (harness.workers.app_files); the readers, the catch-up wait and the final drain
read the files its ``_spark_metadata`` log lists, and nothing else. ``output.topics`` and
``output.partitions`` then mean nothing: setting either is an error.

The scenario's models (AppSpec and its parts, the placeholders) are in
harness.workloads.app_spec.
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

from checkers.finders.app_end_to_end import input_crashed
from checkers.finders.unavailable import PRELOAD

from harness.cluster.docker.nodes import labels as docker_labels
from harness.workers.app_files import SINK_DIR, sink_key
from harness.workloads.app_spec import (  # noqa: F401 - the models, re-exported for the workload's users
    DEFAULT_OUTPUT_PARTITIONS, DEFAULT_OUTPUT_TOPICS, EXAMPLES, PLACEHOLDERS, AppInput, AppOutput, AppProcess,
    AppPySpark, AppSpec, fill, placeholders_in)
from harness.workloads import app_verify
from harness.workloads.app_input_crash import input_crash
from harness.workloads.base import TopicSpec, WorkerSpec
from harness.workloads.txn_queue import VALUE_STRIDE


class App:
    """The ``app`` workload (module docstring)."""

    def __init__(self, spec: AppSpec, bootstrap: str, seed: int, names=None):
        from harness.cluster.client_access import RunNames

        self.spec, self.bootstrap, self.seed = spec, bootstrap, seed
        self.names = names or RunNames()
        self._spawns = itertools.count(1)
        self.run_dir: Path | None = None
        self.catch_up: dict | None = None
        self.docker_network: str | None = None
        self.drain_result: dict | None = None
        self.preloaded: dict | None = None  # input.preload, how it went
        self.batch: dict | None = None  # done: exit, how the wait for every instance went
        self.input_crashed: dict | None = None  # every input producer crashed before writing (app_input_crash)
        #: a worker spec with the cluster's security settings (set by SecureWorkload on a secured cluster)
        self.secure = lambda spec: spec

    # -- topics and keys ---------------------------------------------------------------
    def in_topics(self) -> list[str]:
        return [self.names.topic(t) for t in self.spec.input.topics]

    @property
    def file_sink(self) -> bool:
        """The application writes Spark's file sink (``pyspark.sink: parquet``), not a topic."""
        ps = self.spec.app.pyspark
        return ps is not None and ps.sink == "parquet"

    def out_topics(self) -> list[str]:
        """The output topics ([] for a file sink)."""
        return [] if self.file_sink else [self.names.topic(t) for t in self.spec.output.topics]

    def topics(self) -> list[TopicSpec]:
        return ([TopicSpec(t, self.spec.input.partitions) for t in self.in_topics()]
                + [TopicSpec(t, self.spec.output.partitions) for t in self.out_topics()])

    def input_keys(self) -> list[str]:
        return [f"{t}/{p}" for t in self.in_topics() for p in range(self.spec.input.partitions)]

    def output_keys(self) -> list[str]:
        """Output topics' ``topic/partition`` keys, or a file sink's folders ``app/<i>/sink``."""
        if self.file_sink:
            return [sink_key(i) for i in range(self.spec.app.instances)]
        return [f"{t}/{p}" for t in self.out_topics() for p in range(self.spec.output.partitions)]

    def output_dirs(self) -> dict[str, str]:
        """A file sink's output key -> its folder (``<run>/app/<i>/sink``); {} for topics."""
        if not self.file_sink:
            return {}
        run = self.run_dir or Path.cwd()
        return {sink_key(i): str(run / "app" / str(i) / SINK_DIR) for i in range(self.spec.app.instances)}

    def kafka_output_keys(self) -> list[str]:
        """The output keys the harness reads from Kafka ([] for a file sink)."""
        return [] if self.file_sink else self.output_keys()

    def keys(self) -> list[str]:
        """Every key the harness reads from Kafka: input, and output unless a file sink."""
        return self.input_keys() + self.kafka_output_keys()

    # -- the run's hooks (harness.run.runner) ------------------------------------------
    def prepare(self, run_dir: Path, service_meta: dict | None = None) -> None:
        """Know the run folder (instances' work dirs and logs live there) and the cluster
        (``service_meta``: an image needs the docker backend's network). Raises AppError for
        an image on another backend."""
        self.run_dir = Path(run_dir).resolve()
        self.docker_network = (service_meta or {}).get("docker_network")
        if self.spec.app.image and not self.docker_network:
            raise AppError(f"app.image {self.spec.app.image} needs the docker backend: run with --backend docker "
                           "(or give app.command to run it as a process)")

    def base_dir(self) -> str:
        """The command's working directory (the scenario's folder unless ``app.cwd``), where
        a ``{python: ...}`` match and a ``pyspark`` job are imported from."""
        return (self.spec.app.cwd or str(Path.cwd())).replace("{examples}", str(EXAMPLES))

    def placeholder_values(self, instance: int) -> dict[str, Any]:
        from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION

        run = self.run_dir or Path.cwd()
        group = self.names.client_id("eosc-app")
        values = {
            "bootstrap": self.bootstrap, "instance": instance, "instances": self.spec.app.instances,
            "work_dir": str(run / "app" / str(instance)),
            "client_properties": str(run / "app" / str(instance) / "client.properties"),
            "input_topic": self.in_topics()[0], "input_topics": ",".join(self.in_topics()),
            "output_topic": (self.out_topics() or [""])[0], "output_topics": ",".join(self.out_topics()),
            "group": group, "transactional_id": f"{group}-{instance}",
            "python": sys.executable, "examples": str(EXAMPLES), "scenario_dir": self.base_dir(),
            "group_protocol": self.spec.group_protocol, "assignor": self.spec.assignor or "",
        }
        used = {p for text in [*(self.spec.app.command or []), *self.spec.app.env.values()] for p in placeholders_in(text)}
        if "kafka_libs" in used:  # resolved (fetched once, cached) only when a command uses it
            from harness.cluster.artifacts import java_client_libs

            values["kafka_libs"] = f"{java_client_libs(DEFAULT_JAVA_CLIENT_VERSION)}/*"
        if "kafka_tools" in used:  # Kafka's own jars and kafka-tools (4.x), fetched once, cached
            from harness.cluster.artifacts import kafka_tools_command

            values["kafka_tools"] = kafka_tools_command(DEFAULT_JAVA_CLIENT_VERSION, "-")[2]
        return values

    def _argv(self, instance: int, values: dict[str, Any]) -> list[str]:
        a = self.spec.app
        if a.image is not None:
            return [fill(x, values) for x in a.command or []]
        if a.command is not None:
            return [fill(x, values) for x in a.command]
        ps = a.pyspark
        from harness.cluster.artifacts import spark_connector_jars

        jars = ",".join(str(j) for j in spark_connector_jars())
        work = Path(values["work_dir"])
        sink = (["--sink", "parquet", "--path", str(work / SINK_DIR)] if ps.sink == "parquet"
                else ["--sink", "kafka", "--output", values["output_topic"]])
        return [sys.executable, "-m", "harness.workers.app_pyspark", "--job", ps.job, "--jars", jars,
                "--bootstrap", values["bootstrap"], "--input", values["input_topics"], *sink,
                "--checkpoint", str(work / "checkpoint"), "--isolation-level", ps.isolation_level,
                "--master", ps.master, "--base-dir", self.base_dir()]

    def _instance(self, i: int) -> WorkerSpec:
        a = self.spec.app
        values = self.placeholder_values(i)
        run = self.run_dir or Path.cwd()
        return WorkerSpec(f"app-{i}", "app", {
            "argv": self._argv(i, values), "env": {k: fill(v, values) for k, v in a.env.items()},
            "cwd": self.base_dir(), "work_dir": values["work_dir"],
            "instance": i, "restart": a.restart, "done": a.done, "startup_s": a.startup_s,
            "stop_grace_s": a.stop_grace_s, "log": str(run / "logs" / f"app-{i}.log"),
            "client_properties": values["client_properties"], "bootstrap": self.bootstrap,
            **({"image": a.image, "network": self.docker_network, "run_id": run.name,
                "labels": docker_labels(run.name, app=str(i))}
               if a.image else {}),
        })

    def _producer(self, i: int, name: str = "producer", stop_after: int | None = None) -> WorkerSpec:
        s = self.spec.input
        cfg = {"bootstrap": self.bootstrap, "keys": self.input_keys(), "seed": self.seed * 1000 + i,
               "value_base": next(self._spawns) * VALUE_STRIDE, "max_sends": s.max_sends_per_txn,
               "producer": s.producer, **({"stop_after": stop_after} if stop_after else {})}
        if s.transactional:
            return WorkerSpec(f"{name}-{i}", "txn-producer", dict(
                cfg, transactional_id=self.names.client_id(f"eosc-{'in' if name == 'producer' else name}-{i}"),
                abort_probability=s.abort_probability, flush_timeout_s=None, inflight_abort="replace"))
        return WorkerSpec(f"{name}-{i}", "idempotent-producer",
                          dict(cfg, producer={"enable.idempotence": True, **s.producer}))

    def preload(self, pool, history, timeout_s: float = 600.0) -> list[str]:
        """``input.preload``: commit that many records to the input before any instance starts,
        by up to 4 producers (``preload-<i>``, each stopping once its share is committed: its
        ops are in the history like the live producers'), between two nemesis-process
        ``preload`` info events (checkers.finders.unavailable counts outages from the second). The
        producers leave the pool when done, so no fault picks them. Returns problems (a
        producer that did not finish within ``timeout_s``)."""
        import time

        n = self.spec.input.preload
        if not n:
            return []
        k = min(4, max(1, self.spec.input.producers))
        specs = [self._producer(i, "preload", n // k + (i < n % k)) for i in range(k)]
        history.append({"process": "nemesis", "type": "info", "f": PRELOAD, "value": {"records": n, "producers": k}})
        t0 = time.monotonic()
        handles = [pool.spawn(self.secure(spec)) for spec in specs]
        problems = []
        for w in handles:
            if not w.wait(timeout=max(1.0, t0 + timeout_s - time.monotonic())):
                w.kill()
                problems.append(f"input.preload: {w.name} did not commit its share within {timeout_s:.0f} s; killed")
            pool.workers.pop(w.name, None)  # no fault picks a preload producer (Pool.client_names)
        self.preloaded = {"records": n, "producers": k, "s": round(time.monotonic() - t0, 2),
                          "complete": not problems}
        history.append({"process": "nemesis", "type": "info", "f": PRELOAD, "value": self.preloaded})
        return problems

    def _reader_cfg(self, group: str) -> dict:
        files = {"output_dirs": self.output_dirs()} if self.file_sink else {}
        return {"bootstrap": self.bootstrap, "keys": self.keys(), "output_keys": self.kafka_output_keys(),
                "match": self.spec.output.match, "base_dir": self.base_dir(), "group_id": group,
                "isolation_level": "read_committed", "consumer": self.spec.consumer, **files}

    def readers(self) -> list[WorkerSpec]:
        return [WorkerSpec(f"consumer-{i}", "consumer", self._reader_cfg(self.names.client_id(f"eosc-reader-{i}")))
                for i in range(self.spec.consumers)]

    def producers(self) -> list[WorkerSpec]:
        return [self._producer(i) for i in range(self.spec.input.producers)]

    def writers(self) -> list[WorkerSpec]:
        return self.producers() + [self._instance(i) for i in range(self.spec.app.instances)]

    def drain(self) -> WorkerSpec:
        cfg = self._reader_cfg(self.names.client_id("eosc-final"))
        if self.spec.output.verify is not None:  # the user's verifier reads the records the drain read
            out = app_verify.files(self.run_dir or Path.cwd())["output"]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.unlink(missing_ok=True)
            cfg["dump_output"] = str(out)
        return WorkerSpec("final-reader", "drain", cfg)

    def verify(self, run_dir: Path) -> dict:
        """output.verify: write the committed input (from the history) beside the output the
        drain read, run the user's verifier, return its result (harness.workloads.app_verify)."""
        v = self.spec.output.verify
        run_dir = Path(run_dir).resolve()  # the verifier runs in the scenario's folder
        f = app_verify.files(run_dir)
        f["input"].parent.mkdir(parents=True, exist_ok=True)
        try:
            n_in, _ = app_verify.write_inputs(run_dir, self.input_keys())
            n_out = app_verify.sort_output(f["output"])
        except (OSError, ValueError) as e:
            return {"command": v.command, "findings": [], "count": 0, "stats": None,
                    "error": f"output.verify: the harness could not write its files: {e}"}
        values = {**self.placeholder_values(0), "input_file": str(f["input"]), "output_file": str(f["output"]),
                  "aborted_file": str(f["aborted"])}
        argv = [fill(x, values) for x in v.command]
        res = app_verify.run_verifier(argv, self.base_dir(), v.timeout_s, run_dir / "logs" / "verify.log")
        return dict(res, files={k: str(p.relative_to(run_dir)) for k, p in f.items()}, inputs=n_in, outputs=n_out)

    def respawn(self, spec: WorkerSpec) -> WorkerSpec:
        """Input producers: the same transactional.id, fresh values. App instances: the same
        arguments (the same instance number, so the same transactional.id if it derives one),
        marked ``restarted``: an exit within ``startup_s`` of a restart is a crash to restart
        with a backoff, not an application that will not start (harness.workers.app_instance)."""
        if spec.role == "app":
            return WorkerSpec(spec.name, spec.role, dict(spec.cfg, restarted=True))
        if "value_base" not in spec.cfg:  # readers: as they were
            return spec
        n = next(self._spawns)
        return WorkerSpec(spec.name, spec.role, dict(spec.cfg, value_base=n * VALUE_STRIDE,
                                                     seed=spec.cfg.get("seed", 0) + n * 7919))

    def check_started(self, pool, wait_s: float | None = None) -> None:
        """Raise AppError when an instance failed to start: the command is not found, or its
        first run exited within ``startup_s`` (the reason and its log's last lines). Waits
        until every instance has said it is up (ran ``startup_s``), done (a batch app that
        finished) or failed; each instance's window starts when its own worker started it, so a
        slow worker start (a loaded machine) does not end the wait early. ``wait_s`` bounds the
        whole wait (default: ``startup_s`` + 30 s); past it the run goes on. Then raises AppError
        when every input producer has already crashed without writing anything (the first lines
        of each crash and where their logs are): the run would have no input."""
        import time

        deadline = time.monotonic() + (wait_s if wait_s is not None else self.spec.app.startup_s + 30.0)
        pending = [f"app-{i}" for i in range(self.spec.app.instances)]
        gone: dict[str, int] = {}
        while pending and time.monotonic() < deadline:
            for name in list(pending):
                w = pool.workers.get(name)
                control = [c for c in (w.control if w else []) if isinstance(c, dict)]
                failed = next((c["app_failed"] for c in control if "app_failed" in c), None)
                if failed:
                    log = f"; its log ends: {failed['log']}" if failed.get("log") else f"; see logs/{name}.log"
                    raise AppError(f"app instance {name} did not start: {failed['reason']}{log}")
                if any("app_up" in c or "app_done" in c or "done" in c for c in control):
                    pending.remove(name)
                elif w is not None and not w.alive():  # gone without a word (its last words read next round)
                    gone[name] = gone.get(name, 0) + 1
                    if gone[name] > 5:
                        pending.remove(name)
            time.sleep(0.2)
        crash = input_crash(pool, [w.name for w in self.producers()], self._logdir(pool))
        if crash:  # no input would come (the pool restarts only what a fault killed): stop now, say why
            raise AppError(input_crashed(crash, "so the run is stopped"))

    def _logdir(self, pool) -> Path:
        """The workers' logs (``<run>/logs``): the pool's folder."""
        return Path(getattr(pool, "logdir", None) or (self.run_dir or Path.cwd()) / "logs")

    def settle(self, pool, stop_timeout: float = 90.0) -> list[str]:
        """After the load: note input producers that all crashed before writing anything
        (harness.workloads.app_input_crash), stop the input producers, give the application
        time to catch up, record how it went (``finish`` puts it in meta.json). Returns problems."""
        producers = [w.name for w in self.producers()]
        # all of them dead before writing anything: the verdict says why there is no input
        self.input_crashed = input_crash(pool, producers, self._logdir(pool))
        problems = start_failures(pool) + pool.stop(producers, timeout=stop_timeout)
        o = self.spec.output
        if self.spec.app.done == "exit":  # a batch app: every instance runs to completion first
            problems += self.await_done(pool, o.catch_up_s)
        w = pool.spawn(self.secure(WorkerSpec("app-catch-up", "app-catch-up", {
            "bootstrap": self.bootstrap, "input_keys": self.input_keys(), "output_keys": self.kafka_output_keys(),
            **({"output_dirs": self.output_dirs()} if self.file_sink else {}), "match": o.match, "base_dir": self.base_dir(), "bound_s": o.catch_up_s, "quiet_s": o.quiet_s,
            "group_id": self.names.client_id("eosc-catch-up"), "consumer": self.spec.consumer,
            "app_group": self.names.client_id("eosc-app")})))  # its committed offsets: loss or stall
        if not w.wait(timeout=o.catch_up_s + 60):
            w.kill()
            problems.append(f"the catch-up wait did not end within {o.catch_up_s + 60:.0f} s; killed")
        self.catch_up = next((c for c in w.control if "caught_up" in c), None)
        # with output.verify no record names an input: the wait ends when the output is quiet
        if self.catch_up and not self.catch_up["caught_up"] and o.verify is None:
            problems.append(f"the application did not catch up: {self.catch_up['covered']} of "
                            f"{self.catch_up['inputs']} committed inputs in its output after "
                            f"{self.catch_up['waited_s']} s ({self.catch_up['ended']})")
        return problems

    def await_done(self, pool, bound_s: float) -> list[str]:
        """``done: exit``: wait (at most ``bound_s``) until every instance's current worker says
        its application exited 0 (``app_done``); a killed instance was restarted by the pool,
        a failed one by its worker (``restart``). Records how it went (``self.batch``)."""
        import time

        t0 = time.monotonic()
        names = [f"app-{i}" for i in range(self.spec.app.instances)]

        def current(n: str) -> str:  # a zombie's replacement stands for the instance
            while n in pool.replacements:
                n = pool.replacements[n]
            return n

        def pending() -> list[str]:
            return [n for n in names if not any(isinstance(c, dict) and "app_done" in c
                                                for c in getattr(pool.workers.get(current(n)), "control", []))]
        while pending() and time.monotonic() - t0 < bound_s:
            time.sleep(0.5)
        left = pending()
        self.batch = {"done": not left, "waited_s": round(time.monotonic() - t0, 1), "not_done": left,
                      "last_exit": {n: last_exit(pool, current(n)) for n in left}}
        # the verdict is unknown then (checkers.finders.app_end_to_end.batch_unfinished names them)
        return [f"done: exit: {', '.join(left)} had not exited 0 after {bound_s:g} s"] if left else []

    def drained(self, ctl: dict | None) -> None:
        self.drain_result = ctl

    def meta(self) -> dict:
        o = self.spec.output
        return {"transactional": self.spec.input.transactional, "isolation_level": "read_committed",
                "app": {"input_keys": self.input_keys(), "output_keys": self.output_keys(),
                        "semantics": o.semantics, "order": o.order, "lag_bound_s": o.lag_bound_s,
                        "match": o.match, "instances": self.spec.app.instances,
                        "input_cycles": self.spec.input.cycles,
                        # replaced by the verifier's result at the end; a run cut short stays unknown
                        **({"verify": {"command": o.verify.command, "findings": [], "count": 0,
                                       "error": "output.verify did not run (the run ended before its final drain)"}}
                           if o.verify is not None else {})}}

    def finish(self, run_dir: Path, history) -> dict:
        app = self.meta()["app"]
        d = self.drain_result or {}
        app["drain_complete"] = bool(d.get("complete"))
        stats = d.get("app") or {}
        app["matched"], app["unmatched"] = stats.get("matched", 0), stats.get("unmatched", 0)
        if self.spec.output.verify is not None:  # no record names an input: the verifier judges
            stats = {}
            if app["drain_complete"]:
                app["verify"] = self.verify(Path(run_dir))
            else:
                app["verify"]["error"] = ("output.verify was not run: the final drain did not read the output "
                                          "to its end (meta.json drain)")
        if stats and stats.get("matched", 0) == 0 and stats.get("unmatched", 0) == 0 and (self.catch_up or {}).get("inputs"):
            where = ", ".join(self.out_topics()) or "its sink (no committed file in " + ", ".join(self.output_keys()) + ")"
            app["match_error"] = (f"the application wrote no record to {where} although "
                                  f"{self.catch_up['inputs']} inputs were committed: is it reading "
                                  f"{', '.join(self.in_topics())} and writing there? see logs/app-*.log")
        if stats and stats.get("matched", 0) == 0 and stats.get("unmatched", 0) > 0:
            samples = "; ".join(f"{s['at']} key={s['key']} value={s['value']}" for s in stats.get("samples", []))
            app["match_error"] = (f"the match {o_repr(self.spec.output.match)} named no input in any of the "
                                  f"{stats['unmatched']} output records; samples: {samples}")
        if self.preloaded:
            app["preload"] = self.preloaded
        if self.batch:
            app["batch"] = self.batch
        if self.input_crashed:
            app["input_crashed"] = self.input_crashed
        app["catch_up"] = self.catch_up
        app["caught_up"] = self.catch_up["caught_up"] if self.catch_up else None
        return {"app": app}


def start_failures(pool) -> list[str]:
    """One line per app instance whose supervisor could not start the application again after
    the run's first start (``app_failed`` from harness.workers.app_instance: command not found,
    a Docker error): that instance stayed down from then on, which the verdict alone shows at
    most as stalled inputs. ``[]`` when every start worked."""
    out = []
    for name, w in sorted(pool.workers.items()):
        if getattr(w, "role", None) != "app":
            continue
        for c in getattr(w, "control", []):
            if isinstance(c, dict) and isinstance(c.get("app_failed"), dict):
                out.append(f"app instance {name} could not be started again: {c['app_failed'].get('reason')}; "
                           f"it stayed down for the rest of the run (logs/{name}.log)")
    return out


def last_exit(pool, worker: str) -> dict:
    """How an instance's supervisor ``worker`` last saw its application (its control messages,
    harness.workers.app_instance): ``{"code": last exit code or None (none since this
    supervisor started), "by": "self" | "stop" | "restart" | None, "running": the application
    started again after that exit (or never exited) and the supervisor is alive, "worker"}``."""
    w = pool.workers.get(worker)
    ctl = [c for c in getattr(w, "control", []) if isinstance(c, dict)]
    exits = [(i, c["app_exit"]) for i, c in enumerate(ctl) if isinstance(c.get("app_exit"), dict)]
    starts = [i for i, c in enumerate(ctl) if "app_started" in c]
    i, e = exits[-1] if exits else (-1, {})
    alive = bool(w is not None and w.alive())
    return {"code": e.get("code"), "by": e.get("by"), "running": alive and bool(starts) and starts[-1] > i,
            "worker": worker}


def o_repr(match: Any) -> str:
    return match if isinstance(match, str) else "{" + ", ".join(f"{k}: {v}" for k, v in match.items()) + "}"


class AppError(RuntimeError):
    """The application could not be started; the message says why and what its log says."""
