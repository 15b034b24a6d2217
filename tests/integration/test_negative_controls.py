"""Negative controls (issue 4 part 11): broken client configurations on the real cluster must
come out invalid with the right anomaly, so that each checker is shown to fail on real data.

1. idempotence disabled (retries on) under toxiproxy link faults: resends are stored twice
   -> duplicate.
2. a pipeline that commits its input offsets with the consumer after the transaction, with
   processor kills -> eos-duplicate.
3. a processor whose replacement takes a fresh transactional.id while the old instance is
   paused, with offsets sent under the group id alone (no generation to fence by)
   -> eos-duplicate.

About 30-60 s of load each (~1-2 min with cluster start and drain).
"""
import json
from collections import Counter

import pytest

from harness.run.runner import run_scenario
from tests.integration.test_workloads_support import explain as _explain
from tests.integration.test_workloads_support import fault_steps, require_pipeline_decoding, variant

pytestmark = pytest.mark.integration


def _variant(name: str, seed: int, duration: float, workload: dict, faults: list[dict], **nemesis):
    return variant(name, seed, duration, suffix="-negative", workload=workload, faults=faults, **nemesis)


def test_idempotence_off_duplicates_under_link_faults(results_root):
    scn = _variant(
        "idempotent", seed=1, duration=40,
        workload={"idempotence": False, "consumers": 1,
                  "producer": {"request.timeout.ms": 2000, "max.in.flight.requests.per.connection": 5}},
        faults=[{"fault": "toxic", "type": "timeout", "timeout_ms": 0, "brokers": "all"},
                {"fault": "toxic", "type": "reset_peer", "timeout_ms": 300, "brokers": "all"}],
        interval_s=(6, 8), fault_duration_s=(3, 4))
    assert Counter(s.f for s in fault_steps(scn))["toxic"] >= 3
    res = run_scenario(scn, results_root, source="negative control: idempotence off")
    v = res.verdict
    assert v.valid is False, _explain(v)
    dup = v.anomalies.get("duplicate")
    assert dup, _explain(v)
    assert len(dup[0]["offsets"]) >= 2 and "appears at" in dup[0]["explanation"]
    assert "duplicate" in v.failing


def test_offsets_committed_by_the_consumer_duplicate_under_processor_kills(results_root):
    require_pipeline_decoding()
    scn = _variant(
        "eos-pipeline", seed=1, duration=30, workload={"offsets": "consumer", "consumers": 0},
        faults=[{"fault": "kill-client", "clients": ["processor-*"]}],
        interval_s=(4, 6), fault_duration_s=(1, 2))
    # 30 s: seed 1's kills at 5, 9.5, 14.3, 19.1 and 23.7 s, as the first 5 of 40 s's 8. With
    # 40 s, 127 and 35 eos-duplicate cases (2026-11-29), 9 of the 35's 10 examples with their
    # second write within 30 s; with 30 s, 15 cases (2026-11-29, a loaded machine)
    assert Counter(s.f for s in fault_steps(scn))["kill-client"] >= 5
    res = run_scenario(scn, results_root, source="negative control: offsets outside the transaction")
    v = res.verdict
    assert v.valid is False, _explain(v)
    dup = v.anomalies.get("eos-duplicate")
    assert dup, _explain(v)
    assert len(dup[0]["outputs"]["writers"]) >= 2 or len(dup[0]["outputs"]["offsets"]) >= 2


def test_fresh_transactional_id_zombie_duplicates(results_root):
    require_pipeline_decoding()
    # three zombies, one per processor, the first at 12 s: a zombie writes only when it was
    # paused between a poll and its commit; one resumed inside poll() is fenced as a static
    # group member at once ("Static consumer fenced", a crash op) and writes nothing. With two
    # zombies from 8 s (the first hitting a processor not yet streaming) a CI rehearsal
    # (2026-11-24) saw both fenced that way: VALID.
    scn = _variant(
        "zombie", seed=1, duration=60, workload={"group_metadata": "group-only", "consumers": 0},
        faults=[{"fault": "zombie", "clients": ["processor-*"], "fresh_id": True}],
        interval_s=(14, 16), fault_duration_s=(11, 12), first_fault_s=12)
    zombies = [s.value["client"] for s in fault_steps(scn) if s.f == "zombie"]
    assert sorted(zombies) == ["processor-0", "processor-1", "processor-2"], zombies
    res = run_scenario(scn, results_root, source="negative control: fresh transactional.id")
    v = res.verdict
    assert v.valid is False, _explain(v)
    assert v.anomalies.get("eos-duplicate") or v.anomalies.get("zombie-write"), _explain(v)
    events = [json.loads(x) for x in (res.run_dir / "history.jsonl").read_text().splitlines()]
    tids = {e["meta"]["transactional_id"] for e in events
            if e.get("f") == "init" and e.get("meta", {}).get("transactional_id")}
    assert any(".z" in t for t in tids), sorted(tids)  # the replacements had fresh ids
