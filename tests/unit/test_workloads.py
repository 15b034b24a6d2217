"""Unit tests of the idempotent and eos-pipeline workloads, the processor's output values,
the zombie nemesis (on a fake ClientControl) and the pool's replacement bookkeeping."""
import pytest
from pydantic import ValidationError

from harness.run.scenario import Scenario
from harness.workers.processor import OUTPUT_FACTOR, output_value
from harness.workloads import WORKLOADS, EosPipelineSpec, IdempotentSpec
from harness.workloads.base import WorkerSpec
from nemesis.core import NemesisContext
from nemesis.registry import FAULTS
from nemesis.schedule import fault_schedule
from nemesis.zombie import ZombieNemesis


def pipeline(**kw):
    return WORKLOADS["eos-pipeline"](EosPipelineSpec(**kw), "198.18.0.11:9092", 7)


def idem(**kw):
    return WORKLOADS["idempotent"](IdempotentSpec(**kw), "198.18.0.11:9092", 7)


# -- idempotent ------------------------------------------------------------------------------
def test_idempotent_writers_turn_idempotence_on_and_keep_values_apart():
    w = idem(producers=3)
    ws = w.writers()
    assert [x.role for x in ws] == ["idempotent-producer"] * 3
    assert all(x.cfg["producer"]["enable.idempotence"] is True for x in ws)
    bases = [x.cfg["value_base"] for x in ws] + [w.respawn(ws[0]).cfg["value_base"]]
    assert len(set(bases)) == 4
    assert w.meta()["transactional"] is False and w.drain().role == "drain"


def test_idempotent_negative_control_switch_and_extra_settings():
    w = idem(idempotence=False, producer={"retries": 100, "request.timeout.ms": 2000})
    cfg = w.writers()[0].cfg["producer"]
    assert cfg == {"enable.idempotence": False, "retries": 100, "request.timeout.ms": 2000}
    assert w.meta()["idempotence"] is False


# -- eos-pipeline ----------------------------------------------------------------------------
def test_pipeline_topics_keys_and_meta_for_the_checker():
    w = pipeline(partitions=3)
    assert [(t.name, t.partitions) for t in w.topics()] == [("in", 3), ("out", 3)]
    assert w.keys() == ["in/0", "in/1", "in/2", "out/0", "out/1", "out/2"]
    p = w.meta()["pipeline"]
    assert p["keys"] == {"in/0": "out/0", "in/1": "out/1", "in/2": "out/2"}
    assert p["group_id"] == "eosc-proc" and p["value_divisor"] == OUTPUT_FACTOR


def test_pipeline_writers_processors_and_drain():
    w = pipeline(processors=2, input_producers=1)
    ws = {x.name: x for x in w.writers()}
    assert ws["producer-0"].role == "txn-producer" and ws["producer-0"].cfg["keys"] == ["in/0", "in/1", "in/2", "in/3"]
    procs = [ws["processor-0"], ws["processor-1"]]
    assert {p.cfg["transactional_id"] for p in procs} == {"eosc-proc-0", "eosc-proc-1"}
    assert {p.cfg["group_id"] for p in procs} == {"eosc-proc"}
    assert [p.cfg["group_instance_id"] for p in procs] == ["processor-0", "processor-1"]
    assert len({p.cfg["spawn"] for p in procs}) == 2
    d = w.drain()
    assert d.role == "pipeline-drain" and d.cfg["pipeline_group"] == "eosc-proc"
    assert d.cfg["input_keys"] == ["in/0", "in/1", "in/2", "in/3"] and set(d.cfg["keys"]) == set(w.keys())


def test_pipeline_respawn_keeps_the_id_and_takes_a_fresh_spawn_number():
    w = pipeline()
    ws = {x.name: x for x in w.writers()}
    p = ws["processor-1"]
    r = w.respawn(p)
    assert r.cfg["transactional_id"] == p.cfg["transactional_id"] and r.cfg["spawn"] != p.cfg["spawn"]
    q = w.respawn(ws["producer-0"])
    assert q.cfg["transactional_id"] == "eosc-in-0" and q.cfg["value_base"] != ws["producer-0"].cfg["value_base"]


def test_pipeline_negative_control_switches_reach_the_processors():
    w = pipeline(offsets="consumer", group_metadata="group-only", static_membership=False)
    p = [x for x in w.writers() if x.role == "processor"][0]
    assert (p.cfg["offsets"], p.cfg["group_metadata"], p.cfg["group_instance_id"]) == ("consumer", "group-only", None)
    with pytest.raises(ValidationError):
        EosPipelineSpec(offsets="auto")


def test_pipeline_assignment_offsets_reach_the_processors_and_are_librdkafkas():
    p = [x for x in pipeline().writers() if x.role == "processor"][0]
    assert p.cfg["assignment_offsets"] == "fetched"
    w = pipeline(assignment_offsets="committed-then-assign")
    p = [x for x in w.writers() if x.role == "processor"][0]
    assert p.cfg["assignment_offsets"] == "committed-then-assign"
    with pytest.raises(ValidationError, match="librdkafka workaround"):
        EosPipelineSpec(assignment_offsets="committed-then-assign", client="java")


def test_scenario_picks_the_workload_by_name():
    s = Scenario.model_validate({"name": "x", "workload": {"name": "eos-pipeline", "processors": 2}})
    assert isinstance(s.workload, EosPipelineSpec)
    s = Scenario.model_validate({"name": "x", "workload": {"name": "idempotent", "idempotence": False}})
    assert isinstance(s.workload, IdempotentSpec) and s.workload.idempotence is False
    with pytest.raises(ValidationError):
        Scenario.model_validate({"name": "x", "workload": {"name": "idempotent", "max_sends_per_txn": 3}})


# -- output values ---------------------------------------------------------------------------
def test_output_values_decode_to_their_input_and_differ_per_attempt():
    v = 300000017
    outs = {output_value(v, s, a) for s in (0, 5, 999) for a in (0, 1, 999)}
    assert len(outs) == 9 and {o // OUTPUT_FACTOR for o in outs} == {v}
    assert output_value(v, 1, 0) != output_value(v + 1, 1, 0)
    assert max(outs) < 2**63
    for bad in ((1000, 0), (0, 1000), (-1, 0)):
        with pytest.raises(ValueError):
            output_value(v, *bad)


# -- zombie nemesis --------------------------------------------------------------------------
class FakeClients:
    """Records calls; replace_client names replacements like harness.run.pool does."""

    def __init__(self):
        self.calls, self.n, self.replacements = [], 0, {}

    def client_names(self):
        return ["processor-0", "producer-0"]

    def current_client(self, name):
        while name in self.replacements:
            name = self.replacements[name]
        return name

    def replace_client(self, name, fresh_id=False):
        self.n += 1
        self.calls.append(("replace", name, fresh_id))
        self.replacements[name] = f"{name}.z{self.n}"
        return f"{name}.z{self.n}"

    def kill_client(self, name):
        self.calls.append(("kill", name))
        return "killed pid 9"

    def restart_client(self, name):
        self.calls.append(("restart", name))
        return "restarted as pid 10"

    def resume_client(self, name):
        self.calls.append(("resume", name))
        return f"resumed {name}"


def test_zombie_replaces_then_resumes_the_old_incarnation_and_follows_the_chain():
    c = FakeClients()
    z = ZombieNemesis(NemesisContext(cluster=None, clients=c))
    assert z.fs() == {"zombie", "resume-zombie"}
    done = z.invoke({"f": "zombie", "value": {"client": "processor-0"}})
    assert done["value"]["paused"] == "processor-0" and done["value"]["replacement"] == "processor-0.z1"
    z.invoke({"f": "resume-zombie", "value": {"client": "processor-0"}})
    z.invoke({"f": "zombie", "value": {"client": "processor-0", "params": {"fresh_id": True}}})
    assert c.calls == [("replace", "processor-0", False), ("resume", "processor-0"),
                       ("replace", "processor-0.z1", True)]
    assert z.teardown() == [] and c.calls[-1] == ("resume", "processor-0.z1")


def test_a_client_fault_after_a_zombie_hits_the_replacement_and_says_so():
    from nemesis.client_faults import ClientKillNemesis

    c = FakeClients()
    z = ZombieNemesis(NemesisContext(cluster=None, clients=c))
    k = ClientKillNemesis(NemesisContext(cluster=None, clients=c))
    z.invoke({"f": "zombie", "value": {"client": "processor-0"}})
    done = k.invoke({"f": "kill-client", "value": {"client": "processor-0"}})
    assert done["value"] == {"client": "processor-0", "worker": "processor-0.z1", "result": "killed pid 9"}
    back = k.invoke({"f": "restart-client", "value": {"client": "processor-0"}})
    assert back["value"]["worker"] == "processor-0.z1"
    assert c.calls[1:] == [("kill", "processor-0.z1"), ("restart", "processor-0.z1")]
    # a client never replaced is its own newest incarnation
    assert k.invoke({"f": "kill-client", "value": {"client": "producer-0"}})["value"]["worker"] == "producer-0"


def test_pool_current_client_follows_the_replacement_chain(tmp_path):
    from harness.cluster.namespaces import LOCAL
    from harness.run.history_writer import HistoryWriter
    from harness.run.pool import Pool

    pool = Pool(LOCAL, HistoryWriter(tmp_path / "h.jsonl"), tmp_path)
    pool.replacements.update({"app-1": "app-1.z2", "app-1.z2": "app-1.z5"})
    assert pool.current_client("app-1") == "app-1.z5" and pool.current_client("app-0") == "app-0"
    pool.replacements["app-1.z5"] = "app-1"  # a cycle cannot hang the nemesis
    assert pool.current_client("app-1") in {"app-1", "app-1.z2", "app-1.z5"}


def test_zombie_is_registered_with_a_client_target():
    kind = FAULTS["zombie"]
    assert (kind.start_f, kind.end_f) == ("zombie", "resume-zombie")
    steps = fault_schedule(1, [{"fault": "zombie", "clients": ["processor-*"], "fresh_id": True}],
                           [1, 2, 3], ["processor-0", "processor-1", "producer-0"], 60, (10, 15), (5, 10))
    assert steps and all(s.value["client"].startswith("processor-") for s in steps)
    assert steps[0].value["params"] == {"fresh_id": True}


# -- pool bookkeeping ------------------------------------------------------------------------
def test_pool_stop_also_stops_replacements_and_never_restarts_a_retired_worker(tmp_path):
    from harness.run.pool import Pool

    class Handle:
        def __init__(self):
            self.stopped = False

        def alive(self):
            return not self.stopped

        def request_stop(self):
            self.stopped = True

        def wait(self, timeout):
            return True

    pool = Pool(host=None, history=None, logdir=tmp_path)
    for n in ("processor-0", "processor-0.z1", "processor-0.z1.z2"):
        pool.workers[n] = Handle()
        pool.specs[n] = WorkerSpec(n, "processor", {})
    pool.replacements = {"processor-0": "processor-0.z1", "processor-0.z1": "processor-0.z1.z2"}
    assert pool.stop(["processor-0"]) == []
    assert all(h.stopped for h in pool.workers.values())
    assert "not restarted" in pool.restart_client("processor-0")


# -- commit_ns stamp -------------------------------------------------------------------------
def test_txn_completions_carry_the_time_commit_was_requested():
    from harness.workers.retire import RetirableTxnProducer

    w = object.__new__(RetirableTxnProducer)  # no process: only the emit path
    out = []
    w.proc, w.start_ns, w._commit_ns = 0, 0, None
    w._write = out.append
    w.now = lambda: 5
    w.emit("invoke", "txn", [])
    w._commit_ns = 3  # as _commit sets it
    w.emit("ok", "txn", [], meta={"transactional_id": "t"})
    w.emit("invoke", "txn", [])
    w.emit("fail", "txn", [])  # aborted before commit: no stamp
    assert [e.get("meta", {}).get("commit_ns") for e in out] == [None, 3, None, None]
    assert out[1]["meta"]["transactional_id"] == "t"


def test_processor_rewind_seeks_the_assigned_keys_and_records_a_rewind_op():
    """After an abort the processor seeks back to the batch's first offsets of the keys it still
    owns and records that as a rewind op (docs/history.md); a revoked key is left alone."""
    from confluent_kafka import TopicPartition
    from harness.workers.processor import ProcessorWorker

    class Consumer:
        sought: list = []

        def assignment(self):
            return [TopicPartition("in", 0), TopicPartition("in", 2)]

        def seek(self, tp):
            self.sought.append((tp.topic, tp.partition, tp.offset))

    w = object.__new__(ProcessorWorker)
    w.consumer, w.tid, w.group, events = Consumer(), "eosc-proc-0", "eosc-proc", []
    w.emit = lambda type_, f, value, **kw: events.append((type_, f, value))
    w.rewind({"in/0": 5, "in/1": 7, "in/2": 9})  # in/1 was revoked meanwhile
    assert Consumer.sought == [("in", 0, 5), ("in", 2, 9)]
    assert events == [("invoke", "rewind", {"in/0": 5, "in/2": 9}), ("ok", "rewind", {"in/0": 5, "in/2": 9})]


def test_a_fatal_error_pending_in_flush_fails_the_txn_and_replaces_the_instance():
    """confluent-kafka raises SystemError ("returned a result with an exception set") from
    flush when a fatal error such as _FENCED is pending while it serves a delivery report: the
    worker used to die of it (chaos seed 2 on docker). Commit was never requested, so the
    transaction cannot commit: fail, with the fatal error, and a new instance."""
    from confluent_kafka import KafkaError, KafkaException
    from harness.workers.txn_producer import TxnOutcome, TxnProducerWorker

    class Producer:
        def begin_transaction(self):
            pass

        def produce(self, *a, **kw):
            pass

        def flush(self, timeout):
            try:
                raise KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True))
            except KafkaException as exc:
                raise SystemError("<method 'append' of 'list' objects> returned a result "
                                  "with an exception set") from exc

    w = object.__new__(TxnProducerWorker)
    w.producer, w.flush_timeout = Producer(), 10
    with pytest.raises(TxnOutcome) as out:
        w._run_txn([("t0/0", 1)], {}, False)
    assert (out.value.type, out.value.replace) == ("fail", True)
    assert out.value.error[0] == "_FENCED"


def test_pool_asks_a_stuck_worker_for_its_stacks_before_killing_it(tmp_path):
    from harness.run.pool import Pool

    class Stuck:
        def __init__(self):
            self.calls = []

        def alive(self):
            return True

        def request_stop(self):
            self.calls.append("stop")

        def wait(self, timeout):
            return False

        def dump_stacks(self):
            self.calls.append("stacks")

        def kill(self):
            self.calls.append("kill")

    pool = Pool(host=None, history=None, logdir=tmp_path)
    pool.workers["processor-1"] = h = Stuck()
    pool.specs["processor-1"] = WorkerSpec("processor-1", "processor", {})
    problems = pool.stop(["processor-1"], timeout=0)
    assert h.calls == ["stop", "stacks", "kill"]
    assert "logs/processor-1.log" in problems[0]


def test_a_worker_prints_its_stacks_on_sigquit_and_keeps_running(tmp_path):
    """A real consumer worker process (no broker at its bootstrap: it polls on) answers SIGQUIT
    with its threads' tracebacks on stderr (its log) and keeps running."""
    import json
    import signal
    import subprocess
    import sys
    import time

    log = tmp_path / "consumer-0.log"
    cfg = {"bootstrap": _closed_port(), "keys": ["t0/0"], "start_ns": time.monotonic_ns()}
    with open(log, "wb") as f:
        p = subprocess.Popen([sys.executable, "-m", "harness.workers", "consumer", json.dumps(cfg)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=f)
        try:
            assert b'"assign"' in p.stdout.readline()  # started: its assign op's invoke
            p.send_signal(signal.SIGQUIT)
            time.sleep(1.0)
            assert p.poll() is None  # still running
        finally:
            p.kill()
            p.wait()
    text = log.read_text()
    assert "Thread 0x" in text and "harness/workers/consumer.py" in text


def test_a_workers_config_is_not_on_its_command_line(tmp_path):
    """An external cluster's sasl.password reaches the worker through the environment
    (harness.util.CONFIG_ENV), never its argv: /proc/<pid>/cmdline is world-readable."""
    import time

    from harness.run.history_writer import HistoryWriter
    from harness.cluster.namespaces import LOCAL
    from harness.run.pool import ProcessNumbers, WorkerHandle

    hist = HistoryWriter(tmp_path / "history.jsonl")
    cfg = {"bootstrap": _closed_port(), "keys": ["t0/0"], "start_ns": time.monotonic_ns(),
           "security": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                        "sasl.username": "u", "sasl.password": "s3cret-pw"}}
    w = WorkerHandle("consumer-0", "consumer", cfg, LOCAL, hist, ProcessNumbers(), tmp_path)
    try:
        deadline = time.monotonic() + 20
        while True:  # until the child has exec'd (before: the parent's, during: empty)
            cmdline = open(f"/proc/{w.pid}/cmdline", "rb").read()
            if b"harness.workers" in cmdline or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert b"s3cret-pw" not in cmdline and cmdline.endswith(b"harness.workers\0consumer\0")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "assign" not in (tmp_path / "history.jsonl").read_text():
            time.sleep(0.1)
        assert '"assign"' in (tmp_path / "history.jsonl").read_text()  # it read its config
    finally:
        w.kill()
        w.close()
        hist.close()


def test_a_stuck_java_workers_thread_dump_lands_in_its_log(tmp_path):
    """dump_stacks on a real Java worker (kafka-clients, no broker at its bootstrap): the JVM
    prints its thread dump on stdout; the pool keeps it in the worker's log."""
    import time

    from harness.workers import java
    from harness.run.history_writer import HistoryWriter
    from harness.cluster.namespaces import LOCAL
    from harness.run.pool import ProcessNumbers, WorkerHandle

    try:
        java.build(java.DEFAULT_JAVA_CLIENT_VERSION, fetch=False)
    except Exception as exc:  # noqa: BLE001 - not built on this machine
        pytest.skip(f"Java workers not built: {exc}")
    hist = HistoryWriter(tmp_path / "history.jsonl")
    cfg = {"client": "java", "bootstrap": _closed_port(), "keys": ["t0/0"], "seed": 1,
           "start_ns": time.monotonic_ns()}
    w = WorkerHandle("consumer-0", "consumer", cfg, LOCAL, hist, ProcessNumbers(), tmp_path)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "assign" not in (tmp_path / "history.jsonl").read_text():
            time.sleep(0.2)  # the JVM is up and polling
        w.dump_stacks(wait_s=2.0)
        assert w.alive()
    finally:
        w.kill()
        w.close()
        hist.close()
    assert "Full thread dump" in (tmp_path / "consumer-0.log").read_text(errors="replace")


def _closed_port() -> str:
    """host:port where nothing listens (connection refused: the client retries quietly)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_pool_waits_for_a_clients_first_ok_op(tmp_path):
    """nemesis.start_after_ok's wait (harness.run.runner): a real consumer worker (no broker at its
    bootstrap) completes its assign op; a glob matching it is satisfied, one matching nobody
    waits out its timeout, and a set stop ends the wait at once."""
    import threading
    import time

    from harness.run.history_writer import HistoryWriter
    from harness.cluster.namespaces import LOCAL
    from harness.run.pool import Pool

    hist = HistoryWriter(tmp_path / "history.jsonl")
    pool = Pool(LOCAL, hist, tmp_path)
    cfg = {"bootstrap": _closed_port(), "keys": ["t0/0"]}
    pool.spawn(WorkerSpec("consumer-0", "consumer", cfg))
    try:
        assert pool.wait_first_ok(["spark-*"], timeout=0.3) == ["spark-*"]
        assert pool.wait_first_ok(["consumer-*"], timeout=30) == []
        assert set(pool.first_ok) == {"consumer-0"}
        t0 = time.monotonic()
        assert pool.wait_first_ok(["consumer-*", "spark-*"], timeout=0.5) == ["spark-*"]
        assert 0.5 <= time.monotonic() - t0 < 5
        stop = threading.Event()
        stop.set()
        t0 = time.monotonic()
        assert pool.wait_first_ok(["spark-*"], timeout=30, stop=stop) == ["spark-*"]
        assert time.monotonic() - t0 < 2
    finally:
        pool.workers["consumer-0"].kill()
        pool.workers["consumer-0"].close()
        hist.close()


def test_an_op_ok_control_message_counts_as_a_first_ok_op(tmp_path):
    """A Spark driver writes its poll ops only after the run; its ``op_ok`` control message per
    committed batch is what nemesis.start_after_ok waits for. Other control messages are not."""
    import io
    import types

    from harness.run.pool import WorkerHandle

    seen = []
    w = WorkerHandle.__new__(WorkerHandle)
    w.name, w.control, w.bad_lines, w.on_ok = "spark-consumer", [], 0, seen.append
    w.proc = types.SimpleNamespace(stdout=io.BytesIO(
        b'{"ctl": {"spark_started": true, "instance": 1}}\n{"ctl": {"op_ok": {"f": "poll", "batch_id": 1}}}\n'))
    w._read()
    assert seen == ["spark-consumer"] and len(w.control) == 2


def test_pool_wait_next_ok_wants_an_ok_op_after_the_call():
    """kill-client's after_ok_s (nemesis.client_faults) waits for the client's *next* ok op: one
    seen before the call does not count, one after it does, none within the timeout is False."""
    import threading
    import time

    from harness.run.pool import Pool

    pool = Pool.__new__(Pool)
    pool.first_ok, pool.ok_count, pool._ok_seen = {}, {}, threading.Condition()
    pool._saw_ok("spark-consumer")                      # a batch committed before the wait
    t0 = time.monotonic()
    assert pool.wait_next_ok("spark-consumer", timeout=0.3) is False
    assert time.monotonic() - t0 >= 0.3
    threading.Timer(0.2, pool._saw_ok, args=("spark-consumer",)).start()
    assert pool.wait_next_ok("spark-consumer", timeout=10) is True
    assert pool.ok_count == {"spark-consumer": 2} and set(pool.first_ok) == {"spark-consumer"}


class OkClients:
    """A ClientControl whose client has an ok op ``ok_after`` s after each wait (None: never)."""

    def __init__(self, ok_after):
        self.ok_after, self.calls = ok_after, []

    def wait_next_ok(self, name, timeout):
        import time

        self.calls.append(("wait", name, timeout))
        if self.ok_after is None:
            return False
        time.sleep(self.ok_after)
        return True

    def kill_client(self, name):
        import time

        self.calls.append(("kill", name, time.monotonic()))
        return "killed pid 7"

    def restart_client(self, name):
        self.calls.append(("restart", name))
        return "restarted as pid 8"

    def current_client(self, name):
        return name


def test_kill_client_after_ok_s_kills_that_long_after_the_clients_next_ok_op():
    import time

    from nemesis.client_faults import OK_WAIT_S, ClientKillNemesis

    c = OkClients(ok_after=0.1)
    n = ClientKillNemesis(NemesisContext(cluster=None, clients=c))
    t0 = time.monotonic()
    done = n.invoke({"f": "kill-client", "value": {"client": "spark-consumer", "params": {"after_ok_s": 0.3}}})
    assert c.calls[0] == ("wait", "spark-consumer", OK_WAIT_S) and c.calls[1][0] == "kill"
    assert c.calls[1][2] - t0 >= 0.4   # the ok op (0.1 s), then after_ok_s (0.3 s)
    assert done["value"]["result"] == "killed pid 7"    # as before: harness.workloads.spark reads the pid
    assert done["value"]["after_ok_s"] == 0.3 and done["value"]["ok_seen"] is True
    assert 0.4 <= done["value"]["waited_ok_s"] < 5
    n.invoke({"f": "restart-client", "value": {"client": "spark-consumer", "params": {"after_ok_s": 0.3}}})
    assert c.calls[-1] == ("restart", "spark-consumer")
    # no ok op in time: the kill still happens, and says so; without the parameter, no wait
    c2 = OkClients(ok_after=None)
    n2 = ClientKillNemesis(NemesisContext(cluster=None, clients=c2))
    late = n2.invoke({"f": "kill-client", "value": {"client": "producer-0", "params": {"after_ok_s": 0.5}}})
    assert late["value"]["ok_seen"] is False and c2.calls[-1][0] == "kill"
    plain = n2.invoke({"f": "kill-client", "value": {"client": "producer-1"}})
    assert "ok_seen" not in plain["value"]
    assert [k for k, *_ in c2.calls] == ["wait", "kill", "kill"]


def test_after_ok_s_is_checked_when_the_scenario_loads():
    FAULTS["kill-client"].validate({"fault": "kill-client", "clients": ["spark-*"], "after_ok_s": 0.6})
    for bad in (-1, 60, "0.6", True):
        with pytest.raises(ValueError, match="after_ok_s"):
            FAULTS["kill-client"].validate({"fault": "kill-client", "after_ok_s": bad})
    with pytest.raises(ValueError, match="takes only"):
        FAULTS["kill-client"].validate({"fault": "kill-client", "after_s": 1})


def test_spark_reads_the_killed_drivers_pid_from_a_kill_client_with_after_ok_s(tmp_path):
    """The Spark summary pairs each driver kill with the driver's pid from the kill's result;
    a kill-client with after_ok_s adds fields to the value, and the result stays parseable
    (a first version put the wait in the result string and every such run ended in ERROR)."""
    import json as _json

    from harness.workloads.spark import SPARK_WORKER, _history_facts

    p = tmp_path / "history.jsonl"
    ev = {"index": 3, "time": 55_000, "process": "nemesis", "type": "info", "f": "kill-client",
          "value": {"client": SPARK_WORKER, "after_ok_s": 0.6, "waited_ok_s": 1.2, "ok_seen": True,
                    "result": "killed pid 4971"}}
    p.write_text(_json.dumps(ev) + "\n")
    assert _history_facts(p)[2] == {4971: 55_000}
