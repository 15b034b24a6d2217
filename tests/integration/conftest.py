import os
import shutil

import pytest


def pytest_collection_modifyitems(config, items):
    reasons = []
    if os.geteuid() != 0:
        reasons.append("needs root (network namespaces)")
    for tool in ("ip", "java"):
        if shutil.which(tool) is None:
            reasons.append(f"needs {tool}")
    if not reasons:
        return
    skip = pytest.mark.skip(reason="; ".join(reasons))
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def results_root(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="session")
def smoke_run(results_root):
    """smoke.yaml, seed 3, 90 s of load from the producers' first ok, checked every 20 s while it
    runs: read by test_smoke_run.py (the main job) and by test_soak_windows.py's valid window
    run, which were a 60 s and a 90 s run of the same seed (one cluster run fewer, ~85 s)."""
    from tests.integration.test_smoke_run import run_smoke

    return run_smoke(results_root)
