"""``eos-chaos hunt``: the terminal side of harness.detect.hunt (registered by harness.cli.main)."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Optional

import typer

from harness.cli.common import console, out, require_root, stop_on_signals


def _fail(msg: str) -> None:
    console.print(f"[red]error:[/] {msg}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def _draw_text(d: dict) -> str:
    parts = [f"client={d['client']}"]
    parts += [f"{k}={v}" for k, v in d["producer"].items()]
    if d.get("compression") is not None:
        parts.append(f"compression={d['compression']}")
    parts += [f"broker.{k}={v}" for k, v in d["broker"].items()]
    parts += [f"{k}={v}" for k, v in d["workload"].items()]
    parts += [f"features.{k}={v}" for k, v in d.get("features", {}).items()]
    if d.get("restart_producers"):
        parts.append("restart_producers")
    return " ".join(parts)


def hunt(
    kafka_version: Optional[str] = typer.Option(None, "--kafka-version", metavar="VERSION",
                                      help="the Kafka release every run of the campaign uses (3.5.0 to 4.4.0; required)"),
    client: Optional[str] = typer.Option(None, "--client", metavar="CLIENT",
                                         help="librdkafka or java: run only this client (default: the client is drawn)"),
    budget_s: Optional[float] = typer.Option(None, "--budget-s", metavar="SECONDS",
                                             help="machine seconds for the campaign, over all its sessions (a resumed "
                                                  "campaign counts its earlier runs; required)"),
    seed: int = typer.Option(1, metavar="N", help="campaign seed (Hypothesis's draws; names the campaign folder)"),
    as_json: bool = typer.Option(False, "--json", help="print the campaign summary as JSON"),
    results: Path = typer.Option(Path("results"), metavar="DIR", help="results root folder (campaign: DIR/hunt/kafka-V-CLIENT-sN)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="draw and print the plan (the first draws); run nothing, no root"),
) -> None:
    """Search the shipped scenarios blind for exactly-once bugs on one Kafka release: each run
    draws a scenario of the pool, client / broker / workload settings within their documented
    ranges (docs/detection.md "Blind hunt") and a fault schedule; Hypothesis steers the draws
    by the runs' feedback (stalled LSO, open transactions, aborts, error codes, epochs) and
    shrinks a failing one toward the defaults. Resumable: run the same command again. Writes
    runs.jsonl, summary.json and summary.html in RESULTS/hunt/kafka-V-CLIENT-sN/. Each run
    starts a fresh cluster: root.
    Exit codes: 1 a finding, 0 none, 2 bad input, no root or an error."""
    from harness.detect.hunt import HuntError, Hunter, MAX_LOAD_S, RUN_OVERHEAD_S, campaign_dir, load_pool, plan
    from harness.detect.suite import fmt_s

    if kafka_version is None:
        _fail("--kafka-version is required: the release to hunt on, e.g. --kafka-version 3.5.2")
    if budget_s is None:
        _fail("--budget-s is required: machine seconds for the campaign, e.g. --budget-s 900")
    if not budget_s > 0 or budget_s != budget_s or budget_s == float("inf"):
        _fail(f"--budget-s {budget_s:g}: give a number of seconds above 0, e.g. --budget-s 900")
    if seed < 0:
        _fail(f"--seed {seed}: give 0 or a positive whole number")
    if client is not None and client not in ("librdkafka", "java"):
        _fail(f"--client {client!r}: pick librdkafka or java (or leave it out to draw the client)")
    try:
        pool = load_pool(kafka_version, client)
    except HuntError as exc:
        _fail(str(exc))
    folder = campaign_dir(results, kafka_version, client, seed)
    if dry_run:
        draws = plan(pool, kafka_version, seed=seed, budget_s=budget_s)
        per_run = MAX_LOAD_S + RUN_OVERHEAD_S
        if as_json:
            out.print_json(json.dumps({"kafka_version": kafka_version, "client": client, "seed": seed,
                                       "budget_s": budget_s, "campaign": str(folder),
                                       "pool": [{"name": e.name, "clients": list(e.clients)} for e in pool],
                                       "estimated_runs": max(1, int(budget_s // per_run)), "draws": draws}, default=str))
            raise typer.Exit(0)
        out.print(f"hunt on Kafka {kafka_version} ({client or 'client drawn'}), seed {seed}, budget {fmt_s(budget_s)}: "
                  f"about {max(1, int(budget_s // per_run))} run(s) at ~{fmt_s(per_run)} each; campaign {folder}",
                  soft_wrap=True, highlight=False)
        out.print("pool: " + ", ".join(f"{e.name} ({'/'.join(e.clients)})" for e in pool), soft_wrap=True, highlight=False)
        for i, d in enumerate(draws, 1):
            s = d["schedule"]
            out.print(f"{i:>3} {d['scenario']:<16} {len(s['faults'])} fault(s) {s['duration']} s load  "
                      f"{_draw_text(d['draw']) or '-'}", soft_wrap=True, highlight=False)
        out.print("(the first draws while no run fails; feedback and shrinking change what follows)", highlight=False)
        raise typer.Exit(0)
    require_root()
    stop = threading.Event()

    def event(kind, **info):
        if as_json:
            return
        if kind == "run":
            ex = info["example"]
            console.print(f"run {info['n']} ({info['phase']}): {ex['scenario']}  {_draw_text(ex['draw'].as_dict())}  "
                          f"~{fmt_s(max(0.0, info['left_s']))} of budget left", soft_wrap=True, highlight=False)
        elif kind == "done":
            r = info["record"]
            label = {True: "VALID", False: "INVALID"}.get(r.get("valid"), str(r.get("valid")).upper())
            console.print(f"  {label} {', '.join(r.get('failing') or [])} {r.get('finding') or ''} score {r.get('score')} "
                          f"{fmt_s(r.get('machine_s', 0))}  {r.get('run_dir') or r.get('error', '')}",
                          soft_wrap=True, highlight=False)
        elif kind == "finding":
            console.print(f"[red]finding[/] {info['name']}: {info['path']}", soft_wrap=True, highlight=False)

    stop_on_signals(stop)
    try:
        h = Hunter(kafka_version, client=client, budget_s=budget_s, seed=seed, out_dir=folder, results_root=results,
                   pool=pool, stop=stop, on_event=event)
        summary = h.hunt()
    except HuntError as exc:
        _fail(str(exc))
    if as_json:
        out.print_json(json.dumps(summary, default=str))
    else:
        out.print(f"{summary['runs']} run(s), {summary['machine_minutes']} machine-minutes"
                  + (f" ({summary['stopped']})" if summary.get("stopped") else ""), highlight=False)
        for f in summary["findings"]:
            out.print(f"finding {f['name']}: first in run {f['first_run']} after {f['machine_minutes_to_first']} "
                      f"machine-minutes ({f['runs']} run(s))" + (f"; {f['caveat']}" if f.get("caveat") else ""),
                      soft_wrap=True, highlight=False)
        if not summary["findings"]:
            out.print("no finding", highlight=False)
        out.print(f"summary: {folder / 'summary.json'}  {folder / 'summary.html'}", soft_wrap=True, highlight=False)
    raise typer.Exit(1 if summary["findings"] else 0)


def register(app: typer.Typer) -> None:
    """Add ``hunt`` to the eos-chaos app."""
    app.command("hunt")(hunt)
