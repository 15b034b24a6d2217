"""The ``eos-chaos suite`` command (registered by harness.cli.main): run a suite or a tier, one
shard of it, or merge shard folders (harness.detect.shards, harness.detect.nights)."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import console, out, require_root, stop_on_signals


def suite(
    args: list[str] = typer.Argument(..., metavar="SUITE.yaml | merge OUT SHARD_DIR...",
                                     help="a suite or tier file (top-level `suite:` key), e.g. scenarios/nightly.yaml; "
                                          "or `merge OUT SHARD_DIR...`: one suite folder OUT from shard folders"),
    seed: list[int] = typer.Option(None, "--seed", metavar="N", help="seeds instead of the suite's (repeatable)"),
    kafka_version: list[str] = typer.Option(None, "--kafka-version", metavar="VERSION",
                                            help="Kafka versions instead of the suite's (repeatable; not for zoo cells)"),
    duration: Optional[float] = typer.Option(None, metavar="SECONDS", help="seconds of load for every scenario run"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    suite_out: Optional[Path] = typer.Option(None, "--out", metavar="DIR",
                                             help="suite folder (default RESULTS/suites/SUITE, or SUITE-shard-K-of-N)"),
    fresh: bool = typer.Option(False, "--fresh", help="forget earlier runs of this suite and run every cell"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list the runs and what is left; run nothing"),
    backend: list[str] = typer.Option(None, "--backend", metavar="BACKEND", help="cluster backends instead of the suite's "
                                      "(netns, docker, external; repeatable)"),
    shard: Optional[str] = typer.Option(None, "--shard", metavar="K/N",
                                        help="run only shard K of N (counted from 1): a deterministic split balanced "
                                             "by estimated time (docs/nightly.md)"),
    shards: Optional[int] = typer.Option(None, "--shards", metavar="N",
                                         help="with --dry-run: plan N shards: machine time, each shard's time, "
                                              "the slowest shard's wall time, the suite's budget"),
    setup_args: bool = typer.Option(False, "--setup-args",
                                    help="print the `eos-chaos setup` arguments the cells (of --shard) need; run nothing"),
    replay_failing: bool = typer.Option(False, "--replay-failing",
                                        help="run each invalid or unknown scenario cell once more with the same seed; "
                                             "valid then: marked flaky"),
    nights: Optional[Path] = typer.Option(None, "--nights", metavar="FILE",
                                          help="merge: the history of nights (JSON lines): tonight is added, zoo "
                                               "entries are judged over the last --last nights"),
    night: Optional[str] = typer.Option(None, "--night", metavar="NAME",
                                        help="merge with --nights: tonight's name (default: today's UTC date)"),
    last: int = typer.Option(14, "--last", metavar="M", min=1, help="merge with --nights: nights to judge over"),
) -> None:
    """Run a matrix of scenarios x seeds x Kafka versions (x backends; a tier's zoo entries too), resuming
    where an earlier call stopped; write index.html, junit.xml and summary.json. With --shard K/N
    only shard K's cells. `suite merge OUT SHARD_DIR...` joins shard folders into OUT and names the
    cause of every red cell.
    Runs need root (each starts a fresh cluster); --dry-run, --setup-args and merge need neither.
    Exit codes: 0 all passed, 1 any invalid run (a mutant missed; merge: or a zoo entry red over
    nights), 2 otherwise (unknown, error, not run, bad input); --dry-run and --setup-args: 0
    planned, 2 bad input."""
    if args and args[0] == "merge":
        return _merge(args[1:], nights, night, last)
    if len(args) != 1:
        console.print(f"[red]error:[/] give one suite file (got {len(args)} arguments); "
                      "or `eos-chaos suite merge OUT SHARD_DIR...`")
        raise typer.Exit(2)
    from harness.detect import suite as st
    from harness.run.locate import ScenarioNotFound, find_scenario_path

    try:  # as given, else scenarios/... of the package: a tier runs from any folder
        suite_file = find_scenario_path(args[0])
    except ScenarioNotFound as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    from harness.detect import shards as sh
    from harness.detect import suite_run
    from harness.detect.suite_outputs import RichSuiteProgress, print_plan, run_with_heartbeat
    from harness.detect.suite_records import overhead_s, read_records
    from harness.detect.tiers import expand_tier

    try:
        which = sh.parse_shard(shard) if shard is not None else None
        if shards is not None and (not dry_run or shards < 1):
            raise sh.ShardError("--shards N plans N shards with --dry-run (N >= 1); to run one use --shard K/N")
        spec = st.load_suite(suite_file)
        cells = expand_tier(spec, suite_file.parent, seeds=seed or None, kafka_versions=kafka_version or None,
                            duration=duration, backends=backend or None)
    except (st.SuiteError, sh.ShardError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    name = spec.suite if which is None else f"{spec.suite}-shard-{which[0]}-of-{which[1]}"
    suite_dir = suite_out or st.default_suite_dir(results, name)
    # the split must be the same on every machine: the overhead is the default one, never a
    # folder's measurement
    overhead = st.DEFAULT_OVERHEAD_S
    mine = cells if which is None else sh.shard_cells(cells, which, overhead)
    if setup_args:
        out.print(" ".join(sh.setup_args(mine)), highlight=False, soft_wrap=True)
        raise typer.Exit(0)
    if dry_run:
        if shards is not None:
            print_shard_plan(cells, shards, overhead_s(read_records(suite_dir / st.RECORDS).values())
                             if not fresh else overhead, spec.budget)
            raise typer.Exit(0)
        print_plan(out, mine, suite_dir, fresh=fresh, kind="suite" if which is None else f"shard {shard}",
                   describe=lambda c: f"({c.source})" + (f" {c.kind}" if c.kind != "scenario" else ""))
        if spec.budget:
            n = spec.budget.runners
            out.print(f"budget: {n} runner{'s' if n != 1 else ''}, {spec.budget.wall_min:g} min of wall time a shard "
                      f"(`--dry-run --shards {n}` checks it)", highlight=False)
        raise typer.Exit(0)
    require_root()
    stop = threading.Event()
    # Ctrl-C or SIGTERM: the run under way heals, drains and checks, is recorded as interrupted;
    # no further run starts. The same command later resumes.
    stop_on_signals(stop)
    ui = RichSuiteProgress(console)
    meta = sh.shard_meta(cells, which, overhead) if which is not None else None
    box = run_with_heartbeat(lambda: suite_run.run_suite(mine, results, suite_dir, name=spec.suite, source=str(suite_file),
                                                         stop=stop, listener=ui, fresh=fresh, meta=meta,
                                                         replay_failing=replay_failing), ui)
    if "error" in box:
        console.print(f"[red]error:[/] {type(box['error']).__name__}: {box['error']}")
        raise typer.Exit(2)
    res = box["result"]
    t = res.summary["totals"]
    out.print(f"suite {name}: {t['runs']} runs: passed {t['pass']}, failed {t['fail']} (invalid {t['invalid']}), "
              f"unknown {t['unknown']}, error {t['error']}, interrupted {t['interrupted']}, not run {t['not-run']} "
              f"({len(res.ran)} run now, {len(res.skipped)} finished earlier)", soft_wrap=True, highlight=False)
    for r in res.summary["runs"]:
        if r.get("cause"):
            out.print(f"  {r['id']}: {r['cause']}", soft_wrap=True, highlight=False)
    for key, p in res.paths.items():
        out.print(f"{key + ':':<8} {p}", soft_wrap=True)
    raise typer.Exit(res.exit_code)


def print_shard_plan(cells, n: int, overhead: float, budget=None) -> None:
    """``--dry-run --shards N`` of ``suite`` and ``zoo``: each shard's runs and time, the machine
    time, the slowest shard, and how the plan stands against ``budget`` (a tier's, if any)."""
    from harness.detect import shards as sh
    from harness.detect.suite import fmt_s

    p = sh.plan(cells, n, overhead)
    for row in p["shards"]:
        out.print(f"shard {row['index']:>3}/{n}  {row['runs']:>4} runs  ~{fmt_s(row['estimate_s'])}", highlight=False)
    out.print(f"{len(cells)} runs in {n} shards: machine time ~{fmt_s(p['machine_s'])}, slowest shard "
              f"{p['slowest_shard']}/{n} ~{fmt_s(p['slowest_s'])} of wall time (runs at ~{overhead:.0f} s "
              "of overhead each beyond their load)", highlight=False)
    b = budget
    if b is not None:
        ok = n <= b.runners and p["slowest_s"] <= b.wall_min * 60
        out.print(f"budget {b.runners} runner{'s' if b.runners != 1 else ''}, {b.wall_min:g} min a shard: "
                  + ("within budget" if ok else "[red]over budget[/]")
                  + ("" if n <= b.runners else f" ({n} shards > {b.runners} runners)"), highlight=False)


def _merge(rest: list[str], nights: Optional[Path], night: Optional[str], last: int) -> None:
    from datetime import datetime, timezone

    from harness.detect import nights as nt
    from harness.detect import shards as sh
    from harness.detect.suite_outputs import write_outputs

    if len(rest) < 2:
        console.print("[red]error:[/] give OUT and at least one shard folder: `eos-chaos suite merge OUT SHARD_DIR...`")
        raise typer.Exit(2)
    try:
        summary, missing = sh.merge(rest[0], [Path(x) for x in rest[1:]])
    except sh.ShardError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    judged = None
    if nights is not None:
        nt.append_night(nights, night or datetime.now(timezone.utc).strftime("%Y-%m-%d"), summary)
        judged = nt.judge(nt.read_nights(nights), last)
        summary["nights"] = {"file": str(nights), "last": last, "entries": judged}
    code, lines = nt.night_verdict(summary, judged)
    summary["exit_code"] = code
    paths = write_outputs(rest[0], summary)
    m = summary["merged"]
    t = summary["totals"]
    out.print(f"merged {len(m['shards'])} of {m['count']} shards of suite {summary['suite']}: {t['runs']} runs, "
              f"passed {t['pass']}, failed {t['fail']}, unknown {t['unknown']}, error {t['error']}, "
              f"not run {t['not-run']}", highlight=False, soft_wrap=True)
    if m["missing_shards"]:
        out.print(f"shards with no folder: {', '.join(map(str, m['missing_shards']))}", highlight=False)
    if missing:
        out.print(f"cells no shard ran ({len(missing)}): {', '.join(missing)}", highlight=False, soft_wrap=True)
    for line in lines:
        out.print(line, highlight=False, soft_wrap=True)
    for key, p in paths.items():
        out.print(f"{key + ':':<8} {p}", soft_wrap=True)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``suite`` to the eos-chaos app."""
    app.command("suite")(suite)
