"""Short definitions of the anomaly names, for the report (shown next to each anomaly found).

They are the anomaly table's (``checkers.catalogue.TABLE``: one record per name, with its
definition and its anchor in docs/anomalies.md); this module only looks names up in it,
tolerant of case and of spellings such as "G1a (aborted read)".
"""
from __future__ import annotations

from checkers.catalogue import TABLE

ANOMALY_DEFINITIONS: dict[str, str] = {a.name: a.definition for a in TABLE}

def anomaly_definition(name: str) -> str | None:
    """The short definition of an anomaly name, tolerant of case (the cycle variants, G0-realtime
    and the like, are names of the table)."""
    if name in ANOMALY_DEFINITIONS:
        return ANOMALY_DEFINITIONS[name]
    lowered = {k.lower(): v for k, v in ANOMALY_DEFINITIONS.items()}
    key = name.strip().lower()
    if key in lowered:
        return lowered[key]
    # "G1a (aborted read)" and similar spellings
    head = key.split(" ")[0].split("(")[0]
    if head in lowered:
        return lowered[head]
    return None
