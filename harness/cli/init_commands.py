"""``eos-chaos init``: a starter scenario for the user's own application, in the user's folder.

Writes, without overwriting what exists (``--force`` does):

* ``eos-chaos.yaml``: an ``app`` scenario (harness.workloads.app) with the command to start,
  under broker kills and pauses and instance kills, graceful restarts and zombies;
* with ``--example copy-service`` (the default when no ``--command`` is given) the example
  consume-transform-produce service beside it, ``copy_service.py``, so that the scenario runs
  as written;
* with ``--flink`` a PyFlink job instead, ``flink_job.py`` (harness/examples/flink_job.py), and
  its scenario (one instance, started by harness.examples.flink_app);
* ``.github/workflows/eos-chaos.yml``: a complete GitHub Actions workflow (push, pull request,
  nightly schedule, manual start): kafka-eos-chaos installed into a venv from ``--source`` (a
  folder in the repository or a pip git URL; a workflow input or the repository variable
  ``EOS_CHAOS_SRC`` overrides it), ``eos-chaos setup``, ``run --dry-run``, then the run as root
  through the venv's absolute path; the results folder as an artifact and a JUnit report;
* ``eos-chaos-suite.yaml``: a suite of the one scenario, which the workflow runs because suites
  (not single runs) write ``junit.xml``;
* ``EOS-CHAOS.md``: how to run it, read its report, and put it in pytest and in CI (it points
  at the workflow file).

``--command`` is split as a shell would and its placeholders are checked here: an unknown one
(``{boostrap}``) or a malformed template (``{bootstrap``) is one line and exit 2, as the
scenario's loader would say it later.
"""
from __future__ import annotations

import difflib
import re
import shlex
from pathlib import Path
from typing import Optional

import typer
import yaml
from rich.markup import escape

from harness.cli.common import console, out
from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
from harness.workloads.app import EXAMPLES
from harness.workloads.app_spec import PLACEHOLDERS, placeholders_in

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

(`sudo` does not see a venv's `eos-chaos` on its PATH: give the venv's absolute path,
`sudo "$PWD/.venv/bin/eos-chaos" run eos-chaos.yaml`.)

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

## In CI (GitHub Actions)

`.github/workflows/eos-chaos.yml` is a complete workflow: on a push to main, a pull request,
every night and by hand (Actions > eos-chaos > Run workflow). It installs kafka-eos-chaos into a
venv, runs `eos-chaos setup`, checks the scenario with `run --dry-run`, then runs
`eos-chaos-suite.yaml` (this scenario once, seeded with the run number) as root, and uploads
`results/` as the artifact `eos-chaos-<run>-<attempt>` and `junit.xml` as a JUnit report. The
job is red when the run is invalid or unknown.

kafka-eos-chaos is not on PyPI yet. The workflow installs it from `EOS_CHAOS_SRC`: by default
`__SOURCE__` (set by `eos-chaos init --source`); the repository variable
`EOS_CHAOS_SRC` (Settings > Secrets and variables > Actions > Variables) or the workflow's
`eos_chaos_source` input overrides it. Either a folder of this repository holding a clone (a git
submodule: `git submodule add <url> kafka-eos-chaos`) or a pip git URL
(`git+https://github.com/<owner>/kafka-eos-chaos@<tag>`); anything else stops the job with one
line, so a bare name is never looked up on a package index.
"""


#: what ``--source`` may be: a relative folder or a pip URL, nothing a shell or a workflow
#: expression would read (quotes, ``$``, braces, spaces)
SOURCE = re.compile(r"[A-Za-z0-9._~/@+=:%-]{1,300}")
DEFAULT_SOURCE = "kafka-eos-chaos"


def check_command(command: str) -> list[str]:
    """``--command`` as argv (split as a shell would), its placeholders checked against the app
    workload's (harness.workloads.app_spec.PLACEHOLDERS). Raises ValueError in one line."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ValueError(f"--command {command!r}: {exc}") from None
    if not argv:
        raise ValueError("--command is empty: give your application's command line")
    for text in argv:
        try:
            names = placeholders_in(text)
        except ValueError as exc:
            raise ValueError(f"--command: malformed placeholder in {exc}") from None
        for p in names:
            if p not in PLACEHOLDERS:
                near = difflib.get_close_matches(p, PLACEHOLDERS, n=1)
                hint = f"did you mean {{{near[0]}}}? " if near else ""
                raise ValueError(f"--command: unknown placeholder {{{p}}} in {text!r}; {hint}known: "
                                 + ", ".join(f"{{{k}}}" for k in PLACEHOLDERS))
    return argv


def suite_text(name: str) -> str:
    """The one-scenario suite the workflow runs (a suite writes junit.xml; a single run does not)."""
    return (f"suite: {name}\n"
            "# eos-chaos.yaml once: the workflow passes --seed (the run number) and maybe --duration.\n"
            "# A suite, not a single run, because a suite writes junit.xml (results/suites/<suite>/).\n"
            "description: the pipeline under chaos, one run per CI run\n"
            "scenarios: [eos-chaos.yaml]\n"
            "seeds: [1]\n"
            f"kafka_versions: [{DEFAULT_KAFKA_VERSION}]   # more releases: more cells\n")


WORKFLOW = """# Chaos-tests this repository's Kafka pipeline with kafka-eos-chaos (written by `eos-chaos init`;
# EOS-CHAOS.md). A real 3-node Kafka cluster on the runner; brokers and the application's instances
# killed, paused, restarted and made zombies. Red when an input was lost, duplicated or read from an
# aborted transaction (invalid), or the run could not be judged (unknown, error).
name: eos-chaos

on:
  push:
    branches: [main, master]
  pull_request:
  schedule:
    - cron: "17 3 * * *"                 # every night, another seed each time (the run number)
  workflow_dispatch:
    inputs:
      eos_chaos_source:
        description: "kafka-eos-chaos to install: a folder of this repository or git+https://...@TAG (empty: the EOS_CHAOS_SRC variable, else __SOURCE__)"
        type: string
        default: ""
      seed:
        description: "the run's seed (empty: the run number)"
        type: string
        default: ""
      duration:
        description: "seconds of load (empty: eos-chaos.yaml's own)"
        type: string
        default: ""

permissions:
  contents: read
  checks: write                          # the JUnit report's check run

concurrency:
  group: eos-chaos-${{ github.ref }}
  cancel-in-progress: true

jobs:
  chaos:
    runs-on: ubuntu-24.04                # root through passwordless sudo: network namespaces, iptables
    timeout-minutes: 60
    env:
      # kafka-eos-chaos is not on PyPI yet: a folder of this repository (a clone or a git submodule)
      # or a pip git URL. A bare name is refused below, never looked up on a package index.
      EOS_CHAOS_SRC: ${{ inputs.eos_chaos_source || vars.EOS_CHAOS_SRC || '__SOURCE__' }}
      SEED: ${{ inputs.seed || github.run_number }}
      DURATION: ${{ inputs.duration }}
    steps:
      - uses: actions/checkout@v4
        with:
          submodules: recursive          # kafka-eos-chaos as a submodule, when EOS_CHAOS_SRC names it
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - uses: actions/setup-java@v4      # Kafka's brokers (and a Java or Streams application)
        with:
          distribution: temurin
          java-version: "17"
      - uses: actions/setup-go@v5        # `eos-chaos setup` builds toxiproxy (link faults) with Go
        with:
          go-version: stable
          cache: false

      - name: Install kafka-eos-chaos into a venv
        run: |
          case "$EOS_CHAOS_SRC" in
            git+*://*|https://*) src="$EOS_CHAOS_SRC" ;;
            *)
              if [ ! -d "$EOS_CHAOS_SRC" ]; then
                echo "::error::EOS_CHAOS_SRC '$EOS_CHAOS_SRC' is neither a folder of this repository nor a git+https:// URL (EOS-CHAOS.md)"
                exit 2
              fi
              src="$(realpath "$EOS_CHAOS_SRC")" ;;
          esac
          venv="$RUNNER_TEMP/eos-chaos-venv"
          python -m venv "$venv"
          "$venv/bin/pip" install -q "$src"
          # sudo's PATH has no venv: every later step calls eos-chaos by its absolute path
          echo "EOS_CHAOS=$venv/bin/eos-chaos" >> "$GITHUB_ENV"
          echo "EOS_CHAOS_CACHE=$RUNNER_TEMP/eos-chaos-cache" >> "$GITHUB_ENV"

      - name: Set up (Kafka's jars, toxiproxy, into EOS_CHAOS_CACHE)
        run: '"$EOS_CHAOS" setup'

      - name: Check the scenario (no root, no cluster; exit 2 with one line when it would not start)
        run: '"$EOS_CHAOS" run eos-chaos.yaml --dry-run --seed "$SEED"'

      - name: Run under chaos (exit 0 valid, 1 invalid, 2 unknown or error)
        run: |
          extra=()
          if [ -n "$DURATION" ]; then extra+=(--duration "$DURATION"); fi
          # root with the runner's Java and cache; SIGINT before the job's limit: the run heals,
          # drains, is checked and its outputs written
          sudo env "PATH=$PATH" "JAVA_HOME=$JAVA_HOME" "EOS_CHAOS_CACHE=$EOS_CHAOS_CACHE" \\
            timeout --signal=INT --kill-after=2m 40m \\
            "$EOS_CHAOS" suite eos-chaos-suite.yaml --seed "$SEED" --results results "${extra[@]}"

      - name: Hand the results to the runner's user (some files are root's, mode 600)
        if: always()
        run: if [ -d results ]; then sudo chown -R "$(id -u):$(id -g)" results; fi

      - name: JUnit report (results/suites/*/junit.xml)
        if: always()
        continue-on-error: true          # a pull request from a fork gets no checks: write
        uses: mikepenz/action-junit-report@v5
        with:
          report_paths: results/suites/*/junit.xml
          check_name: eos-chaos

      - name: Upload the run folder (report.html, verdict.json, history.jsonl, logs)
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: eos-chaos-${{ github.run_number }}-${{ github.run_attempt }}
          path: results/
          retention-days: 30

      - name: Remove what a crashed run left (processes, namespaces, links)
        if: always()
        run: if [ -n "${EOS_CHAOS:-}" ]; then sudo "$EOS_CHAOS" cleanup || true; fi
"""


def workflow_text(source: str = "kafka-eos-chaos") -> str:
    """The GitHub Actions workflow ``init`` writes, installing kafka-eos-chaos from ``source``."""
    return WORKFLOW.replace("__SOURCE__", source)


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


def init(folder: Path = typer.Argument(Path("."), metavar="FOLDER", help="where to write the files"),
         command: Optional[str] = typer.Option(None, metavar="CMD", help="your application's command line, with placeholders such as the "
                                               "bootstrap servers' (docs/your-pipeline.md)"),
         name: str = typer.Option("my-pipeline", metavar="NAME", help="the scenario's name (its results folder)"),
         force: bool = typer.Option(False, help="overwrite files that exist"),
         source: str = typer.Option(DEFAULT_SOURCE, "--source", metavar="PATH_OR_URL",
                                    help="where the workflow installs kafka-eos-chaos from: a folder of your "
                                    "repository (a clone or git submodule) or a pip git URL, "
                                    "git+https://...@TAG (the EOS_CHAOS_SRC repository variable overrides it)"),
         flink: bool = typer.Option(False, "--flink", help="a PyFlink job instead: flink_job.py (the example, "
                                    "to edit) and its scenario; needs `eos-chaos setup --flink`")) -> None:
    """Write a starter scenario for your own application (and the example service when no
    --command is given), a GitHub Actions workflow that runs it, and a short guide. Starts
    nothing; no root. Exit codes: 0 written, 2 bad input (a --command placeholder, --source,
    --name) or files that exist (without --force)."""
    if flink and command:
        console.print("[red]error:[/] give --flink or --command, not both")
        raise typer.Exit(2)
    try:
        argv = check_command(command) if command is not None else EXAMPLE_COMMAND
    except ValueError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2)
    if not SOURCE.fullmatch(source) or source.startswith("-"):
        console.print(f"[red]error:[/] --source {source!r}: give a folder of your repository or a pip git URL "
                      "(letters, digits and ._~/@+=:%- only)", highlight=False)
        raise typer.Exit(2)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        console.print(f"[red]error:[/] --name {name!r}: letters, digits, '_', '.' and '-' only (it names the "
                      "results folder and the suite)", highlight=False)
        raise typer.Exit(2)
    folder.mkdir(parents=True, exist_ok=True)
    files = {folder / "eos-chaos.yaml": scenario_text(argv, name),
             folder / "eos-chaos-suite.yaml": suite_text(name),
             folder / ".github" / "workflows" / "eos-chaos.yml": workflow_text(source),
             folder / "EOS-CHAOS.md": GUIDE.replace("__SOURCE__", source)}
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
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        out.print(f"wrote {p}")
    out.print(f"next: sudo eos-chaos run {folder / 'eos-chaos.yaml'}")


def register(app: typer.Typer) -> None:
    app.command("init")(init)


__all__ = ["register", "init", "scenario_text", "suite_text", "workflow_text", "check_command"]
