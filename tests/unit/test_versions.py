"""harness.versions: what exactly a run tested."""
import platform
import shutil

import confluent_kafka
import pytest

from harness.scenario import load_scenario
from harness.versions import ORDER, collect_versions, harness_version, jdk_version, ordered


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
