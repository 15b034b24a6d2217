"""``eos-chaos init``: a starter scenario for the user's own application, in the user's folder.

Writes, without overwriting what exists (``--force`` does):

* ``eos-chaos.yaml``: an ``app`` scenario (harness.workloads.app) with the command to start,
  under broker kills and pauses and instance kills, graceful restarts and zombies;
* with ``--example copy-service`` (the default when no ``--command`` is given) the example
  consume-transform-produce service beside it, ``copy_service.py``, so that the scenario runs
  as written;
* with ``--flink`` a PyFlink job instead, ``flink_job.py`` (harness/examples/flink_job.py), and
  its scenario (one instance, started by harness.examples.flink_app);
* ``EOS-CHAOS.md``: how to run it, read its report, and put it in pytest and in nightly CI.
"""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer
import yaml

from harness.cli.common import console, out
from harness.workloads.app import EXAMPLES

EXAMPLE_COMMAND = ["{python}", "copy_service.py", "--bootstrap", "{bootstrap}", "--input", "{input_topic}",
                   "--output", "{output_topic}", "--group", "{group}", "--transactional-id", "{transactional_id}",
                   "--client-properties", "{client_properties}"]

GUIDE = """# Chaos-testing this pipeline with kafka-eos-chaos

`eos-chaos.yaml` puts the application under a real 3-node Kafka cluster while brokers crash and
pause, and while its own instances are killed, restarted with SIGTERM and turned into zombies.
The harness writes unique values into `in`, reads `out` with read_committed, and checks that every
committed input reached the output exactly once and no aborted input did.

    eos-chaos run eos-chaos.yaml --dry-run        # what would run (no root, no cluster)
    sudo eos-chaos run eos-chaos.yaml             # the run; exit 0 valid, 1 invalid, 2 unknown/error

The run prints the path of `report.html`: the verdict, each anomaly with examples, the
application's instances as lanes with their kills and restarts, input and output counts per
partition. Placeholders in `command` (`{bootstrap}`, `{instance}`, `{work_dir}`,
`{client_properties}`, ...): `eos-chaos` docs, docs/your-pipeline.md.

## In pytest

    # test_chaos.py (the pytest plugin comes with the package: fixture eos_run)
    from harness.pytest_plugin import assert_valid

    def test_my_pipeline_survives(eos_run):
        assert_valid(eos_run("eos-chaos.yaml", duration=60))  # anomalies, examples and report path

Run as root: `sudo python -m pytest test_chaos.py`.

## In nightly CI (GitHub Actions)

    jobs:
      chaos:
        runs-on: ubuntu-latest
        steps:
          - uses: actions/checkout@v4
          # not on PyPI yet: install from a clone of kafka-eos-chaos (EOS_CHAOS_SRC: its URL or path)
          - run: pip install "$EOS_CHAOS_SRC" && sudo eos-chaos setup
          - run: sudo eos-chaos run eos-chaos.yaml --seed ${{ github.run_number }}
          - uses: actions/upload-artifact@v4
            if: always()
            with: {name: eos-chaos-results, path: results/}
"""


def scenario_text(command: list[str], name: str) -> str:
    doc = {
        "name": name,
        "description": "my pipeline under broker faults, instance kills, rolling restarts and zombies",
        "duration": 60,
        "workload": {
            "name": "app",
            "input": {"topics": ["in"], "partitions": 6, "producers": 2, "transactional": True,
                      "abort_probability": 0.1},
            "app": {"instances": 3, "command": command, "restart": "on-failure"},
            "output": {"topics": ["out"], "partitions": 6, "match": "value", "semantics": "exactly-once"},
        },
        "cluster": {"nodes": 3},
        "nemesis": {"faults": [{"fault": "kill-client", "clients": ["app-*"], "weight": 2},
                               {"fault": "stop-client", "clients": ["app-*"]},
                               {"fault": "zombie", "clients": ["app-*"]}, {"fault": "kill"}, {"fault": "pause"}],
                    "interval_s": [7, 10], "fault_duration_s": [2, 5], "first_fault_s": 10},
    }  # no expected line: the input producers' own cycles are reported apart (input.cycles)
    return yaml.safe_dump(doc, sort_keys=False, width=100)


FLINK_COMMAND = ["{python}", "-m", "harness.examples.flink_app", "--job", "flink_job.py", "--work-dir", "{work_dir}",
                 "--", "--input", "{input_topics}", "--output", "{output_topic}", "--group", "{group}",
                 "--transactional-id-prefix", "{transactional_id}", "--client-properties", "{client_properties}"]


def flink_scenario_text(name: str) -> str:
    """The starter for a PyFlink job (``init --flink``): one instance (a Flink job is one
    deployment: a second one would read every partition again), SIGKILLed and restarted from its
    newest retained checkpoint, paused; brokers killed and paused (scenarios/app-flink.yaml)."""
    doc = yaml.safe_load(scenario_text(FLINK_COMMAND, name))
    doc["description"] = "my PyFlink job under broker faults, instance kills (restarted from its checkpoint) and pauses"
    doc["workload"]["app"].update(instances=1, startup_s=20)
    doc["nemesis"]["faults"] = [{"fault": "kill-client", "clients": ["app-*"], "weight": 2},
                                {"fault": "pause-client", "clients": ["app-*"]}, {"fault": "kill"}, {"fault": "pause"}]
    doc["nemesis"]["first_fault_s"] = 20
    return yaml.safe_dump(doc, sort_keys=False, width=100)


def init(folder: Path = typer.Argument(Path("."), help="where to write the files"),
         command: Optional[str] = typer.Option(None, help="your application's command line, with placeholders such as the "
                                               "bootstrap servers' (docs/your-pipeline.md)"),
         name: str = typer.Option("my-pipeline", help="the scenario's name (its results folder)"),
         force: bool = typer.Option(False, help="overwrite files that exist"),
         flink: bool = typer.Option(False, "--flink", help="a PyFlink job instead: flink_job.py (the example, "
                                    "to edit) and its scenario; needs `eos-chaos setup --flink`")) -> None:
    """Write a starter scenario for your own application (and the example service when no
    --command is given) and a short guide for pytest and CI."""
    folder.mkdir(parents=True, exist_ok=True)
    argv = shlex.split(command) if command else EXAMPLE_COMMAND
    files = {folder / "eos-chaos.yaml": scenario_text(argv, name), folder / "EOS-CHAOS.md": GUIDE}
    if flink and command:
        console.print("[red]error:[/] give --flink or --command, not both")
        raise typer.Exit(2)
    if flink:
        files[folder / "eos-chaos.yaml"] = flink_scenario_text(name)
        files[folder / "flink_job.py"] = (EXAMPLES / "flink_job.py").read_text()
    elif not command:
        files[folder / "copy_service.py"] = (EXAMPLES / "copy_service.py").read_text()
    clash = [p for p in files if p.exists() and not force]
    if clash:
        console.print(f"[red]error:[/] {', '.join(map(str, clash))} exist: move them away or use --force")
        raise typer.Exit(2)
    for p, text in files.items():
        p.write_text(text)
        out.print(f"wrote {p}")
    out.print(f"next: sudo eos-chaos run {folder / 'eos-chaos.yaml'}")


def register(app: typer.Typer) -> None:
    app.command("init")(init)


__all__ = ["register", "init", "scenario_text"]
