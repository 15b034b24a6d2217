"""Real-run regressions: histories recorded from the real cluster (tests/data/real-*).

real-smoke-s1: `eos-chaos run scenarios/smoke.yaml --seed 1 --duration 25` on Kafka 4.3.1.
real-read-uncommitted-s2: the same workload with read_uncommitted consumers and
abort_probability 0.3 (the negative control), seed 2, 25 s.
real-inflight-abort-s2: coordinator.yaml, seed 2, 60 s, with the txn-producer as it was before
413be73: it aborted after a 10 s flush timeout with records still in flight (librdkafka's
message.timeout.ms 20 s), what `inflight_abort: reuse` + `flush_timeout_s: 10` do now
(scenarios/coordinator-inflight-abort.yaml). A broken client configuration that loses
committed writes: finding F1, docs/scenarios.md.
real-zombie-paused-mid-init-s2: the zombie scenario, seed 2, 45 s, from a CI run
(tests/integration/test_workloads.py, 2026-11-29) on a slow machine: producer-0 was paused
10 s in with its InitProducerId sent but its answer not yet read; its replacement
producer-0.z1 registered at 12.9 s and committed; producer-0, resumed at 21.8 s, read the
answer at once (init ok 0.5 ms after SIGCONT) and exited. The checker once ordered the two
by when each init ok was recorded and called z1's commit at 22.0 s a zombie-write.
"""
import json
from pathlib import Path

import yaml

import checkers

DATA = Path(__file__).resolve().parents[1] / "data"


def verdict(name: str) -> dict:
    d = DATA / name
    meta = json.loads((d / "meta.json").read_text())
    allowed = yaml.safe_load((d / "scenario.yaml").read_text())["expected"]
    return checkers.check(d / "history.jsonl", meta=meta, allowed=allowed)


def test_real_smoke_history_is_valid_with_only_the_allowed_write_cycles():
    v = verdict("real-smoke-s1")
    assert v.valid is True, v.failing
    assert set(v.anomaly_counts) - {"unavailable", "realtime-lag"} <= {"G0", "G0-process", "G0-realtime"}
    assert v.stats["ops_by_f"]["txn"] == {"ok": 254, "fail": 33}


def test_real_read_uncommitted_history_shows_aborted_reads():
    v = verdict("real-read-uncommitted-s2")
    # the dirty read also closes a G1c-realtime cycle (op 121's write polled before op 165
    # began, yet 165's write precedes 121's on t1/2); the G0-realtime allowed in the same
    # component hid it before each cycle anomaly was searched on its own
    assert v.valid is False and v.failing == ["G1a", "G1c-realtime"]
    assert v.anomaly_counts["G1a"] == 141
    ex = v.anomalies["G1a"][0]
    assert "aborted" in ex["explanation"] and ex["key"].startswith("t")


def test_real_inflight_abort_history_shows_the_lost_committed_write():
    # the negative control of lost-write, unseen, torn-transaction and poll-skip on real data
    v = verdict("real-inflight-abort-s2")
    assert v.valid is False
    assert {"lost-write", "unseen", "torn-transaction", "poll-skip"} <= set(v.failing)
    lost = {(c["key"], c["value"]) for c in v.anomalies["lost-write"]}
    assert lost == {("t0/0", 200000101), ("t1/3", 200000095)}
    assert lost <= {(c["key"], c["value"]) for c in v.anomalies["unseen"]}
    torn = v.anomalies["torn-transaction"][0]
    assert "200000101@t0/0" in torn["explanation"] and torn["op"]["transactional_id"] == "eosc-txn-1"
    assert not {"duplicate", "G1a", "zombie-write"} & set(v.anomaly_counts)


def test_a_truncated_real_history_still_gets_a_verdict(tmp_path):
    text = (DATA / "real-smoke-s1" / "history.jsonl").read_text()
    cut = tmp_path / "history.jsonl"
    cut.write_text(text[: len(text) // 2 + 17])  # ends mid-line
    v = checkers.check(cut)
    assert v.valid in (True, False, "unknown")
    assert v.stats["truncated"] is True


def test_impossible_cycles_on_real_data():
    """checkers/finders/event_order.py on real runs: the correct smoke run's write cycles and the
    read_uncommitted run's G1c-realtime (its consumers read uncommitted: the weaker edge) are
    possible in Kafka; finding F1's history is not: eosc-txn-1's txn (invoked at 49.05 s) was
    acknowledged at t1/3 offset 110 after eosc-txn-0's record at offset 112 had been
    acknowledged (48.25 s) and read: the broker answered a reused sequence number with an
    older batch's offset."""
    assert verdict("real-smoke-s1").impossible == []
    assert verdict("real-read-uncommitted-s2").impossible == []
    v = verdict("real-inflight-abort-s2")
    assert v.impossible == ["G0-realtime"]
    steps = [s for c in v.anomalies["G0-realtime"] if c.get("impossible") for s in c["steps"]]
    assert any(s["kind"] == "ww" and s["key"] == "t1/3" and s["next_value"] == 100000044
               and s["value"] == 200000095 for s in steps)


def test_real_zombie_paused_mid_init_is_no_zombie_write():
    # negative control on real data for zombie-write's ambiguous-order rule
    v = verdict("real-zombie-paused-mid-init-s2")
    assert "zombie-write" not in v.anomaly_counts
    assert v.valid is True, v.failing
