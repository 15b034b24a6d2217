"""``eos-chaos``: run scenarios, re-check histories, set up and clean up.

Exit codes: 0 valid, 1 invalid, 2 unknown or error (a bad scenario, an unreachable cluster,
a missing prerequisite): the message says what to fix. Each command's --help states its own.

One metavar per option name across commands (``--seed N``, ``--duration SECONDS``,
``--kafka-version VERSION``, ``--results DIR``, ``--out DIR``, ...): README's CLI block and
tests/unit/test_readme_tables.py follow them.
"""
from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.live import Live
from rich.text import Text

if TYPE_CHECKING:
    from checkers.run import Verdict

from harness.cli.common import EXIT, console, error_line, out, require_root, stop_on_signals

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Jepsen-style fault injection and checking for Kafka's exactly-once guarantees. "
                       "Exit codes: 0 valid, 1 invalid, 2 unknown or error (each command's --help says its own).")


def _plain_help() -> None:
    """typer 0.29 prints each parameter's Python type in --help (``<bool>`` beside a flag,
    ``<path>``, ``{scenario}``); name a value as click does instead: by its metavar or its type
    in capitals (INTEGER, PATH), nothing beside a flag, arguments in capitals."""
    from typer import core

    def option_type(self, ctx):
        if self.is_flag or self.count:
            return None
        if self.metavar:
            return self.metavar
        # "int", "path", "list[str]" (a repeatable option: its help says so, as click's does)
        label = (self.display_type(ctx) or "").strip("<>").removeprefix("list[").removesuffix("]")
        return {"int": "INTEGER", "float": "FLOAT", "str": "TEXT"}.get(label, label.upper())

    def argument_name(self) -> str:
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    core.TyperOption.display_type_rich = option_type
    core.TyperArgument.display_type_rich = lambda self, ctx: None
    core.TyperArgument.display_name_raw = property(lambda self: self.metavar or self.name.upper())
    core.TyperArgument._usage_display_name = lambda self: (
        argument_name(self) if self.required else f"[{argument_name(self)}]")


_plain_help()


def _print_versions(value: bool) -> None:
    if not value:
        return
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.run.versions import collect_versions

    versions = collect_versions()
    out.print(f"eos-chaos {versions.pop('harness')}", highlight=False)
    out.print(f"kafka {DEFAULT_KAFKA_VERSION} (default; --kafka-version picks another)", highlight=False)
    for name, v in versions.items():
        out.print(f"{name} {v}", highlight=False)
    raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_versions,
                                      help="print the versions of the harness and of what it runs on, then exit"),
          ) -> None:
    """Jepsen-style fault injection and checking for Kafka's exactly-once guarantees."""


def _require_tools(scn) -> None:
    """One line and exit 2 when a tool the scenario needs is not on PATH (before any cluster)."""
    import shutil

    from nemesis.registry import needs

    if getattr(scn.cluster, "backend", "netns") == "netns" and shutil.which("ip") is None:
        console.print("[red]error:[/] `ip` (iproute2) is not on PATH: the netns backend makes its network "
                      "namespaces with it. Install it (Debian: apt-get install -y iproute2).")
        raise typer.Exit(2)
    if "network" in needs([f.fault for f in scn.nemesis.all_faults()]) and shutil.which("iptables") is None:
        console.print("[red]error:[/] iptables is not on PATH: the partition fault drops packets with it inside "
                      "the brokers' namespaces. Install it (Debian: apt-get install -y iptables) or remove "
                      "partition from nemesis.faults.")
        raise typer.Exit(2)


def _summary(verdict: "Verdict | dict") -> str:
    """One line (plus notes) for the terminal: the verdict, then the anomalies that make it
    invalid, those the scenario expects, and liveness reports, each as ``name: count``."""
    from checkers import LIVENESS, Verdict
    from checkers.known_bugs.bugs import describe as describe_known_bug
    v = Verdict.coerce(verdict)
    label = {True: "[green]VALID[/]", False: "[red]INVALID[/]"}.get(v.valid, "[yellow]UNKNOWN[/]")
    # a valid run may still list anomalies: say which ones the scenario expects and which are
    # liveness reports, so "VALID  anomalies: G0" does not read like a contradiction
    allowed, failing, impossible = set(v.allowed), v.failing_names, set(v.impossible)
    groups: dict[str, list[str]] = {"anomalies": [], "expected": [], "liveness": []}
    for name, n in sorted(v.counts.items()):
        # failing covers a liveness name listed in fail_on
        group = ("anomalies" if name in failing else "expected" if name in allowed
                 else "liveness" if name in LIVENESS or name in v.liveness_reports
                 else "anomalies")
        # an expected name that fails on a cycle Kafka cannot produce (checkers/finders/event_order.py)
        tag = " (impossible in Kafka)" if name in impossible else ""
        groups[group].append(f"{name}: {n}{tag}")
    text = f"verdict: {label}" + "".join(f"  {g}: {', '.join(p)}" for g, p in groups.items() if p)
    for reason in v.unknown_reasons:
        text += f"\n  unknown: {reason}"
    ranges = v.stats.get("reprocessed_ranges") or []  # eos-duplicate as runs of inputs (checkers/finders/reprocessing.py)
    for r in ranges[:6]:
        rs = r.get("restarts")
        why = "" if rs is None else (", ".join(f"{s['kind']} at assign op {s['assign_index']}" for s in rs)
                                     or "no restart behind the committed offset")
        text += (f"\n  reprocessed: {r['key']} offsets {r['from_offset']}-{r['to_offset']} "
                 f"({r['inputs']} inputs){': ' + why if why else ''}")
    if len(ranges) > 6:
        text += f"\n  reprocessed: ... {len(ranges) - 6} more range(s) in verdict.json stats"
    for m in v.known_bugs:  # a catalogued bug's signature (checkers/known_bugs/bugs.py, docs/known-bugs.md)
        text += f"\n  known bug: {describe_known_bug(m)}: {m.get('why')}"
    # what the checker could not read or judge: a truncated history, no final drain, ...
    for note in [*(v.stats.get("problems") or [])[:5], *(v.stats.get("notes") or [])]:
        text += f"\n  note: {note}"
    return text


def _progress_text(p) -> Text:
    ops = p.ops()
    text = (f"phase {p.phase:<9} elapsed {p.elapsed:6.1f} s   ops ok {ops['ok']} fail {ops['fail']} "
            f"info {ops['info']}   faults {p.faults}")
    w = getattr(p, "windows", None)
    if w is not None:  # a soak: how fast, how far checked, the controller's memory
        text += (f"   {p.ops_per_s():.0f} ops/s   windows {w.checked} checked, {w.invalid} invalid"
                 f"   RSS {p.rss_mib():.0f} MiB")
    return Text(text)


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="scenario YAML file (scenarios/NAME.yaml: also found among the "
                                    "packaged scenarios from any folder)"),
    seed: Optional[int] = typer.Option(None, metavar="N", help="seed of the workload and the fault schedule"),
    duration: Optional[float] = typer.Option(None, metavar="SECONDS", help="seconds of load and faults"),
    kafka_version: Optional[str] = typer.Option(None, metavar="VERSION",
                                                help="Apache Kafka version, e.g. 4.3.1 or 3.9.1"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    keep_data: bool = typer.Option(False, "--keep-data", help="keep the brokers' log dirs (nodes/n*/data) even "
                                   "when the run is valid (they are always kept when it is not)"),
    backend: Optional[str] = typer.Option(None, metavar="BACKEND", help="cluster backend: netns, docker or external "
                                          "(default: the scenario's cluster.backend, else netns)"),
    group_protocol: Optional[str] = typer.Option(None, "--group-protocol", metavar="PROTOCOL",
                                                 help="consumer group protocol of an eos-pipeline or app workload: "
                                                 "classic or consumer (KIP-848), optionally with an assignor "
                                                 "as PROTOCOL/ASSIGNOR"),
    dry_run: bool = typer.Option(False, "--dry-run", help="check what a run checks before it starts a cluster "
                                 "(the scenario, versions, tools, the fault schedule drawn for the seed, shown as "
                                 "a table) and start nothing; no root. Exit 0 if the run would start, 2 if not"),
) -> None:
    """Run SCENARIO on a fresh cluster (with backend external: on yours); print the verdict and
    the report's path. Needs root, except with --dry-run.
    Exit codes: 0 valid, 1 invalid, 2 unknown or error (a bad scenario, a missing tool or root, a
    cluster that did not come up); --dry-run: 0 the run would start, 2 it would not."""
    from harness.run.runner import Progress, run_scenario
    from harness.run.locate import find_scenario_path
    from harness.run.scenario import BACKENDS, ScenarioError, load_scenario, with_backend, with_group_protocol, with_overrides

    try:
        scenario = find_scenario_path(scenario)  # as given, else scenarios/... of the package
        if backend is not None and backend not in BACKENDS:
            raise ScenarioError(f"--backend {backend}: choose one of {', '.join(BACKENDS)}")
        scn = with_backend(load_scenario(scenario), backend)
        # the command line's values are checked like the file's (--duration inf, --seed -1, a
        # --kafka-version that is not a version: one line, before anything starts)
        scn = with_overrides(scn, seed=seed, duration=duration, kafka_version=kafka_version)
        if group_protocol is not None:
            scn = with_group_protocol(scn, group_protocol)
    except ScenarioError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    if dry_run:
        _dry_run(scn, scenario)
    require_root()
    _require_tools(scn)

    stop = threading.Event()
    # Ctrl-C or SIGTERM ends the load early; heal, drain, check and teardown still run
    stop_on_signals(stop)
    progress = Progress()
    result_box: dict = {}

    def work() -> None:
        try:
            result_box["result"] = run_scenario(scn, results, source=str(scenario), progress=progress, stop=stop,
                                                keep_data=keep_data)
        except BaseException as exc:  # shown below, with the exit code for errors
            result_box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    if console.is_terminal:
        with Live(_progress_text(progress), console=console, refresh_per_second=4) as live:
            while worker.is_alive():
                worker.join(0.25)
                live.update(_progress_text(progress))
    else:
        while worker.is_alive():
            worker.join(10)
            console.print(_progress_text(progress))
    if "error" in result_box:
        exc = result_box["error"]
        console.print(f"[red]error:[/] {error_line(exc)}")
        raise typer.Exit(2)
    res = result_box["result"]
    for problem in res.problems:
        console.print(f"[yellow]note:[/] {problem}")
    out.print(_summary(res.verdict))
    if progress.windows is not None and progress.windows.stopped:  # a soak stopped early
        from harness.run.soak import stop_line

        out.print(f"load {stop_line(progress.windows.stopped)}; windows: {res.run_dir / 'windows.jsonl'}",
                  highlight=False)
    out.print(f"history: {res.run_dir / 'history.jsonl'}")
    out.print(f"report:  {res.report if res.report else '(none: see notes above)'}")
    raise typer.Exit(EXIT.get(res.verdict.valid, 2))


def _dry_run(scn, source: Path) -> None:
    """``run --dry-run``: print what harness.run.preflight found, the fault schedule as a table;
    exit 0 when the run would start, 2 with one line when it would not."""
    from rich.table import Table

    from harness.run.preflight import PreflightError, preflight

    try:
        pf = preflight(scn)
    except PreflightError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    for what, how in pf.checks:
        out.print(f"[green]ok[/]  {what}: {how}", soft_wrap=True, highlight=False)
    if pf.seed_drawn:
        out.print(f"seed: none in the scenario; a run draws one. This schedule is seed {pf.seed}'s "
                  f"(`--seed {pf.seed}` runs it)", soft_wrap=True, highlight=False)
    faults = pf.faults()
    table = Table("#", "begins (s)", "ends (s)", "fault", "target", "parameters",
                  title=f"fault schedule of {scn.name}, seed {pf.seed}, {scn.duration:g} s of load",
                  caption="s after the load starts; roles (coordinator, leader, controller) are resolved "
                          "when the fault begins")
    for i, f in enumerate(faults, 1):
        table.add_row(str(i), f"{f.begins:g}", "end of load" if f.ends is None else f"{f.ends:g}", f.fault,
                      f.target, f.params)
    if faults:
        out.print(table)
    else:
        out.print("fault schedule: no fault (none fits before the load ends)", highlight=False)
    out.print(f"dry run: `eos-chaos run {source}` would start (nothing was started)", soft_wrap=True,
              highlight=False)
    raise typer.Exit(0)


@app.command()
def check(
    history: Path = typer.Argument(..., metavar="RUN_DIR|HISTORY.jsonl",
                                   help="history.jsonl of a run, or its run folder"),
    as_json: bool = typer.Option(False, "--json", help="print the verdict as JSON"),
    max_examples: int = typer.Option(10, "--max-examples", metavar="N", min=0, help="examples kept per anomaly"),
    parts: int = typer.Option(0, "--parts", min=0, metavar="N",
                              help="cut the history by key into N Parquet parts and run the per-key "
                                   "finders part by part (checkers.engines.parts; 0: the in-memory check)"),
    cross: str = typer.Option("whole", "--cross", metavar="whole|skip",
                              help="with --parts: run the cross-key finders on the whole history, "
                                   "or skip them (the verdict is then unknown)"),
    engine: str = typer.Option("polars", "--engine", metavar="polars|spark",
                               help="where the per-key checks run: polars (this process) or spark "
                                    "(one Spark task per part, checkers.engines.parts_spark; implies --parts, 8 by default)"),
    master: Optional[str] = typer.Option(None, "--master", metavar="URL",
                                         help="with --engine spark: local[N] (default local[2]), spark://host:port, "
                                              "yarn or k8s://https://host:port"),
    workdir: Optional[Path] = typer.Option(None, "--workdir", metavar="DIR",
                                           help="with --parts or --engine spark: where the parts go (default a temporary "
                                                "folder; for a Spark cluster a folder every executor reads at the same path)"),
) -> None:
    """Re-check a history (meta.json and scenario.yaml beside it are used when present); no
    cluster, no root. Exit codes: 0 valid, 1 invalid, 2 unknown or bad input (no history there,
    a bad option, a failed Spark job)."""
    from checkers.run import RunDir
    from checkers.safe_load import file_problem

    if history.is_dir():
        if not (history / RunDir.HISTORY).exists() and not (history / RunDir.HISTORY).is_symlink():
            console.print(f"[red]error:[/] {_no_history(history)}", highlight=False)
            raise typer.Exit(2)
        history = history / RunDir.HISTORY  # a run folder: its history (what else it is: said below)
    why = file_problem(history)
    if why:  # a directory, a FIFO (reading it would block), /dev/null: say what it is
        console.print(f"[red]error:[/] {history} {why}" + ("" if why == "does not exist" else ", not a history file"))
        raise typer.Exit(2)
    if cross not in ("whole", "skip"):
        console.print(f"[red]error:[/] --cross is whole or skip, not {cross!r}")
        raise typer.Exit(2)
    if engine not in ("polars", "spark"):
        console.print(f"[red]error:[/] --engine is polars or spark, not {engine!r}")
        raise typer.Exit(2)
    if master is not None and engine != "spark":
        console.print("[red]error:[/] --master is for --engine spark")
        raise typer.Exit(2)
    if workdir is not None:
        try:
            workdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            console.print(f"[red]error:[/] cannot make --workdir {workdir}: {exc.strerror or exc}")
            raise typer.Exit(2)
    run_engine, engine_error = None, ()
    if engine == "spark":
        from checkers.engines.parts_spark import SparkEngineError as engine_error  # type: ignore[assignment]
        parts = parts or 8
        run_engine = _spark_engine(master or "local[2]", workdir)
    try:
        verdict = _check(history, max_examples, parts, cross, run_engine, workdir)
    except engine_error as exc:  # a Spark job that failed (a lost executor): one line
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2)
    finally:
        if run_engine is not None:
            run_engine.close()
    if as_json:
        out.print_json(verdict.to_json(indent=None))
    else:
        out.print(_summary(verdict))
        for name, examples in verdict.anomalies.items():
            for ex in examples[:3]:
                out.print(f"  {name}: {ex.get('explanation', ex)}")
    raise typer.Exit(EXIT.get(verdict.valid, 2))


def _no_history(folder: Path) -> str:
    """The one line `check` prints for a folder without a history.jsonl: what to give instead
    (a run folder below it when it holds some, e.g. results/<scenario>)."""
    from checkers.run import RunDir

    runs = sorted(p.parent for p in folder.glob(f"*/{RunDir.HISTORY}"))
    hint = (f"; it holds run folders: give one, e.g. {runs[-1]}" if runs else
            ": give a run folder (results/<scenario>/<run-id>) or a history.jsonl")
    return f"{folder} has no {RunDir.HISTORY} (it is a directory, not a history file){hint}"


def _spark_engine(master: str, workdir: Optional[Path]):
    """A started checkers.engines.parts_spark engine, or exit 2 with its one-line error."""
    from checkers.engines.parts_spark import SparkEngineError, master_kind, spark_engine

    try:
        if workdir is None and master_kind(master) != "local":
            console.print(f"[yellow]note:[/] the parts go to a local temporary folder: executors of {master} on "
                          "other hosts need --workdir on storage they share", highlight=False)
        console.print(f"starting Spark on {master} ...", highlight=False)
        return spark_engine(master, workdir=workdir)
    except SparkEngineError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2)


def _check(history: Path, max_examples: int, parts: int, cross: str, engine, workdir: Optional[Path]):
    """The verdict of `check`: in memory (parts 0) or by parts with ``engine`` (None: polars)."""
    from checkers.run import RunDir
    from checkers.verdict import check_run

    kw = {"engine": engine} if engine is not None else {}
    if history.name != RunDir.HISTORY:  # a lone file: no run folder around it
        if parts:
            from checkers.engines.parts import check_parts
            return check_parts(history, max_examples=max_examples, n_parts=parts, cross=cross, workdir=workdir, **kw)
        import checkers
        return checkers.check(history, max_examples=max_examples)
    if parts:
        from checkers.engines.parts import check_run_parts
        return check_run_parts(history.parent, parts, cross, max_examples=max_examples, workdir=workdir, **kw)
    return check_run(history.parent, max_examples=max_examples)


@app.command()
def report(run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="a run folder (results/<scenario>/<run-id>)"),
           max_examples: int = typer.Option(10, "--max-examples", metavar="N", min=0, help="examples kept per anomaly"),
           ) -> None:
    """Re-check RUN_DIR's history and re-render its report.html: any run folder, also one whose
    controller was killed (a history prefix and no verdict.json). Writes verdict.json and
    report.html there; no cluster, no root. Exit codes: 0 valid, 1 invalid, 2 unknown or error
    (no history.jsonl there, a file it cannot write)."""
    from checkers.run import RunDir
    from checkers.safe_load import file_problem
    from harness.report.render import check_and_render

    d = RunDir(run_dir)
    why = file_problem(d.history)
    if why:
        console.print(f"[red]error:[/] {d.history} {why}: give a run folder (results/<scenario>/<run-id>)"
                      if why != "does not exist" else
                      f"[red]error:[/] {run_dir} has no history.jsonl: give a run folder (results/<scenario>/<run-id>)")
        raise typer.Exit(2)
    for out_file in (d.verdict, d.report):  # what `report` writes: a directory there is one line
        if out_file.exists() and file_problem(out_file):
            console.print(f"[red]error:[/] {out_file} {file_problem(out_file)}: `report` writes that file; "
                          "move it away and run again")
            raise typer.Exit(2)
    try:
        verdict, path = check_and_render(run_dir, max_examples)
    except OSError as exc:  # a read-only folder, a full disk: one line
        console.print(f"[red]error:[/] cannot write the verdict and report in {run_dir}: "
                      f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}")
        raise typer.Exit(2)
    out.print(_summary(verdict))
    out.print(f"report:  {path}", soft_wrap=True)
    raise typer.Exit(EXIT.get(verdict.valid, 2))


@app.command("dump-log")
def dump_log(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="a run folder (results/<scenario>/<run-id>)"),
    key: str = typer.Argument(..., metavar="TOPIC/PARTITION", help="partition as topic/partition, e.g. t0/1"),
    raw: bool = typer.Option(False, help="print Kafka's DumpLogSegments output as is"),
) -> None:
    """Show every kept replica of a partition: offset, producer id/epoch, value or COMMIT/ABORT
    marker, read from the brokers' log segments with Kafka's DumpLogSegments. Offsets where the
    replicas disagree are marked. Needs a run that kept its log dirs (not valid, brokers that
    logged an unclean election or skipped markers, or --keep-data). No cluster, no root.
    Exit codes: 0 shown, 2 no kept replica of that partition or a bad argument."""
    from rich.table import Table

    from harness.cluster.artifacts import ArtifactError
    from harness.cluster.segments import SegmentError, aligned, read_partition

    try:
        replicas = read_partition(run_dir, key)
    except (SegmentError, ArtifactError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    if raw:
        for r in replicas:  # as Kafka printed it: no wrapping
            sys.stdout.write(f"# {r.node}\n{r.raw}")
        return
    table = Table("offset", *[f"{r.node} (log end {r.log_end_offset})" for r in replicas], "",
                  title=f"{key} in {run_dir}", caption="value or marker, then producer id.epoch")

    def cell(x) -> str:
        if x is None:
            return "-"
        what = x.marker if x.marker else x.value
        return f"{what} [dim]{x.producer_id}.{x.producer_epoch}[/]"

    for o, row, differs in aligned(replicas):
        table.add_row(str(o), *[cell(x) for x in row], "[red]differs[/]" if differs else "")
    out.print(table)


@app.command()
def setup(kafka_version: list[str] = typer.Option(None, "--kafka-version", metavar="VERSION",
                                                  help="Kafka version to fetch (repeatable; default: 4.3.1)"),
          spark: bool = typer.Option(False, "--spark", help="also install pyspark and fetch Spark's Kafka "
                                     "connector jars (spark workload)"),
          java_client: list[str] = typer.Option(None, "--java-client", metavar="VERSION",
                                                help="kafka-clients version to build the Java workers on (repeatable; "
                                                "default: 4.3.1 when javac is on PATH)"),
          minimal: bool = typer.Option(False, "--minimal", help="only Kafka's broker jars: what a run "
                                       "without link faults needs (make demo); no toxiproxy, no kafka-tools"),
          docker: bool = typer.Option(False, "--docker", help="docker backend: install Debian's docker.io when "
                                      "missing, start dockerd (docs/docker.md), build kafka-eos-chaos/kafka:VERSION"),
          flink: bool = typer.Option(False, "--flink", help="the app workload's PyFlink example: apache-flink in a "
                                     "venv of its own and Flink's Kafka connector jar (harness/examples/flink_app.py)"),
          ) -> None:
    """Fetch and cache Kafka jars and the toxiproxy server (and Spark's Kafka connector); check system tools.
    Exit codes: 0 set up (what the lose-unsynced and clock-skew faults lack is said, not an
    error), 2 a fetch or build failed or a system tool is missing."""
    from harness.cluster.artifacts import (DEFAULT_KAFKA_VERSION, ArtifactError, dump_log_command, ensure_system_tools,
                                   kafka_dist, toxiproxy_server)

    try:
        for v in kafka_version or [DEFAULT_KAFKA_VERSION]:
            dist = kafka_dist(v)
            out.print(f"kafka {v}: {dist.libs}" + ("" if minimal else f" (dump-log: {dump_log_command(v)[-1]})"))
        if not minimal:
            out.print(f"toxiproxy: {toxiproxy_server()}")
        if spark:
            from harness.cluster.artifacts import install_extra, spark_connector_jars

            install_extra("spark", "pyspark")
            out.print(f"spark kafka connector: {', '.join(p.name for p in spark_connector_jars())}")
        if flink:
            from harness.examples.flink_app import setup as flink_setup

            out.print("flink example: " + ", ".join(f"{k} {v}" for k, v in flink_setup().items()))
        if java_client or not minimal:
            _setup_java_client(java_client)
        if not minimal and shutil.which("javac"):  # the app workload's Kafka Streams example (scenarios/app-streams.yaml)
            from harness.examples.streams_app import classpath as streams_example

            out.print(f"kafka streams example: {streams_example().split(':')[0]}")
        if docker:
            from harness.cluster.docker import DockerError
            from harness.cluster.docker.setup import setup_docker
            from harness.examples.docker_image import build_copy_service_image

            try:
                setup_docker(kafka_version or [DEFAULT_KAFKA_VERSION], say=out.print,
                             images=[(build_copy_service_image, "the app workload's example")])
            except DockerError as exc:
                raise ArtifactError(str(exc)) from exc
    except ArtifactError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    missing = ensure_system_tools()
    if missing:
        console.print(f"[red]error:[/] missing system tools: {', '.join(missing)} "
                      "(Debian: apt-get install -y iproute2 iptables openjdk-17-jre-headless)")
        raise typer.Exit(2)
    _say_fault_layers()


def _say_fault_layers() -> None:
    """What the lose-unsynced and clock-skew faults need and this machine lacks (issue 24);
    a run of another scenario needs neither, so this is said, not an error."""
    from harness.cluster.fuse_mounts import missing as fuse_missing
    from harness.cluster.kafka import libfaketime_path

    lack = fuse_missing()
    out.print("lose-unsynced (FUSE layer): " + ("ready" if not lack else f"[yellow]missing[/] {', '.join(lack)}"))
    lib = libfaketime_path()
    out.print("clock-skew (libfaketime): " + (lib if lib else "[yellow]missing[/] libfaketime (apt-get install libfaketime)"))


def _setup_java_client(versions: list[str] | None) -> None:
    """Build the Java workers (harness.workers.java) on each kafka-clients version; without versions,
    on the default one when javac is on PATH (docs/java-client.md)."""
    import shutil

    from harness.workers.java import DEFAULT_JAVA_CLIENT_VERSION, build

    if not versions and shutil.which("javac") is None:
        out.print("java client workers: skipped (no javac; Debian: apt-get install -y openjdk-17-jdk-headless)")
        return
    for v in versions or [DEFAULT_JAVA_CLIENT_VERSION]:
        out.print(f"java client workers on kafka-clients {v}: {build(v).split(':')[0]}")


@app.command()
def cleanup() -> None:
    """Remove everything the harness ever makes: processes in its namespaces, namespaces, links,
    and (when a Docker engine runs) every container, network and volume labelled by the harness.
    Needs root. Exit codes: 0 nothing left, 2 something could not be undone (each named) or no root."""
    from harness.cluster.backends import clean_everything

    require_root()
    problems = clean_everything()
    for p in problems:
        console.print(f"[red]could not undo:[/] {p}")
    out.print("cleanup: nothing left" if not problems else f"cleanup: {len(problems)} problems")
    raise typer.Exit(2 if problems else 0)


from harness.cli.bench_commands import bench_app  # noqa: E402 (eos-chaos bench ...)

app.add_typer(bench_app, name="bench")


from harness.cli.suite_commands import register as _register_suite  # noqa: E402 (eos-chaos suite)

_register_suite(app)

from harness.cli.detect_commands import register as _register_zoo  # noqa: E402 (eos-chaos zoo, explore)

_register_zoo(app)

from harness.cli.init_commands import register as _register_init  # noqa: E402 (eos-chaos init)

_register_init(app)

from harness.cli.repro_commands import repro_app  # noqa: E402 (eos-chaos repro f1|f2, docs/findings)

app.add_typer(repro_app, name="repro")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(2)


if __name__ == "__main__":
    main()
