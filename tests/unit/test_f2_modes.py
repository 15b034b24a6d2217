"""F2's driver (harness/findings/f2.py) refuses an unknown mode before it touches a cluster, and
`eos-chaos repro f2 --mode` refuses it in one line."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harness.findings.f2 import MODES, run_f2


def test_modes_are_the_three_documented_ones():
    assert MODES == ("hang", "aborted-becomes-committed", "committed-becomes-aborted")


def test_unknown_mode_is_refused_before_any_cluster(tmp_path):
    with pytest.raises(ValueError, match="unknown mode 'bogus'; known: hang, aborted-becomes-committed"):
        run_f2(tmp_path, mode="bogus")
    assert not any(tmp_path.iterdir())


def test_cli_refuses_an_unknown_mode_in_one_line():
    from harness.cli.repro_commands import repro_app

    res = CliRunner().invoke(repro_app, ["f2", "--mode", "bogus"])
    assert res.exit_code == 2
    assert "--mode 'bogus': use one of hang" in res.output and "Traceback" not in res.output
