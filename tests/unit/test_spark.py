"""Unit tests of the Spark workload's pure parts: reading Spark's checkpoint and sink files into
micro-batches and history ops, the query's options, the workload's workers, jar names.

The files are written here in Spark's own formats (offset/commit logs, _spark_metadata,
parquet part files); the real query is exercised by tests/integration/test_spark_run.py."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cluster.artifacts import _artifact_name
from harness.workloads import spark_batches as sb
from harness.workers.spark_driver import source_options, spark_conf
from harness.workers.spark_drain import spark_end_offsets
from harness.workers.configs import SparkConsumerConfig

SEC = 1_000_000_000
WALL0 = 1_800_000_000 * SEC  # wall-clock ns of the run's start in these tests


def _log(path: Path, lines: list, at: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n" + "\n".join(json.dumps(x) for x in lines))
    t = WALL0 + int(at * SEC)
    os.utime(path, ns=(t, t))


def _offsets(work: Path, n: int, ends: dict, at: float) -> None:
    _log(work / "checkpoint" / "offsets" / str(n), [{"batchWatermarkMs": 0}, ends], at)


def _part(work: Path, name: str, rows: list[tuple], instance: int) -> str:
    path = work / "sink" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    t, p, o, v = zip(*rows) if rows else ((), (), (), ())
    pq.write_table(pa.table({"topic": list(t), "partition": pa.array(p, pa.int32()), "offset": pa.array(o, pa.int64()),
                             "value": list(v), "instance": pa.array([instance] * len(rows), pa.int32())}), path)
    return f"file://{path}"


def _events(work: Path, lines: list[dict]) -> None:
    work.mkdir(parents=True, exist_ok=True)
    (work / "events.jsonl").write_text("".join(json.dumps(dict(e, wall_ns=WALL0 + e["time"])) + "\n" for e in lines))


@pytest.fixture
def parquet_work(tmp_path):
    """Two committed batches by two driver instances, and the files of an uncommitted attempt
    (a driver killed before the sink's commit) that must be ignored."""
    w = tmp_path / "work"
    _events(w, [{"instance": 1, "event": "start", "time": 1 * SEC, "pid": 1},
                {"instance": 2, "event": "start", "time": 20 * SEC, "pid": 2}])
    _offsets(w, 0, {"t0": {"0": 3}}, at=10)
    f0 = _part(w, "part-a.parquet", [("t0", 0, 0, "100"), ("t0", 0, 2, "102")], 1)  # offset 1: a marker
    _log(w / "sink" / "_spark_metadata" / "0", [{"path": f0, "action": "add"}], at=12)
    _offsets(w, 1, {"t0": {"0": 5}}, at=13)
    _part(w, "part-uncommitted.parquet", [("t0", 0, 3, "103")], 1)  # killed before commit
    f1 = _part(w, "part-b.parquet", [("t0", 0, 4, "104"), ("t0", 0, 3, "103")], 2)
    _log(w / "sink" / "_spark_metadata" / "1", [{"path": f1, "action": "add"}], at=30)
    return w


def test_parquet_batches_read_only_committed_files_in_offset_order(parquet_work):
    read = sb.parquet_batches(parquet_work)
    assert read.problems == []
    assert [(b.batch_id, b.instance) for b in read.batches] == [(0, 1), (1, 2)]
    assert read.batches[0].records == {"t0/0": [(0, "100"), (2, "102")]}
    assert read.batches[1].records == {"t0/0": [(3, "103"), (4, "104")]}  # sorted by offset
    assert sorted(read.sink_records) == [("t0/0", 0, "100"), ("t0/0", 2, "102"), ("t0/0", 3, "103"), ("t0/0", 4, "104")]


def test_poll_events_time_batches_at_plan_and_commit_on_the_instance_process(parquet_work):
    events = sb.read_events(parquet_work)
    clock = sb.Clock(events, fallback=0)
    assert clock.offset == WALL0
    ops = sb.poll_events(sb.parquet_batches(parquet_work), clock, sb.instance_starts(events), 1000, meta={"worker": "w"})
    assert [(e["process"], e["type"], e["time"]) for e in ops] == [
        (1001, "invoke", 10 * SEC), (1001, "ok", 12 * SEC),
        # batch 1 was planned at 13 s by instance 1, which died; instance 2 (started at 20 s) committed it
        (1002, "invoke", 20 * SEC), (1002, "ok", 30 * SEC)]
    assert ops[1]["value"] == [["poll", {"t0/0": [[0, 100], [2, 102]]}]]
    assert ops[3]["meta"] == {"worker": "w", "batch_id": 1, "spark": True, "instance": 2}


def test_sink_meta_lists_every_record_for_the_sink_checker(parquet_work):
    meta = sb.sink_meta(sb.parquet_batches(parquet_work), ["t0/0", "t0/1"])
    assert sorted(map(tuple, meta["records"])) == [("t0/0", 100), ("t0/0", 102), ("t0/0", 103), ("t0/0", 104)]
    assert meta["keys"] == ["t0/0", "t0/1"]


def test_compacted_metadata_attributes_only_new_files_to_its_batch(parquet_work):
    w = parquet_work
    f0 = json.loads((w / "sink" / "_spark_metadata" / "0").read_text().splitlines()[1])["path"]
    f1 = json.loads((w / "sink" / "_spark_metadata" / "1").read_text().splitlines()[1])["path"]
    _offsets(w, 2, {"t0": {"0": 6}}, at=31)
    f2 = _part(w, "part-c.parquet", [("t0", 0, 5, "105")], 2)
    _log(w / "sink" / "_spark_metadata" / "2.compact", [{"path": f, "action": "add"} for f in (f0, f1, f2)], at=33)
    read = sb.parquet_batches(w)
    assert read.batches[2].batch_id == 2 and read.batches[2].records == {"t0/0": [(5, "105")]}
    assert len(read.sink_records) == 5


def test_a_committed_file_that_cannot_be_read_is_a_problem(parquet_work):
    (parquet_work / "sink" / "part-b.parquet").write_bytes(b"not parquet")
    read = sb.parquet_batches(parquet_work)
    assert any("batch 1" in p and "unreadable" in p for p in read.problems)


def test_kafka_batches_place_output_records_by_source_offset_and_keep_duplicates(tmp_path):
    w = tmp_path / "work"
    _events(w, [{"instance": 1, "event": "start", "time": 1 * SEC, "pid": 1},
                {"instance": 2, "event": "start", "time": 20 * SEC, "pid": 2}])
    _offsets(w, 0, {"t0": {"0": 2, "1": 1}}, at=10)
    _log(w / "checkpoint" / "commits" / "0", [{"nextBatchWatermarkMs": 0}], at=11)
    _offsets(w, 1, {"t0": {"0": 4, "1": 1}}, at=12)
    _log(w / "checkpoint" / "commits" / "1", [{"nextBatchWatermarkMs": 0}], at=25)
    out = [["t0-out/0", 0, "t0/0@0", "100"], ["t0-out/0", 1, "t0/0@1", "101"], ["t0-out/1", 0, "t0/1@0", "200"],
           ["t0-out/0", 2, "t0/0@2", "102"],  # batch 1, first attempt (instance 1, killed)
           ["t0-out/0", 3, "t0/0@2", "102"], ["t0-out/0", 4, "t0/0@3", "103"]]  # batch 1 again
    (w / "output.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out))
    read = sb.kafka_batches(w)
    assert read.problems == []
    assert read.batches[0].records == {"t0/0": [(0, "100"), (1, "101")], "t0/1": [(0, "200")]}
    assert read.batches[1].records == {"t0/0": [(2, "102"), (3, "103")]}
    assert read.sink_records.count(("t0/0", 2, "102")) == 2
    events = sb.read_events(w)
    ops = sb.poll_events(read, sb.Clock(events, 0), sb.instance_starts(events), 10)
    assert [(e["process"], e["type"], e["meta"]["batch_id"]) for e in ops] == [
        (11, "invoke", 0), (11, "ok", 0), (12, "invoke", 1), (12, "ok", 1)]
    recs = sb.sink_meta(read, ["t0/0", "t0/1"])["records"]
    assert recs.count(["t0/0", 102]) == 2


def test_kafka_output_not_written_by_the_query_is_a_problem(tmp_path):
    w = tmp_path / "work"
    _events(w, [])
    (w / "output.jsonl").write_text(json.dumps(["t0-out/0", 0, None, "1"]) + "\n")
    assert sb.kafka_batches(w).problems


def test_batches_without_workload_values_make_no_ops(tmp_path):
    w = tmp_path / "work"
    _events(w, [{"instance": 1, "event": "start", "time": 0, "pid": 1}])
    _offsets(w, 0, {"t0": {"0": 1}}, at=1)
    f = _part(w, "p.parquet", [("t0", 0, 0, "not-a-number")], 1)
    _log(w / "sink" / "_spark_metadata" / "0", [{"path": f}], at=2)
    read = sb.parquet_batches(w)
    assert len(read.batches) == 1
    assert sb.poll_events(read, sb.Clock(sb.read_events(w), 0), [(0, 1)], 0) == []
    assert sb.sink_meta(read, ["t0/0"])["records"] == []


def test_missing_files_read_as_nothing(tmp_path):
    assert sb.parquet_batches(tmp_path).batches == []
    assert sb.read_events(tmp_path) == []
    assert sb.Clock([], fallback=7).run_ns(10) == 3


def test_instance_at_picks_the_last_start_before():
    starts = [(5, 1), (50, 2), (90, 3)]
    assert sb.instance_at(starts, 4) is None
    assert sb.instance_at(starts, 5) == 1
    assert sb.instance_at(starts, 89) == 2
    assert sb.instance_at(starts, 1000) == 3


def test_spark_end_offsets_take_the_highest_end_over_progress_reports(tmp_path):
    p = tmp_path / "events.jsonl"
    lines = [{"event": "progress", "progress": {"sources": [{"endOffset": {"t0": {"0": 5, "1": 2}}}]}},
             {"event": "start"},
             {"event": "progress", "progress": {"sources": [{"endOffset": json.dumps({"t0": {"0": 9}})}]}}]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"event": "progr')  # torn last line
    assert spark_end_offsets(p) == {"t0/0": 9, "t0/1": 2}
    assert spark_end_offsets(tmp_path / "none.jsonl") == {}


def test_source_options_follow_the_kafka_integration_guide():
    opts = source_options(SparkConsumerConfig(
        bootstrap="198.18.0.11:9092", topics=["t0", "t1"], work_dir="/w", isolation_level="read_committed",
        max_offsets_per_trigger=500, kafka={"kafka.request.timeout.ms": 20000, "minPartitions": 4}))
    assert opts == {"kafka.bootstrap.servers": "198.18.0.11:9092", "subscribe": "t0,t1",
                    "startingOffsets": "earliest", "failOnDataLoss": "true",
                    "kafka.isolation.level": "read_committed", "maxOffsetsPerTrigger": "500",
                    "kafka.request.timeout.ms": "20000", "minPartitions": "4"}


def test_spark_conf_binds_local_drivers_to_loopback_and_lets_the_scenario_override(tmp_path):
    base = {"bootstrap": "b:9092", "topics": ["t0"], "work_dir": str(tmp_path)}
    local = spark_conf(SparkConsumerConfig(**base, master="local[2]", jars=["/a.jar", "/b.jar"], driver_memory="1g",
                                           conf={"spark.sql.shuffle.partitions": "4"}), tmp_path)
    assert local["spark.driver.host"] == "127.0.0.1" and local["spark.jars"] == "/a.jar,/b.jar"
    assert local["spark.sql.shuffle.partitions"] == "4"
    assert local["spark.sql.streaming.minBatchesToRetain"] == "1000000"
    remote = spark_conf(SparkConsumerConfig(**base, master="spark://m:7077"), tmp_path)
    assert "spark.driver.host" not in remote


@pytest.mark.parametrize("jar,name", [
    ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
    ("spark-token-provider-kafka-0-10_2.13-4.0.0.jar", "spark-token-provider-kafka-0-10_2.13"),
    ("kafka-clients-3.9.2.jar", "kafka-clients"),
    ("commons-pool2-2.13.1.jar", "commons-pool2"),
    ("zstd-jni-1.5.6-9.jar", "zstd-jni"),
    ("scala-library-2.13.18.jar", "scala-library"),
])
def test_artifact_names_drop_the_version(jar, name):
    assert _artifact_name(jar) == name


# -- the workload ---------------------------------------------------------------------------------
@pytest.fixture
def workload(monkeypatch, tmp_path):
    import harness.cluster.artifacts
    from harness.workloads.spark import Spark, SparkSpec

    monkeypatch.setattr(harness.cluster.artifacts, "spark_connector_jars", lambda version: [Path("/jars/c.jar")])

    def make(**kw):
        return Spark(SparkSpec(work_dir=str(tmp_path / "w"), **kw), "198.18.0.11:9092", 5)
    return make


def test_workload_workers_and_respawn(workload):
    w = workload(producers=2, sink="parquet")
    [spark] = w.readers()
    assert (spark.name, spark.role, spark.cfg["instance"], spark.cfg["jars"]) == ("spark-consumer", "spark-consumer", 1, ["/jars/c.jar"])
    assert [x.role for x in w.writers()] == ["txn-producer", "txn-producer"]
    again = w.respawn(spark)
    assert again.cfg["instance"] == 2 and again.cfg["work_dir"] == spark.cfg["work_dir"]
    assert w.respawn(again).cfg["instance"] == 3
    producer = w.writers()[0]
    assert w.respawn(producer).cfg["transactional_id"] == producer.cfg["transactional_id"]
    drain = w.drain()
    assert drain.role == "spark-drain" and drain.cfg["isolation_level"] == "read_committed" and drain.cfg["output_keys"] == []


def test_kafka_sink_adds_output_topics_and_the_drain_reads_them(workload):
    w = workload(sink="kafka", topics=1, partitions=2)
    assert [t.name for t in w.topics()] == ["t0", "t0-out"]
    assert w.keys() == ["t0/0", "t0/1"]
    assert w.drain().cfg["output_keys"] == ["t0-out/0", "t0-out/1"]


def test_read_uncommitted_applies_to_spark_only(workload):
    w = workload(isolation_level="read_uncommitted", consumers=1)
    spark, consumer = w.readers()
    assert spark.cfg["isolation_level"] == "read_uncommitted"
    assert consumer.cfg["isolation_level"] == "read_committed"
    assert w.drain().cfg["isolation_level"] == "read_committed"
    assert w.meta()["isolation_level"] == "read_uncommitted"


def test_scenario_files_validate():
    from harness.run.scenario import load_scenario

    root = Path(__file__).resolve().parents[2] / "scenarios"
    for name in ("spark.yaml", "spark-kafka-sink.yaml"):
        if (root / name).exists():
            scn = load_scenario(root / name)
            assert scn.workload.name == "spark"


def test_a_killed_driver_instance_ends_with_a_crash_op_at_its_kill():
    events = [{"instance": 1, "event": "start", "time": 1 * SEC, "pid": 41},
              {"instance": 1, "event": "progress", "time": 9 * SEC},
              {"instance": 2, "event": "start", "time": 20 * SEC, "pid": 42},
              {"instance": 2, "event": "progress", "time": 30 * SEC},
              {"instance": 3, "event": "start", "time": 40 * SEC, "pid": 43},
              {"instance": 3, "event": "stopped", "time": 50 * SEC},
              {"instance": 4, "event": "start", "time": 60 * SEC, "pid": 44}]  # still running
    crashes = sb.crash_events(events, {41: 12 * SEC}, 1000)
    assert [(e["process"], e["type"], e["f"], e["time"]) for e in crashes] == [
        (1001, "invoke", "crash", 12 * SEC), (1001, "info", "crash", 12 * SEC),  # killed by the nemesis
        (1002, "invoke", "crash", 30 * SEC), (1002, "info", "crash", 30 * SEC)]  # no kill known: last event
    polls = [{"process": 1002, "type": "invoke", "time": 21 * SEC}, {"process": 1002, "type": "ok", "time": 25 * SEC}]
    ordered = sb.in_time_order(polls + crashes)
    assert [(e["process"], e["time"]) for e in ordered] == [
        (1001, 12 * SEC), (1001, 12 * SEC), (1002, 21 * SEC), (1002, 25 * SEC), (1002, 30 * SEC), (1002, 30 * SEC)]
    # the last instance crashed only when the nemesis killed it
    assert {e["meta"]["instance"] for e in sb.crash_events(events, {44: 70 * SEC}, 1000)} == {1, 2, 4}


def test_progress_reports_are_checked_against_the_sink(parquet_work):
    read = sb.parquet_batches(parquet_work)
    events = [{"event": "progress", "instance": 1, "progress": {"batchId": 0, "numInputRows": 2}},
              {"event": "progress", "instance": 2, "progress": {"batchId": 1, "numInputRows": 3}},
              {"event": "progress", "instance": 1, "progress": {"batchId": 1, "numInputRows": 9}}]  # not the committer
    assert sb.progress_mismatches(read, events) == [
        "batch 1: 2 rows in the sink, but Spark's progress report of instance 2 says it read 3"]
