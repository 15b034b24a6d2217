"""``check``: run every finder on a history and fold the results into a ``Verdict``.

The verdict is ``checkers.run.Verdict`` (verdict.json; its fields are documented there):
``valid`` True | False | "unknown", ``anomalies`` (name -> examples), ``anomaly_counts``,
``allowed``, ``failing``, ``impossible``, ``fail_on``, ``liveness_bounds``,
``liveness_reports``, ``unknown_reasons``, ``suspect``, ``stats``, ``versions``.

``valid`` is False iff some found anomaly is neither allowed, nor on an app run's input side
(``input_side``: the harness's input producers' cycles Kafka allows, checkers.finders.app_end_to_end),
nor a liveness report (liveness
names fail only when listed in ``meta["fail_on"]``), or some case is one Kafka cannot produce
(``"impossible": True``, event_order.py: an expected G0-realtime does not excuse it); otherwise "unknown" when the history
is too incomplete to judge (no completed read or write), not well-formed (a loader problem:
its cases go to ``suspect``, never under an anomaly's name) or a finder crashed; otherwise
True (docs/anomalies.md "Verdicts").
"""

from __future__ import annotations

import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

import polars as pl

from .finders.app_end_to_end import app_cases, app_stats, app_unknown, input_side
from .catalogue import LIVENESS_REPORTS, run_allowed
from .finders.cycles import cycle_cases
from .finders.duplicate import duplicate_cases
from .finders.epoch_exhausted import epoch_exhausted_cases
from .finders.event_order import impossible_cycle_cases
from .finders.g1a import g1a_cases
from .history import History, as_history
from .finders.inconsistent_offsets import inconsistent_offsets_cases
from .known_bugs.bugs import assign as assign_known_bugs
from .known_bugs.bugs import scenario_workload
from .history.log import final_keys, index, log
from .finders.lost_write import lost_write_cases
from .finders.nonmonotonic_poll import nonmonotonic_poll_cases
from .finders.nonmonotonic_send import nonmonotonic_send_cases
from .finders.pipeline import pipeline_cases
from .finders.poll_skip import poll_skip_cases
from .finders.precommitted_read import precommitted_read_cases
from .finders.realtime_lag import lag_quantiles_ms, realtime_lag_cases
from .history.rebalances import rebalance_stats
from .finders.reprocessing import summary
from .run import RunDir, RunMeta, Verdict
from .finders.server_error import server_error_cases
from .finders.share_dlq import share_dlq_cases, share_dlq_stats
from .finders.share_group import share_cases, share_stats
from .finders.sink import sink_cases
from .finders.stalled_lso import stalled_lso_cases
from .timing import laps
from .finders.torn_transaction import torn_transaction_cases
from .finders.unavailable import unavailable_cases
from .finders.unseen import unseen_cases
from .finders.zombie_write import zombie_write_cases

#: the liveness reports: fail a run only through fail_on (one list: checkers.catalogue)
LIVENESS = frozenset(LIVENESS_REPORTS)
WORKERS = max(1, min(4, os.cpu_count() or 1))  # finders run side by side on threads
# the costliest finders start first (the rest fill in around them)
HEAVY = {"cycle_cases": 0, "impossible_cycle_cases": 1, "poll_skip_cases": 2,
         "zombie_write_cases": 3, "duplicate_cases": 4, "torn_transaction_cases": 5,
         "unavailable_cases": 6}


#: (finder name, finder, its arguments from the run's RunMeta or None) in report order; each
#: runs on its own in ``check``: one that raises becomes an unknown reason, never a crash. The
#: anomaly table (checkers.catalogue.TABLE) names, per anomaly, the finders here that report it
#: (tests/unit/test_catalogue.py holds the two equal)
FINDERS: tuple[tuple[str, Callable[..., list[dict]], Callable[[RunMeta], dict] | None], ...] = (
    ("duplicate_cases", duplicate_cases, None),
    ("inconsistent_offsets_cases", inconsistent_offsets_cases, None),
    ("lost_write_cases", lost_write_cases, None),
    ("unseen_cases", unseen_cases, None),
    ("g1a_cases", g1a_cases, None),
    ("poll_skip_cases", poll_skip_cases, None),
    ("nonmonotonic_poll_cases", nonmonotonic_poll_cases, None),
    ("precommitted_read_cases", precommitted_read_cases, None),
    ("nonmonotonic_send_cases", nonmonotonic_send_cases, None),
    ("cycle_cases", cycle_cases, None),
    ("impossible_cycle_cases", impossible_cycle_cases, None),
    ("torn_transaction_cases", torn_transaction_cases, None),
    ("zombie_write_cases", zombie_write_cases, None),
    ("pipeline_cases", pipeline_cases, lambda m: {"pipeline": m.pipeline_spec}),
    ("sink_cases", sink_cases, lambda m: {"sink": m.sink}),
    ("app_cases", app_cases, lambda m: {"app": m.app}),
    ("stalled_lso_cases", stalled_lso_cases, lambda m: {"bound_s": m.liveness.stalled_lso_bound_s}),
    ("realtime_lag_cases", realtime_lag_cases, lambda m: {"bound_s": m.liveness.realtime_lag_bound_s}),
    ("unavailable_cases", unavailable_cases,
     lambda m: {"bound_s": m.liveness.unavailable_bound_s, "fs": m.liveness.unavailable_fs}),
    ("epoch_exhausted_cases", epoch_exhausted_cases, None),
    ("server_error_cases", server_error_cases, None),
    ("share_cases", share_cases, lambda m: {"share": m.share}),
    ("share_dlq_cases", share_dlq_cases, lambda m: {"share": m.share}),
)


def check(
    history: History | str | Path | Iterable[dict],
    meta: RunMeta | dict | None = None,
    allowed: Iterable[str] = (),
    max_examples: int = 10,
) -> Verdict:
    """Judge a history. ``history`` is a History, a history.jsonl path or a list of event
    dicts; ``meta`` is the run metadata (a ``checkers.run.RunMeta`` or a meta.json dict:
    fail_on, liveness bounds, pipeline, sink; docs/checkers.md); ``allowed`` names anomalies
    the scenario expects. Never raises on content: a crashing finder or a meta field that
    does not validate becomes an ``unknown_reasons`` entry. Returns a ``Verdict``.
    """
    meta, unknown = RunMeta.coerce(meta)
    allowed = run_allowed(meta, allowed)  # the app's or share group's at-least-once names too
    unknown += app_unknown(meta.app)  # a match that named nothing, a verifier that failed
    allowed_l = sorted(allowed)
    fail_on = set(meta.fail_on)
    try:
        h = as_history(history)
    except Exception as e:  # noqa: BLE001 - the verdict must name the failure, not raise
        return Verdict(valid="unknown", allowed=allowed_l, fail_on=sorted(fail_on),
                       liveness_bounds=meta.liveness.model_dump(),
                       unknown_reasons=[*unknown, f"could not read history: {type(e).__name__}: {e}"])

    unknown += judgeable(h)
    finders = FINDERS

    def run(i: int):
        fname, finder, kw = finders[i]
        try:
            out = finder(h, **(kw(meta) if kw else {}))
        except Exception as e:  # noqa: BLE001 - one finder's crash is an unknown reason, the others run
            tb = traceback.extract_tb(e.__traceback__)[-1]
            out = (f"finder {fname} crashed: {type(e).__name__}: {e} "
                   f"({Path(tb.filename).name}:{tb.lineno})")
        laps(fname)
        return out

    def stats():
        try:
            out = _stats(h)
            if meta.app:  # input/output counts per partition, input-to-output lag (checkers.finders.app_end_to_end)
                out["app"] = app_stats(h, meta.app)
            rebalances = rebalance_stats(h)  # group members' rebalances (checkers.history.rebalances)
            if rebalances is not None:
                out["rebalances"] = rebalances
            if meta.share:  # deliveries, acknowledgements, the duplicate rate (checkers.finders.share_group)
                out["share"] = share_stats(h, meta.share)
                if meta.share.get("dlq"):  # the dead-letter queue as read (checkers.finders.share_dlq, KIP-1191)
                    out["share"]["dlq"] = share_dlq_stats(h, meta.share)
            return out
        except Exception as e:  # noqa: BLE001
            return {"error": f"{type(e).__name__}: {e}"}
        finally:
            laps("stats")

    try:  # what every finder shares, once, before they run side by side
        index(h)
    except Exception:  # noqa: BLE001 - the finders will each report it
        pass
    laps("check: shared index")
    order = sorted(range(len(finders)), key=lambda i: HEAVY.get(finders[i][0], len(HEAVY)))
    results: list = [None] * len(finders)
    if WORKERS > 1 and h.ops.height > 1000:
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            st = pool.submit(stats)
            futs = {i: pool.submit(run, i) for i in order}
            for i, f in futs.items():
                results[i] = f.result()
            stats_v = st.result()
    else:
        for i in order:
            results[i] = run(i)
        stats_v = stats()
    return fold(results, unknown, meta=meta, allowed=allowed_l, malformed_n=malformed(h),
                stats=stats_v, max_examples=max_examples)


def fold(results: list, unknown: list[str], *, meta: RunMeta, allowed: list[str],
         malformed_n: int, stats: dict, max_examples: int = 10) -> Verdict:
    """Fold the finders' results into a ``Verdict``: ``results`` holds, per finder, its list
    of cases or the string saying it crashed; ``unknown`` the reasons found so far (judgeable,
    meta); ``allowed`` the expected names (sorted); ``malformed_n`` how many loader problems say
    the history is not well-formed (``malformed``); ``stats`` goes to ``Verdict.stats``. Shared
    by ``check`` and the parts path (``checkers.engines.parts``)."""
    allowed_l = allowed
    fail_on = set(meta.fail_on)
    found: dict[str, list[dict]] = {}
    for cases in results:
        if isinstance(cases, str):
            unknown.append(cases)
            continue
        for c in cases:
            if c.get("unknown"):  # the finder could not decide: say so, never count it
                unknown.append(f"{c['anomaly']}: {c['explanation']}")
            else:
                found.setdefault(c["anomaly"], []).append(c)

    if found.get("eos-duplicate"):  # every reprocessed range, beyond the examples (checkers.finders.reprocessing)
        ranges_ = summary(found["eos-duplicate"])
        if ranges_:
            stats = dict(stats, reprocessed_ranges=ranges_)
    # a name whose every case is a liveness report (e.g. unseen without a final drain) fails
    # only through fail_on, like the LIVENESS names
    liveness_only = {n for n, cs in found.items() if all(c.get("liveness") for c in cs)}
    suspect: dict[str, list[dict]] = {}
    if malformed_n and found:  # cases of a broken history may be its artifacts: none is judged
        suspect, found = {n: cs[:max_examples] for n, cs in sorted(found.items())}, {}
        unknown.append("cases found in the history that is not well-formed are listed under "
                       "'suspect', not judged: " + ", ".join(f"{n}: {len(cs)}" for n, cs in suspect.items()))
    counts = {name: len(cs) for name, cs in sorted(found.items())}
    # cases Kafka cannot produce (event_order.py) first: expected never excuses them
    impossible = sorted(n for n, cs in found.items() if any(c.get("impossible") for c in cs))
    # an app run: the harness's own input producers' cycles Kafka allows (checkers.finders.app_end_to_end)
    inputs_only = input_side(meta.app) - set(impossible) - set(allowed_l)
    anomalies = {name: sorted(cs, key=lambda c: not c.get("impossible"))[:max_examples]
                 for name, cs in sorted(found.items())}
    failing = [n for n in counts
               if n in impossible
               or (n not in allowed_l and n not in inputs_only
                   and ((n not in LIVENESS and n not in liveness_only) or n in fail_on))]
    if failing:
        valid: Any = False
    elif unknown:
        valid = "unknown"
    else:
        valid = True
    v = Verdict(
        valid=valid,
        anomalies=anomalies,
        anomaly_counts=counts,
        allowed=allowed_l,
        fail_on=sorted(fail_on),
        liveness_bounds=meta.liveness.model_dump(),
        # found names that are liveness reports (fail only through fail_on)
        liveness_reports=sorted(n for n in counts if n in LIVENESS or n in liveness_only),
        failing=sorted(failing),
        impossible=impossible,
        input_side=sorted(n for n in counts if n in inputs_only),
        unknown_reasons=unknown,
        suspect=suspect,
        stats=stats,
    )
    assign_known_bugs(v, meta)  # known_bugs(_seen), checkers/known_bugs/bugs.py; check_run adds scenario.yaml's workload
    return v


_READ_OR_WRITE = ["send", "poll", "txn"]
_READS = ["poll", "app-poll"]
_NOT_STRUCTURE = ("truncated or garbled last line dropped", "garbled line skipped")


def malformed(h: History) -> int:
    """How many of the loader's problems say the history is not well-formed (all but a
    truncated last line and garbled lines)."""
    return max(0, h.n_problems - int(h.truncated) - h.garbled_lines)


def _ok_poll_micro_op(h: History) -> bool:
    """Whether an ok op returned a record (a processor's txn polls its input)."""
    ok = h.ops["type"] == "ok"
    ops = h.mops.filter(pl.col("kind") == "poll")["op"].unique()
    return bool(ok.gather(ops.cast(pl.Int64)).any()) if len(ops) else False


def judgeable(h: History) -> list[str]:
    """Why ``h`` cannot be judged (empty when it can): no completed client read or write
    (a vacuous history, e.g. only ``assign`` ops), writes but no completed read (the prefix
    of a run killed before its consumers read: no ok poll or app-poll, no ok op that polled a
    record), garbled lines mid-file, or a history that
    is not well-formed (docs/history.md: an index gap, a completion with no open invoke or timed
    before its invoke, a process with two ops in flight, a malformed event or micro-op).
    A truncated last line alone is not a reason: the prefix of a killed run is judged."""
    out = []
    if h.ops.is_empty():
        out.append("history has no client operations")
    elif not ((h.ops["type"] == "ok") & h.ops["f"].cast(pl.String).is_in(_READ_OR_WRITE)).any():
        fs = ", ".join(sorted(set(h.ops["f"].cast(pl.String).to_list())))
        out.append(f"history has no completed client read or write (ops: {fs}): nothing to judge")
    elif not (((h.ops["type"] == "ok") & h.ops["f"].cast(pl.String).is_in(_READS)).any()
              or _ok_poll_micro_op(h)):
        # the prefix of a run killed before its consumers read: no write can be judged
        out.append("history has no completed read (no ok poll): the writes cannot be judged "
                   "(a run killed before its consumers read anything?)")
    if h.garbled_lines:
        out.append(f"{h.garbled_lines} garbled line(s) mid-file were skipped: "
                   "ops may be mis-paired or observations missing")
    broken = malformed(h)
    if broken > 0:
        first = [p for p in h.problems if not p.endswith(_NOT_STRUCTURE)][:3]
        out.append(f"the history is not well-formed (docs/history.md): {broken} problem(s), "
                   f"first: {'; '.join(first)}")
    return out


def _stats(h: History) -> dict:
    by = {}
    for f, t, n in h.ops.group_by("f", "type").len().sort("f", "type").iter_rows():
        by.setdefault(f, {})[t] = n
    lens = log(h).group_by("key").len().sort("key")
    notes = []
    if not final_keys(h):
        notes.append("no final drain (no poll with meta.final = true): unseen judged at the end "
                     "of the history as a liveness report")
    return {
        "events": h.n_events,
        "ops": h.ops.height,
        "micro_ops": h.mops.height,
        "ops_by_f": by,
        "nemesis_events": len(h.nemesis),
        "log_lengths": {h.keys[k]: n for k, n in lens.iter_rows()},
        "realtime_lag_ms": lag_quantiles_ms(h),
        "problems": h.problems,
        "problem_count": h.n_problems,
        "truncated": h.truncated,
        "notes": notes,
    }


def check_run(run_dir: str | Path, max_examples: int = 10, history: Any = None,
              checker: Callable[..., Verdict] | None = None) -> Verdict:
    """Re-check a run folder: its history.jsonl with its meta.json (``RunMeta``) and the
    ``expected`` list of its scenario.yaml. A folder whose controller was killed (a history
    prefix, no verdict.json, maybe no meta.json) is judged too; problems of meta.json and of
    scenario.yaml (unreadable: no anomaly is taken as expected) become unknown reasons.
    ``history``: the folder's history already loaded (a History), to read it once. The
    verdict carries meta.json's ``versions``. Raises FileNotFoundError when the folder has no
    history.jsonl. ``checker``: what judges the history instead of ``check`` (same arguments:
    history path, meta, allowed, max_examples; ``checkers.engines.parts.check_run_parts``)."""
    d = RunDir(run_dir)
    if not d.history.is_file():
        raise FileNotFoundError(f"{d.history} does not exist")
    meta, problems = d.read_meta()
    if not meta.finished:  # written when the load started and never completed: a killed controller
        problems.append(f"{d.META} says the run never finished (its controller was killed before the end): "
                        "the history is a prefix, with no heal, final drain or final reads")
    expected, bad_scenario = d.read_expected()  # a garbled scenario.yaml is said, never ignored
    problems += bad_scenario
    if checker is not None:
        v = checker(d.history, meta=meta, allowed=expected, max_examples=max_examples)
    else:
        v = check(history if history is not None else d.history, meta=meta, allowed=expected,
                  max_examples=max_examples)
    if meta.versions:
        v.versions = meta.versions
    assign_known_bugs(v, meta, scenario_workload(d.scenario))
    if not d.meta.is_file():
        v.stats.setdefault("notes", []).append(
            f"no {d.META} beside the history: default liveness bounds, no pipeline or sink checks")
    v.mark_unknown(*problems)
    return v
