"""Unit tests of the Java client's Python side (harness.workers.java, harness.workloads.client_choice,
ClientSpec) and, when the Java workers are built (``eos-chaos setup``), of their error
classification against harness.workers.outcomes' table."""
import itertools
import json
import subprocess

import pytest
from pydantic import ValidationError

from harness.workers import java
from harness.cluster.artifacts import ArtifactError
from harness.workers.outcomes import TABLE, Action, ErrorFacts, classify
from harness.run.scenario import Scenario
from harness.workloads import WORKLOADS, EosPipelineSpec, IdempotentSpec, TxnQueueSpec
from harness.workloads.client_choice import client_meta, history_client_facts

BOOT = "198.18.0.11:9092"


# -- the scenario fields ---------------------------------------------------------------------
def test_client_defaults_to_librdkafka_and_java_is_opt_in():
    assert TxnQueueSpec().client == "librdkafka"
    scn = Scenario.model_validate({"name": "x", "workload": {"name": "eos-pipeline", "client": "java",
                                                             "java_client_version": "3.9.1"}})
    assert (scn.workload.client, scn.workload.java_client_version) == ("java", "3.9.1")


@pytest.mark.parametrize("bad, says", [
    ({"client": "rust"}, "client"),
    ({"java_client_version": "4.1.0"}, "java_client_version needs client: java"),
    ({"client": "java", "java_client_version": "4.1 ; rm"}, "java_client_version"),
])
def test_bad_client_fields_say_what_to_fix(bad, says):
    with pytest.raises(ValidationError, match=says):
        IdempotentSpec(**bad)


# -- workers carry the client ----------------------------------------------------------------
@pytest.fixture
def no_build(monkeypatch):
    """The workload builds the Java workers when made; these tests do not need them."""
    monkeypatch.setattr(java, "build", lambda version=None, fetch=True: "/x/classes:/x/libs/*")


@pytest.mark.parametrize("name, spec", [("txn-queue", TxnQueueSpec), ("idempotent", IdempotentSpec),
                                        ("eos-pipeline", EosPipelineSpec)])
def test_java_workload_workers_all_carry_the_client(no_build, name, spec):
    w = WORKLOADS[name](spec(client="java", java_client_version="4.1.1"), BOOT, 3)
    workers = w.readers() + w.writers() + [w.drain()]
    assert workers and all(x.cfg["client"] == "java" and x.cfg["java_client_version"] == "4.1.1"
                           for x in workers)
    again = w.respawn(w.writers()[0])  # a restarted worker (kill-client, zombie) stays Java
    assert again.cfg["client"] == "java"
    assert type(w).__name__ == WORKLOADS[name].__mro__[1].__name__


def test_librdkafka_workload_workers_are_unchanged():
    w = WORKLOADS["txn-queue"](TxnQueueSpec(), BOOT, 3)
    assert all("client" not in x.cfg for x in w.readers() + w.writers() + [w.drain()])


def test_java_default_version_is_the_default_broker_version(no_build):
    w = WORKLOADS["txn-queue"](TxnQueueSpec(client="java"), BOOT, 3)
    assert w.writers()[0].cfg["java_client_version"] == java.DEFAULT_JAVA_CLIENT_VERSION


# -- the command line ------------------------------------------------------------------------
def test_command_runs_a_small_jvm_with_the_error_table(no_build):
    argv, cfg = java.command("txn-producer", {"client": "java", "java_client_version": "4.3.1", "x": 1})
    assert argv[-2:] == [java.MAIN, "txn-producer"]
    assert "-Xmx128m" in argv and argv[argv.index("-cp") + 1] == "/x/classes:/x/libs/*"
    assert cfg["x"] == 1 and cfg["error_table"] == java.error_table()
    assert len(cfg["error_table"]) == len(TABLE)
    assert all(a in {x.value for x in Action} for _, _, a, _ in cfg["error_table"])


def test_source_digest_follows_the_sources(tmp_path, monkeypatch):
    (tmp_path / "eosc").mkdir()
    (tmp_path / "eosc" / "A.java").write_text("class A {}")
    monkeypatch.setattr(java, "SRC", tmp_path)
    before = java.source_digest()
    (tmp_path / "eosc" / "A.java").write_text("class A { }")
    assert java.source_digest() != before and len(before) == 12


def test_clients_before_4_0_build_without_the_share_consumer(tmp_path, monkeypatch):
    """kafka-clients 3.x has no KafkaShareConsumer: the workers compiled against 3.9.1 with it
    failed (javac: ConfigResource.Type.GROUP, deliveryCount()); now they leave it out and Main
    names the version to set, and a share scenario asking for it is refused up front."""
    (tmp_path / "eosc").mkdir()
    for name in ("Main.java", java.SHARE_SOURCE):
        (tmp_path / "eosc" / name).write_text("class X {}")
    monkeypatch.setattr(java, "SRC", tmp_path)
    names = lambda v: [p.name for p in java.sources(v)]  # noqa: E731
    assert names("3.9.1") == ["Main.java"] and names("3.5.2") == ["Main.java"]
    assert names("4.0.0") == names("4.4.0") == names(None) == sorted(["Main.java", java.SHARE_SOURCE])
    assert java.source_digest("3.9.1") != java.source_digest("4.3.1")
    from harness.workloads import ShareSpec

    with pytest.raises(ValidationError, match="java_client_version 3.9.1 has no KafkaShareConsumer"):
        ShareSpec(client="java", java_client_version="3.9.1")
    assert ShareSpec(client="java", java_client_version="4.0.0").java_client_version == "4.0.0"


# -- meta ------------------------------------------------------------------------------------
def _history(tmp_path, events):
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    return p


def test_client_meta_reads_versions_from_the_history(tmp_path):
    p = _history(tmp_path, [
        {"f": "init", "type": "ok", "meta": {"client": "java 4.3.1"}},
        {"f": "txn", "type": "ok", "meta": {"transaction_version": 2}},
        {"f": "txn", "type": "ok", "meta": {"transaction_version": 2}},
        {"f": "assign", "type": "ok", "meta": {"broker_features": {"transaction.version": 2, "metadata.version": 27}}},
    ])
    facts = history_client_facts(p)
    assert facts == {"clients": ["java 4.3.1"], "transaction_versions": [2],
                     "broker_features": {"transaction.version": 2, "metadata.version": 27}}
    meta = client_meta(TxnQueueSpec(client="java"), p, transactional=True)
    assert meta["client"] == {"name": "java", "version": java.DEFAULT_JAVA_CLIENT_VERSION}
    assert meta["transaction_version"] == {"broker": 2, "client": [2]}


def test_client_meta_of_librdkafka_and_of_a_non_transactional_run(tmp_path):
    p = _history(tmp_path, [{"f": "poll", "type": "ok"}])
    meta = client_meta(TxnQueueSpec(), p, transactional=True)
    assert meta["client"]["name"] == "librdkafka" and meta["client"]["version"]
    assert meta["transaction_version"] == {"broker": None, "client": [1]}
    assert client_meta(IdempotentSpec(), p, transactional=False)["transaction_version"] is None


def test_an_unfinalized_transaction_version_is_level_0(tmp_path):
    p = _history(tmp_path, [{"f": "txn", "type": "ok", "meta": {"transaction_version": 1}},
                            {"f": "assign", "type": "ok", "meta": {"broker_features": {"metadata.version": 21}}}])
    assert client_meta(TxnQueueSpec(client="java"), p, True)["transaction_version"] == {"broker": 0, "client": [1]}


# -- the Java side of the table (needs the built workers) ------------------------------------
@pytest.fixture(scope="module")
def java_cp():
    try:
        return java.build(java.DEFAULT_JAVA_CLIENT_VERSION, fetch=False)
    except ArtifactError as exc:
        pytest.skip(f"Java workers not built: {exc}")


def _ask(cp, role, queries):
    cfg = json.dumps({"error_table": java.error_table()})
    proc = subprocess.run(["java", "-Xmx64m", "-cp", cp, java.MAIN, role, cfg], text=True, capture_output=True,
                          input="".join(json.dumps(q) + "\n" for q in queries), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_java_classifies_every_case_as_harness_errors_does(java_cp):
    phases = sorted({row[0] for row in TABLE})
    cases = [dict(phase=ph, fatal=f, retriable=r, txn_requires_abort=a, commit_requested=c)
             for ph in phases for f, r, a, c in itertools.product([False, True], repeat=4)]
    got = _ask(java_cp, "classify", cases)
    for case, answer in zip(cases, got, strict=True):
        facts = ErrorFacts("X", fatal=case["fatal"], retriable=case["retriable"],
                           txn_requires_abort=case["txn_requires_abort"])
        want = classify(facts, case["phase"], commit_requested=case["commit_requested"])
        assert (answer["action"], answer["replace"]) == (want.action.value, want.replace), case


FACTS = [  # exception, wrapped in, name, fatal, retriable, txn_requires_abort
    ("ProducerFencedException", None, "ProducerFencedException", True, False, False),
    # the client wraps the cause of its error state: the cause names the error
    ("ProducerFencedException", "kafka", "ProducerFencedException", True, False, False),
    ("FencedInstanceIdException", None, "FencedInstanceIdException", True, False, False),
    ("TimeoutException", "execution", "TimeoutException", False, True, False),
    ("NotLeaderOrFollowerException", None, "NotLeaderOrFollowerException", False, True, False),
    ("InvalidProducerEpochException", None, "InvalidProducerEpochException", False, False, True),
    ("TransactionAbortableException", "kafka", "TransactionAbortableException", False, False, True),
    ("TransactionalIdAuthorizationException", None, "TransactionalIdAuthorizationException", True, False, False),
]


def test_java_facts_of_kafka_exceptions(java_cp):
    got = _ask(java_cp, "facts", [{"exception": e, "wrap": w} for e, w, *_ in FACTS])
    for (exc, wrap, name, fatal, retriable, abortable), answer in zip(FACTS, got, strict=True):
        assert answer == {"name": name, "fatal": fatal, "retriable": retriable,
                          "txn_requires_abort": abortable}, (exc, wrap)


def test_java_refuses_the_busy_txn_queue_variant():
    if "producers_per_worker" not in TxnQueueSpec.model_fields:
        pytest.skip("no busy variant in this tree")
    with pytest.raises(ValidationError, match="client: java has no txn-producers worker"):
        TxnQueueSpec(client="java", producers_per_worker=4)


def test_versions_name_the_java_client_from_the_runs_meta():
    """meta.json's ``client`` is {"name", "version"} (client_meta): the runs before this test
    had no java-client (nor jdk on docker) in their versions."""
    from harness.run.scenario import load_scenario
    from harness.run.versions import collect_versions

    v = collect_versions(load_scenario("scenarios/java/smoke.yaml"),
                         {"client": {"name": "java", "version": "4.1.1"}, "backend": "docker"})
    assert v["java-client"] == "4.1.1" and "jdk" in v
    v = collect_versions(load_scenario("scenarios/smoke.yaml"), {"client": {"name": "librdkafka", "version": "2.16.0"}})
    assert "java-client" not in v
