"""A worker process starts light: it imports neither the finders' numeric stack (numpy,
polars, scipy) nor Spark. Several workers start at once on a 2-core machine, and with
numpy, polars and scipy pulled in through ``checkers`` (the run contract's isolation_level
default) each took about 1 s of CPU more: the idempotent run's first sends came 5 s late,
under the first fault, and the run fell from 339 ok sends to 149 (CI, stop 27)."""
import subprocess
import sys

import pytest

HEAVY = ("numpy", "polars", "scipy", "pyspark")


@pytest.mark.parametrize("module", ["harness.workers.__main__", "harness.workers.configs", "checkers.run"])
def test_a_worker_imports_no_numeric_stack(module):
    code = (f"import sys, {module}\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "", f"importing {module} loads {out.strip()}"


def test_the_checkers_package_still_gives_every_public_name():
    import checkers

    for name in checkers.__all__:
        assert getattr(checkers, name) is not None, name
    from checkers import Verdict, check  # the form callers use

    assert callable(check) and Verdict.__name__ == "Verdict"
    with pytest.raises(AttributeError):
        checkers.no_such_finder  # noqa: B018
