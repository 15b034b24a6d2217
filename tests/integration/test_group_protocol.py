"""eos-pipeline with KIP-848's consumer group protocol on the default release (issue 33 part 1):
the processors join with group.protocol=consumer (no client session timeout: the brokers'
group.consumer.* settings), are killed and restarted, and the pipeline stays exactly-once.
One short run (20 s of load, about a minute with the cluster)."""
from __future__ import annotations

import json

from harness.run.runner import run_scenario
from tests.integration.known_bugs import xfail_if_restart_behind_commit
from tests.integration.test_workloads_support import SCENARIOS, require_pipeline_decoding, variant
from tests.integration.test_workloads_support import explain as _explain


def test_eos_pipeline_on_the_consumer_group_protocol(results_root):
    require_pipeline_decoding()
    scn = variant("eos-pipeline", seed=1, duration=20, suffix="-consumer-protocol",
                  workload={"group_protocol": "consumer"}, first_fault_s=6,
                  # the schedule counts from every processor's first ok: on a loaded machine a
                  # processor that had not joined yet was killed before it was ever a member
                  start_after_ok=["processor-0", "processor-1", "processor-2"])
    run = run_scenario(scn, results_root, source=str(SCENARIOS / "eos-pipeline.yaml"))
    v = run.verdict
    xfail_if_restart_behind_commit(v)
    assert v.valid is True, _explain(v)
    assert (v.versions or {}).get("group-protocol") == "consumer (broker default, uniform)"
    rebalances = v.stats["rebalances"]
    assert rebalances["rebalances"] >= 3 and rebalances["members"] >= 3, rebalances
    # the brokers ran with the KIP-848 session settings the harness gives them
    props = (run.run_dir / "nodes" / "n1" / "server.properties")
    if props.is_file():
        assert "group.consumer.session.timeout.ms=10000" in props.read_text()
    events = [json.loads(line) for line in (run.run_dir / "history.jsonl").read_text().splitlines()]
    assigns = [e for e in events if e.get("f") == "assign" and e["type"] == "ok"
               and e.get("meta", {}).get("via") == "rebalance"]
    assert all("added" in e["meta"] for e in assigns)
