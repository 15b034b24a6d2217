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
