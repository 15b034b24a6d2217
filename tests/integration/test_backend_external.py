"""The external backend on a cluster the harness did not start for the run (issue 10).

The test starts a 3-node cluster by other means (the netns backend's nodes, started here,
under the machine's lock), lets the root namespace reach them (an address on the bridge: a
user's cluster is reached from the machine itself), and writes one tiny shell script per node
and action. The external run knows nothing but the bootstrap servers and the command
templates ``sh DIR/kill-{id}.sh`` etc.: every broker kill and restart goes through them. The
run must be valid, its topics deleted at the end, and the nodes running again. A second, short
eos-pipeline run (client kills only) checks the run prefix on a cluster that already holds the
workloads' unprefixed names: a topic ``t0`` and a consumer group ``eosc-proc`` with a committed
offset, both left as they were, while the runs' own prefixed topics and groups are gone. That
run goes through a SASL_PLAINTEXT listener (CLIENT, port 9094, mechanism PLAIN) with
``cluster.external.client`` holding the credentials, so every client it makes (admin agent,
input producer, processors' consumers and producers, reader, pipeline drain) must carry them;
a client without them gets no metadata there. The smoke run stays on PLAINTEXT. ~2.5 min.
"""
import json
import shlex
import time

import pytest

from harness.cluster import namespaces as net
from harness.cluster.backends import make_backend
from harness.cluster.service import ClusterService
from harness.cluster.lock import cluster_lock
from harness.run.runner import run_scenario
from harness.run.scenario import ClusterSpec, Scenario
from tests.integration.known_bugs import xfail_if_kafka_20734, xfail_if_restart_behind_commit

pytestmark = pytest.mark.integration

BRIDGE_ADDRESS = "198.18.0.1/24"  # the root namespace's foot on the test bridge, for this test only
#: a second listener, CLIENT on 9094, with SASL/PLAIN (Kafka's SASL/PLAIN docs, KIP-43); inter-broker
#: traffic and the PLAINTEXT listener stay as they are
SASL_BROKER = {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.client.plain.sasl.jaas.config":
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_eosc="secret";',
}
SASL_CLIENT = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "eosc",
               "sasl.password": "secret"}


def _scripts(service: ClusterService, d) -> dict[str, str]:
    """kill/start/pause/resume scripts per node; the templates that call them."""
    d.mkdir()
    for i in service.node_ids():
        node = service.node(i)
        pidfile = d / f"n{i}.pid"
        pidfile.write_text(str(node.proc.pid))
        argv = node.host.exec_prefix() + node._java("kafka.Kafka", str(node.config_path))
        (d / f"kill-{i}.sh").write_text(f"kill -9 $(cat {pidfile})\n")
        (d / f"pause-{i}.sh").write_text(f"kill -STOP $(cat {pidfile})\n")
        (d / f"resume-{i}.sh").write_text(f"kill -CONT $(cat {pidfile})\n")
        (d / f"start-{i}.sh").write_text(
            f"{shlex.join(argv)} >> {node.log_path} 2>&1 < /dev/null &\necho $! > {pidfile}\n")
    return {a: f"sh {d}/{a}-{{id}}.sh" for a in ("kill", "start", "pause", "resume")}


@pytest.fixture(scope="module")
def external_run(tmp_path_factory, results_root):
    tmp = tmp_path_factory.mktemp("external")
    with cluster_lock():
        backend = make_backend(ClusterSpec(broker=SASL_BROKER), tmp / "nodes", tmp / "logs")
        start = backend.start  # the CLIENT listener, advertised at the node's own address (no proxy)
        backend.start = lambda _: start({i: f"{a.split(':')[0]}:9094" for i, a in backend.addresses().items()})
        service = ClusterService(backend, tmp / "logs")
        service.clean_leftovers()
        try:
            service.start(timeout=180)
            net.ip("addr", "add", BRIDGE_ADDRESS, "dev", net.BRIDGE)
            commands = _scripts(service, tmp / "scripts")
            scn = Scenario.model_validate({
                "name": "external-smoke-it", "seed": 3, "duration": 35,
                "workload": {"name": "txn-queue", "producers": 3, "consumers": 1, "topics": 2, "partitions": 2},
                "cluster": {"backend": "external", "external": {
                    "bootstrap": service.backend.bootstrap, "commands": commands,
                    "nodes": [{"id": i, "host": a.split(":")[0], "name": f"n{i}"}
                              for i, a in service.backend.addresses().items()]}},
                "nemesis": {"faults": ["kill"], "interval_s": [9, 11], "fault_duration_s": [4, 6]},
                "expected": ["G0", "G0-process", "G0-realtime", "G1c-realtime"],  # as smoke.yaml says why
            })
            _bystanders(service)
            res = run_scenario(scn, results_root, source="tests/integration/test_backend_external.py")
            pipe = Scenario.model_validate({
                "name": "external-pipeline-it", "seed": 1, "duration": 20,
                "workload": {"name": "eos-pipeline", "processors": 2, "partitions": 2},
                "cluster": {"backend": "external", "external": {"bootstrap": _sasl_bootstrap(service),
                                                                 "client": SASL_CLIENT}},
                "nemesis": {"faults": ["kill-client"], "interval_s": [6, 8], "fault_duration_s": [2, 3]},
            })
            res2 = run_scenario(pipe, results_root, source="tests/integration/test_backend_external.py")
            after = service.agent.request("describe", timeout=10)
            after["groups"] = _groups(service.backend.bootstrap)
            after["sasl_without_credentials"] = _metadata_without_credentials(_sasl_bootstrap(service))
            yield res, after, res2
        finally:
            assert service.teardown() == []


def _bystanders(service: ClusterService) -> None:
    """What the cluster held before the runs: a topic t0 and a group eosc-proc that committed
    offset 1 on it (the names a run would use without its prefix)."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    service.agent.request("create_topics", timeout=30, names=["t0"], partitions=1, replication_factor=3,
                          configs={})
    p = Producer({"bootstrap.servers": service.backend.bootstrap})
    p.produce("t0", b"bystander", partition=0)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": service.backend.bootstrap, "group.id": "eosc-proc"})
    deadline = time.monotonic() + 60
    while True:  # a fresh cluster creates __consumer_offsets on the first FindCoordinator
        try:
            c.commit(offsets=[TopicPartition("t0", 0, 1)], asynchronous=False)
            break
        except KafkaException:  # NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE / _LOAD_IN_PROGRESS meanwhile
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    c.close()


def _sasl_bootstrap(service: ClusterService) -> str:
    return ",".join(f"{a.split(':')[0]}:9094" for a in service.backend.addresses().values())


def _metadata_without_credentials(bootstrap: str) -> str:
    """What a client without the SASL settings gets from the SASL listener: "metadata" or the error."""
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
        return "metadata"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _groups(bootstrap: str) -> dict[str, dict]:
    """group id -> {"topic/partition": committed offset} of every consumer group on the cluster."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    ids = [g.group_id for g in admin.list_consumer_groups().result(timeout=30).valid]
    out = {}
    for gid in ids:
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(gid)])[gid].result(timeout=30)
        out[gid] = {f"{tp.topic}/{tp.partition}": tp.offset for tp in res.topic_partitions}
    return out


def test_external_smoke_is_valid_with_kills_through_templates(external_run):
    res, _, _ = external_run
    xfail_if_kafka_20734(res.run_dir, res.verdict)
    xfail_if_restart_behind_commit(res.verdict)
    assert res.verdict.valid is True, json.dumps(res.verdict.anomalies, indent=1)[:3000]
    meta = json.loads((res.run_dir / "meta.json").read_text())
    assert meta["backend"] == "external" and meta["teardown_problems"] == []
    assert meta["nodes"] == {"1": "198.18.0.11", "2": "198.18.0.12", "3": "198.18.0.13"}
    events = [json.loads(x) for x in (res.run_dir / "history.jsonl").read_text().splitlines()]
    kills = [e["value"] for e in events if e["process"] == "nemesis" and e["f"] == "kill" and "result" in e["value"]]
    assert len(kills) >= 2 and all(k["result"] == "killed" for k in kills), kills
    log = (res.run_dir / "logs" / "commands.log").read_text()
    for k in kills:
        assert "sh " in log and f"kill-{k['node']}.sh" in log
    assert log.count("exit 0") == log.count("$ ")  # every command succeeded


def test_external_run_leaves_the_cluster_as_it_found_it(external_run):
    res, after, res2 = external_run
    assert after["brokers"] == [1, 2, 3]  # killed nodes were started again
    for r in (res, res2):
        prefix = f"eosc-{r.run_dir.name}-"
        meta = json.loads((r.run_dir / "meta.json").read_text())
        topics = {k.rsplit("/", 1)[0] for k in meta["keys"]}
        assert topics and all(t.startswith(prefix) for t in topics), topics
        assert meta["teardown_problems"] == []
        assert not any(t.startswith(prefix) for t in after["topics"]), after["topics"]  # the run's topics are gone
        assert not any(g.startswith(prefix) for g in after["groups"]), after["groups"]  # and its groups
    # the pipeline's group and transactional.ids carried the prefix while it ran
    meta2 = json.loads((res2.run_dir / "meta.json").read_text())
    assert meta2["pipeline"]["group_id"] == f"eosc-{res2.run_dir.name}-proc"
    tids = {e.get("meta", {}).get("transactional_id") for e in map(json.loads, (res2.run_dir / "history.jsonl")
                                                                      .read_text().splitlines())} - {None}
    assert tids and all(t.startswith(f"eosc-{res2.run_dir.name}-") for t in tids), tids
    # what was there before is untouched: topic t0 and group eosc-proc with its offset
    assert "t0" in after["topics"] and after["groups"].get("eosc-proc") == {"t0/0": 1}, after["groups"]


def test_external_pipeline_over_sasl_with_the_run_prefix_is_valid(external_run):
    _, after, res2 = external_run
    xfail_if_kafka_20734(res2.run_dir, res2.verdict)
    xfail_if_restart_behind_commit(res2.verdict)
    assert res2.verdict.valid is True, json.dumps(res2.verdict.anomalies, indent=1)[:3000]
    meta = json.loads((res2.run_dir / "meta.json").read_text())
    assert meta["final_reads_complete"] is True and meta["client_security"] == sorted(SASL_CLIENT)
    assert after["sasl_without_credentials"] != "metadata"  # the listener really wants SASL
    events = [json.loads(x) for x in (res2.run_dir / "history.jsonl").read_text().splitlines()]
    done = {(e["process"], e["f"]) for e in events if e["type"] == "ok"}
    # every kind of client made it through the SASL listener
    assert {"txn", "poll", "committed-offsets"} <= {f for _, f in done}, sorted(done)
