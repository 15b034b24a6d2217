"""harness.run.versions: what exactly a run tested."""
import platform
import shutil

import confluent_kafka
import pytest

from harness.run.scenario import load_scenario
from harness.run.versions import ORDER, collect_versions, harness_version, jdk_version, ordered


def test_this_machine():
    v = collect_versions()
    assert v["harness"].startswith("0.") and v["harness"] == harness_version()
    assert v["confluent-kafka"] == confluent_kafka.version()
    assert v["librdkafka"] == confluent_kafka.libversion()[0]
    assert v["linux"] == platform.release() and v["python"] == platform.python_version()
    assert "kafka" not in v and "spark" not in v
    if shutil.which("java"):
        assert v["jdk"] == jdk_version() and v["jdk"][0].isdigit()


def test_a_librdkafka_run_on_netns():
    v = collect_versions(load_scenario("scenarios/smoke.yaml"), {"kafka_version": "4.3.1", "backend": "netns"})
    assert (v["kafka"], v["backend"]) == ("4.3.1", "netns")
    assert "java-client" not in v and "spark" not in v
    assert list(v) == [k for k in ORDER if k in v]
    if shutil.which("java"):
        assert "jdk" in v  # the brokers ran on this machine's JVM


def test_the_meta_of_the_run_wins_over_the_scenario():
    # an external cluster: Kafka's version as the cluster service found it, no local JVM
    v = collect_versions(load_scenario("scenarios/smoke.yaml"), {"kafka_version": "3.9.1", "backend": "external"})
    assert (v["kafka"], v["backend"]) == ("3.9.1", "external") and "jdk" not in v


def test_java_client_and_spark_when_used():
    v = collect_versions(load_scenario("scenarios/java/smoke.yaml"), {"client": "java", "java_client_version": "3.9.1"})
    assert v["java-client"] == "3.9.1"
    s = collect_versions(load_scenario("scenarios/spark.yaml"))
    pyspark = pytest.importorskip("pyspark")
    assert s["spark"] == pyspark.__version__


def test_ordered():
    assert list(ordered({"zzz": 1, "linux": "6", "kafka": "4.3.1", "none": None})) == ["kafka", "linux", "zzz"]


def test_suite_index_and_junit_name_the_versions(tmp_path):
    import xml.etree.ElementTree as ET

    from harness.detect import suite as st
    from harness.run.scenario import Scenario
    from harness.detect.suite_outputs import index_html, junit_xml

    common = {"harness": "0.1.0 (git abc1234)", "librdkafka": "2.16.0", "linux": "6.1.0"}
    cells, records = [], {}
    for kafka in ("4.3.1", "3.9.1"):
        c = st.Cell(Scenario.model_validate({"name": "smoke", "seed": 1, "cluster": {"kafka_version": kafka}}),
                    "scenarios/smoke.yaml")
        cells.append(c)
        verdict = {"valid": True, "versions": {**common, "kafka": kafka, "jdk": "17.0.15 (openjdk)"}}
        records[c.id] = st.make_record(c, tmp_path, status=st.VALID, started=0, wall_s=1, verdict=verdict,
                                       run_dir=tmp_path / kafka)
    s = st.summarize("ci", "scenarios/ci.yaml", cells, records)
    ts = ET.fromstring(junit_xml(s)).find("testsuite")
    suite_props = {p.get("name"): p.get("value") for p in ts.find("properties")}
    assert suite_props["version.librdkafka"] == "2.16.0" and "version.kafka" not in suite_props
    case = {p.get("name"): p.get("value") for p in ts.findall("testcase")[1].find("properties")}
    assert case["version.kafka"] == "3.9.1" and case["version.harness"] == "0.1.0 (git abc1234)"
    html = index_html(s)
    assert "Tested with:" in html and "librdkafka <code>2.16.0</code>" in html and "jdk <code>17.0.15" in html
