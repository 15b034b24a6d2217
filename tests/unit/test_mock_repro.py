"""Pure parts of the mock-cluster reproducer of F1 and F4 (harness/findings/mock_repro.py): the
verdict lines and the argument errors. The reproducer itself runs in
tests/integration/test_findings.py (librdkafka's mock cluster, no Kafka)."""
from __future__ import annotations

import pytest

from harness.findings.mock_repro import f1_verdict, f4_verdict, main


def test_f1_verdict_names_the_lost_write_and_the_reads():
    lost = {"reproduced": True, "reports": {"B": [None, None]}, "read_uncommitted": {0: "W", 2: "A"},
            "read_committed": {0: "W"}}
    assert f1_verdict(lost).startswith("REPRODUCED: B acknowledged") and "{0: 'W', 2: 'A'}" in f1_verdict(lost)
    kept = {"reproduced": False, "reports": {"B": [None, 4]}, "read_committed": {0: "W", 4: "B"}}
    assert f1_verdict(kept).startswith("not reproduced") and "'B': [None, 4]" in f1_verdict(kept)


def test_f4_verdict_names_the_partitions_started_elsewhere_than_the_committed_offset():
    bad = {"reproduced": True, "wrong_start": [["C1", 0, 0], ["C2", 1, 100]],
           "members": {"C1": {"first": {"0": [0, 11.2]}}}}
    assert "C1 partition 0 at 0, C2 partition 1 at 100" in f4_verdict(bad)
    ok = {"reproduced": False, "wrong_start": [], "members": {"C1": {"first": {"0": [50, 19.1]}}}}
    assert f4_verdict(ok).startswith("not reproduced") and "[50, 19.1]" in f4_verdict(ok)


@pytest.mark.parametrize("argv, message", [
    (["f4", "--variant", "reuse"], "unknown variant ['reuse'] for f4"),
    (["f1", "--tries", "0"], "--tries must be >= 1"),
    (["f2"], "invalid choice: 'f2'"),
])
def test_bad_arguments_are_refused_in_one_line(capsys, argv, message):
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


def test_an_unusable_library_is_a_one_line_error(capsys, tmp_path):
    assert main(["f1", "--lib", str(tmp_path / "missing.so")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot load") and "Traceback" not in err
