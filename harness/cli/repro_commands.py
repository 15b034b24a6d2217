"""``eos-chaos repro f1|f2|f4|f5|f6|f9``: the findings' reproducers (docs/findings/F1.md, F2.md,
F4.md, F5.md, F6.md, F9.md), each on a 3-node cluster of its own (root); ``repro f1 --mock`` and ``repro f4
--mock`` on librdkafka's mock cluster and ``repro f5 --runtime`` against the release's jars need
no Kafka cluster and no root, nor does ``eos-chaos repro librdkafka-5511``: a known upstream bug
on librdkafka's mock cluster (docs/known-bugs.md)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import console, out, require_root

repro_app = typer.Typer(help="Reproduce the harness's findings (docs/findings/) and a known upstream bug. "
                             "f1, f2, f4, f5, f6 and f9 start a 3-node cluster of their own (root); f1 --mock, "
                             "f4 --mock, f5 --runtime and librdkafka-5511 need no Kafka cluster and no root. "
                             "Exit codes: 0 when every try ran (whatever it showed), 2 on errors.",
                        no_args_is_help=True)


@repro_app.command("f1")
def f1(
    tries: int = typer.Option(3, min=1, metavar="N", help="tries per variant"),
    variant: list[str] = typer.Option(None, "--variant", metavar="NAME", help="reuse (default), new-producer, wait-outcomes, "
                                      "max-inflight-1, abort-in-flight; repeatable"),
    kafka_version: Optional[str] = typer.Option(None, metavar="VERSION", help="Apache Kafka version (default 4.3.1)"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    as_json: bool = typer.Option(False, "--json", help="print the tries and the summary as JSON"),
    mock: bool = typer.Option(False, "--mock", help="on librdkafka's mock cluster instead (no Kafka, no root, "
                              "~5 s a try; variants reuse, new-producer): harness/findings/mock_repro.py"),
) -> None:
    """Finding F1: an abort with a record in flight loses the next transaction's write
    (librdkafka). Brings up 3 nodes with toxiproxy in front, runs harness/findings/f1_repro.py
    in the client namespace, keeps the segments and prints Kafka's DumpLogSegments lines of
    each try's partition (root). With --mock: no Kafka cluster, no root.
    Exit codes: 0 when every try ran (whatever it showed), 2 on errors or no root."""
    if mock:
        _mock("f1", tries, variant, as_json)
    from harness.findings.f1 import run_f1
    from harness.findings.f1_repro import VARIANTS

    res = _run_tries(run_f1, VARIANTS, variant, tries, results, kafka_version)
    _print_tries(res, as_json, "tries.jsonl, evidence.txt, logs/librdkafka-debug.log, kept segments")


@repro_app.command("f2")
def f2(
    kafka_version: Optional[str] = typer.Option(None, metavar="VERSION", help="Apache Kafka version (default 4.3.1; 4.x: "
                                                "find-hanging comes from its kafka-tools jar)"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    mode: str = typer.Option("hang", metavar="MODE", help="hang (a committed transaction left open), aborted-becomes-committed "
                             "(T aborts, its next transaction's COMMIT makes the aborted write visible) or "
                             "committed-becomes-aborted (T commits, its next transaction's ABORT discards it)"),
) -> None:
    """Finding F2 (KAFKA-20734): a committed transaction's marker skipped for a partition whose
    leader is offline. Drives harness/findings/f2.py's steps on a fresh 3-node cluster, keeps
    the brokers' logs and segments, runs kafka-transactions.sh find-hanging into
    logs/find-hanging.txt (root). Exit codes: 0 when the steps ran, 2 on errors or no root."""
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.findings.f2 import MODES, run_f2

    if mode not in MODES:
        console.print(f"[red]error:[/] --mode {mode!r}: use one of {', '.join(MODES)}")
        raise typer.Exit(2)
    require_root("eos-chaos repro", "it creates network namespaces")
    _run_driver(lambda: run_f2(results, kafka_version=kafka_version or DEFAULT_KAFKA_VERSION, mode=mode), as_json,
                "f2.json, steps.jsonl, logs/find-hanging.txt, logs/n*.log, kept segments")


@repro_app.command("f9")
def f9(
    kafka_version: Optional[str] = typer.Option(None, metavar="VERSION", help="Apache Kafka version (default 4.3.1; "
                                                "F9 was found on 4.2.2)"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    variant: str = typer.Option("stale-restart", metavar="NAME", help="stale-restart (the coordinator started again "
                                "within its broker lease) or fenced-restart (the control: started once fenced)"),
) -> None:
    """Finding F9: a transaction coordinator killed right after an unreplicated PREPARE_COMMIT
    and started again before the controller fenced it commits on some partitions while its
    successor aborts on the others. Drives harness/findings/f9.py's steps on a fresh 3-node
    cluster (about a minute and a half), keeps the brokers' logs and segments (root). Exit codes: 0 when
    the steps ran (whatever they showed), 2 on errors or no root."""
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.findings.f9 import VARIANTS, run_f9

    if variant not in VARIANTS:
        console.print(f"[red]error:[/] --variant {variant!r}: use one of {', '.join(VARIANTS)}")
        raise typer.Exit(2)
    require_root("eos-chaos repro", "it creates network namespaces")
    _run_driver(lambda: run_f9(results, kafka_version=kafka_version or DEFAULT_KAFKA_VERSION, variant=variant),
                as_json, "f9.json, steps.jsonl, evidence.txt, logs/n*.log, kept segments")


def _run_driver(run, as_json: bool, files: str) -> None:
    """Run a step-by-step driver (harness.findings.f2 / f9: ``run()`` returns a harness.findings.driver.DriverResult) and
    print its evidence, or its result as JSON; exit 2 when it raised or its steps stopped on an
    error, else 0."""
    from harness.cluster.artifacts import ArtifactError

    try:
        res = run()
    except (ArtifactError, RuntimeError, TimeoutError) as exc:
        console.print(f"[red]error:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(2)
    for p in res.problems:
        console.print(f"[yellow]note:[/] {p}")
    if as_json:
        out.print_json(json.dumps({"run_dir": str(res.run_dir), **res.result}, default=str))
    else:
        for line in res.evidence:
            out.print(line, highlight=False, soft_wrap=True)
        out.print(f"run: {res.run_dir} ({files})", highlight=False, soft_wrap=True)
    raise typer.Exit(2 if res.result.get("error") else 0)


@repro_app.command("f4")
def f4(
    tries: int = typer.Option(3, min=1, metavar="N", help="tries per variant"),
    variant: list[str] = typer.Option(None, "--variant", metavar="NAME", help="rebalance (default), no-rebalance, no-pending, "
                                      "committed-then-assign; repeatable"),
    assignor: str = typer.Option("eager", metavar="ASSIGNOR", help="classic protocol's assignor: eager (range,roundrobin, "
                                 "librdkafka's default) or cooperative-sticky"),
    group_protocol: str = typer.Option("classic", metavar="PROTOCOL", help="classic or consumer (KIP-848)"),
    reset: str = typer.Option("earliest", metavar="POLICY", help="auto.offset.reset: earliest or latest"),
    kafka_version: Optional[str] = typer.Option(None, metavar="VERSION", help="Apache Kafka version (default 4.3.1)"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    as_json: bool = typer.Option(False, "--json", help="print the tries and the summary as JSON"),
    mock: bool = typer.Option(False, "--mock", help="on librdkafka's mock cluster instead (no Kafka, no root, "
                              "~21 s a try; variants rebalance, no-rebalance, no-pending): "
                              "harness/findings/mock_repro.py"),
) -> None:
    """Finding F4: a rebalance while another transaction holds a partition's offsets makes a
    read_committed consumer start it at auto.offset.reset (librdkafka). Brings up 3 nodes,
    runs harness/findings/f4_repro.py in the client namespace and prints the debug lines of
    the offset fetches and partition starts (root). With --mock: no Kafka cluster, no root.
    Exit codes: 0 when every try ran, 2 on errors or no root."""
    if mock:
        _mock("f4", tries, variant, as_json, ["--assignor", assignor, "--group-protocol", group_protocol,
                                               "--reset", reset])
    from harness.findings.f4 import run_f4
    from harness.findings.f4_repro import ASSIGNORS, PROTOCOLS, RESETS, VARIANTS, verdict

    for name, value, known in (("--assignor", assignor, tuple(ASSIGNORS)), ("--group-protocol", group_protocol,
                               PROTOCOLS), ("--reset", reset, RESETS)):
        if value not in known:
            console.print(f"[red]error:[/] {name} {value!r}: use one of {', '.join(known)}")
            raise typer.Exit(2)
    if group_protocol == "consumer" and assignor != "eager":
        console.print("[red]error:[/] --assignor applies to --group-protocol classic only")
        raise typer.Exit(2)

    def run(results, *, tries, variants, kafka_version):
        return run_f4(results, tries=tries, variants=variants, kafka_version=kafka_version,
                      assignor=assignor, group_protocol=group_protocol, reset=reset)

    res = _run_tries(run, VARIANTS, variant, tries, results, kafka_version)
    _print_tries(res, as_json, "tries.jsonl, evidence.txt, logs/librdkafka-debug.log", verdict)


@repro_app.command("f5")
def f5(
    tries: int = typer.Option(3, min=1, metavar="N", help="tries"),
    records: int = typer.Option(3000000, min=1000, metavar="N", help="offset-commit records of the group (its partition's size)"),
    partitions: int = typer.Option(1000, min=1, metavar="N", help="partitions of the group's topic: records per commit"),
    restart: bool = typer.Option(True, help="make the broker's load fresh by a restart (cold JVM: a slower load, "
                                 "a wider window) or by a pause"),
    writer: bool = typer.Option(False, help="commit for a second group on the same partition every 50 ms during "
                                "the churn (the wrong answers then end sooner, in 'out of sync' and FAILED)"),
    kafka_version: Optional[str] = typer.Option(None, metavar="VERSION", help="Apache Kafka version (default 4.3.1)"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    as_json: bool = typer.Option(False, "--json", help="print the tries and the summary as JSON"),
    runtime: bool = typer.Option(False, "--runtime", help="instead of the cluster: the deterministic test of "
                                 "CoordinatorRuntime against the release's jars (no root, ~1 s)"),
    patched: bool = typer.Option(False, "--patched", help="with --runtime: apply the proposed one-line fix to "
                                 "a copy of CoordinatorRuntime.java (needs the release's sources jar in ~/.m2)"),
) -> None:
    """Finding F5: Kafka's group coordinator lets a stale load completion activate (or fail)
    a newer coordinator context, which then answers OffsetFetch from a shard not (fully)
    loaded. Brings up 3 nodes, fills a group's __consumer_offsets partition, moves its
    leadership away and back while the broker loads it (SIGSTOP/SIGCONT), polls the group's
    committed offsets and prints the coordinator runtime's lines. A race: it does not show on
    every try (root). Exit codes: 0 when every try ran, 2 on errors or no root. With --runtime:
    no cluster, no root: the deterministic test (harness/findings/f5_runtime.py), its PASS/FAIL
    lines; exit 0 when it ran (whatever it showed), 2 on errors."""
    if runtime or patched:
        _f5_runtime(kafka_version, patched, as_json)
    from harness.findings.f5 import run_f5
    from harness.findings.f5_repro import verdict

    def run(results, *, tries, variants, kafka_version):
        return run_f5(results, tries=tries, records=records, partitions=partitions, restart=restart,
                      kafka_version=kafka_version, extra=[] if writer else ["--no-writer"])

    res = _run_tries(run, (), None, tries, results, kafka_version)
    for t in res.tries:
        t.setdefault("variant", "restart" if restart else "pause")
    res.summary = {"restart" if restart else "pause": res.summary}
    _print_tries(res, as_json, "tries.jsonl, evidence.txt, logs/n*.log, logs/f5-repro.err", verdict)


@repro_app.command("f6")
def f6(
    tries: int = typer.Option(3, min=1, metavar="N", help="tries per variant"),
    variant: list[str] = typer.Option(None, "--variant", metavar="NAME", help="txn (the finding), no-txn (control: no markers), "
                                      "java (control: kafka-clients' KafkaShareConsumer), read-uncommitted (every marker fetched "
                                      "alone: COMMIT too); repeatable; default txn, no-txn, java"),
    lock_ms: int = typer.Option(2000, min=1000, metavar="MS", help="the share group's share.record.lock.duration.ms"),
    kafka_version: Optional[str] = typer.Option(None, metavar="VERSION", help="Apache Kafka version (default 4.4.0: the DLQ, KIP-1191)"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder"),
    as_json: bool = typer.Option(False, "--json", help="print the tries and the summary as JSON"),
) -> None:
    """Finding F6: with librdkafka's share consumer, transaction markers reach the share
    group's dead-letter queue (a ShareFetch response without a message is never acknowledged).
    Brings up 3 nodes of Kafka 4.4.0 (minimum lock 1 s), runs harness/findings/f6_repro.py in
    the client namespace, keeps the segments and prints per try the DLQ records and the
    DumpLogSegments lines of its partition, then librdkafka's ShareFetch and acknowledgement
    debug lines (root). Exit codes: 0 when every try ran, 2 on errors or no root."""
    from harness.findings.f6 import F6_KAFKA_VERSION, run_f6
    from harness.findings.f6_repro import VARIANTS, verdict

    def run(results, *, tries, variants, kafka_version):
        return run_f6(results, tries=tries, variants=variants, lock_ms=lock_ms,
                      kafka_version=kafka_version if kafka_version_given else F6_KAFKA_VERSION)

    kafka_version_given = kafka_version is not None
    res = _run_tries(run, VARIANTS, variant, tries, results, kafka_version)
    _print_tries(res, as_json, "tries.jsonl, evidence.txt, logs/librdkafka-debug.log, "
                 "logs/java-share-consumer.log, kept segments", verdict)


@repro_app.command("librdkafka-5511")
def librdkafka_5511(
    tries: int = typer.Option(3, min=1, metavar="N", help="tries per variant"),
    variant: list[str] = typer.Option(None, "--variant", metavar="NAME", help="timeout (broker 2 down), decommission (broker 2 "
                                      "decommissioned, the coordinator moved to broker 3), unreachable (broker 2 in "
                                      "the metadata, refusing connections), coordinator-up (control), "
                                      "decommission-uncached (control); repeatable; default all"),
    bound: float = typer.Option(20.0, metavar="SECONDS", help="seconds the call may take before a try counts it as blocked "
                                "(its timeout is 2 s)"),
    parallel: bool = typer.Option(False, "--parallel", help="run all tries at once, each in its own process"),
    as_json: bool = typer.Option(False, "--json", help="print the tries and the summary as JSON"),
) -> None:
    """librdkafka#5511 / #5456: send_offsets_to_transaction(timeout=2) blocks for good once
    the producer's cached group coordinator was decommissioned (#5511) or cannot be reached
    (#5456: the coordinator request's timeout is never checked). On librdkafka's mock cluster
    in this Python's confluent-kafka (no Kafka, no root, ~bound s a blocked try): after a
    committed transaction that sent offsets, a fault on the group coordinator (broker 2), then
    the call in a thread; a try counts as reproduced when it has not returned within --bound.
    Runs harness/findings/mock_5511.py (its docstring says what each variant does); one line
    per try and a summary. Exit codes: 0 when every try ran, 2 on a setup or argument error."""
    import subprocess
    import sys

    from harness.findings import mock_5511

    bad = [v for v in variant or [] if v not in mock_5511.VARIANTS]
    if bad:
        console.print(f"[red]error:[/] unknown variant {bad}; known: {', '.join(mock_5511.VARIANTS)}")
        raise typer.Exit(2)
    if not mock_5511.CALL_TIMEOUT_S < bound <= 3600:
        console.print(f"[red]error:[/] --bound {bound:g}: use more than {mock_5511.CALL_TIMEOUT_S} and at most 3600")
        raise typer.Exit(2)
    argv = [sys.executable, mock_5511.__file__, "--tries", str(tries), "--bound", str(bound)]
    argv += [a for v in variant or [] for a in ("--variant", v)]
    argv += (["--parallel"] if parallel else []) + (["--json"] if as_json else [])
    raise typer.Exit(subprocess.run(argv, check=False).returncode)


def _mock(finding: str, tries: int, variant: list[str] | None, as_json: bool, extra: list[str] = ()) -> None:
    """``repro f1|f4 --mock``: harness/findings/mock_repro.py in this Python, its output as it
    prints it; exits with its code (0 when every try ran, 2 on a setup or argument error)."""
    import subprocess
    import sys

    from harness.findings import mock_repro

    argv = [sys.executable, mock_repro.__file__, finding, "--tries", str(tries), *extra]
    argv += [a for v in variant or [] for a in ("--variant", v)] + (["--json"] if as_json else [])
    raise typer.Exit(subprocess.run(argv).returncode)


def _f5_runtime(kafka_version: str | None, patched: bool, as_json: bool) -> None:
    """``repro f5 --runtime``: run F5RuntimeTest, print its output (or JSON), exit 0 / 2."""
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.findings.f5_runtime import RuntimeTestError, run_runtime_test

    try:
        res = run_runtime_test(kafka_version or DEFAULT_KAFKA_VERSION, patched=patched)
    except RuntimeTestError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    if as_json:
        out.print_json(json.dumps({"version": res.version, "patched": res.patched, "result": res.result,
                                   "checks": {k: {"passed": ok, "seen": seen} for k, (ok, seen) in res.checks.items()}}))
    else:
        out.print(res.output.rstrip(), highlight=False, soft_wrap=True, markup=False)
        out.print(f"Kafka {res.version}{' with the fix' if res.patched else ''}: {len(res.failed)} of "
                  f"{len(res.checks)} checks failed", highlight=False)
    raise typer.Exit(0)


def _run_tries(run, known: tuple[str, ...], variant: list[str] | None, tries: int, results: Path,
               kafka_version: str | None):
    """``run(results, tries=, variants=, kafka_version=)`` (harness.findings.f1/f4) after
    checking the variants and root; its start errors end the command with one line, exit 2."""
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION, ArtifactError

    bad = [v for v in variant or [] if v not in known]
    if bad:
        console.print(f"[red]error:[/] unknown variant {bad}; known: {', '.join(known)}")
        raise typer.Exit(2)
    require_root("eos-chaos repro", "it creates network namespaces")
    try:
        return run(results, tries=tries, variants=variant or None,
                   kafka_version=kafka_version or DEFAULT_KAFKA_VERSION)
    except (ArtifactError, RuntimeError, TimeoutError) as exc:
        console.print(f"[red]error:[/] {type(exc).__name__}: {exc}")
        raise typer.Exit(2)


def _print_tries(res, as_json: bool, files: str, verdict=None) -> None:
    """A tries-based reproducer's result (harness.findings.f1/f4): notes, then the JSON, or
    the evidence lines, one line per try (when ``verdict`` says it), the summary per variant
    and the run folder; exits 2 when a try stopped on an error, else 0."""
    for p in res.problems:
        console.print(f"[yellow]note:[/] {p}")
    if as_json:
        out.print_json(json.dumps({"run_dir": str(res.run_dir), "summary": res.summary, "tries": res.tries}))
    else:
        for line in res.evidence:
            out.print(line, highlight=False, soft_wrap=True)
        for t in res.tries if verdict is not None else []:
            out.print(f"{t['variant']} try {t['try']}: " + (t.get("error") or verdict(t)), highlight=False,
                      soft_wrap=True)
        for v, s in res.summary.items():
            out.print(f"{v}: reproduced {s['reproduced']} of {s['tries']} tries"
                      + (f" ({s['errors']} errors)" if s["errors"] else ""), highlight=False)
        out.print(f"run: {res.run_dir} ({files})", highlight=False, soft_wrap=True)
    raise typer.Exit(2 if any(s["errors"] for s in res.summary.values()) else 0)
