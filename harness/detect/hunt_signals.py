"""Feedback of ``eos-chaos hunt`` (issue 44): what a finished run says about how close it came
to a bug, read from its folder (verdict.json, open-transactions.json, history.jsonl).

``signals(run_dir)`` returns plain numbers, each 0 when the run has nothing to say:

* ``stalled_lso``: the longest stalled last stable offset (stalled-lso cases, listed in the
  verdict whether or not they fail the run) over the run's ``stalled_lso_bound_s``: 1.0 is at
  the bound, the report's own threshold;
* ``unavailable``: the longest ``unavailable`` window over ``unavailable_bound_s``;
* ``open_txn``: open-transactions.json: seconds the runner waited for open transactions to end
  before the final drain (``waited_s``) over its ``bound_s``, plus 1 per transaction still open
  at the end (``open_at_end``);
* ``aborts_per_txn``: failed transactions over all completed ``txn`` ops (verdict stats);
* ``error_codes``: the distinct client error codes of failed / indeterminate ops (``codes``
  lists them: the campaign's coverage map of codes seen);
* ``max_epoch``: the highest producer epoch the history records (harness.detect.zoo_releases
  ``epochs_reached``; the Java client records epochs, librdkafka none), over 32767;
* ``near_bound``: how many liveness reports came within 80 % of their bound.

``score`` folds them into one number the search prefers to raise; ``novelty`` counts codes a
campaign had not seen before. Both go to Hypothesis's ``target()`` (harness.detect.hunt).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SIGNALS = ("stalled_lso", "unavailable", "open_txn", "aborts_per_txn", "error_codes", "max_epoch", "near_bound")
EPOCH_MAX = 32767
NEAR = 0.8


def _read_json(p: Path) -> Any:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def error_codes(history: Path, limit: int = 200_000) -> set[str]:
    """Distinct error codes (the first element of an op's ``error``) of fail / info ops."""
    codes: set[str] = set()
    try:
        f = open(history)
    except OSError:
        return codes
    with f:
        for i, line in enumerate(f):
            if i >= limit:
                break
            if '"error"' not in line:
                continue
            try:
                op = json.loads(line)
            except ValueError:
                continue
            err = op.get("error")
            if op.get("type") in ("fail", "info") and err:
                code = err[0] if isinstance(err, list) else err
                if isinstance(code, (str, int)):
                    codes.add(str(code))
    return codes


def _longest(cases: list, key: str) -> float:
    out = 0.0
    for c in cases or []:
        if isinstance(c, dict) and isinstance(c.get(key), (int, float)):
            out = max(out, float(c[key]))
    return out


def signals(run_dir: str | Path) -> dict[str, Any]:
    """The run's signals (module docstring) and ``codes`` (sorted)."""
    d = Path(run_dir)
    v = _read_json(d / "verdict.json") or {}
    bounds = v.get("liveness_bounds") or {}
    anomalies = v.get("anomalies") or {}
    out: dict[str, Any] = {k: 0.0 for k in SIGNALS}
    lso_bound = bounds.get("stalled_lso_bound_s") or 30.0
    out["stalled_lso"] = round(_longest(anomalies.get("stalled-lso"), "stalled_ms") / 1000 / lso_bound, 3)
    un_bound = bounds.get("unavailable_bound_s") or 10.0
    out["unavailable"] = round(_longest(anomalies.get("unavailable"), "seconds") / un_bound, 3)
    ot = _read_json(d / "open-transactions.json") or {}
    waited, bound = float(ot.get("waited_s") or 0.0), float(ot.get("bound_s") or 0.0)
    out["open_txn"] = round((waited / bound if bound > 0 else 0.0) + len(ot.get("open_at_end") or []), 3)
    txn = ((v.get("stats") or {}).get("ops_by_f") or {}).get("txn") or {}
    done = sum(int(txn.get(k, 0)) for k in ("ok", "fail", "info"))
    out["aborts_per_txn"] = round(int(txn.get("fail", 0)) / done, 3) if done else 0.0
    codes = error_codes(d / "history.jsonl")
    out["error_codes"] = float(len(codes))
    out["codes"] = sorted(codes)
    from harness.detect.zoo_releases import epochs_reached

    epochs = epochs_reached(d / "history.jsonl")
    out["max_epoch"] = round(max(epochs.values()) / EPOCH_MAX, 4) if epochs else 0.0
    out["near_bound"] = float(sum(1 for k in ("stalled_lso", "unavailable") if out[k] >= NEAR))
    return out


def score(sig: dict[str, Any], novelty: int = 0) -> float:
    """One number to raise: liveness ratios (each capped at 3), open transactions, aborts per
    transaction, distinct codes (a tenth each), epochs, near-bound reports and new codes."""
    return round(min(3.0, sig.get("stalled_lso", 0)) + min(3.0, sig.get("unavailable", 0)) / 3
                 + min(3.0, sig.get("open_txn", 0)) + sig.get("aborts_per_txn", 0)
                 + sig.get("error_codes", 0) / 10 + sig.get("max_epoch", 0) + sig.get("near_bound", 0) / 2
                 + novelty, 4)
