from pathlib import Path

import pytest

from harness.run.scenario import ScenarioError, load_scenario
from harness.detect.suite import is_suite_file

ROOT = Path(__file__).resolve().parents[2]


def test_every_shipped_scenario_loads():
    files = sorted((ROOT / "scenarios").glob("*.yaml"))
    assert files
    scenarios = [f for f in files if not is_suite_file(f)]  # suites: top-level `suite:` key
    assert scenarios and len(scenarios) < len(files), "scenarios/ holds scenarios and the shipped suites"
    for f in scenarios:
        assert load_scenario(f).name


def test_typo_and_bad_values_are_named(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("name: x\nworkload: {producer: 3, abort_probability: 2}\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    msg = str(e.value)
    assert "workload.txn-queue.abort_probability" in msg and "workload.txn-queue.producer" in msg


def test_fault_parameters_are_checked_when_the_scenario_loads(tmp_path):
    # a typo in a fault's own parameters fails at load, before any cluster starts
    p = tmp_path / "s.yaml"
    p.write_text("""name: x
nemesis:
  faults:
    - {fault: toxic, type: latncy}
    - {fault: toxic, type: latency, latncy_ms: 600}
    - {fault: partition, grudge: halfs}
    - {fault: kill, hold_s: 3}
    - {fault: toxic, type: timeout, timeout_ms: 0}
    - {fault: zombie, fresh_id: yes-please}
    - {fault: zombie, fresh_id: true}
    - {fault: toxic, type: timeout, timeout_ms: 0, duration_s: [18, 13]}
    - {fault: toxic, type: timeout, timeout_ms: 0, duration_s: [13, 18]}
""")
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    msg = str(e.value)
    assert "nemesis.faults.0" in msg and "'latncy'" in msg
    assert "nemesis.faults.1" in msg and "['latncy_ms']" in msg
    assert "nemesis.faults.2" in msg and "unknown grudge 'halfs'" in msg
    assert "nemesis.faults.3" in msg and "fault kill takes only" in msg and "['hold_s']" in msg
    assert "nemesis.faults.4" not in msg
    assert "nemesis.faults.5" in msg and "fresh_id must be true or false" in msg
    assert "nemesis.faults.6" not in msg
    assert "nemesis.faults.7" in msg and "duration_s: expected [low, high]" in msg
    assert "nemesis.faults.8" not in msg


def test_missing_and_non_yaml_files(tmp_path):
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario(tmp_path / "nope.yaml")
    p = tmp_path / "bad.yaml"
    p.write_text("name: [unclosed")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(p)


def test_a_suite_file_is_named_as_such():
    with pytest.raises(ScenarioError, match="is a suite"):
        load_scenario(ROOT / "scenarios" / "ci.yaml")


def test_start_after_ok_holds_the_faults_for_named_clients_only(tmp_path):
    """Spark's scenarios hold their faults until the driver's first committed batch; a glob
    that names no client is not waited for, and the history says so."""
    import json
    import threading

    from harness.run.history_writer import HistoryWriter
    from harness.run.runner import _await_first_ok

    spark = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "spark.yaml")
    assert spark.nemesis.start_after_ok == ["spark-*"]

    class Pool:
        def client_names(self):
            return ["spark-consumer", "reader-0"]

        def wait_first_ok(self, patterns, timeout, stop=None):
            self.asked = (patterns, timeout)
            return []

    scn = spark.model_copy(update={"nemesis": spark.nemesis.model_copy(update={"start_after_ok": ["spark-*", "nope-*"]})})
    hist = HistoryWriter(tmp_path / "history.jsonl")
    pool = Pool()
    _await_first_ok(scn, hist, pool, threading.Event())
    hist.close()
    assert pool.asked == (["spark-*"], scn.duration)
    begin, end = [json.loads(x) for x in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert begin["f"] == end["f"] == "start-after-ok" and begin["process"] == "nemesis"
    assert "no client matches ['nope-*']" in end["value"]["result"] and "started anyway" in end["value"]["result"]


def test_topic_min_isr_follows_the_brokers_setting():
    from harness.run.scenario import ClusterSpec

    assert ClusterSpec().topic_min_isr() == 2
    assert ClusterSpec(nodes=1).topic_min_isr() == 1
    assert ClusterSpec(broker={"min.insync.replicas": "1"}).topic_min_isr() == 1
    assert ClusterSpec(broker={"min.insync.replicas": "3"}).topic_min_isr() == 3
    for bad in ("0", "two", "-1"):
        with pytest.raises(ValueError, match="min.insync.replicas"):
            ClusterSpec(broker={"min.insync.replicas": bad})
