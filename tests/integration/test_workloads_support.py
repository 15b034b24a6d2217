"""Helpers shared by the workload integration tests and the negative controls."""
import inspect
import json
from pathlib import Path

import pytest

from harness.run.scenario import FaultSpec, Scenario, load_scenario
from nemesis.schedule import fault_schedule
from checkers.run import Verdict

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

#: client worker names at schedule time, as the runner lists them (readers, then writers)
PIPELINE_CLIENTS = ["consumer-0", "processor-0", "processor-1", "processor-2", "producer-0"]


def fault_steps(scn, clients=PIPELINE_CLIENTS):
    """The seeded schedule the run will follow (nemesis.schedule): assert on it before paying
    for a cluster run, so a seed that happens to schedule no fault fails fast."""
    n = scn.nemesis
    names = clients
    if scn.workload.name != "eos-pipeline":
        names = [f"consumer-{i}" for i in range(scn.workload.consumers)] + \
                [f"producer-{i}" for i in range(scn.workload.producers)]
    return fault_schedule(scn.seed, [f.as_dict() for f in n.faults], list(range(1, scn.cluster.nodes + 1)),
                          names, scn.duration, n.interval_s, n.fault_duration_s, n.first_fault_s, n.quiet_s)


def require_pipeline_decoding() -> None:
    """eos-pipeline runs are judged by checkers.finders.pipeline, which maps an output value to
    its input by ``meta.pipeline.value_divisor`` (docs/workloads.md, "What other parts need").
    Fail at once, without a cluster run, while it does not."""
    import checkers.finders.pipeline

    if "value_divisor" not in inspect.getsource(checkers.finders.pipeline):
        pytest.fail("checkers.finders.pipeline does not decode meta.pipeline.value_divisor yet: eos-pipeline "
                    "verdicts would be wrong (see docs/workloads.md, 'What other parts need')")


def variant(name: str, seed: int, duration: float, *, suffix: str = "", workload: dict | None = None,
            faults: list[dict] | None = None, **nemesis) -> Scenario:
    """scenarios/<name>.yaml with the seed and duration fixed, renamed ``<name><suffix>``,
    its workload fields and nemesis settings updated and its faults replaced when given."""
    scn = load_scenario(SCENARIOS / f"{name}.yaml")
    if faults is not None:
        nemesis["faults"] = [FaultSpec(**f) for f in faults]
    return scn.model_copy(update={
        "name": scn.name + suffix, "seed": seed, "duration": duration,
        "workload": scn.workload.model_copy(update=workload or {}),
        # validated, not copied: [6, 8] becomes the model's tuple, a bad field fails here
        "nemesis": scn.nemesis.model_validate({**scn.nemesis.model_dump(), **nemesis}),
    })


def explain(verdict: Verdict) -> str:
    """The first example of each anomaly, for an assertion message."""
    return json.dumps({k: v[:1] for k, v in verdict.anomalies.items()}, indent=1, default=str)[:3000]
