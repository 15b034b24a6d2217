"""Release entries of the bug zoo: an upstream bug replayed on the release that had it, and the
same entry on the release that fixed it as its control.

A zoo file with an ``upstream`` block is a release entry (docs/detection.md "Upstream bugs")::

    name: kafka-14402
    must_find: [stalled-lso, unseen]        # caught when one of these fails the run
    fail_on: [stalled-lso]                  # a liveness report fails a run only through fail_on
    upstream:
      id: KAFKA-14402
      title: hanging transaction after a late Produce
      link: https://issues.apache.org/jira/browse/KAFKA-14402
      mechanism: one paragraph: what goes wrong, where in Kafka's source
      affected: {kafka_version: 3.5.2}      # scenario fields merged onto the entry: the side with the bug
      fixed: {kafka_version: 3.6.0}         # the same for the fix: the control, must come out valid
      reproduced: true                      # false: kept as a measurement, with `tried:`, not run by default
    workload: {...}                         # the rest is a zoo scenario as usual (base: ... allowed)

It becomes two zoo entries, ``<name>.affected`` (a mutant with ``must_find``) and
``<name>.fixed`` (a control), whose scenarios are the merged file with ``affected`` resp.
``fixed`` merged onto it. Usually the two sides differ in ``kafka_version`` alone; a bug of a
protocol version differs in the client instead (KAFKA-17754: ``{workload: {client:
librdkafka}}`` against ``{workload: {client: java}}`` on one release). ``eos-chaos zoo --only
<name>`` runs both sides; zoo.json's ``releases`` pairs them (``release_rows``).

This module holds the block's model and the pairing; harness.detect.zoo loads the files.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AFFECTED, FIXED = "affected", "fixed"
SIDES = (AFFECTED, FIXED)


class UpstreamBug(BaseModel):
    """A release entry's ``upstream`` block (module docstring). ``affected``/``fixed``: scenario
    fields (a mapping, merged key by key) for the release that has the bug and the release that
    fixed it; they must differ. ``reproduced`` False keeps an entry that no schedule has caught
    yet, with ``tried`` saying what was tried."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$", description="the bug's id, e.g. KAFKA-14402")
    title: str = Field(min_length=1, max_length=200)
    link: str = Field("", max_length=500)
    mechanism: str = Field("", max_length=5000)
    affected: dict[str, Any]
    fixed: dict[str, Any]
    reproduced: bool = True
    tried: str = Field("", max_length=5000)

    @field_validator("affected", "fixed")
    @classmethod
    def _not_empty(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not v:
            raise ValueError("give the scenario fields of this side, e.g. {kafka_version: 3.5.2}")
        return v

    @model_validator(mode="after")
    def _sides_differ(self) -> "UpstreamBug":
        if self.affected == self.fixed:
            raise ValueError("affected and fixed are the same: the control must differ from the bug's side")
        return self


def side_overrides(side_fields: dict[str, Any]) -> dict[str, Any]:
    """Scenario fields of one side as a mapping to merge onto the scenario: ``kafka_version``
    is shorthand for ``cluster: {kafka_version: ...}``, ``client`` for ``workload: {client: ...}``;
    anything else is a scenario field as it stands."""
    out = {k: v for k, v in side_fields.items() if k not in ("kafka_version", "client")}
    if "kafka_version" in side_fields:
        out["cluster"] = {**(out.get("cluster") or {}), "kafka_version": str(side_fields["kafka_version"])}
    if "client" in side_fields:
        out["workload"] = {**(out.get("workload") or {}), "client": side_fields["client"]}
    return out


def side_name(name: str, side: Literal["affected", "fixed"]) -> str:
    """The zoo entry's name of one side: ``kafka-14402.affected``."""
    return f"{name}.{side}"


def describe_side(scenario: Any, other: Any = None) -> str:
    """What a side runs on, for tables: ``Kafka 3.5.2``, plus the client (``Kafka 4.4.0,
    librdkafka``) when the ``other`` side's scenario runs another one."""
    client = getattr(scenario.workload, "client", None)
    differs = other is not None and getattr(other.workload, "client", None) != client
    return f"Kafka {scenario.cluster.kafka_version}" + (f", {client}" if client and differs else "")


def release_rows(entries: list[Any], mutants: list[dict], controls: list[dict]) -> list[dict]:
    """zoo.json's ``releases``: one row per upstream bug whose entries are in ``entries``
    (ZooEntry with ``upstream`` and ``side``), pairing its mutant row (from ``mutants``) and
    control row (``controls``) of zoo_summary: ``{id, title, link, name, reproduced, tried,
    affected: {on, runs, detected, rate, ci95, median_time_to_detect_s, missed_seeds},
    fixed: {on, runs, invalid, rate, ci95, invalid_seeds}}``; a side not run is None."""
    rows: dict[str, dict] = {}
    by_name = {r["name"]: r for r in (*mutants, *controls)}
    sides = {(e.release, e.side): e.scenario for e in entries if getattr(e, "upstream", None) is not None}
    for e in entries:
        up = getattr(e, "upstream", None)
        if up is None:
            continue
        row = rows.setdefault(e.release, {"id": up.id, "title": up.title, "link": up.link, "name": e.release,
                                          "reproduced": up.reproduced, "tried": up.tried,
                                          AFFECTED: None, FIXED: None})
        r = by_name.get(e.name)
        if r is None:
            continue
        keys = (("runs", "detected", "rate", "ci95", "median_time_to_detect_s", "missed_seeds", "anomalies")
                if e.side == AFFECTED else ("runs", "invalid", "rate", "ci95", "invalid_seeds", "anomalies"))
        other = sides.get((e.release, FIXED if e.side == AFFECTED else AFFECTED))
        row[e.side] = {"on": describe_side(e.scenario, other), "entry": e.name, **{k: r.get(k) for k in keys}}
    return list(rows.values())


def release_line(row: dict) -> str:
    """One terminal line for a release row: ``KAFKA-14402  Kafka 3.5.2: caught 3/3 (median 21.0 s)
    | Kafka 3.6.0: 0/3 invalid``."""
    parts = [f"{row['id']:<12}"]
    a, f = row.get(AFFECTED), row.get(FIXED)
    if a:
        parts.append(f"{a['on']}: caught {a['detected']}/{a['runs']}"
                     + (f" (median {a['median_time_to_detect_s']:.1f} s)" if a.get("median_time_to_detect_s") is not None else ""))
    if f:
        parts.append(f"{f['on']}: {f['invalid']}/{f['runs']} invalid")
    if not row.get("reproduced"):
        parts.append("not reproduced so far")
    return " | ".join(parts)
