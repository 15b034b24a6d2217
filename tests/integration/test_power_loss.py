"""Issue 24: a short lose-unsynced run on a real cluster (each broker's log dir on the FUSE
layer): the fault is applied (the broker lost bytes and came back), the verdict is valid and
the teardown leaves no mount behind. About 90 s."""
import json
from pathlib import Path

import pytest

from harness.cluster.fuse_mounts import harness_mounts, missing
from harness.run.runner import run_scenario
from harness.run.scenario import Scenario, load_scenario

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(missing()), reason=f"the FUSE layer needs: {missing()}")]

POWER_LOSS = Path(__file__).resolve().parents[2] / "scenarios" / "power-loss.yaml"


def test_a_leader_and_a_coordinator_lose_their_unsynced_writes_and_nothing_committed_is_lost(results_root):
    data = load_scenario(POWER_LOSS).model_dump(mode="json", exclude_unset=True)
    # the schedule's clock starts at the producers' first commit, so the brokers have written
    # data that a lost page cache takes with it
    data.update(seed=5, duration=30.0)
    data["nemesis"].update(start_after_ok=["producer-*"], schedule=[
        {"at": 5, "duration": 4, "fault": {"fault": "lose-unsynced", "target": "leader", "key": "t0/0"}},
        {"at": 18, "duration": 4, "fault": {"fault": "lose-unsynced", "target": "coordinator",
                                            "transactional_id": "eosc-txn-0"}}])
    scn = Scenario.model_validate(data)
    assert scn.cluster.lazyfs
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
    assert res.verdict.valid is True, json.dumps(res.verdict.anomalies, indent=1)[:3000]
    # commits before the faults, and after the last broker came back (48 in all on this loaded
    # machine once; the point is that the cluster served again, not how fast)
    back = max(e["time"] for e in events if e["process"] == "nemesis" and e["f"] == "power-on")
    ok = [e["time"] for e in events if e["f"] == "txn" and e["type"] == "ok"]
    assert len(ok) >= 10 and any(t > back for t in ok), (len(ok), back)
    assert not [t for _, t in harness_mounts() if t.startswith(str(res.run_dir))]
