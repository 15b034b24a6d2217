"""Pure parts of finding F4's reproducer (harness/findings/f4_repro.py, f4.py): the verdict line,
the debug lines picked as evidence, and the argument errors."""
from __future__ import annotations

import pytest

from harness.findings.f4 import debug_lines
from harness.findings.f4_repro import main, verdict

# librdkafka 2.16.0 debug lines of one reproduced try (harness/findings/f4_repro.py, 2026-11-25)
DEBUG = """\
2026-11-25 23:44:41,966 OFFSETFETCH [f4-x-C1#consumer-6] [thrd:main]: Fetching committed offsets for 2 pending partition(s) in assignment
2026-11-25 23:44:42,100 HEARTBEAT [f4-x-C1#consumer-6] [thrd:main]: Heartbeat for group "f4-x-g" generation id 1
2026-11-25 23:44:42,200 OFFSETFETCH [f4-x-C1#consumer-6] [thrd:main]: GroupCoordinator/1: OffsetFetchResponse: f4-x [0] offset -1, leader epoch -1, metadata 0 byte(s): UNSTABLE_OFFSET_COMMIT
2026-11-25 23:44:46,451 OFFSETFETCH [f4-x-C1#consumer-6] [thrd:main]: Adding f4-x [0] back to pending list because on-going transaction is blocking offset retrieval
2026-11-25 23:44:46,453 SRVPEND [f4-x-C1#consumer-6] [thrd:main]: Starting pending assigned partition f4-x [0] at offset INVALID (leader epoch -1)
2026-11-25 23:44:54,414 SRVPEND [f4-x-C2#consumer-7] [thrd:main]: Starting pending assigned partition f4-x [1] at offset 50 (leader epoch -1)
"""


def test_debug_lines_keep_the_fetches_and_starts(tmp_path):
    p = tmp_path / "librdkafka-debug.log"
    p.write_text(DEBUG)
    lines = debug_lines(p)
    assert lines[0].startswith("# librdkafka debug log")
    assert not any("HEARTBEAT" in x for x in lines)
    assert any("UNSTABLE_OFFSET_COMMIT" in x for x in lines)
    assert any("back to pending list because on-going transaction" in x for x in lines)
    assert any("at offset INVALID" in x for x in lines) and any("at offset 50" in x for x in lines)
    assert len(debug_lines(p, limit=2)) == 3  # the heading and the first two
    assert debug_lines(tmp_path / "missing.log") == []


def test_verdict_names_the_partitions_started_below_the_committed_offset():
    res = {"reproduced": True, "committed": 50, "below_committed": [["C1", 0, 0]],
           "members": {"C1": {"first": {"0": [0, 4.7]}}}}
    assert verdict(res).startswith("REPRODUCED") and "C1 partition 0 at 0" in verdict(res)
    ok = {"reproduced": False, "committed": 50, "below_committed": [],
          "members": {"C1": {"first": {"0": [50, 12.6]}}}}
    assert verdict(ok).startswith("not reproduced") and "[50, 12.6]" in verdict(ok)


def test_reproducer_rejects_bad_arguments_in_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["--bootstrap", "x:1", "--tries", "0"])
    assert "--tries must be >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--bootstrap", "x:1", "--variant", "bogus"])
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
