"""Known Kafka and librdkafka bugs a correct client's run can meet on this cluster, for the
integration tests that expect a VALID verdict.

KAFKA-20734 (open upstream; docs/findings/F2.md): after successive broker kills leave a
partition without a leader, the transaction coordinator takes it for a deleted partition and
skips its COMMIT/ABORT markers. The partition keeps a hanging transaction, its last stable
offset stops there, and read_committed readers never see committed writes behind it: the
verdict is rightly INVALID (torn-transaction, unseen). Seen in 2 of 3 CI rehearsals on
2026-11-24, in plain smoke seed 1 (three nodes killed in turn). Such a run is neither a pass nor a defect of this project; ``xfail_if_kafka_20734``
makes it an expected failure that names the bug, and only when the brokers logged the
skipped markers and the failing anomalies are all ones a hanging transaction makes.

F4 (librdkafka 2.16, docs/findings/F4.md) and F5 (Kafka 4.3.1's group coordinator,
docs/findings/F5.md): a processor's consumer starts an input partition behind the offset its
group committed (at ``auto.offset.reset``, or at an old committed offset), so an eos-pipeline
run under processor kills can end INVALID with eos-duplicate. ``xfail_if_restart_behind_commit``
makes that an expected failure only when eos-duplicate is the only failing anomaly and every
reprocessed range of the verdict (``stats.reprocessed_ranges``, checkers/finders/reprocessing.py) is
headed by such a restart: a duplicate with no restart behind it (our processor's own bug, a
zombie) still fails the test.

Both signatures are the known-bug catalogue's (checkers/known_bugs/bugs.py, which also names them in
every verdict: ``Verdict.known_bugs``); these helpers only decide which runs a VALID-expecting
test may excuse.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkers.known_bugs.facts import run_facts
from checkers.known_bugs.signatures import HANGING_TXN_KINDS, kafka_20734_fit, restarted_ranges
from checkers.run import Verdict

__all__ = [
    "HANGING_TXN_KINDS",
    "kafka_20734_hit",
    "restart_behind_commit_hit",
    "xfail_if_kafka_20734",
    "xfail_if_restart_behind_commit",
]


def kafka_20734_hit(verdict: Verdict | dict, meta: dict) -> str | None:
    """The reason to give when ``verdict`` (verdict.json) is INVALID only with
    HANGING_TXN_KINDS and ``meta`` (meta.json) has the brokers' ``skipped-txn-markers``
    event (harness.cluster.broker_events); None otherwise. The signature is the catalogue's
    (checkers/known_bugs/bugs.py KAFKA-20734) with the narrower kinds: an expected failure only for
    what the integration tests have met."""
    fit = kafka_20734_fit(Verdict.coerce(verdict), run_facts(meta), kinds=HANGING_TXN_KINDS)
    return f"KAFKA-20734 (docs/findings/F2.md): {fit.why}" if fit else None


def xfail_if_kafka_20734(run_dir: str | Path, verdict: Verdict | None = None) -> None:
    """Call before asserting that the run in ``run_dir`` is VALID: pytest.xfail when
    ``kafka_20734_hit`` says the run met KAFKA-20734, else nothing (the test's own assertions
    then judge the run). ``verdict`` defaults to the run's verdict.json."""
    run_dir = Path(run_dir)
    try:
        meta = json.loads((run_dir / "meta.json").read_text())
        verdict = verdict if verdict is not None else json.loads((run_dir / "verdict.json").read_text())
    except (OSError, ValueError):
        return
    reason = kafka_20734_hit(verdict, meta)
    if reason:
        pytest.xfail(reason)


def restart_behind_commit_hit(verdict: Verdict | dict) -> str | None:
    """The reason to give when ``verdict`` is INVALID with eos-duplicate alone and every one
    of its reprocessed ranges has a restart behind the committed offset (F4, F5; the ranges
    as checkers/known_bugs/bugs.py's F4 and F5 entries read them); None otherwise."""
    verdict = Verdict.coerce(verdict)
    ranges = restarted_ranges(verdict)
    if ranges is None or set(verdict.failing) != {"eos-duplicate"}:
        return None
    kinds = sorted({s["kind"] for r in ranges for s in r["restarts"]})
    which = {"offset-reset": "F4 (docs/findings/F4.md) or F5", "behind-committed": "F5 (docs/findings/F5.md)"}
    return (f"a consumer restarted behind its group's committed offset ({', '.join(kinds)}: "
            f"{'; '.join(which[k] for k in kinds)}); eos-duplicate in {len(ranges)} reprocessed range(s): "
            + ", ".join(f"{r['key']} {r['from_offset']}-{r['to_offset']}" for r in ranges[:5]))


def xfail_if_restart_behind_commit(verdict: Verdict) -> None:
    """Call before asserting that an eos-pipeline run is VALID: pytest.xfail when
    ``restart_behind_commit_hit`` says it met F4 or F5, else nothing."""
    reason = restart_behind_commit_hit(verdict)
    if reason:
        pytest.xfail(reason)
