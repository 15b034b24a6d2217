"""Issue 24: a short lose-unsynced run on a real cluster (each broker's log dir on the FUSE
layer): the fault is applied (the broker lost bytes and came back), the verdict is valid and
the teardown leaves no mount behind. About 90 s."""
import json
from pathlib import Path

import pytest

from harness.cluster.fuse_mounts import harness_mounts, missing
from harness.run.runner import run_scenario
from harness.run.scenario import load_scenario

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(missing()), reason=f"the FUSE layer needs: {missing()}")]

POWER_LOSS = Path(__file__).resolve().parents[2] / "scenarios" / "power-loss.yaml"


def test_a_leader_and_a_coordinator_lose_their_unsynced_writes_and_nothing_committed_is_lost(results_root):
    scn = load_scenario(POWER_LOSS)
    assert scn.cluster.lazyfs
    nemesis = scn.nemesis.model_copy(update={"schedule": [
        {"at": 6, "duration": 4, "fault": {"fault": "lose-unsynced", "target": "leader", "key": "t0/0"}},
        {"at": 20, "duration": 4, "fault": {"fault": "lose-unsynced", "target": "coordinator",
                                            "transactional_id": "eosc-txn-0"}}]})
    scn = type(scn).model_validate(scn.model_copy(update={"seed": 5, "duration": 32.0, "nemesis": nemesis})
                                   .model_dump(mode="json"))
    res = run_scenario(scn, results_root, source=str(POWER_LOSS))
    events = [json.loads(line) for line in (res.run_dir / "history.jsonl").read_text().splitlines()]
    nem = [e for e in events if e["process"] == "nemesis" and "result" in (e["value"] or {})]
    losses = [e["value"] for e in nem if e["f"] == "lose-unsynced"]
    assert len(losses) == 2, nem
    for v in losses:
        assert v["result"].startswith("killed"), v
        assert v["lost_bytes"] > 0 and v["lost_file_count"] > 0, v
    starts = [e["value"] for e in nem if e["f"] == "power-on"]
    assert len(starts) == 2 and all(v["result"].startswith("started pid") for v in starts), starts
    meta = json.loads((res.run_dir / "meta.json").read_text())
    assert meta["teardown_problems"] == [], meta["teardown_problems"]
    assert meta["final_reads_complete"] is True, meta.get("drain")
    assert res.verdict["valid"] is True, json.dumps(res.verdict.get("anomalies"), indent=1)[:3000]
    ok = sum(1 for e in events if e["f"] == "txn" and e["type"] == "ok")
    assert ok >= 100, ok
    assert not [t for _, t in harness_mounts() if t.startswith(str(res.run_dir))]
