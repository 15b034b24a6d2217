"""harness.cluster.open_txns: kafka-transactions.sh's tables, who holds a key, the bounded wait
before the final drain; checkers.finders.stalled_lso naming the holder (issue 46)."""
from __future__ import annotations

import json

import pytest

from checkers.history import load_history
from checkers.finders.stalled_lso import open_transactions, stalled_lso_cases
from checkers.verdict import check
from harness.cluster import open_txns as ot

# TransactionsCommand's output as Kafka 4.3.1 prints it (ToolsUtils.prettyPrintTable: padded
# cells, each followed by a tab); the values are those of issue 46's run
LIST = ("TransactionalId\tCoordinator\tProducerId\tTransactionState\t\n"
        "eosc-txn-4     \t2          \t1         \tOngoing         \t\n"
        "eosc-txn-0     \t3          \t0         \tCompleteCommit  \t\n")
DESCRIBE = ("CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\t"
            "CurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions\t\n"
            "2            \teosc-txn-4     \t1         \t0            \tOngoing         \t30000               \t"
            "1795916148530                \t46000                \tt0-3,t0-0,t1-2 \t\n")
DESCRIBE_EMPTY = ("CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\t"
                  "CurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions\t\n"
                  "3            \teosc-txn-0     \t0         \t0            \tCompleteCommit  \t30000               \t"
                  "None                         \tNone                 \t               \t\n")
PRODUCERS = ("ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\t"
             "CurrentTransactionStartOffset\t\n"
             "1         \t0            \t1                     \t40          \t1795916133380\t135                          \t\n"
             "1000      \t0            \t2                     \t61          \t1795916163330\tNone                         \t\n")


def test_parse_list_describe_producers():
    assert ot.parse_list("WARN a JVM line first\n" + LIST) == [
        {"transactional_id": "eosc-txn-4", "coordinator": 2, "producer_id": 1, "state": "Ongoing"},
        {"transactional_id": "eosc-txn-0", "coordinator": 3, "producer_id": 0, "state": "CompleteCommit"}]
    d = ot.parse_describe(DESCRIBE)
    assert d["state"] == "Ongoing" and d["timeout_ms"] == 30000 and d["start_ms"] == 1795916148530
    assert d["partitions"] == ["t0/3", "t0/0", "t1/2"]
    e = ot.parse_describe(DESCRIBE_EMPTY)
    assert e["start_ms"] is None and e["duration_ms"] is None and e["partitions"] == []
    p = ot.parse_producers(PRODUCERS)
    assert [(r["producer_id"], r["start_offset"]) for r in p] == [(1, 135), (1000, None)]
    assert ot._partition("my-topic-12") == "my-topic/12"


@pytest.mark.parametrize("text", ["", "Error: a timeout\n", LIST.replace("\t1         \tOngoing", "\tOngoing")])
def test_bad_tool_output_is_one_line(text):
    with pytest.raises(ot.ToolOutputError) as e:
        ot.parse_list(text)
    assert "\n" not in str(e.value)


def test_holders_open_hanging_unknown():
    listed, prods = ot.parse_list(LIST), ot.parse_producers(PRODUCERS)
    open_ = ot.holders("t0/3", 135, prods, listed, {"eosc-txn-4": ot.parse_describe(DESCRIBE)})
    assert [(h["producer_id"], h["status"], h["transactional_id"]) for h in open_] == [(1, "open", "eosc-txn-4")]
    # the coordinator lists the id without this partition: no marker will come (F2)
    gone = ot.parse_describe(DESCRIBE.replace("Ongoing         ", "CompleteCommit  "))
    assert ot.holders("t0/3", 135, prods, listed, {"eosc-txn-4": gone})[0]["status"] == "hanging"
    assert ot.holders("t0/3", 135, prods, [], {})[0]["status"] == "unknown"
    assert ot.holders("t0/3", 135, prods, [listed[1]], {})[0]["status"] == "hanging"  # no coordinator knows pid 1


class FakeTool:
    """TxnTool's run() answering from canned tables; ``state`` may change between calls."""

    def __init__(self, state="Ongoing"):
        self.state, self.calls = state, []

    def run(self, *args):
        self.calls.append(args[0])
        if args[0] == "list":
            return LIST.replace("Ongoing         ", f"{self.state:16}")
        if args[0] == "describe":
            return DESCRIBE.replace("Ongoing         ", f"{self.state:16}")
        return PRODUCERS


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_settle_waits_for_the_coordinators_abort():
    clock, tool = Clock(), FakeTool()
    offsets = lambda: {"t0/3": [135, 144] if clock.t < 12 else [144, 144], "t0/0": [146, 146]}
    res = ot.settle(offsets, tool, run_s=lambda: 90 + clock.t, sleep=clock.sleep, clock=clock)
    assert res.held == {"t0/3": [135, 144]} and res.unjudged == {}
    assert 12 <= res.waited_s < 14 and res.bound_s == 45.0  # 30 s timeout + 10 s interval + 5 s
    assert res.holders["t0/3"][0]["released_s"] == pytest.approx(102, abs=1)
    assert res.holders["t0/3"][0]["started_s"] is not None
    assert tool.calls.count("list") == 1  # nothing held at the end: no second look


def test_settle_bounded_then_unjudged():
    clock, tool = Clock(), FakeTool()
    res = ot.settle(lambda: {"t0/3": [135, 144]}, tool, run_s=lambda: clock.t, sleep=clock.sleep, clock=clock)
    assert res.waited_s == pytest.approx(45, abs=1.5) and list(res.unjudged) == ["t0/3"]
    assert "eosc-txn-4" in res.unjudged["t0/3"] and "Ongoing" in res.unjudged["t0/3"]
    assert [r["transactional_id"] for r in res.open_at_end] == ["eosc-txn-4"]


def test_settle_does_not_wait_for_a_hanging_transaction():
    clock, tool = Clock(), FakeTool("CompleteCommit")
    res = ot.settle(lambda: {"t0/3": [135, 144]}, tool, run_s=lambda: clock.t, sleep=clock.sleep, clock=clock)
    assert res.waited_s == 0 and res.unjudged == {}  # judged as it stands: torn/unseen are Kafka's (F2)
    assert res.holders["t0/3"][0]["status"] == "hanging"


def test_settle_without_tool_or_agent():
    clock = Clock()
    res = ot.settle(lambda: {"t0/3": [144, 144]}, None, run_s=lambda: 0.0, tool_note="Kafka 3.9.1",
                    sleep=clock.sleep, clock=clock)
    assert res.held == {} and res.notes == ["coordinator state not asked: Kafka 3.9.1"]

    def broken():
        raise RuntimeError("admin agent exited")
    res = ot.settle(broken, None, run_s=lambda: 0.0, sleep=clock.sleep, clock=clock)
    assert res.held == {} and "admin agent exited" in res.notes[0]


def _history(tmp_path, unjudged: bool):
    """A tiny txn-queue history: p1 commits t0/3@1 over an open transaction of eosc-txn-4 at
    t0/3@0, the consumer reads nothing of t0/3 for 40 s, then the runner's open-transactions
    event and the final drain."""
    s = 10**9
    hd = {"key": "t0/3", "lso": 0, "producer_id": 1, "producer_epoch": 0, "start_offset": 0,
          "transactional_id": "eosc-txn-4", "coordinator": 2, "state": "Ongoing", "timeout_ms": 30000,
          "status": "open", "why": "its coordinator (broker 2) lists it Ongoing", "started_s": 1.2,
          "released_s": None if unjudged else 45.0}
    value = {"held": {"t0/3": [0, 2]}, "holders": {"t0/3": [hd]}, "released": {} if unjudged else {"t0/3": 45.0},
             "unjudged": {"t0/3": "t0/3 last stable offset still held at 0 ..."} if unjudged else {},
             "waited_s": 45.0, "bound_s": 45.0, "notes": []}
    drain_keys = ["t0/0"] if unjudged else ["t0/0", "t0/3"]
    evs = [
        (0, {"process": 0, "type": "invoke", "f": "assign", "value": ["t0/3", "t0/0"],
             "meta": {"isolation_level": "read_committed", "from": "beginning"}}),
        (0, {"process": 0, "type": "ok", "f": "assign", "value": ["t0/3", "t0/0"],
             "meta": {"isolation_level": "read_committed", "from": "beginning"}}),
        (1 * s, {"process": 1, "type": "invoke", "f": "txn", "value": [["send", "t0/3", 7]],
                 "meta": {"transactional_id": "eosc-txn-4"}}),
        (2 * s, {"process": 2, "type": "invoke", "f": "txn", "value": [["send", "t0/3", 8], ["send", "t0/0", 9]],
                 "meta": {"transactional_id": "eosc-txn-1"}}),
        (3 * s, {"process": 2, "type": "ok", "f": "txn", "value": [["send", "t0/3", [1, 8]], ["send", "t0/0", [0, 9]]],
                 "meta": {"transactional_id": "eosc-txn-1"}}),
        (4 * s, {"process": 0, "type": "invoke", "f": "poll", "value": [["poll"]]}),
        (4 * s, {"process": 0, "type": "ok", "f": "poll", "value": [["poll", {"t0/0": [[0, 9]]}]]}),
        (44 * s, {"process": 1, "type": "fail", "f": "txn", "value": [["send", "t0/3", [0, 7]]],
                  "error": ["_MSG_TIMED_OUT", "Local: Message timed out"], "meta": {"transactional_id": "eosc-txn-4"}}),
        (45 * s, {"process": "nemesis", "type": "info", "f": "open-transactions", "value": value}),
        (46 * s, {"process": 3, "type": "invoke", "f": "assign", "value": drain_keys,
                  "meta": {"isolation_level": "read_committed", "final": True, "from": "beginning"}}),
        (46 * s, {"process": 3, "type": "ok", "f": "assign", "value": drain_keys,
                  "meta": {"isolation_level": "read_committed", "final": True, "from": "beginning"}}),
        (47 * s, {"process": 3, "type": "invoke", "f": "poll", "value": [["poll"]], "meta": {"final": True}}),
        (47 * s, {"process": 3, "type": "ok", "f": "poll", "meta": {"final": True},
                  "value": [["poll", {"t0/0": [[0, 9]], **({} if unjudged else {"t0/3": [[1, 8]]})}]]}),
    ]
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps({"index": i, "time": t, **e}) + "\n" for i, (t, e) in enumerate(evs)))
    return p


def test_stalled_lso_names_the_holder(tmp_path):
    h = load_history(_history(tmp_path, unjudged=False))
    assert open_transactions(h)["held"] == {"t0/3": [0, 2]}
    cases = [c for c in stalled_lso_cases(h, 30.0) if not c.get("unknown")]
    assert cases and cases[0]["held_by"][0]["producer_id"] == 1
    text = cases[0]["explanation"]
    assert ("t0/3 last stable offset held at 0 by producer id 1 epoch 0 (eosc-txn-4), open since 1.0 s "
            "(txn op 2 of process 1, fail), coordinator state Ongoing on broker 2") in text
    assert "moved on at 45.0 s" in text
    v = check(h, {"liveness": {"stalled_lso_bound_s": 30.0}})
    assert v.valid is True and "stalled-lso" in v.liveness_reports
    assert v.anomalies["stalled-lso"][0]["held_by"][0]["transactional_id"] == "eosc-txn-4"


def test_unjudged_key_is_unknown_not_torn_or_unseen(tmp_path):
    v = check(load_history(_history(tmp_path, unjudged=True)), {"liveness": {"stalled_lso_bound_s": 30.0}})
    assert v.valid == "unknown", v
    assert not {"torn-transaction", "unseen"} & set(v.anomaly_counts)
    assert any("t0/3 last stable offset still held at 0" in r and "eosc-txn-4" in r for r in v.unknown_reasons)
