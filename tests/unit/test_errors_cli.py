"""Bad input and a machine that cannot run: one line saying what to fix, never a traceback."""
import os
import shutil

import pytest
from typer.testing import CliRunner

import harness.cli.main as cli
from harness.cluster.namespaces import NetError
from harness.run.scenario import ScenarioError, load_scenario

runner = CliRunner()


def _one_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def _no_run(monkeypatch):
    """Guard: a test that got past the checks must not start a cluster."""
    import harness.run.runner

    def refuse(*a, **k):
        raise AssertionError("run_scenario must not be reached")
    monkeypatch.setattr(harness.run.runner, "run_scenario", refuse)


def test_scenario_not_utf8_names_the_file_and_line(tmp_path):
    p = tmp_path / "latin1.yaml"
    p.write_bytes("name: smoke\ndescription: caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and "not UTF-8" in msg and "line 2" in msg and "0xe9" in msg
    res = runner.invoke(cli.app, ["run", str(p)])
    assert res.exit_code == 2 and "not UTF-8" in _one_line(res.output)


def test_run_without_root(monkeypatch):
    _no_run(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    res = runner.invoke(cli.app, ["run", "scenarios/smoke.yaml"])
    line = _one_line(res.output)
    assert res.exit_code == 2 and "needs root" in line and "sudo" in line


def test_run_without_iptables_when_a_fault_needs_it(monkeypatch):
    _no_run(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "iptables" else which(name, *a, **k))
    res = runner.invoke(cli.app, ["run", "scenarios/partition.yaml"])
    line = _one_line(res.output)
    assert res.exit_code == 2 and "iptables is not on PATH" in line and "apt-get install -y iptables" in line


def test_run_without_ip(monkeypatch):
    _no_run(monkeypatch)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "ip" else which(name, *a, **k))
    res = runner.invoke(cli.app, ["run", "scenarios/smoke.yaml"])
    assert res.exit_code == 2 and "iproute2" in _one_line(res.output)


def test_namespace_taken_by_something_else():
    # iproute2's words when the namespace file exists (ip netns add on Debian 12)
    exc = NetError('`ip netns add eosc-n1` failed: Cannot create namespace file "/run/netns/eosc-n1": File exists')
    line = cli.error_line(exc)
    assert "\n" not in line and line.startswith("namespace eosc-n1 exists")
    assert "eos-chaos cleanup" in line and "ip netns pids eosc-n1" in line
    link = cli.error_line(NetError("`ip link add eosc-br type bridge` failed: RTNETLINK answers: File exists"))
    assert link.startswith("network link eosc-br exists")


def test_port_taken_by_something_else():
    # Kafka's words when its listener cannot bind (SocketServer), inside a longer message
    exc = RuntimeError("node 1 exited at 18:47:25 (logs/n1.log): org.apache.kafka.common.KafkaException: "
                       "Socket server failed to bind to 198.18.0.11:9092: Address already in use.\nmore")
    line = cli.error_line(exc)
    assert "\n" not in line and line.startswith("port 9092 is taken by another program") and "ss -ltnp" in line
    assert cli.error_line(OSError(98, "Address already in use")).startswith("a port the run needs is taken")


def test_other_errors_keep_their_name():
    assert cli.error_line(TimeoutError("3 brokers registered")) == "TimeoutError: 3 brokers registered"


def _commands(app, prefix=()):
    for c in app.registered_commands:
        yield [*prefix, c.name or c.callback.__name__.replace("_", "-")]
    for g in app.registered_groups:
        yield from _commands(g.typer_instance, (*prefix, g.name))


def test_help_reads_like_a_normal_cli():
    helps = [runner.invoke(cli.app, ["--help"]).output]
    for cmd in _commands(cli.app):
        res = runner.invoke(cli.app, [*cmd, "--help"])
        assert res.exit_code == 0, (cmd, res.output)
        helps.append(res.output)
    for text in helps:
        for marker in ("<bool>", "<int>", "<float>", "<path>", "<str>", "<list", "{"):
            assert marker not in text, (marker, text)
    run_help = runner.invoke(cli.app, ["run", "--help"]).output
    assert "run [OPTIONS] SCENARIO" in run_help
    assert "--seed" in run_help and "N " in run_help


def test_version():
    res = runner.invoke(cli.app, ["--version"])
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert lines[0].startswith("eos-chaos 0.")
    assert any(ln.startswith("librdkafka ") for ln in lines) and any(ln.startswith("linux ") for ln in lines)
