"""Helpers shared by the workload integration tests and the negative controls."""
import inspect

import pytest

from nemesis.schedule import fault_schedule

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
    """eos-pipeline runs are judged by checkers.pipeline, which maps an output value to
    its input by ``meta.pipeline.value_divisor`` (docs/workloads.md, "What other parts need").
    Fail at once, without a cluster run, while it does not."""
    import checkers.pipeline

    if "value_divisor" not in inspect.getsource(checkers.pipeline):
        pytest.fail("checkers.pipeline does not decode meta.pipeline.value_divisor yet: eos-pipeline "
                    "verdicts would be wrong (see docs/workloads.md, 'What other parts need')")
