"""The ``eos-chaos zoo`` and ``eos-chaos explore`` commands, and ``hunt``'s registration (registered by harness.cli.main)."""
from __future__ import annotations

import json
import shlex
import sys
import threading
from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import console, out, require_root, stop_on_signals

ZOO_DIR = Path("scenarios/zoo")


def zoo(
    args: list[str] = typer.Argument(None, metavar="[merge OUT SHARD_DIR...]",
                                     help="`merge OUT SHARD_DIR...`: one zoo folder OUT from shard folders"),
    runs: Optional[int] = typer.Option(None, "--runs", metavar="N", help="runs per mutant and per control, seeds first-seed, "
                                       "first-seed+1, ... (default 10, or the selection file's runs)"),
    duration: Optional[float] = typer.Option(None, metavar="SECONDS",
                                             help="seconds of load for every run (default: each file's own)"),
    only: list[str] = typer.Option(None, "--only", metavar="NAME", help="zoo entries to run, by name (repeatable)"),
    as_json: bool = typer.Option(False, "--json", help="print the detection figures as JSON"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list the runs and what is left; run nothing"),
    zoo_dir: Path = typer.Option(ZOO_DIR, "--zoo", metavar="DIR|SELECTION.yaml", help="folder of zoo files, or a selection file "
                                 "(scenarios/releases.yaml: zoo, entries, runs)"),
    first_seed: int = typer.Option(1, metavar="N", help="seed of each entry's first run"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    zoo_out: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="zoo folder (default RESULTS/suites/zoo)"),
    fresh: bool = typer.Option(False, "--fresh", help="forget earlier zoo runs and run every cell"),
    shard: Optional[str] = typer.Option(None, "--shard", metavar="K/N",
                                        help="run only shard K of N (counted from 1; docs/nightly.md)"),
    shards: Optional[int] = typer.Option(None, "--shards", metavar="N",
                                         help="with --dry-run: plan N shards (machine time, slowest shard)"),
    setup_args: bool = typer.Option(False, "--setup-args",
                                    help="print the `eos-chaos setup` arguments the runs (of --shard) need; run nothing"),
) -> None:
    """Run the bug zoo (scenarios/zoo/*.yaml): each mutant must be caught, each control must come
    out valid. Writes zoo.json and zoo.html (detection rate with a 95 % Wilson interval, median
    time to detect, false positives) beside the suite outputs; resumes like `suite`.
    With --shard K/N only shard K's runs; `zoo merge OUT SHARD_DIR...` joins shard folders.
    Runs need root (each starts a fresh cluster); --dry-run, --setup-args and merge need neither.
    Exit codes: 0 every mutant run caught and no control invalid, 1 otherwise, 2 runs missing or
    bad input; --dry-run and --setup-args: 0 planned, 2 bad input."""
    from harness.detect import shards as sh
    from harness.detect import suite as st
    from harness.detect import zoo as zm
    from harness.detect.suite_outputs import RichSuiteProgress, print_plan, run_with_heartbeat

    if args:
        if args[0] != "merge" or len(args) < 3:
            console.print("[red]error:[/] `eos-chaos zoo` takes no file argument; to merge shards: "
                          "`eos-chaos zoo merge OUT SHARD_DIR...`")
            raise typer.Exit(2)
        try:
            zsum, _summary, missing, paths = zm.merge_zoo(args[1], [Path(a) for a in args[2:]])
        except (sh.ShardError, zm.ZooError) as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2)
        _print_zoo(zsum, paths, as_json)
        if missing:
            out.print(f"cells no shard ran ({len(missing)}): {', '.join(missing)}", highlight=False, soft_wrap=True)
        code = zm.exit_code(zsum)
        raise typer.Exit(1 if code == 1 else 2 if missing else code)
    given_zoo = str(zoo_dir)
    try:
        from harness.run.locate import ScenarioNotFound, find_scenario_path

        try:  # as given, else scenarios/zoo (or a selection) of the package, from any folder
            zoo_dir = find_scenario_path(zoo_dir)
        except ScenarioNotFound as exc:
            raise zm.ZooError(str(exc)) from None
        which = sh.parse_shard(shard) if shard is not None else None
        if shards is not None and (not dry_run or shards < 1):
            raise sh.ShardError("--shards N plans N shards with --dry-run (N >= 1); to run one use --shard K/N")
        if zoo_dir.is_file():  # a selection: its folder, entries (--only narrows them) and runs
            zoo_dir, chosen, file_runs = zm.load_selection(zoo_dir)
            only = list(only) if only else chosen
            runs = runs if runs is not None else file_runs
        runs = 10 if runs is None else runs
        entries = zm.load_zoo(zoo_dir, only or None)
    except (zm.ZooError, sh.ShardError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    d = zoo_out or st.default_suite_dir(results, "zoo" if which is None else f"zoo-shard-{which[0]}-of-{which[1]}")
    if dry_run or setup_args:
        try:
            cells = zm.cells(entries, d, runs=runs, duration=duration, first_seed=first_seed, write=False)
        except zm.ZooError as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2)
        every = cells
        if which is not None:
            cells = sh.shard_cells(cells, which, st.DEFAULT_OVERHEAD_S)
        if setup_args:
            out.print(" ".join(sh.setup_args(cells)), highlight=False, soft_wrap=True)
            raise typer.Exit(0)
        if shards is not None:
            from harness.cli.suite_commands import print_shard_plan

            print_shard_plan(every, shards, st.DEFAULT_OVERHEAD_S)
            raise typer.Exit(0)
        by_name = {e.name: e for e in entries}

        def describe(c):
            e = by_name[c.name]
            what = f"{e.upstream.id} {e.side}, " if e.upstream else ""
            return f"{what}{e.kind}: " + (f"must find {', '.join(e.must_find)}" if e.must_find else "must be valid")

        if as_json:
            from harness.detect.suite_outputs import plan_json

            out.print_json(json.dumps(plan_json(cells, d, fresh=fresh, describe=describe)))
        else:
            print_plan(out, cells, d, fresh=fresh, kind="zoo", describe=describe)
        raise typer.Exit(0)
    require_root()
    stop = threading.Event()
    stop_on_signals(stop)
    ui = RichSuiteProgress(console)
    command = "eos-chaos " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    box = run_with_heartbeat(lambda: zm.run_zoo(entries, results, d, runs=runs, duration=duration,
                                            first_seed=first_seed, stop=stop, listener=ui, fresh=fresh,
                                            command=command, shard=which,
                                            source={"zoo": given_zoo, "only": list(only or [])}), ui)
    if "error" in box:
        console.print(f"[red]error:[/] {type(box['error']).__name__}: {box['error']}")
        raise typer.Exit(2)
    summary, paths = box["result"]
    _print_zoo(summary, paths, as_json)
    raise typer.Exit(zm.exit_code(summary))


def _print_zoo(summary: dict, paths: dict, as_json: bool) -> None:
    from harness.detect import zoo as zm

    if as_json:
        out.print_json(json.dumps(zm.public_json(summary), default=str))
    else:
        from harness.detect.zoo_releases import release_line

        for row in summary.get("releases", []):
            out.print(f"upstream {release_line(row)}", highlight=False, soft_wrap=True)
        for m in summary["mutants"]:
            ci = m["ci95"]
            out.print(f"mutant  {m['name']:<24} detected {m['detected']}/{m['runs']}"
                      + (f" ({100 * m['rate']:.0f} %, 95 % CI {100 * ci[0]:.0f}-{100 * ci[1]:.0f} %)" if ci else "")
                      + (f", median {m['median_time_to_detect_s']:.1f} s to detect" if m["median_time_to_detect_s"] is not None else "")
                      + (f"  {m['anomalies']}" if m["anomalies"] else ""), highlight=False, soft_wrap=True)
        for c in summary["controls"]:
            out.print(f"control {c['name']:<24} invalid {c['invalid']}/{c['runs']}"
                      + (f"  {c['anomalies']}" if c["anomalies"] else ""), highlight=False, soft_wrap=True)
        for name, p in paths.items():
            out.print(f"{name + ':':<9} {p}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``zoo``, ``explore`` and ``hunt`` to the eos-chaos app."""
    app.command("zoo")(zoo)
    from harness.cli.explore_commands import explore

    app.command("explore")(explore)
    from harness.cli.hunt_commands import register as register_hunt  # eos-chaos hunt (issue 44)

    register_hunt(app)
