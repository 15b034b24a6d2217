"""kafka-eos-chaos checkers: pure functions of a history (and run metadata) -> verdict.

Never imports harness or nemesis (docs/architecture.md). Public API:

* :func:`check` - run all finders (``checkers.finders``), return a :class:`Verdict` (``checkers.verdict``).
* :class:`Verdict`, :class:`RunMeta`, :class:`RunDir` - verdict.json, meta.json, a run folder (``checkers.run``).
* :func:`load_history` - tolerant history.jsonl reader -> :class:`History`.
* one finder per anomaly, ``<anomaly>_cases(h) -> list[dict]`` (docs/anomalies.md).
* :data:`ANOMALIES` - every anomaly name a finder reports: the names of the anomaly table
  (``checkers.catalogue.TABLE``, one record per name).

The names are loaded on first use (PEP 562): a worker process that needs only the run
contract (``checkers.run``, e.g. its isolation_level default) must not pay for numpy, polars
and scipy, which the finders import (about 1 s of CPU per process; several workers start at
once on a 2-core machine, and their first ops came 5 s late).
"""
from __future__ import annotations

import importlib
from typing import Any

#: public name -> the submodule that defines it
_WHERE: dict[str, str] = {
    "app_cases": "finders.app_end_to_end", "ANOMALIES": "catalogue",
    "cycle_cases": "finders.cycles", "g0_cases": "finders.cycles", "g1c_cases": "finders.cycles",
    "duplicate_cases": "finders.duplicate", "epoch_exhausted_cases": "finders.epoch_exhausted", "g1a_cases": "finders.g1a",
    "History": "history", "load_history": "history",
    "inconsistent_offsets_cases": "finders.inconsistent_offsets", "lost_write_cases": "finders.lost_write",
    "nonmonotonic_poll_cases": "finders.nonmonotonic_poll", "nonmonotonic_send_cases": "finders.nonmonotonic_send",
    "pipeline_cases": "finders.pipeline", "pipeline_window_cases": "finders.pipeline", "poll_skip_cases": "finders.poll_skip",
    "precommitted_read_cases": "finders.precommitted_read", "realtime_lag_cases": "finders.realtime_lag",
    "RunDir": "run", "RunMeta": "run", "Verdict": "run", "server_error_cases": "finders.server_error",
    "share_cases": "finders.share_group", "share_dlq_cases": "finders.share_dlq", "sink_cases": "finders.sink", "stalled_lso_cases": "finders.stalled_lso",
    "torn_transaction_cases": "finders.torn_transaction", "unavailable_cases": "finders.unavailable",
    "unseen_cases": "finders.unseen", "zombie_write_cases": "finders.zombie_write",
    "impossible_cycle_cases": "finders.event_order",
    "LIVENESS": "verdict", "check": "verdict",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'checkers' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
