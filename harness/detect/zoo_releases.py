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
      fix: kafka_version                    # what the two sides differ in: the fix, and only it
      affected: {kafka_version: 3.5.2}      # scenario fields merged onto the entry: the side with the bug
      fixed: {kafka_version: 3.6.0}         # the same for the fix: the control, must come out valid
      reproduced: true                      # false: kept as a measurement, with `tried:`, not run by default
      must_reach_epoch: 32766               # optional: a fixed-side run is clean only if it got there
    workload: {...}                         # the rest is a zoo scenario as usual (base: ... allowed)

It becomes two zoo entries, ``<name>.affected`` (a mutant with ``must_find``) and
``<name>.fixed`` (a control), whose scenarios are the merged file with ``affected`` resp.
``fixed`` merged onto it. ``eos-chaos zoo --only <name>`` runs both sides; zoo.json's
``releases`` pairs them (``release_rows``).

**The fix, and only the fix.** A control says something only when it differs from the bug's
side in the fix alone. ``fix`` names that one difference, one of:

* ``kafka_version``: the release (``cluster.kafka_version``), e.g. KAFKA-14402, 3.5.2 vs 3.6.0;
* ``client``: the client library (``workload.client``), for a bug of a client;
* a feature level, e.g. ``transaction.version``: the level finalized when the brokers' storage
  is formatted (``cluster.features.<name>``, written ``features: {transaction.version: 1}`` in a
  side), for a bug of a protocol version on one release (KAFKA-17754: transaction version 1
  vs 2 on Kafka 4.4.0, one client).

Without ``fix`` it is derived: the one shorthand (``kafka_version``, ``client``, a feature) whose
values the two sides give differently; sides that differ in more than one thing, or in any
other field, must name it and are refused anyway. The loader (harness.detect.zoo) merges both
sides and compares the two scenarios field by field (``side_differences``): any field other
than the name and the fix's path that differs is a ZooError naming the entry and the field.
tests/unit/test_zoo_releases_sides.py runs the same comparison over every shipped entry.

A side's ``features`` are passed on as ``cluster.features`` (harness.run.scenario_cluster:
the levels ``kafka-storage format --feature NAME=LEVEL`` finalizes on both backends), so the
two sides of a feature-level fix run the same release, client and schedule on storage formatted
with different levels. The guard for a scenario model without that field
(``cluster_features_supported`` False: the entry must be ``reproduced: false`` and ``--only``
naming it is refused with the reason, ``unsupported``) stays, so that such an entry can never
run both sides as one scenario.

**Reaching the bug.** ``must_reach_epoch`` (KAFKA-19367, KAFKA-20090: the end of the producer
epochs) makes a fixed-side run count as clean only when the run got there: the highest
producer epoch the history records per transactional.id (``epochs_reached``: ok ``init`` ops'
``meta.producer_epoch``, ok ``epoch-burn`` ops' ``value.epoch``, any completion's
``meta.producer_epoch``) must reach it on at least one transactional.id. A valid run that
did not is "did not exercise", neither clean nor a false alarm; the fixed side's ``rate`` and
``ci95`` are then over the runs that are judged (invalid ones, whatever epoch they reached, and
clean ones).

This module holds the block's model, the side comparison and the pairing; harness.detect.zoo
loads the files.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AFFECTED, FIXED = "affected", "fixed"
SIDES = (AFFECTED, FIXED)
#: the fixes that are scenario fields of their own (shorthands of a side); any other ``fix`` is
#: a feature level (``cluster.features.<name>``)
FIX_PATHS = {"kafka_version": ("cluster", "kafka_version"), "client": ("workload", "client")}
FEATURES = "features"
#: fields that differ between the sides by construction (the loader names each side)
ALWAYS_DIFFER = (("name",),)


def _feature_levels(side: dict[str, Any]) -> dict[str, Any]:
    f = side.get(FEATURES)
    return dict(f) if isinstance(f, dict) else {}


def _shorthands(side: dict[str, Any]) -> dict[str, Any]:
    """A side's fix-able values: ``kafka_version``, ``client`` and each feature level."""
    out = {k: side[k] for k in FIX_PATHS if k in side}
    out.update(_feature_levels(side))
    return out


class UpstreamBug(BaseModel):
    """A release entry's ``upstream`` block (module docstring). ``affected``/``fixed``: scenario
    fields (a mapping, merged key by key) for the release that has the bug and the release that
    fixed it; they must differ, in ``fix`` (named or derived) only. ``reproduced`` False keeps an
    entry that no schedule has caught yet (or that was not measured yet), with ``tried`` saying
    what was tried. ``must_reach_epoch``: a fixed-side run counts as clean only when a
    transactional.id reached this producer epoch."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$", description="the bug's id, e.g. KAFKA-14402")
    title: str = Field(min_length=1, max_length=200)
    link: str = Field("", max_length=500)
    mechanism: str = Field("", max_length=5000)
    fix: str | None = Field(None, pattern=r"^(kafka_version|client|[a-z][a-z0-9_.-]{0,62}\.version)$",
                            description="kafka_version, client or a feature level such as transaction.version")
    affected: dict[str, Any]
    fixed: dict[str, Any]
    reproduced: bool = True
    tried: str = Field("", max_length=5000)
    must_reach_epoch: int | None = Field(None, ge=0, le=32767)

    @field_validator("affected", "fixed")
    @classmethod
    def _not_empty(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not v:
            raise ValueError("give the scenario fields of this side, e.g. {kafka_version: 3.5.2}")
        f = v.get(FEATURES)
        if f is not None and not (isinstance(f, dict) and f and all(
                isinstance(k, str) and isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 32767
                for k, x in f.items())):
            raise ValueError("features must map feature names to levels, e.g. {transaction.version: 1}")
        return v

    @model_validator(mode="after")
    def _sides_differ(self) -> "UpstreamBug":
        if self.affected == self.fixed:
            raise ValueError("affected and fixed are the same: the control must differ from the bug's side")
        a, f = _shorthands(self.affected), _shorthands(self.fixed)
        differ = sorted(k for k in set(a) | set(f) if a.get(k) != f.get(k))
        if self.fix is None:
            if len(differ) != 1:
                raise ValueError(f"the sides differ in {differ or 'no kafka_version, client or feature level'}: "
                                 "name the one that is the fix with fix: kafka_version | client | FEATURE.version "
                                 "(and make everything else the same on both sides)")
            self.fix = differ[0]
        elif self.fix not in a and self.fix not in f:
            raise ValueError(f"fix: {self.fix} is given by neither side: write it in affected and fixed, "
                             f"e.g. affected: {{{self.fix}: ...}}")
        return self

    def fix_path(self) -> tuple[str, ...]:
        """Where the fix lives in a merged scenario: ``("cluster", "kafka_version")``,
        ``("workload", "client")`` or ``("cluster", "features", NAME)``."""
        return fix_path(self.fix or "")

    def describe_fix(self, side: str) -> str:
        """The fix's value on one side, as words, when it is a feature level: ``transaction.version
        1``; "" otherwise (the release and the client are in ``describe_side``)."""
        if self.fix in FIX_PATHS or not self.fix:
            return ""
        level = _feature_levels(getattr(self, side)).get(self.fix)
        return f"{self.fix} {level}" if level is not None else ""


def fix_path(fix: str) -> tuple[str, ...]:
    """Where ``fix`` (kafka_version, client or a feature name) lives in a merged scenario."""
    return FIX_PATHS.get(fix, ("cluster", FEATURES, fix))


def cluster_features_supported() -> bool:
    """True when the scenario model takes ``cluster.features`` (feature levels finalized when the
    storage is formatted: harness.cluster.releases.Release.format_args's ``--feature NAME=LEVEL``
    on both backends)."""
    from harness.run.scenario_cluster import ClusterSpec

    return FEATURES in ClusterSpec.model_fields


def unsupported(up: UpstreamBug) -> str | None:
    """Why this harness cannot run the entry's sides as they are written, or None: a side sets
    feature levels and the scenario model has no ``cluster.features``."""
    if cluster_features_supported():
        return None
    levels = {side: _feature_levels(getattr(up, side)) for side in SIDES}
    if not any(levels.values()):
        return None
    said = "; ".join(f"{side}: {', '.join(f'{k}={v}' for k, v in lv.items())}" for side, lv in levels.items() if lv)
    return (f"its sides set feature levels at format time ({said}), and scenarios have no cluster.features "
            "field yet (kafka-storage format --feature NAME=LEVEL: harness.cluster.releases.Release.format_args "
            "takes them, the backends do not pass any); without it both sides would run the same cluster")


def side_overrides(side_fields: dict[str, Any], features: bool | None = None) -> dict[str, Any]:
    """Scenario fields of one side as a mapping to merge onto the scenario: ``kafka_version``
    is shorthand for ``cluster: {kafka_version: ...}``, ``client`` for ``workload: {client: ...}``,
    ``features`` for ``cluster: {features: {...}}`` (left out when the scenario model has no such
    field: ``features`` False, or None to ask ``cluster_features_supported``); anything else is a
    scenario field as it stands."""
    out = {k: v for k, v in side_fields.items() if k not in ("kafka_version", "client", FEATURES)}
    if "kafka_version" in side_fields:
        out["cluster"] = {**(out.get("cluster") or {}), "kafka_version": str(side_fields["kafka_version"])}
    if "client" in side_fields:
        out["workload"] = {**(out.get("workload") or {}), "client": side_fields["client"]}
    if FEATURES in side_fields and (cluster_features_supported() if features is None else features):
        out["cluster"] = {**(out.get("cluster") or {}), FEATURES: dict(side_fields[FEATURES])}
    return out


def side_view(scenario: Any, side_fields: dict[str, Any]) -> dict[str, Any]:
    """One side's merged scenario as plain data, for the field-by-field comparison: the model's
    dump, with the side's ``features`` under ``cluster.features`` when the model left them out."""
    view = scenario.model_dump(mode="json")
    levels = _feature_levels(side_fields)
    if levels and not (view.get("cluster") or {}).get(FEATURES):
        view.setdefault("cluster", {})[FEATURES] = levels
    return view


def differences(a: Any, b: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """Every path where two plain-data trees differ: ``[(path, a's value, b's value)]``, mappings
    compared key by key (a key missing on one side is None there), anything else as a whole."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += differences(a.get(k), b.get(k), (*path, str(k)))
        return out
    return [] if a == b else [(path, a, b)]


def side_differences(affected: dict[str, Any], fixed: dict[str, Any], fix: str) -> tuple[list[str], bool]:
    """Compare two sides' merged scenarios (``side_view``) field by field: (one line per field
    other than the name and the fix's path that differs, e.g. ``workload.producer.request.timeout.ms:
    None on the affected side, '1500' on the fixed side``; whether the fix's own field differs)."""
    fpath = fix_path(fix)
    bad, fix_differs = [], False
    for path, a, f in differences(affected, fixed):
        if path[:len(fpath)] == fpath:
            fix_differs = True
        elif path not in ALWAYS_DIFFER:
            bad.append(f"{'.'.join(path)}: {a!r} on the affected side, {f!r} on the fixed side")
    return bad, fix_differs


def side_name(name: str, side: Literal["affected", "fixed"]) -> str:
    """The zoo entry's name of one side: ``kafka-14402.affected``."""
    return f"{name}.{side}"


def describe_side(scenario: Any, other: Any = None, fix: str = "") -> str:
    """What a side runs on, for tables: ``Kafka 3.5.2``, plus the client (``Kafka 4.4.0,
    librdkafka``) when the ``other`` side's scenario runs another one, plus ``fix`` (a feature
    level in words, UpstreamBug.describe_fix: ``Kafka 4.4.0, transaction.version 1``)."""
    client = getattr(scenario.workload, "client", None)
    differs = other is not None and getattr(other.workload, "client", None) != client
    return (f"Kafka {scenario.cluster.kafka_version}" + (f", {client}" if client and differs else "")
            + (f", {fix}" if fix else ""))


# ---------------------------------------------------------------- reaching the bug

def epochs_reached(history: str | Path) -> dict[str, int]:
    """The highest producer epoch the history records per transactional.id: ok ``init`` ops'
    ``meta.producer_epoch``, ok ``epoch-burn`` ops' ``value.epoch`` (the epoch the burn got the
    transactional.id to), and any completion's ``meta.producer_epoch`` (the epoch-burn worker's
    trigger transaction records the epoch it held). A client that records no epoch (librdkafka)
    gives {}. The history is read line by line; a missing file gives {}."""
    out: dict[str, int] = {}
    try:
        f = open(history)
    except OSError:
        return out
    with f:
        for line in f:
            if "epoch" not in line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if not isinstance(ev, dict) or ev.get("type") == "invoke":
                continue
            meta = ev.get("meta") if isinstance(ev.get("meta"), dict) else {}
            tid = meta.get("transactional_id")
            if not isinstance(tid, str):
                continue
            found = []
            if ev.get("type") == "ok" and ev.get("f") == "epoch-burn" and isinstance(ev.get("value"), dict):
                found.append(ev["value"].get("epoch"))
            if ev.get("f") != "init" or ev.get("type") == "ok":
                found.append(meta.get("producer_epoch"))
            for e in found:
                if isinstance(e, int) and not isinstance(e, bool):
                    out[tid] = max(out.get(tid, e), e)
    return out


def exercised(epochs: dict[str, int] | None, must_reach: int) -> bool:
    """True when some transactional.id reached producer epoch ``must_reach``."""
    return bool(epochs) and max(epochs.values()) >= must_reach


def epoch_judgement(runs: list[dict], must_reach: int) -> dict:
    """A fixed side's runs judged against its epoch boundary: ``runs`` are ``{seed, invalid,
    epochs}`` (epochs: ``epochs_reached``'s dict, None when the history was not read). Returns
    ``{must_reach_epoch, judged, clean, did_not_exercise, did_not_exercise_seeds,
    max_epoch_reached, max_epoch_by_seed}``: an invalid run is judged (a false alarm whatever
    epoch it reached); a valid one is clean only when it reached the boundary."""
    clean = [r for r in runs if not r["invalid"] and exercised(r.get("epochs"), must_reach)]
    idle = [r for r in runs if not r["invalid"] and not exercised(r.get("epochs"), must_reach)]
    invalid = [r for r in runs if r["invalid"]]
    by_seed = {r["seed"]: (max(r["epochs"].values()) if r.get("epochs") else None) for r in runs}
    known = [v for v in by_seed.values() if v is not None]
    return {"must_reach_epoch": must_reach, "judged": len(clean) + len(invalid), "clean": len(clean),
            "did_not_exercise": len(idle), "did_not_exercise_seeds": [r["seed"] for r in idle],
            "max_epoch_reached": max(known) if known else None,
            "max_epoch_by_seed": [{"seed": s, "max_epoch": v} for s, v in by_seed.items()]}


# ---------------------------------------------------------------- rows

def release_rows(entries: list[Any], mutants: list[dict], controls: list[dict]) -> list[dict]:
    """zoo.json's ``releases``: one row per upstream bug whose entries are in ``entries``
    (ZooEntry with ``upstream`` and ``side``), pairing its mutant row (from ``mutants``) and
    control row (``controls``) of zoo_summary: ``{id, title, link, name, fix, reproduced, tried,
    affected: {on, runs, detected, rate, ci95, median_time_to_detect_s, missed_seeds},
    fixed: {on, runs, invalid, rate, ci95, invalid_seeds, [epoch]}}``; a side not run is None.
    With ``must_reach_epoch`` the fixed side carries ``epoch`` (``epoch_judgement`` of the control
    row's ``epoch_runs``) and its ``rate``/``ci95`` are over the judged runs only."""
    from harness.detect.rates import wilson

    rows: dict[str, dict] = {}
    by_name = {r["name"]: r for r in (*mutants, *controls)}
    sides = {(e.release, e.side): e.scenario for e in entries if getattr(e, "upstream", None) is not None}
    for e in entries:
        up = getattr(e, "upstream", None)
        if up is None:
            continue
        row = rows.setdefault(e.release, {"id": up.id, "title": up.title, "link": up.link, "name": e.release,
                                          "fix": up.fix, "reproduced": up.reproduced, "tried": up.tried,
                                          AFFECTED: None, FIXED: None})
        r = by_name.get(e.name)
        if r is None:
            continue
        keys = (("runs", "detected", "rate", "ci95", "median_time_to_detect_s", "missed_seeds", "anomalies")
                if e.side == AFFECTED else ("runs", "invalid", "rate", "ci95", "invalid_seeds", "anomalies"))
        other = sides.get((e.release, FIXED if e.side == AFFECTED else AFFECTED))
        side = {"on": describe_side(e.scenario, other, up.describe_fix(e.side)), "entry": e.name,
                **{k: r.get(k) for k in keys}}
        if e.side == FIXED and up.must_reach_epoch is not None:
            ep = epoch_judgement(r.get("epoch_runs") or [], up.must_reach_epoch)
            side["epoch"] = ep
            side["rate"] = round(r["invalid"] / ep["judged"], 4) if ep["judged"] else None
            side["ci95"] = wilson(r["invalid"], ep["judged"])
        row[e.side] = side
    return list(rows.values())


def release_line(row: dict) -> str:
    """One terminal line for a release row: ``KAFKA-14402  Kafka 3.5.2: caught 3/3 (median 21.0 s)
    | Kafka 3.6.0: 0/3 invalid``; with an epoch boundary ``Kafka 4.0.1: 0/2 invalid, 2 clean at
    producer epoch >= 32766, 1 did not exercise (never reached it)`` (invalid of the judged runs)."""
    parts = [f"{row['id']:<12}"]
    a, f = row.get(AFFECTED), row.get(FIXED)
    if a:
        parts.append(f"{a['on']}: caught {a['detected']}/{a['runs']}"
                     + (f" (median {a['median_time_to_detect_s']:.1f} s)" if a.get("median_time_to_detect_s") is not None else ""))
    if f:
        ep = f.get("epoch")
        if ep:
            parts.append(f"{f['on']}: {f['invalid']}/{ep['judged']} invalid, {ep['clean']} clean at producer epoch "
                         f">= {ep['must_reach_epoch']}"
                         + (f", {ep['did_not_exercise']} did not exercise (never reached it)" if ep["did_not_exercise"] else ""))
        else:
            parts.append(f"{f['on']}: {f['invalid']}/{f['runs']} invalid")
    if not row.get("reproduced"):
        parts.append("not reproduced so far")
    return " | ".join(parts)
