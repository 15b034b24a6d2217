"""load_history: tolerant reading, pairing, columnar shapes."""

import json

import pytest

from checkers import check, load_history
from checkers.synthetic.build import HistoryBuilder


def _basic() -> HistoryBuilder:
    b = HistoryBuilder()
    b.init(0, "eosc-txn-0")
    b.txn(0, [("t/0", 1, 0), ("t/1", 2, 0)], tid="eosc-txn-0")
    b.assign(1, ["t/0", "t/1"])
    b.poll(1, {"t/0": [(0, 1)], "t/1": [(0, 2)]})
    return b


def test_pairs_invokes_with_completions_and_builds_columns():
    h = load_history(_basic().events)
    assert h.ops["f"].to_list() == ["init", "txn", "assign", "poll"]
    assert h.ops["invoke_index"].to_list() == [0, 2, 4, 6]
    assert h.ops["complete_index"].to_list() == [1, 3, 5, 7]
    assert h.ops["type"].to_list() == ["ok"] * 4
    assert h.ops["transactional_id"].to_list()[:2] == ["eosc-txn-0", "eosc-txn-0"]
    sends = h.mops.filter(h.mops["kind"] == "send")
    assert [h.keys[k] for k in sends["key"]] == ["t/0", "t/1"]
    assert sends["offset"].to_list() == [0, 0]
    polls = h.mops.filter(h.mops["kind"] == "poll")
    assert polls["value"].to_list() == [1, 2]
    assert h.problems == []


def test_reads_the_same_from_file_and_from_memory(tmp_path):
    b = _basic()
    h1 = load_history(b.write(tmp_path / "history.jsonl"))
    h2 = load_history(b.events)
    assert h1.ops.equals(h2.ops)
    assert h1.mops.equals(h2.mops)


def test_truncated_last_line_is_dropped_and_reported(tmp_path):
    b = _basic()
    lines = b.lines()
    p = tmp_path / "history.jsonl"
    p.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])  # died mid-write
    h = load_history(p)
    assert h.truncated
    assert any("truncated" in x for x in h.problems)
    # the poll's completion was lost: the poll reads as info and returned nothing we know of
    assert h.ops["type"].to_list()[-1] == "info"
    assert h.ops["complete_index"].to_list()[-1] is None
    assert h.mops.filter(h.mops["kind"] == "poll").height == 0


def test_garbled_line_mid_file_is_skipped_and_reported(tmp_path):
    lines = _basic().lines()
    lines.insert(3, '{"index": 99, "garbage": ')
    lines.insert(5, "\x00\x01 not json at all")
    p = tmp_path / "history.jsonl"
    p.write_text("\n".join(lines) + "\n")
    h = load_history(p)
    assert h.garbled_lines == 2
    assert sum("garbled" in x for x in h.problems) == 2
    assert h.ops.height == 4  # every real event still paired
    v = check(p)
    assert v.valid == "unknown"
    assert any("garbled" in r for r in v.unknown_reasons)


def test_missing_completion_reads_as_info_with_invoke_sends():
    b = HistoryBuilder()
    b.txn(0, [("t/0", 5, None)], complete=False)
    h = load_history(b.events)
    assert h.ops["type"].to_list() == ["info"]
    assert h.mops["value"].to_list() == [5]
    assert h.mops["offset"].to_list() == [None]


def test_second_invoke_of_a_process_closes_the_first_as_info():
    b = HistoryBuilder()
    b.invoke(0, "txn", [["send", "t/0", 1]])
    b._open.clear()
    b.txn(0, [("t/0", 2, 0)])
    h = load_history(b.events)
    assert h.ops["type"].to_list() == ["info", "ok"]
    assert any("in flight" in p for p in h.problems)


def test_orphan_completion_nemesis_and_unknown_f_are_tolerated():
    evs = [
        {"index": 0, "time": 1, "process": 3, "type": "ok", "f": "poll", "value": []},
        {"index": 1, "time": 2, "process": "nemesis", "type": "info", "f": "kill", "value": ["n1"]},
        {"index": 2, "time": 3, "process": 4, "type": "invoke", "f": "frobnicate", "value": {"x": 1}},
        {"index": 3, "time": 4, "process": 4, "type": "ok", "f": "frobnicate", "value": 7},
        {"index": 4, "time": 5, "process": 4, "type": "bogus", "f": "x"},
        "not an event",
    ]
    h = load_history(evs)
    assert h.ops["f"].to_list() == ["frobnicate"]
    assert h.extras[0]["completion_value"] == 7
    assert len(h.nemesis) == 1
    assert any("no open invoke" in p for p in h.problems)
    assert any("unknown type" in p for p in h.problems)
    assert any("not a JSON object" in p for p in h.problems)


def test_malformed_micro_ops_are_skipped_not_raised():
    evs = [
        {"index": 0, "time": 1, "process": 0, "type": "invoke", "f": "txn",
         "value": [["send", "t/0", 1], ["send", 7, 2], "x"]},
        {"index": 1, "time": 2, "process": 0, "type": "ok", "f": "txn",
         "value": [["send", "t/0", [0, 1]], ["send", "t/0", ["a", 2]], ["bogus"]]},
    ]
    h = load_history(evs)
    assert h.mops["value"].to_list() == [1]
    assert len(h.problems) >= 2


def test_empty_file_gives_unknown_verdict(tmp_path):
    p = tmp_path / "history.jsonl"
    p.write_text("")
    h = load_history(p)
    assert h.ops.height == 0 and h.mops.height == 0
    v = check(p)
    assert v.valid == "unknown"
    assert v.anomalies == {}
    json.loads(v.to_json())


def test_missing_file_is_an_unknown_verdict_not_a_traceback(tmp_path):
    v = check(tmp_path / "nope.jsonl")
    assert v.valid == "unknown"
    assert "could not read history" in v.unknown_reasons[0]
    with pytest.raises(FileNotFoundError):
        load_history(tmp_path / "nope.jsonl")


def test_transactional_id_is_inherited_from_init_within_a_process():
    b = HistoryBuilder()
    b.init(0, "eosc-txn-7")
    b.txn(0, [("t/0", 1, 0)])  # no meta on the txn itself
    h = load_history(b.events)
    assert h.ops["transactional_id"].to_list() == ["eosc-txn-7", "eosc-txn-7"]
