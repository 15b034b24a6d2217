"""What a run's clients are given on a cluster (harness.cluster.client_access): the run prefix of
an external run's topics, group ids and transactional.ids, and the security settings that
must reach every Kafka client a run makes. Pure code: no cluster, no client connects."""
import ast
import re
from pathlib import Path

import pytest

from harness.cluster.client_access import (RunNames, SecureWorkload, cluster_workload, java_security, renamed_targets,
                                     run_names)
from harness.cluster.service import ClusterService
from harness.run.scenario import Scenario
from harness.workers.base import Worker
from harness.workloads.base import WorkerSpec
from harness.workloads import WORKLOADS, EosPipelineSpec, IdempotentSpec, TxnQueueSpec

ROOT = Path(__file__).resolve().parents[2]
EXT = {"bootstrap": "k1:9092"}
SASL = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u",
        "sasl.password": "p", "ssl.ca.location": "/etc/ca.pem"}
JAVA = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;"}
NAMES = RunNames.for_run("20261123T220000Z-s1")
P = "eosc-20261123T220000Z-s1-"


def _all_workers(w):
    return w.readers() + w.writers() + [w.drain()]


def _names_made(w) -> set[str]:
    """Every topic, group id and transactional.id the workload's workers would use."""
    out = {t.name for t in w.topics()}
    for s in _all_workers(w):
        c = s.cfg
        out |= {c[k] for k in ("group_id", "transactional_id", "pipeline_group", "input_topic", "output_topic")
                if c.get(k)}
        out |= set(c.get("transactional_ids", []))
        out |= {k.rsplit("/", 1)[0] for k in c.get("keys", []) + c.get("input_keys", [])}
    return out


def test_run_names_prefix_topics_keys_and_client_ids():
    assert NAMES.prefix == P
    assert NAMES.topic("t0") == P + "t0" and NAMES.key("t0/3") == P + "t0/3"
    assert NAMES.client_id("eosc-txn-0") == P + "txn-0"
    assert RunNames.for_run("a b/c").prefix == "eosc-a_b_c-"  # Kafka's topic-name characters only
    plain = RunNames()
    assert plain.topic("t0") == "t0" and plain.client_id("eosc-txn-0") == "eosc-txn-0"
    assert run_names(Scenario.model_validate({"name": "x"}).cluster, "r1") == RunNames()
    ext = Scenario.model_validate({"name": "x", "cluster": {"backend": "external", "external": EXT},
                                   "nemesis": {"faults": ["kill-client"]}})
    assert run_names(ext.cluster, "r1").prefix == "eosc-r1-"


@pytest.mark.parametrize("spec", [TxnQueueSpec(), TxnQueueSpec(producers=8, producers_per_worker=4),
                                  IdempotentSpec(), EosPipelineSpec()], ids=["txn-queue", "busy", "idempotent",
                                                                            "eos-pipeline"])
def test_every_name_an_external_run_makes_carries_the_prefix(spec):
    w = cluster_workload(WORKLOADS[spec.name], spec, "b:9092", 1, NAMES, {})
    made = _names_made(w)
    assert made and all(n.startswith(P) for n in made), sorted(n for n in made if not n.startswith(P))
    assert all(k.startswith(P) for k in w.keys())
    pipeline = w.meta().get("pipeline")
    if pipeline:
        assert all(k.startswith(P) and v.startswith(P) for k, v in pipeline["keys"].items())
        assert pipeline["group_id"] == P + "proc"
    # netns and docker: the workloads' own names, unchanged
    plain = _names_made(WORKLOADS[spec.name](spec, "b:9092", 1))
    assert not any(n.startswith(P) for n in plain) and ("t0" in plain or "in" in plain)


def test_role_targets_name_the_runs_topics_and_transactional_ids():
    scn = Scenario.model_validate({"name": "x", "nemesis": {"faults": [
        {"fault": "kill", "target": "leader", "key": "t0/1"},
        {"fault": "pause", "target": "coordinator", "transactional_id": "eosc-txn-2"}, "kill-client"],
        "schedule": [{"at": 1, "duration": 2, "fault": {"fault": "kill", "target": "leader", "key": "t1/0"}}]}})
    out = renamed_targets(scn, NAMES)
    f = out.nemesis.faults
    assert f[0].key == P + "t0/1" and f[1].transactional_id == P + "txn-2" and f[2].key is None
    assert out.nemesis.schedule[0].fault.key == P + "t1/0"
    assert scn.nemesis.faults[0].key == "t0/1"  # the scenario itself is left as written
    assert renamed_targets(scn, RunNames()) is scn


def test_security_reaches_every_worker_config_and_survives_respawn():
    spec = EosPipelineSpec(consumer={"fetch.min.bytes": 1})
    w = cluster_workload(WORKLOADS[spec.name], spec, "b:9092", 1, NAMES, SASL)
    assert isinstance(w, SecureWorkload)
    workers = _all_workers(w)
    assert {s.role for s in workers} == {"txn-producer", "processor", "consumer", "pipeline-drain"}
    assert all(s.cfg["security"] == SASL for s in workers)
    assert all(w.respawn(s).cfg["security"] == SASL for s in workers)
    # the user's own client settings stay theirs: security is a key of its own
    proc = next(s for s in workers if s.role == "processor")
    assert proc.cfg["consumer"] == {"fetch.min.bytes": 1}
    # no security settings: the workload itself, configs unchanged
    assert "security" not in cluster_workload(WORKLOADS[spec.name], spec, "b", 1, NAMES, {}).writers()[0].cfg


def test_java_workers_get_the_java_spelling():
    spec = TxnQueueSpec(client="java")
    java_specs = [WorkerSpec(s.name, s.role, {**s.cfg, **spec.client_cfg()})
                  for s in WORKLOADS["txn-queue"].__mro__[1](spec, "b", 1).writers()]  # as with_client makes them
    w = SecureWorkload(type("W", (), {"writers": lambda self: java_specs})(), SASL, JAVA)
    assert [s.cfg["security"] for s in w.writers()] == [JAVA] * len(java_specs)
    # without java_client: what means the same in both clients passes, the rest is refused
    assert java_security({"security.protocol": "SSL", "sasl.mechanisms": "PLAIN"}, {}) == {
        "security.protocol": "SSL", "sasl.mechanism": "PLAIN"}
    with pytest.raises(ValueError, match="cluster.external.java_client.*sasl.password"):
        java_security(SASL, {})


def test_external_refuses_at_load_what_it_cannot_prefix_or_secure():
    def scn(workload, ext):
        return Scenario.model_validate({"name": "x", "workload": workload,
                                        "cluster": {"backend": "external", "external": ext},
                                        "nemesis": {"faults": ["kill-client"]}})

    with pytest.raises(ValueError, match="spark workload is not offered on the external backend"):
        scn({"name": "spark"}, EXT)
    with pytest.raises(ValueError, match="java_client"):
        scn({"name": "txn-queue", "client": "java"}, dict(EXT, client=SASL))
    assert scn({"name": "txn-queue", "client": "java"}, dict(EXT, client=SASL, java_client=JAVA))
    with pytest.raises(ValueError, match="only security settings"):
        scn({"name": "txn-queue"}, dict(EXT, java_client={"acks": "all"}))


def test_worker_kafka_conf_puts_security_on_top():
    from harness.workers.configs import WorkerConfig

    class W:
        cfg = WorkerConfig(bootstrap="b", security={"security.protocol": "SSL"})

    assert Worker.kafka_conf(W(), {"bootstrap.servers": "b", "security.protocol": "PLAINTEXT"}) == {
        "bootstrap.servers": "b", "security.protocol": "SSL"}
    W.cfg = WorkerConfig(bootstrap="b")
    assert Worker.kafka_conf(W(), {"a": 1}) == {"a": 1}


def _client_calls(path: Path):
    """(line, first argument's source) of every Consumer/Producer/AdminClient call in ``path``."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Consumer", "Producer", "AdminClient"):
            yield node.lineno, ast.unparse(node.args[0]) if node.args else ""


def test_every_python_worker_client_takes_the_security_settings():
    # spark_consumer configures Spark's Kafka source, not a client of ours; spark is refused on external
    files = sorted(p for p in (ROOT / "harness/workers").glob("*.py") if p.name != "spark_consumer.py")
    calls = [(p.name, line, arg) for p in files for line, arg in _client_calls(p)]
    assert len(calls) >= 6, calls
    bad = [c for c in calls if not c[2].startswith("self.kafka_conf(")]
    assert not bad, f"clients made without Worker.kafka_conf (security settings lost): {bad}"


def test_every_java_worker_client_takes_the_security_settings():
    src = ROOT / "harness/workers/java/src/eosc"
    bodies = []
    for f in sorted(src.glob("*.java")):
        text = f.read_text()
        # each method that builds client Properties, up to the next method
        for m in re.finditer(r"Properties p = new Properties\(\);(.*?)(?:\n    \S|\n        \}\n\n)", text, re.S):
            bodies.append((f.name, m.group(1)))
    assert len(bodies) >= 5, bodies
    bad = [name for name, body in bodies if 'cfg.get("security")' not in body and "extra(p," not in body]
    assert not bad, f"Java Properties without the security settings in {bad}"
    assert 'Json.putAll(p, cfg.get("security"))' in (src / "TxnProducer.java").read_text()  # extra() adds them


class _Agent:
    def __init__(self):
        self.requests = []

    def request(self, cmd, timeout=10, **args):
        self.requests.append((cmd, args))
        if cmd == "delete_topics":
            return {n: "deleted" for n in args["names"]}
        return {P + "proc": "deleted", P + "x": "KafkaException: NON_EMPTY_GROUP"}

    def close(self):
        pass


class _Backend:
    name = "external"
    network = None
    client_config = {}

    def stop(self):
        return []


def test_service_deletes_the_runs_topics_and_groups_and_reports_what_stayed(tmp_path):
    service = ClusterService(_Backend(), tmp_path, delete_topics=True, group_prefix=P)
    service.agent = agent = _Agent()
    service.created_topics = [P + "t0"]
    problems = service.stop()
    assert agent.requests == [("delete_topics", {"names": [P + "t0"]}), ("delete_groups", {"prefix": P})]
    assert problems == [f"consumer group {P}x could not be deleted: KafkaException: NON_EMPTY_GROUP"]
    # netns/docker: no prefix, no group deletion
    service = ClusterService(_Backend(), tmp_path)
    service.agent = agent = _Agent()
    assert service.stop() == [] and agent.requests == []
