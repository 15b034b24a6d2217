"""README's CLI block and scenario table against the code (issue 45).

The CLI block (README.md "The CLI") names every command and subcommand of the typer app
(harness.cli.main.app, its registered commands and sub-typers) with every flag of each, with
the metavar its --help shows; it names no flag a command does not have. The scenario table
(README.md "Scenarios") names every scenario file under scenarios/, scenarios/java/ and
scenarios/tiers/ in its first column, and the zoo by a row naming `zoo/`. Also: one metavar per
option name across commands, exit codes stated in every command's help, and `check` on a folder
without a history saying what to give instead.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from typer import core as typer_core
from typer.testing import CliRunner

from harness.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SC = ROOT / "scenarios"
PROG = re.compile(r"^(?:\.venv/bin/)?eos-chaos(?:\s|$)")
FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)(?:[ =]([^\s\[\]|]+(?:\|[^\s\[\]]+)*))?")


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def _cli_tree():
    """{command path (tuple of words): click command} for every leaf command, and the root group."""
    root = typer.main.get_command(app)
    leaves: dict[tuple[str, ...], object] = {}

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, (*path, name))
        else:
            leaves[path] = cmd
    walk(root, ())
    return root, leaves


def _options(cmd) -> list:
    return [p for p in cmd.params if isinstance(p, typer_core.TyperOption) and "--help" not in p.opts]


def _entries() -> list[tuple[tuple[str, ...], str]]:
    """The CLI block as (command path, text) entries: a line starting with eos-chaos begins one,
    an indented line continues it; comments (`# ...`) dropped."""
    block = _section("The CLI")
    code = block[block.index("```\n") + 4:]
    code = code[:code.index("```")]
    _, leaves = _cli_tree()
    groups = {p[0] for p in leaves if len(p) > 1}
    entries: list[list] = []
    for line in code.splitlines():
        body = line.split("#", 1)[0].rstrip()
        if not body.strip():
            continue
        if PROG.match(body):
            words = PROG.sub("", body, count=1).split()
            if not words or words[0].startswith("-"):
                path: tuple[str, ...] = ()
            elif words[0] in groups:
                path = tuple(words[:2])
            else:
                path = (words[0],)
            entries.append([path, PROG.sub("", body, count=1)])
        else:
            assert line.startswith(" ") and entries, f"README CLI block: {line!r} is neither a command nor " \
                                                     "an indented continuation of one"
            entries[-1][1] += " " + body.strip()
    return [(p, t) for p, t in entries]


def _flags(text: str) -> list[tuple[str, str | None]]:
    return [(m.group(1), m.group(2)) for m in FLAG.finditer(text)]


def test_readme_cli_block_names_every_command_and_only_real_ones():
    root, leaves = _cli_tree()
    named = {p for p, _ in _entries()}
    missing = sorted(" ".join(p) for p in leaves if p not in named)
    assert not missing, f"commands missing from README's CLI block: {missing}"
    unknown = sorted(" ".join(p) for p in named if p and p not in leaves)
    assert not unknown, f"README's CLI block names commands eos-chaos does not have: {unknown}"
    assert () in named, "README's CLI block lacks `eos-chaos --version`"


def test_readme_cli_block_names_every_flag_of_each_command():
    root, leaves = _cli_tree()
    by_cmd: dict[tuple[str, ...], set[str]] = {}
    for path, text in _entries():
        by_cmd.setdefault(path, set()).update(f for f, _ in _flags(text))
    missing = []
    for path, cmd in {**leaves, (): root}.items():
        for opt in _options(cmd):
            if not set(opt.opts + opt.secondary_opts) & by_cmd.get(path, set()):
                missing.append(f"eos-chaos {' '.join(path)} {opt.opts[0]}".replace("  ", " "))
    assert not missing, f"flags missing from README's CLI block: {missing}"


def test_readme_cli_block_flags_are_real_and_show_their_metavar():
    root, leaves = _cli_tree()
    wrong = []
    for path, text in _entries():
        cmd = leaves.get(path, root if path == () else None)
        assert cmd is not None, path
        known = {name: opt for opt in _options(cmd) for name in opt.opts + opt.secondary_opts}
        for flag, value in _flags(text):
            where = f"eos-chaos {' '.join(path)}".rstrip()
            opt = known.get(flag)
            if opt is None:
                wrong.append(f"{where}: {flag} is not a flag of this command")
            elif not opt.is_flag and value != opt.metavar:
                wrong.append(f"{where}: {flag} {value} (its --help says {flag} {opt.metavar})")
    assert not wrong, "README's CLI block:\n" + "\n".join(wrong)


def test_one_metavar_per_option_name_across_commands():
    root, leaves = _cli_tree()
    seen: dict[str, dict[str, list[str]]] = {}
    for path, cmd in {**leaves, (): root}.items():
        for opt in _options(cmd):
            if opt.is_flag:
                continue
            assert opt.metavar, f"eos-chaos {' '.join(path)} {opt.opts[0]} has no metavar (--help shows its type)"
            seen.setdefault(opt.opts[0], {}).setdefault(opt.metavar, []).append(" ".join(path))
    differ = {name: m for name, m in seen.items() if len(m) > 1}
    assert not differ, f"options whose metavar differs between commands: {differ}"


def test_every_command_states_its_exit_codes():
    _, leaves = _cli_tree()
    silent = sorted(" ".join(p) for p, cmd in leaves.items() if "Exit codes:" not in (cmd.help or ""))
    assert not silent, f"commands whose --help does not state their exit codes: {silent}"
    for path in leaves:  # and --help shows them
        res = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
        assert res.exit_code == 0 and "Exit codes:" in " ".join(res.output.split()), (path, res.output)


def test_repro_help_says_which_reproducers_need_no_cluster():
    root, leaves = _cli_tree()
    group = root.commands["repro"]
    assert "on a fresh cluster" not in (group.help or "")
    for name, needs_none in (("librdkafka-5511", "no root"), ("f5", "--runtime"), ("f1", "--mock"), ("f4", "--mock")):
        assert needs_none in group.help and needs_none in leaves[("repro", name)].help, name
    assert "no Kafka cluster" in group.help


def _scenario_rows() -> list[list[str]]:
    """The first cell's backticked names of each row of README's scenario table."""
    rows = []
    for line in _section("Scenarios").splitlines():
        if line.startswith("| ") and not line.startswith("| ---") and not line.startswith("| file "):
            rows.append(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return rows


def test_readme_scenario_table_names_every_scenario_file():
    rows = _scenario_rows()
    assert rows, "README has no scenario table"
    named = {n for row in rows for n in row}
    files = sorted(str(p.relative_to(SC)) for d in (SC, SC / "java", SC / "tiers") for p in d.glob("*.yaml"))
    missing = [f for f in files if f not in named]
    assert not missing, f"scenario files missing from README's scenario table: {missing}"
    assert "zoo/" in named and any((SC / "zoo").glob("*.yaml")), "no row names the zoo folder (`zoo/`)"
    stale = sorted(n for n in named if not (SC / n).exists())
    assert not stale, f"README's scenario table names files scenarios/ does not hold: {stale}"


@pytest.fixture
def cli():
    def invoke(args):
        res = CliRunner().invoke(app, args, terminal_width=200)
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        return res
    return invoke


def test_check_on_a_folder_without_a_history_says_what_to_give(cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli(["check", str(empty)])
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1, res.output
    assert f"{empty} has no history.jsonl" in res.output and "give a run folder" in res.output, res.output
    # a scenario's folder (results/<scenario>) holding run folders: one of them is named
    scenario = tmp_path / "smoke"
    for run in ("20261128T010101Z-s1", "20261129T020202Z-s2"):
        (scenario / run).mkdir(parents=True)
        (scenario / run / "history.jsonl").write_text("")
    res = cli(["check", str(scenario)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert f"give one, e.g. {scenario / '20261129T020202Z-s2'}" in " ".join(res.output.split()), res.output
    # a run folder whose history.jsonl is a folder: that is what is said
    odd = tmp_path / "odd"
    (odd / "history.jsonl").mkdir(parents=True)
    res = cli(["check", str(odd)])
    assert res.exit_code == 2 and f"{odd / 'history.jsonl'} is a directory, not a history file" in res.output
