"""End to end checks of a user's application under test (the ``app`` workload).

The application is a black box between input topics the harness writes (transactional or
idempotent producers, unique integer values, as txn-queue) and output topics the harness reads
(read_committed consumers during the run, and a final drain after the application caught up).
Each output record names the input it came from through the scenario's ``match`` (value, key,
a JSON path, a regular expression or a user's function); the harness's readers record the
input value an output record names, so the checker compares two sets of values.

History: output observations are ops with ``f == "app-poll"``; their ok completion value has a
poll's shape, ``[["poll", {"out/0": [[offset, input_value | null], ...]}]]``, ``null`` where
the match names no input. ``meta.final`` marks the final drain's. The input side is the usual
send/poll/txn history of the input keys.

Run metadata (``meta["app"]``)::

    {"input_keys": ["in/0", ...], "output_keys": ["out/0", ...],
     "semantics": "exactly-once" | "at-least-once",   # at-least-once: duplicates allowed
     "order": "none" | "per-partition",               # per-partition: outputs keep input order
     "lag_bound_s": 60.0 | None,                        # app-stalled bound (None: measured only)
     "drain_complete": true,                            # the final drain reached every end
     "caught_up": true | false | null,                  # every committed input in the output
                                                        # before the app was stopped
     "catch_up": {"committed_offsets": {"in/0": 1234}}, # optional: the app's consumer group's
                                                        # committed input offsets after the wait
     "match_error": null | "...",                      # the match mapped no output record
     "input_cycles": "report" | "fail",                # INPUT_SIDE below (absent: "report")
     "verify": null | {"findings": [...], "count": n, "error": null | "..."},  # output.verify
     "batch": {"done": false, "waited_s": 180.0, "not_done": ["app-1"],  # done: exit (optional)
               "last_exit": {"app-1": {"code": 1, "by": "self", "running": true, "worker": "app-1"}}},
     "input_crashed": {"workers": {"producer-0": {"code": 1, "crash": ["..."]}},  # optional
                       "logs": "<run>/logs/producer-*.log"}}

A batch application (``done: exit``) whose instances did not all exit 0 (``batch.done`` false)
did not complete: what reached its output is not judged as its result, so the run is unknown
(``app_unknown`` names each unfinished instance and its last exit code), unless an anomaly
already fails it (a duplicate or an aborted read in the output is one whether or not the batch
finished). A run whose input producers all crashed before writing anything
(``input_crashed``) has nothing to judge: its first unknown reason says why, with the crash.

Anomalies (docs/anomalies.md):

* ``eos-loss``: a committed input with no output record naming it. When the application had
  not caught up when it was stopped (``caught_up: false``), a missing input may be a stall:
  each is then an ``app-stalled`` case and the verdict is unknown, never valid; unless the
  application's consumer group had committed an offset past it (``catch_up.committed_offsets``):
  by its own account it consumed that input and will not read it again, so it is a loss.
* ``eos-duplicate``: a committed input named by more than one output record (distinct output
  offsets); allowed when ``semantics`` is at-least-once (listed, not failing).
* ``eos-aborted-read``: an output record names an input that was aborted (its transaction
  failed and no read_committed reader ever saw it): the application read uncommitted data.
* ``eos-phantom``: an output record names no input the harness wrote.
* ``eos-reorder``: with ``order: per-partition``, two inputs of one input partition appear in
  one output partition in the opposite order of their input offsets.
* ``app-stalled`` (liveness): an input committed during the load whose output the harness's
  readers first saw more than ``lag_bound_s`` after the input's commit, or never during the
  load while the final drain found it. A preloaded input (``input.preload``, committed before
  the last ``preload`` event: checkers.finders.unavailable.load_start) counts from the load's start,
  when the instances start, not from its commit.
* ``app-verify``: a finding of the user's own verifier (``output.verify``, for outputs that are
  not one record per input: harness.workloads.app_verify), with its ``kind``; with a verifier
  the record-by-record checks above are not run (``match: none``).

The input side: the harness's own input producers and readers are checked as in every
scenario, but what is under test is the user's application. ``INPUT_SIDE`` names the cycles
among the input producers' transactions that Kafka allows (its transactions are atomic, not
isolated: docs/checkers.md "Realtime cycles in Kafka"); with ``input_cycles: "report"`` (the
default) the verdict lists them in ``Verdict.input_side`` and they do not fail the run, unless
a case is one Kafka cannot produce (``impossible``). Everything else, and every anomaly of the
application's output, fails as usual. ``input_cycles: "fail"`` judges them as any scenario.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

import polars as pl

from ..history import History
from ..history.log import log, writes
from .reprocessing import explain_app
from .unavailable import load_start

#: the input producers' cycles Kafka allows: reported apart for the app workload (module docstring)
INPUT_SIDE = ("G0", "G0-process", "G0-realtime", "G1c-realtime")


def input_side(app: dict | None) -> frozenset[str]:
    """The names reported on the input side, not failing the run (module docstring): ``INPUT_SIDE``
    for an app run whose ``input_cycles`` is not "fail", else none."""
    if not app or app.get("input_cycles", "report") == "fail":
        return frozenset()
    return frozenset(INPUT_SIDE)


ANOMALIES = ("eos-loss", "eos-duplicate", "eos-aborted-read", "eos-phantom", "eos-reorder", "app-stalled",
             "app-verify")


def _output_obs(h: History) -> list[tuple[str, int, Any, int | None, bool]]:
    """(output key, offset, input value or None, completion time ns, final) per record of
    every ok ``app-poll`` op, in op order."""
    out = []
    f, typ, ctime, final = (h.ops[c] for c in ("f", "type", "complete_time", "final"))
    for op, ex in sorted(h.extras.items()):
        if f[op] != "app-poll" or typ[op] != "ok":
            continue
        val = ex.get("completion_value")
        if not isinstance(val, list):
            continue
        for mop in val:
            if not (isinstance(mop, list) and len(mop) == 2 and mop[0] == "poll" and isinstance(mop[1], dict)):
                continue
            for key, pairs in mop[1].items():
                for pair in pairs if isinstance(pairs, list) else ():
                    if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int):
                        v = pair[1] if isinstance(pair[1], int) and not isinstance(pair[1], bool) else None
                        out.append((str(key), pair[0], v, ctime[op], bool(final[op])))
    return out


def _inputs(h: History, input_keys: Iterable[str]) -> tuple[dict[int, tuple[str, int | None, int | None]], set[int], set[int]]:
    """(committed: value -> (key, offset, commit time ns), aborted values, every written value)
    of the input keys. Committed: in the committed log as read, or a write that must have
    committed; aborted: a write of a failed op that no reader saw."""
    keys = set(input_keys)
    kid = {k: i for i, k in enumerate(h.keys) if k in keys}
    committed: dict[int, tuple[str, int | None, int | None]] = {}
    for k, off, v in log(h).filter(pl.col("key").is_in(list(kid.values()))).select("key", "offset", "value").iter_rows():
        committed[v] = (h.keys[k], off, None)
    w = writes(h).filter(pl.col("key").is_in(list(kid.values())))
    written: set[int] = set()
    aborted: set[int] = set()
    for k, off, v, typ, ct, read, comm in w.select("key", "offset", "value", "type", "complete_time", "read",
                                                   "committed").iter_rows():
        written.add(v)
        if comm or v in committed:
            prev = committed.get(v)
            committed[v] = (h.keys[k], off if off is not None else (prev[1] if prev else None),
                            ct if typ == "ok" else None)
        elif typ == "fail" and not read:
            aborted.add(v)
    return committed, aborted, written


def committed_inputs(h: History, input_keys: Iterable[str]) -> tuple[dict, set[int], dict]:
    """(committed: value -> (key, offset | None, commit time ns | None), aborted values,
    written: value -> (key, offset | None)) of the input keys, as the app checks read them
    (committed: in the committed log as read, or a write that must have committed; aborted: a
    write of a failed op that no reader saw). harness.workloads.app_verify writes them for a
    user's verifier."""
    committed, aborted, _ = _inputs(h, input_keys)
    keys = set(input_keys)
    kid = {i for i, k in enumerate(h.keys) if k in keys}
    written = {v: (h.keys[k], off) for k, off, v in
               writes(h).filter(pl.col("key").is_in(list(kid))).select("key", "offset", "value").iter_rows()}
    return committed, aborted, written


def verify_cases(app: dict) -> list[dict]:
    """The user's verifier's findings (``app["verify"]``, harness.workloads.app_verify: the
    first 1000 it printed) as ``app-verify`` cases: ``{"anomaly": "app-verify", "kind", "explanation", ...its fields}``."""
    v = app.get("verify") or {}
    if v.get("error"):
        return []
    return [dict(f, anomaly="app-verify") for f in v.get("findings") or [] if isinstance(f, dict)]


def app_unknown(app: dict | None) -> list[str]:
    """Why an app run cannot be judged from its metadata (one line each): input producers that
    all crashed before writing (``input_crashed``), a match that named no output record, a
    verifier that crashed, hung or printed what is not a finding, or a batch app (``done:
    exit``) whose instances did not all exit 0 (``batch_unfinished``)."""
    if not app:
        return []
    crashed = input_crashed(app.get("input_crashed"))
    out = [crashed] if crashed else []  # first: it says why the history has nothing to judge
    if app.get("match_error"):
        out.append(f"app: {app['match_error']}")
    err = (app.get("verify") or {}).get("error")
    if err:
        out.append(f"app: {err}")
    unfinished = batch_unfinished(app.get("batch"))
    if unfinished:
        out.append(f"app: {unfinished}")
    return out


def input_crashed(crash: dict | None, so: str = "so there is nothing to judge") -> str | None:
    """One line saying the harness's input producers all crashed before writing anything, from
    meta ``app.input_crashed`` (harness.workloads.app_input_crash: ``workers``: name ->
    ``{"code": exit code, "crash": [first lines of the crash]}``, ``logs``: where their logs
    are), then ``so`` (what follows for the run); None when they did not."""
    if not isinstance(crash, dict) or not isinstance(crash.get("workers"), dict) or not crash["workers"]:
        return None
    same: dict[tuple[Any, str], list[str]] = {}  # one entry per distinct crash, naming its producers
    for name, w in sorted(crash["workers"].items()):
        w = w if isinstance(w, dict) else {}
        lines = " | ".join(str(x) for x in (w.get("crash") or [])[:3]) or "(its log says nothing)"
        same.setdefault((w.get("code"), lines), []).append(str(name))
    each = [f"{', '.join(names)} exited with code {code}: {lines}" for (code, lines), names in same.items()]
    return (f"the input producers crashed before writing any input, {so}: "
            f"{'; '.join(each)} (their logs: {crash.get('logs') or 'logs/producer-*.log'}; the scenario's "
            "input.producer settings are passed to them)")


def batch_unfinished(batch: dict | None) -> str | None:
    """One line naming the instances of a ``done: exit`` app that had not exited 0 when the
    harness stopped waiting, from meta ``app.batch``: ``not_done`` (instance names),
    ``waited_s``, ``last_exit`` (instance -> ``code``: its last exit code, negative for a
    signal, None when none was seen since its supervisor's last start; ``running``: whether it
    was running then; ``worker``: the supervisor standing for it, a zombie's replacement's name).
    None when the batch completed or the run is not a batch."""
    if not isinstance(batch, dict) or batch.get("done") is not False:
        return None
    last = batch.get("last_exit") if isinstance(batch.get("last_exit"), dict) else {}
    names = [str(n) for n in batch.get("not_done") or []]

    def state(name: str) -> str:
        e = last.get(name) if isinstance(last.get(name), dict) else {}
        worker = e.get("worker")
        who = f"{name} (as {worker})" if worker and worker != name else name
        if isinstance(e.get("code"), int) and not isinstance(e.get("code"), bool):
            return f"{who} had last exited with code {e['code']}" + (", running again" if e.get("running") else "")
        if e.get("running"):
            return f"{who} was still running, no exit since its last start"
        return f"{who} was not running, no exit seen" if e else f"{who}, no exit recorded"

    waited = batch.get("waited_s")
    when = f"after {waited:g} s" if isinstance(waited, (int, float)) else "when the harness stopped waiting"
    logs = ", ".join(f"logs/{(last.get(n) or {}).get('worker') or n}.log" for n in names) or "logs/app-*.log"
    return (f"done: exit: the batch did not complete {when}: {'; '.join(state(n) for n in names) or 'an instance'}"
            f"; its output is not judged as a finished batch's (see {logs}; if it was still working, raise "
            "output.catch_up_s)")


def app_cases(h: History, app: dict | None = None) -> list[dict]:
    """The app workload's anomalies (module docstring). Without ``app`` there are none.
    Example: ``{"anomaly", "value", "key" (input key), "offset" (input offset), "outputs"
    ([output key, offset] pairs), "explanation"}``. Returns [] when the match mapped no output
    record (``match_error``): the verdict then names that as an unknown reason instead."""
    if not app or app.get("match_error"):
        return []
    if app.get("verify") is not None:  # the user's verifier judges the output, not a match
        return verify_cases(app)
    committed, aborted, written = _inputs(h, app.get("input_keys") or [])
    obs = _output_obs(h)
    occ: dict[Any, set[tuple[str, int]]] = defaultdict(set)
    first_seen: dict[int, int] = {}
    for key, off, v, t, final in obs:
        occ[v].add((key, off))
        if v is not None and not final and t is not None:
            first_seen[v] = min(first_seen.get(v, t), t)
    out: list[dict] = []
    at_least_once = app.get("semantics") == "at-least-once"
    stalled = app.get("caught_up") is False  # the app never named every input: loss or stall?
    consumed = (app.get("catch_up") or {}).get("committed_offsets") or {}  # the app's group's offsets
    missing = 0
    dups: list[dict] = []
    for v, (k, o, _t) in sorted(committed.items()):
        where = sorted(occ.get(v, ()))
        if not where:
            if stalled and o is not None and consumed.get(k, -1) > o:
                out.append({"anomaly": "eos-loss", "value": v, "key": k, "offset": o, "outputs": [],
                            "explanation": f"committed input {v} ({k}@{o}) has no output record, and the "
                                           f"application's consumer group committed offset {consumed[k]} past it: "
                                           "it consumed the input and will not read it again"})
            elif stalled:
                missing += 1
                out.append({"anomaly": "app-stalled", "value": v, "key": k, "offset": o, "lag_s": None,
                            "explanation": f"committed input {v} ({k}@{o}) has no output record, and the "
                                           "application had stopped making progress when it was stopped"})
            elif app.get("drain_complete", True):
                out.append({"anomaly": "eos-loss", "value": v, "key": k, "offset": o, "outputs": [],
                            "explanation": f"committed input {v} ({k}@{o}) has no output record"})
        elif len(where) > 1:
            dups.append({"anomaly": "eos-duplicate", "value": v, "key": k, "offset": o,
                        "outputs": [list(x) for x in where], "count": len(where),
                        "explanation": f"committed input {v} ({k}@{o}) has {len(where)} output records: "
                                       + ", ".join(f"{a}@{b}" for a, b in where)
                                       + (" (allowed: at-least-once)" if at_least_once else "")})
    if dups:  # grouped into duplicated ranges of input positions (checkers.finders.reprocessing)
        per_key: dict[str, list[int]] = defaultdict(list)
        for k, o, _t in committed.values():
            if o is not None:
                per_key[k].append(o)
        positions = {(k, o): i for k, offs in per_key.items() for i, o in enumerate(sorted(offs))}
        out += explain_app(dups, positions, {k: min(offs) for k, offs in per_key.items()})
    for v in sorted(x for x in occ if x is not None and x not in committed):
        where = sorted(occ[v])
        if v in aborted:
            out.append({"anomaly": "eos-aborted-read", "value": v, "outputs": [list(x) for x in where],
                        "explanation": f"output {', '.join(f'{a}@{b}' for a, b in where)} names input {v}, "
                                       "whose transaction was aborted: the application read uncommitted data"})
        elif v not in written:
            out.append({"anomaly": "eos-phantom", "value": v, "outputs": [list(x) for x in where],
                        "explanation": f"output {', '.join(f'{a}@{b}' for a, b in where)} names input {v}, "
                                       "which the harness never wrote"})
    for key, off in sorted(occ.get(None, ())):
        out.append({"anomaly": "eos-phantom", "value": None, "outputs": [[key, off]],
                    "explanation": f"output {key}@{off} names no input (the match found none in it)"})
    if missing:
        out.append({"anomaly": "eos-loss", "unknown": True,
                    "explanation": f"{missing} committed inputs have no output record, but the application "
                                   "did not catch up before it was stopped (app-stalled): a loss cannot be told "
                                   "from a stall; a longer output.catch_up_s / quiet_s tells them apart"})
    if app.get("order") == "per-partition":
        out += _reorders(obs, committed)
    bound = app.get("lag_bound_s")
    start = load_start(h)
    if bound is not None:
        for v, (k, o, t) in sorted(committed.items()):
            if t is None or v not in occ:
                continue
            if start is not None and t < start:  # preloaded: no instance ran before the load started
                t = start
            seen = first_seen.get(v)
            lag_s = None if seen is None else (seen - t) / 1e9
            if seen is None or lag_s > bound:
                out.append({"anomaly": "app-stalled", "value": v, "key": k, "offset": o, "lag_s": lag_s,
                            "explanation": (f"input {v} ({k}@{o}) committed at {t / 1e9:.1f} s "
                                            + ("reached the output only in the final drain" if seen is None else
                                               f"first seen in the output {lag_s:.1f} s later") +
                                            f" (bound {bound:g} s)")})
    return out


def _reorders(obs, committed) -> list[dict]:
    """eos-reorder: per (output key, input key), input offsets must rise with output offsets."""
    seq: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for key, off, v, _t, _f in obs:
        if v in committed and committed[v][1] is not None:
            seq[(key, committed[v][0])][off] = committed[v][1]
    out = []
    for (okey, ikey), m in sorted(seq.items()):
        prev = None
        for off in sorted(m):
            if prev is not None and m[off] < prev[1]:
                out.append({"anomaly": "eos-reorder", "key": ikey, "outputs": [[okey, prev[0]], [okey, off]],
                            "explanation": f"{ikey}@{prev[1]} is at {okey}@{prev[0]}, before {ikey}@{m[off]} "
                                           f"at {okey}@{off}, but its input offset is higher"})
            prev = (off, max(m[off], prev[1]) if prev else m[off])
    return out


def app_stats(h: History, app: dict | None = None) -> dict:
    """Input/output counts per partition and the input-to-output lag quantiles (ms) of an app
    run: ``{"inputs": {key: n}, "outputs": {key: n}, "lag_ms": {"p50", "p99", "max", "n"}}``."""
    if not app:
        return {}
    committed, _aborted, _w = _inputs(h, app.get("input_keys") or [])
    obs = _output_obs(h)
    inputs: dict[str, int] = defaultdict(int)
    for k, _o, _t in committed.values():
        inputs[k] += 1
    outputs: dict[str, int] = defaultdict(int)
    first_seen: dict[int, int] = {}
    counted: set[tuple[str, int]] = set()
    for key, off, v, t, final in obs:
        if (key, off) not in counted:  # an output record read by several readers counts once
            counted.add((key, off))
            outputs[key] += 1
        if v is not None and not final and t is not None:
            first_seen[v] = min(first_seen.get(v, t), t)
    start = load_start(h) or 0  # a preloaded input waits from the load's start, when the instances start
    lags = sorted((first_seen[v] - max(t, start)) / 1e6 for v, (_k, _o, t) in committed.items()
                  if t is not None and v in first_seen)
    q = {}
    if lags:
        q = {"p50": round(lags[len(lags) // 2], 1), "p99": round(lags[min(len(lags) - 1, int(len(lags) * 0.99))], 1),
             "max": round(lags[-1], 1), "n": len(lags)}
    return {"inputs": dict(sorted(inputs.items())), "outputs": dict(sorted(outputs.items())), "lag_ms": q}
