"""GitHub Actions workflows linted with actionlint: every ``.github/workflows/*.yml`` of the
repository (whatever is there when the tests are collected) and the workflow ``eos-chaos init``
writes; and what ``init`` writes around it (issue 42, items 2 and 6).

Where actionlint comes from: ``make test`` (and ``make unit``) build it with ``go install``
into the cache's ``bin/`` (harness.cluster.artifacts.actionlint) and pass its path as
``EOS_CHAOS_ACTIONLINT``. Without it the binary is looked up in the cache, then on PATH.

When it is missing these tests FAIL, they do not skip: a lint that silently skips in CI is a
lint nobody runs, and ``make test`` installs it, so a missing binary there is a broken set-up.
Someone running pytest by hand without Go may opt out with ``EOS_CHAOS_ACTIONLINT_OPTIONAL=1``:
then they skip with a reason that says so. That opt-out is ignored whenever
``EOS_CHAOS_ACTIONLINT`` is set (as ``make test`` sets it), so CI can never skip.

actionlint runs with its shellcheck and pyflakes integrations off (``-shellcheck= -pyflakes=``):
neither is part of the set-up, and a lint whose verdict depends on what else happens to be on
PATH would pass on one machine and fail on another.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from harness.cli import init_commands
from harness.cli.main import app as cli
from harness.cluster import artifacts
from harness.detect import suite as st
from harness.run.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted([*(ROOT / ".github" / "workflows").glob("*.yml"), *(ROOT / ".github" / "workflows").glob("*.yaml")])
OPTIONAL = "EOS_CHAOS_ACTIONLINT_OPTIONAL"


def find_actionlint() -> str:
    """The actionlint binary to run; pytest.fail (or, opted out, pytest.skip) when there is none."""
    given = os.environ.get("EOS_CHAOS_ACTIONLINT")
    if given is not None:  # make test's: no opting out
        if not (Path(given).is_file() and os.access(given, os.X_OK)):
            pytest.fail(f"EOS_CHAOS_ACTIONLINT={given!r} is not an executable actionlint: `make actionlint` builds it "
                        f"(go install github.com/rhysd/actionlint/cmd/actionlint@{artifacts.ACTIONLINT_VERSION})",
                        pytrace=False)
        return given
    try:
        return str(artifacts.actionlint(fetch=False))
    except artifacts.ArtifactError as exc:
        why = str(exc)
    on_path = shutil.which("actionlint")
    if on_path:
        return on_path
    if os.environ.get(OPTIONAL) == "1":
        pytest.skip(f"actionlint is not installed and {OPTIONAL}=1: workflows not linted ({why})")
    pytest.fail(f"actionlint is not installed ({why}; not on PATH either): `make actionlint` builds it; "
                f"outside `make test` only, {OPTIONAL}=1 skips these tests", pytrace=False)


def actionlint(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([find_actionlint(), "-no-color", "-oneline", "-shellcheck=", "-pyflakes=",
                           *map(str, files)], capture_output=True, text=True, timeout=120)


def assert_lints_clean(*files: Path) -> None:
    proc = actionlint(*files)
    assert proc.returncode == 0, f"actionlint found problems:\n{proc.stdout}{proc.stderr}"


def test_the_repository_has_workflows():
    assert any(p.name == "release.yml" for p in WORKFLOWS), WORKFLOWS


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_repository_workflow_passes_actionlint(workflow):
    assert_lints_clean(workflow)


BROKEN = """name: broken
on: {push: {branches: [main]}}
jobs:
  a:
    runs-on: ubuntu-24.04
    steps:
      - run: echo "${{ github.no_such_thing }}"
      - uses: actions/checkout@v4
        with: {no_such_input: true}
  b:
    needs: [nowhere]
    runs-on: ubuntu-24.04
    steps:
      - run: echo hi
"""


def test_a_broken_workflow_fails_the_lint(tmp_path):
    """The lint is not a rubber stamp: a workflow with an unknown context property, an input
    actions/checkout does not have and a job needing a job that does not exist fails it, and
    assert_lints_clean (what every test here asserts) fails with actionlint's lines."""
    bad = tmp_path / "broken.yml"
    bad.write_text(BROKEN)
    proc = actionlint(bad)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no_such_thing" in proc.stdout and "no_such_input" in proc.stdout and "nowhere" in proc.stdout
    with pytest.raises(AssertionError, match="actionlint found problems"):
        assert_lints_clean(bad)


def test_missing_actionlint_fails_and_only_an_opt_in_skips(tmp_path, monkeypatch):
    monkeypatch.setenv("EOS_CHAOS_CACHE", str(tmp_path / "cache"))  # nothing cached there
    monkeypatch.setenv("PATH", str(tmp_path))                       # nor on PATH
    monkeypatch.delenv("EOS_CHAOS_ACTIONLINT", raising=False)
    monkeypatch.delenv(OPTIONAL, raising=False)
    with pytest.raises(pytest.fail.Exception, match="make actionlint"):
        find_actionlint()
    monkeypatch.setenv(OPTIONAL, "1")
    with pytest.raises(pytest.skip.Exception, match=f"{OPTIONAL}=1"):
        find_actionlint()
    # make test names the binary: then nothing skips, even with the opt-out set
    monkeypatch.setenv("EOS_CHAOS_ACTIONLINT", str(tmp_path / "actionlint"))
    with pytest.raises(pytest.fail.Exception, match="not an executable actionlint"):
        find_actionlint()


def _init(*args: str):
    return CliRunner().invoke(cli, ["init", *args])


def test_init_writes_a_workflow_that_passes_actionlint(tmp_path):
    r = _init(str(tmp_path))
    assert r.exit_code == 0, r.output
    wf = tmp_path / ".github" / "workflows" / "eos-chaos.yml"
    assert wf.read_text() == init_commands.workflow_text(init_commands.DEFAULT_SOURCE)
    assert_lints_clean(wf)
    mine = tmp_path / "mine"
    r = _init(str(mine), "--command", "java -cp app.jar:{kafka_libs} com.me.Main --bootstrap {bootstrap}",
              "--source", "git+https://github.com/me/kafka-eos-chaos@v0.1.0", "--name", "orders")
    assert r.exit_code == 0, r.output
    text = (mine / ".github" / "workflows" / "eos-chaos.yml").read_text()
    assert "'git+https://github.com/me/kafka-eos-chaos@v0.1.0'" in text
    assert_lints_clean(mine / ".github" / "workflows" / "eos-chaos.yml")


def _steps(doc: dict) -> list[dict]:
    return doc["jobs"]["chaos"]["steps"]


def test_init_workflow_is_complete(tmp_path):
    """Trigger, set-up (a venv, sudo through its absolute path), dry-run before the run, the run
    folder as an artifact whatever happened, a JUnit report where the suite writes it."""
    assert _init(str(tmp_path)).exit_code == 0
    doc = yaml.safe_load((tmp_path / ".github" / "workflows" / "eos-chaos.yml").read_text())
    on = doc[True]  # YAML 1.1 reads the key `on` as a boolean
    assert {"push", "pull_request", "schedule", "workflow_dispatch"} <= set(on)
    assert "eos_chaos_source" in on["workflow_dispatch"]["inputs"]
    env = doc["jobs"]["chaos"]["env"]
    assert env["EOS_CHAOS_SRC"] == "${{ inputs.eos_chaos_source || vars.EOS_CHAOS_SRC || 'kafka-eos-chaos' }}"
    steps = _steps(doc)
    runs = [s.get("run", "") for s in steps]
    uses = [s.get("uses", "") for s in steps]
    assert uses[0] == "actions/checkout@v4"
    install = next(r for r in runs if "python -m venv" in r)
    assert 'echo "EOS_CHAOS=$venv/bin/eos-chaos" >> "$GITHUB_ENV"' in install
    assert "::error::" in install  # a bare name is refused, never looked up on an index
    order = [i for i, r in enumerate(runs) for key in ('"$EOS_CHAOS" setup', "--dry-run", "suite eos-chaos-suite.yaml")
             if key in r]
    assert order == sorted(order) and len(order) == 3
    # every sudo goes through the venv's absolute path ($EOS_CHAOS), never a bare eos-chaos
    for r in runs:
        for line in r.splitlines():
            if "sudo" in line and "eos-chaos" in line:
                assert '"$EOS_CHAOS"' in line or line.strip().startswith("#"), line
    assert re.search(r'sudo env "PATH=\$PATH".*\\\n.*\\\n\s+"\$EOS_CHAOS" suite', next(r for r in runs if "suite" in r))
    upload = next(s for s in steps if s.get("uses") == "actions/upload-artifact@v4")
    assert upload["if"] == "always()" and upload["with"]["path"] == "results/"
    junit = next(s for s in steps if "action-junit-report" in s.get("uses", ""))
    assert junit["if"] == "always()"
    # the JUnit path is where the suite init wrote puts junit.xml
    spec = st.load_suite(tmp_path / "eos-chaos-suite.yaml")
    cells = st.expand(spec, tmp_path)
    assert len(cells) == 1 and cells[0].scenario.workload.name == "app"
    junit_xml = st.default_suite_dir(Path("results"), spec.suite) / "junit.xml"
    assert Path(junit_xml).match(junit["with"]["report_paths"]), (junit_xml, junit["with"]["report_paths"])


def test_init_guide_points_at_the_workflow_instead_of_a_fragment(tmp_path):
    assert _init(str(tmp_path), "--source", "vendor/kafka-eos-chaos").exit_code == 0
    guide = (tmp_path / "EOS-CHAOS.md").read_text()
    assert ".github/workflows/eos-chaos.yml" in guide and "eos_run" in guide
    assert "jobs:" not in guide and "runs-on" not in guide
    assert "`vendor/kafka-eos-chaos`" in guide


@pytest.mark.parametrize("command,says", [
    ("java -jar app.jar --bootstrap {boostrap}", "unknown placeholder {boostrap} in '--bootstrap'"),
    ("java -jar app.jar {bootstrap", "malformed placeholder"),
    ("java -jar 'app.jar", "No closing quotation"),
    ("", "--command is empty"),
    ("python app.py [x] {nope}", "unknown placeholder {nope}"),
])
def test_init_checks_command_placeholders(tmp_path, command, says):
    r = _init(str(tmp_path / "x"), "--command", command)
    assert r.exit_code == 2, r.output
    assert r.output.strip().count("\n") == 0, r.output  # one line
    assert r.output.startswith("error: --command") and says.split(" in ")[0] in r.output, r.output
    assert not (tmp_path / "x").exists()  # nothing written


def test_unknown_placeholder_names_the_nearest_and_the_known_ones(tmp_path):
    r = _init(str(tmp_path), "--command", "app --bootstrap {boostrap}")
    assert "did you mean {bootstrap}?" in r.output and "{client_properties}" in r.output


@pytest.mark.parametrize("source", ["my pkg", "$(curl x)", "${{ secrets.X }}", "-e .", "a'b"])
def test_init_refuses_a_source_a_shell_or_expression_would_read(tmp_path, source):
    r = _init(str(tmp_path), "--source", source)
    assert r.exit_code == 2 and r.output.startswith("error: --source"), r.output
    assert r.output.strip().count("\n") == 0


# -- docs/your-pipeline.md: what it shows is what the tests run --------------------------------

DOC = ROOT / "docs" / "your-pipeline.md"


def _doc_section() -> str:
    text = DOC.read_text()
    return text.split("## In your own repository's CI (GitHub Actions)", 1)[1].split("\n## ", 1)[0]


def test_docs_quote_the_workflow_init_writes():
    """One source of truth: the workflow in the docs is the file init writes, byte for byte."""
    block = _doc_section().split("```yaml\n", 1)[1].split("```\n", 1)[0]
    assert block == init_commands.workflow_text(init_commands.DEFAULT_SOURCE)


def test_docs_commands_run(tmp_path, monkeypatch):
    """Every `eos-chaos init ...` line the section shows runs and exits as the docs say; every
    other eos-chaos command and flag it names is one the workflow runs."""
    section = _doc_section()
    shell = section.split("```\n", 2)[1]
    inits = [line.split("#")[0].strip() for line in shell.splitlines() if line.strip().startswith("eos-chaos init")]
    assert len(inits) >= 3, inits
    monkeypatch.chdir(tmp_path)
    import shlex

    for n, line in enumerate(inits):
        args = shlex.split(line)[2:]
        expect_fail = "{boostrap}" in line
        r = _init(*args, *(["--force"] if n else []))
        assert r.exit_code == (2 if expect_fail else 0), (line, r.output)
    wf = init_commands.workflow_text()
    for cmd in re.findall(r"`(eos-chaos (?:run|suite|setup|cleanup)[^`]*)`", section):
        for word in shlex.split(cmd.replace("N", "1"))[1:]:
            if word.startswith("-") or word.endswith(".yaml"):
                assert word in wf, (cmd, word)


def test_actionlint_toolchain_is_new_enough():
    """An older go (Debian 12's 1.19) fetches ACTIONLINT_TOOLCHAIN to build actionlint, whose go.mod
    asks for Go 1.25 (built that way here once: go1.25.14 named in the binary's build info)."""
    major, minor = (int(x) for x in artifacts.ACTIONLINT_TOOLCHAIN.removeprefix("go").split(".")[:2])
    assert (major, minor) >= artifacts.ACTIONLINT_GO >= (1, 25)
    assert artifacts.ACTIONLINT_VERSION == "v1.7.12"
