"""scenarios/busy.yaml on the real cluster: 32 transactional producers in 2 worker processes
(harness.workers.txn_producers), one producer worker SIGKILLed and restarted (issue 12).

One run of 28 s of load (about 90 s in all), counted from both producer workers' first ok
(nemesis.start_after_ok: in CI on 2026-11-29 the transaction coordinators were still loading
10 s after the cluster was ready, and a kill 14 s after the workers started found the victim's
16 producers not yet registered), the kill 14 s in. The verdict must be valid; the history must hold more logical
producers than OS processes; the killed worker's in-flight ops (transactions, or inits still
running) must be open invokes (read as info, docs/history.md) and its restart must bring new
processes for the same transactional.ids.
"""
import json
from collections import Counter

import pytest

from harness.run.runner import run_scenario
from nemesis.schedule import fault_schedule
from tests.integration.known_bugs import xfail_if_kafka_20734
from tests.integration.test_workloads_support import SCENARIOS, explain, variant

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def busy_run(results_root):
    scn = variant("busy", seed=3, duration=28, faults=[{"fault": "kill-client", "clients": ["producer-*"]}],
                  interval_s=(40.0, 40.0), fault_duration_s=(6.0, 6.0), first_fault_s=14.0,
                  start_after_ok=["producer-0", "producer-1"])
    n = scn.nemesis
    steps = fault_schedule(scn.seed, [f.as_dict() for f in n.faults], [1, 2, 3],
                           ["consumer-0", "consumer-1", "producer-0", "producer-1"], scn.duration,
                           n.interval_s, n.fault_duration_s, n.first_fault_s, n.quiet_s)
    assert [s.f for s in steps] == ["kill-client", "restart-client"], steps
    return run_scenario(scn, results_root, source=str(SCENARIOS / "busy.yaml"))


def test_busy_run_is_valid_with_many_producers_per_process(busy_run):
    v = busy_run.verdict
    xfail_if_kafka_20734(busy_run.run_dir, busy_run.verdict)
    assert v.valid is True, explain(v)
    events = [json.loads(x) for x in (busy_run.run_dir / "history.jsonl").read_text().splitlines()]
    txn = [e for e in events if e.get("f") == "txn"]
    ok_by_worker: dict[str, set] = {}
    for e in txn:
        if e["type"] == "ok":
            ok_by_worker.setdefault(e["meta"]["worker"], set()).add(e["meta"]["transactional_id"])
    # each of the 2 worker processes committed for many of its 16 transactional.ids
    assert set(ok_by_worker) == {"producer-0", "producer-1"}, ok_by_worker
    assert all(len(ids) >= 8 for ids in ok_by_worker.values()), {k: len(v) for k, v in ok_by_worker.items()}

    nem = [e["value"] for e in events if e["process"] == "nemesis" and isinstance(e["value"], dict)]
    killed = [x for x in nem if str(x.get("result", "")).startswith("killed pid")]
    assert len(killed) == 1, nem
    victim = killed[0]["client"]
    # the killed worker's in-flight ops never complete: open invokes, read as info
    client_ops = [e for e in events if e.get("f") in ("txn", "init")]
    completed = Counter(e["process"] for e in client_ops if e["type"] != "invoke")
    invoked = Counter(e["process"] for e in client_ops if e["type"] == "invoke")
    open_ops = [p for p in invoked if invoked[p] > completed[p]]
    assert open_ops, "no op was in flight when the worker was killed"
    victims = {e["process"] for e in client_ops if e["meta"].get("worker") == victim}
    assert set(open_ops) <= victims, (open_ops, victim)
    # the restarted worker registers the same transactional.ids again, as new processes
    inits = [e for e in events if e.get("f") == "init" and e["type"] == "ok" and e["meta"]["worker"] == victim]
    by_id = Counter(e["meta"]["transactional_id"] for e in inits)
    assert len(by_id) == 16 and min(by_id.values()) >= 2, by_id
    assert len({e["process"] for e in inits}) == len(inits)
