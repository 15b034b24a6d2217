"""The app workload's parquet sink, read from its committed files only (harness.workers.file_sink,
harness.workers.app_files): real parquet files and a tiny ``_spark_metadata`` log in tmp_path,
one file no batch lists (a killed driver's attempt) that must be ignored; the offsets every
reader gives a row; the app-poll values they make, judged by checkers.finders.app_end_to_end."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from checkers import app_cases, check, load_history
from checkers.synthetic.build import HistoryBuilder
from harness.workers.app_files import FileOutput, SinkRows, sink_key
from harness.workers.app_match import compile_match
from harness.workers.file_sink import committed_batches


def part(sink: Path, name: str, values: list[str | None], keys: list[str | None] | None = None) -> str:
    """A parquet file of the driver's schema (key, value: strings) in ``sink``; its file:// URI."""
    sink.mkdir(parents=True, exist_ok=True)
    keys = keys if keys is not None else [None] * len(values)
    pq.write_table(pa.table({"key": pa.array(keys, pa.string()), "value": pa.array(values, pa.string())}),
                   sink / name)
    return f"file://{sink / name}"


def commit(sink: Path, batch: int, uris: list[str]) -> None:
    """``_spark_metadata/<batch>`` listing ``uris``, as Spark's file sink writes it."""
    log = sink / "_spark_metadata" / str(batch)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("v1\n" + "\n".join(json.dumps({"path": u, "size": 1, "isDir": False, "action": "add"})
                                      for u in uris))


def sink_with_an_uncommitted_file(tmp_path: Path) -> Path:
    """Batch 0: inputs 1, 2 (two files); batch 1: input 3; a file with 2 and 9 no batch lists."""
    sink = tmp_path / "app" / "0" / "sink"
    commit(sink, 0, [part(sink, "part-0-a.parquet", ["1"]), part(sink, "part-0-b.parquet", ["2"])])
    part(sink, "part-1-killed.parquet", ["2", "9"])  # a killed driver's attempt at batch 1
    commit(sink, 1, [part(sink, "part-1-b.parquet", ["3"])])
    return sink


def test_committed_batches_list_only_the_files_the_log_names(tmp_path):
    sink = sink_with_an_uncommitted_file(tmp_path)
    batches = committed_batches(sink)
    assert [(b.batch_id, [p.name for p in b.files]) for b in batches] == [
        (0, ["part-0-a.parquet", "part-0-b.parquet"]), (1, ["part-1-b.parquet"])]
    assert committed_batches(tmp_path / "nothing") == []


def test_rows_of_committed_files_only_with_offsets_in_committed_order(tmp_path):
    sink = sink_with_an_uncommitted_file(tmp_path)
    assert SinkRows(sink).read() == [(0, None, "1"), (1, None, "2"), (2, None, "3")]


def test_incremental_reads_give_each_row_once_and_the_offsets_a_fresh_reader_gives(tmp_path):
    sink = tmp_path / "sink"
    commit(sink, 0, [part(sink, "a.parquet", ["1", "2"])])
    during = SinkRows(sink)
    assert during.read() == [(0, None, "1"), (1, None, "2")]
    assert during.read() == []
    # batch 2 committed while batch 1 is not visible yet: the reader waits at the gap
    commit(sink, 2, [part(sink, "c.parquet", ["5"])])
    assert during.read() == []
    commit(sink, 1, [part(sink, "b.parquet", ["3", "4"])])
    assert during.read() == [(2, None, "3"), (3, None, "4"), (4, None, "5")]
    assert SinkRows(sink).read(final=True) == [(0, None, "1"), (1, None, "2"), (2, None, "3"), (3, None, "4"),
                                               (4, None, "5")]


def test_the_final_read_goes_past_a_gap_and_an_unreadable_file(tmp_path):
    sink = tmp_path / "sink"
    commit(sink, 0, [part(sink, "a.parquet", ["1"])])
    commit(sink, 1, [f"file://{sink / 'torn.parquet'}"])
    (sink / "torn.parquet").write_bytes(b"not parquet")
    commit(sink, 3, [part(sink, "d.parquet", ["4"])])
    during = SinkRows(sink)
    assert during.read() == [(0, None, "1")] and during.problems == []  # waits at batch 1
    final = SinkRows(sink)
    assert final.read(final=True) == [(0, None, "1"), (1, None, "4")]
    assert any("batch 1" in p and "unreadable" in p for p in final.problems)


def test_file_output_names_inputs_with_the_match_and_keeps_unmatched_samples(tmp_path):
    sink = tmp_path / "sink"
    commit(sink, 0, [part(sink, "a.parquet", ["7", "x", None], keys=["70", None, "k"])])
    out = FileOutput({"app/0/sink": str(sink)}, compile_match("value"))
    assert out.poll() == {"app/0/sink": [[0, 7], [1, None], [2, None]]}
    assert (out.matched, out.unmatched) == (1, 2)
    assert out.samples[0] == {"at": "app/0/sink@1", "key": "None", "value": "b'x'"}
    assert out.poll() == {}
    by_key = FileOutput({"app/0/sink": str(sink)}, compile_match("key"))
    assert by_key.poll() == {"app/0/sink": [[0, 70], [1, None], [2, None]]}


def app_history(polls: list[dict]) -> HistoryBuilder:
    """Inputs 1, 2, 3 committed (in/0), 9 aborted; the readers' app-polls ``polls`` during the
    run and, last, the final drain's (a fresh reader of the same sink)."""
    b = HistoryBuilder()
    b.txn(0, [("in/0", 1, 0), ("in/0", 2, 1)], tid="p")
    b.txn(0, [("in/0", 9, None)], type_="fail", tid="p")
    b.txn(0, [("in/0", 3, 3)], tid="p")
    b.assign(1, ["in/0"])
    b.poll(1, {"in/0": [(0, 1), (1, 2), (3, 3)]}, final=True)
    for i, p in enumerate(polls):
        final = i == len(polls) - 1
        meta = {"final": True} if final else None
        b.invoke(2 if not final else 1, "app-poll", [["poll"]], meta)
        b.complete(2 if not final else 1, "ok", [["poll", p]], meta)
    return b


APP = {"input_keys": ["in/0"], "output_keys": [sink_key(0)], "semantics": "exactly-once", "order": "none",
       "lag_bound_s": None, "drain_complete": True}


def test_file_sink_polls_are_app_polls_the_checker_judges_as_a_topics_records(tmp_path):
    """The readers during the run and the final drain read the same rows at the same offsets:
    exactly-once, no false duplicate; the uncommitted file's aborted input 9 is never read."""
    sink = tmp_path / "app" / "0" / "sink"
    commit(sink, 0, [part(sink, "part-0-a.parquet", ["1"]), part(sink, "part-0-b.parquet", ["2"])])
    part(sink, "part-1-killed.parquet", ["2", "9"])
    dirs = {sink_key(0): str(sink)}
    during = FileOutput(dirs, compile_match("value"))
    first = during.poll()
    commit(sink, 1, [part(sink, "part-1-b.parquet", ["3"])])
    second = during.poll()
    final = FileOutput(dirs, compile_match("value")).poll(final=True)
    assert first == {"app/0/sink": [[0, 1], [1, 2]]} and second == {"app/0/sink": [[2, 3]]}
    h = load_history(app_history([first, second, final]).events)
    assert app_cases(h, APP) == []
    v = check(h, meta={"app": APP})
    assert v.valid is True, v.unknown_reasons
    assert v.stats["app"]["outputs"] == {"app/0/sink": 3}


def test_a_row_written_twice_is_a_duplicate_and_an_aborted_input_an_aborted_read(tmp_path):
    sink = tmp_path / "sink"
    commit(sink, 0, [part(sink, "a.parquet", ["1", "2", "3"])])
    commit(sink, 1, [part(sink, "b.parquet", ["2", "9"])])  # a sink that is not exactly-once
    final = FileOutput({sink_key(0): str(sink)}, compile_match("value")).poll(final=True)
    cases = app_cases(load_history(app_history([final]).events), APP)
    assert sorted((c["anomaly"], c["value"]) for c in cases) == [("eos-aborted-read", 9), ("eos-duplicate", 2)]
    dup = next(c for c in cases if c["anomaly"] == "eos-duplicate")
    assert dup["outputs"] == [["app/0/sink", 1], ["app/0/sink", 3]]
