"""The one parser of release numbers: Kafka's, kafka-clients', librdkafka's, Flink's.

Checkers read versions with it (checkers.known_bugs.facts, checkers.known_bugs.signatures: a known bug's
range) and so does the harness (harness.cluster.releases ``parse`` and ``Release``, whose named
questions every harness caller asks instead of comparing numbers). It lives in checkers because
checkers never import harness. Nothing else compares version tuples
(tests/unit/test_architecture.py greps for it).

    version_tuple(v) -> (major, minor, patch) | None     leading numbers: "4.0.0-rc1" -> (4, 0, 0),
                                                          "4.1" -> (4, 1, 0), "trunk" / None -> None
    version_tuple(v, whole=True)                          the whole text is a version (1 to 4 numbers
                                                          of up to 4 digits, then -rc1 / +build), else None
    older_than(v, than) -> bool                           False when ``v`` is not a version
    between(v, lo, hi) -> bool | None                     lo <= v < hi (None: unbounded); None when
                                                          ``v`` is not a version
"""
from __future__ import annotations

import re
from typing import Any

_LEADING = re.compile(r"\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_WHOLE = re.compile(r"([0-9]{1,4})(?:\.([0-9]{1,4}))?(?:\.([0-9]{1,4}))?(?:\.[0-9]{1,4})?(?:[-+].*)?")


def version_tuple(version: Any, *, whole: bool = False) -> tuple[int, int, int] | None:
    """(major, minor, patch) of ``version``; a pre-release counts as its release. Leading
    numbers of ``str(version)`` by default (None when it does not start with a number);
    ``whole``: the text must be a version as a whole (and a str), else None."""
    if whole:
        m = _WHOLE.fullmatch(version) if isinstance(version, str) else None
    else:
        m = _LEADING.match(str(version or ""))
    return (int(m[1]), int(m[2] or 0), int(m[3] or 0)) if m else None


def older_than(version: Any, than: str) -> bool:
    """True when ``version`` is a release older than ``than``; False when newer, equal or not
    a version at all (unknown counts as not older)."""
    v = version_tuple(version)
    return v is not None and v < version_tuple(than)


def between(version: Any, lo: str | None, hi: str | None) -> bool | None:
    """``lo <= version < hi`` (None: unbounded on that side); None when ``version`` is not a
    version."""
    v = version_tuple(version)
    if v is None:
        return None
    return (lo is None or v >= version_tuple(lo)) and (hi is None or v < version_tuple(hi))
