"""F9's driver (harness/findings/f9.py) refuses an unknown variant before it touches a cluster,
`eos-chaos repro f9 --variant` refuses it in one line, and its cuts are the rules the module
docstring states (iptables argv, no namespace needed)."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harness.findings.f9 import BROKER9, TXN_TIMEOUT_MS, VARIANTS, _cut, run_f9


def test_variants_are_the_two_documented_ones():
    assert VARIANTS == ("stale-restart", "fenced-restart")
    assert BROKER9["broker.session.timeout.ms"] == "30000" and BROKER9["replica.lag.time.max.ms"] == "4000"
    # the successor's abort must come after C's stale markers: once the lease is over, not before
    assert TXN_TIMEOUT_MS < int(BROKER9["broker.session.timeout.ms"])
    assert BROKER9["transaction.abort.timed.out.transaction.cleanup.interval.ms"] == "2000"


def test_unknown_variant_is_refused_before_any_cluster(tmp_path):
    with pytest.raises(ValueError, match="unknown variant 'bogus'; known: stale-restart, fenced-restart"):
        run_f9(tmp_path, variant="bogus")
    assert not any(tmp_path.iterdir())


def test_cli_refuses_an_unknown_variant_in_one_line():
    from harness.cli.repro_commands import repro_app

    res = CliRunner().invoke(repro_app, ["f9", "--variant", "bogus"])
    assert res.exit_code == 2
    assert "--variant 'bogus': use one of stale-restart" in res.output and "Traceback" not in res.output


class _Host:
    def __init__(self):
        self.calls: list[tuple[str, ...]] = []

    def run(self, *argv: str):
        self.calls.append(argv)


def test_one_way_cut_blocks_the_peers_fetches_only():
    h = _Host()
    _cut(h, "198.18.0.12", True, one_way=True)
    assert h.calls == [
        ("iptables", "-I", "INPUT", "-s", "198.18.0.12", "-p", "tcp", "--dport", "9092", "-j", "DROP"),
        ("iptables", "-I", "OUTPUT", "-d", "198.18.0.12", "-p", "tcp", "--sport", "9092", "-j", "DROP")]


def test_full_cut_also_drops_answers_to_fetches_parked_before_it():
    h = _Host()
    _cut(h, "198.18.0.13", True)
    _cut(h, "198.18.0.13", False)
    added = {c[2:] for c in h.calls if c[1] == "-I"}
    assert {("INPUT", "-s", "198.18.0.13", "-p", "tcp", p, "9092", "-j", "DROP") for p in ("--dport", "--sport")} <= added
    assert {("OUTPUT", "-d", "198.18.0.13", "-p", "tcp", p, "9092", "-j", "DROP") for p in ("--dport", "--sport")} <= added
    assert len(added) == 4 and {c[2:] for c in h.calls if c[1] == "-D"} == added
