"""The anomaly catalogue: every name a finder reports (docs/anomalies.md, docs/checkers.md).

A scenario's ``expected``, a zoo mutant's ``must_find`` and a meta.json's ``fail_on`` name
anomalies; a name that is not here can never be found, so it is a typo: ``check_names``
refuses it and suggests the nearest name (difflib).
"""
from __future__ import annotations

import difflib
from typing import Iterable

#: docs/anomalies.md "Jepsen parity"
JEPSEN = ("duplicate", "inconsistent-offsets", "lost-write", "unseen", "G1a", "precommitted-read",
          "int-poll-skip", "poll-skip", "int-nonmonotonic-poll", "nonmonotonic-poll",
          "int-nonmonotonic-send", "nonmonotonic-send", "G0", "G1c", "G0-process", "G1c-process",
          "G0-realtime", "G1c-realtime")
#: docs/anomalies.md "Beyond Jepsen" (eos-* of a pipeline: checkers.finders.pipeline; of an app: checkers.finders.app_end_to_end)
BEYOND = ("torn-transaction", "zombie-write", "eos-duplicate", "eos-loss", "offsets-ahead",
          "offsets-behind", "sink-duplicate", "sink-loss", "eos-aborted-read", "eos-phantom",
          "eos-reorder", "app-verify")
#: docs/anomalies.md "Liveness and performance" (reports: fail a run only through fail_on)
LIVENESS_REPORTS = ("stalled-lso", "realtime-lag", "unavailable", "app-stalled", "pipeline-stalled",
                    "server-error", "epoch-exhausted")

#: docs/anomalies.md "Share groups" (KIP-932; checkers.finders.share_group): share-duplicate is counted and
#: always allowed (share groups deliver at least once); the dead-letter queue's (KIP-1191;
#: checkers.finders.share_dlq)
SHARE = ("share-lost", "share-aborted-read", "share-double-acquire", "share-delivery-count", "share-duplicate",
         "share-dlq-missing", "share-dlq-spurious")

ANOMALIES: frozenset[str] = frozenset((*JEPSEN, *BEYOND, *LIVENESS_REPORTS, *SHARE))


def unknown_names(names: Iterable[str]) -> list[str]:
    """The names in ``names`` that are not in the catalogue, in order, each once."""
    return list(dict.fromkeys(n for n in names if n not in ANOMALIES))


def suggest(name: str) -> str | None:
    """The catalogue name nearest to ``name`` (difflib), case-insensitively; None if none is
    near."""
    by_lower = {a.lower(): a for a in ANOMALIES}
    if str(name).lower() in by_lower:
        return by_lower[str(name).lower()]
    near = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[near[0]] if near else None


def describe_unknown(names: Iterable[str], field: str) -> str | None:
    """One line naming each unknown name of ``field`` (a prefix; "" for none) with the nearest
    known one, or None when every name is known."""
    bad = unknown_names(names)
    if not bad:
        return None
    parts = []
    for n in bad:
        s = suggest(n)
        parts.append(f"{n!r} (did you mean {s!r}?)" if s else repr(n))
    return (f"{field + ': ' if field else ''}unknown anomaly {', '.join(parts)}; the names are in "
            "docs/checkers.md (docs/anomalies.md)")


def check_names(names: Iterable[str], field: str) -> None:
    """Raise ValueError (one line, with the nearest names) when ``names`` holds a name that
    is not in the catalogue."""
    msg = describe_unknown(names, field)
    if msg:
        raise ValueError(msg)
