"""kafka-eos-chaos checkers: pure functions of a history (and run metadata) -> verdict.

Never imports harness or nemesis (docs/architecture.md). Public API:

* :func:`check` - run all finders, return a :class:`Verdict` (``checkers.verdict``).
* :class:`Verdict`, :class:`RunMeta`, :class:`RunDir` - verdict.json, meta.json, a run folder (``checkers.run``).
* :func:`load_history` - tolerant history.jsonl reader -> :class:`History`.
* one finder per anomaly, ``<anomaly>_cases(h) -> list[dict]`` (docs/anomalies.md).
* :data:`ANOMALIES` - the catalogue: every anomaly name a finder reports (``checkers.catalogue``).
"""

from .app_end_to_end import app_cases
from .catalogue import ANOMALIES
from .cycles import cycle_cases, g0_cases, g1c_cases
from .duplicate import duplicate_cases
from .g1a import g1a_cases
from .history import History, load_history
from .inconsistent_offsets import inconsistent_offsets_cases
from .lost_write import lost_write_cases
from .nonmonotonic_poll import nonmonotonic_poll_cases
from .nonmonotonic_send import nonmonotonic_send_cases
from .pipeline import pipeline_cases
from .poll_skip import poll_skip_cases
from .precommitted_read import precommitted_read_cases
from .realtime_lag import realtime_lag_cases
from .run import RunDir, RunMeta, Verdict
from .sink import sink_cases
from .stalled_lso import stalled_lso_cases
from .torn_transaction import torn_transaction_cases
from .unavailable import unavailable_cases
from .unseen import unseen_cases
from .zombie_write import zombie_write_cases
from .verdict import LIVENESS, check

__all__ = [
    "ANOMALIES", "History", "LIVENESS", "RunDir", "RunMeta", "Verdict", "check", "load_history",
    "duplicate_cases", "g1a_cases", "inconsistent_offsets_cases", "lost_write_cases",
    "nonmonotonic_poll_cases", "poll_skip_cases", "realtime_lag_cases", "unseen_cases",
    "precommitted_read_cases", "nonmonotonic_send_cases", "cycle_cases", "g0_cases",
    "g1c_cases", "torn_transaction_cases", "zombie_write_cases", "pipeline_cases",
    "sink_cases", "app_cases", "stalled_lso_cases", "unavailable_cases",
]
