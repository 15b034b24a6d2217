"""The share workload (KIP-932 share groups) on the real cluster: one short run of
scenarios/share.yaml (Kafka 4.3.1, librdkafka's ShareConsumer), 30 s of load with a share
consumer paused past the 5 s acquisition lock (at 6 s) and two killed, must come out valid,
with the ops the share checkers read (acquire with delivery counts, process, ack) really
recorded. Seed 2: its schedule holds both kinds (asserted before the cluster is paid for; seed
1 drew three kills and no pause)."""
import json
from collections import Counter

import pytest

from harness.run.runner import run_scenario
from nemesis.schedule import fault_schedule
from tests.integration.test_workloads_support import SCENARIOS, explain, variant

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def share_run(results_root):
    scn = variant("share", seed=2, duration=30, faults=[
        {"fault": "kill-client", "clients": ["share-consumer-*"]},
        {"fault": "pause-client", "clients": ["share-consumer-*"]}], interval_s=[6, 8], fault_duration_s=[7, 8],
        first_fault_s=6)
    n = scn.nemesis
    clients = [f"share-consumer-{i}" for i in range(3)] + [f"producer-{i}" for i in range(2)]
    kinds = {s.f for s in fault_schedule(scn.seed, [f.as_dict() for f in n.faults], [1, 2, 3], clients, scn.duration,
                                         n.interval_s, n.fault_duration_s, n.first_fault_s, n.quiet_s)}
    assert {"kill-client", "pause-client"} <= kinds, kinds
    return run_scenario(scn, results_root, source=str(SCENARIOS / "share.yaml"))


def test_share_group_run_is_valid_and_recorded(share_run):
    v = share_run.verdict
    assert v.valid is True, explain(v)
    events = [json.loads(x) for x in (share_run.run_dir / "history.jsonl").read_text().splitlines()]
    done = Counter((e["f"], e["type"]) for e in events if e.get("type") != "invoke")
    assert done[("share-config", "ok")] >= 3, done
    assert done[("acquire", "ok")] > 10 and done[("process", "ok")] > 10 and done[("ack", "ok")] > 10, done
    faults = {e["f"] for e in events if e["process"] == "nemesis"}
    assert {"kill-client", "pause-client"} <= faults, faults
    st = v.stats["share"]
    assert st["records_processed"] > 50 and 0 <= st["duplicate_rate"] < 1, st
    # a consumer paused past its lock: its records were delivered again (delivery count 2+)
    assert st["max_delivery_count"] >= 2, st
    assert "share-lost" not in v.anomaly_counts and "share-delivery-count" not in v.anomaly_counts
