"""Tiers: a suite file whose matrix also holds zoo entries (``zoos:``) and a ``budget``.

A tier is what one CI schedule runs (docs/nightly.md): ``scenarios/tiers/pr.yaml`` on each pull
request, ``nightly.yaml`` every night over 20 runners, ``weekly.yaml`` once a week. Its
``scenarios`` expand as any suite's (harness.detect.suite.expand); each ``zoos:`` part adds the
zoo's cells (harness.detect.zoo: mutants must be caught, controls must come out valid), ``runs``
per entry with seeds from the suite's first seed on, each at its own Kafka release and duration
(a release entry's sides are the releases that had and fixed the bug: a ``--kafka-version``
override never reaches them). A mutant cell passes when it is caught (suite_records.outcome).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from harness.detect.suite import Cell, Suite, SuiteError, _display_path, _seed_list, expand
from harness.detect.zoo import ZooError, cells as zoo_cells, load_selection, load_zoo


def expand_tier(suite: Suite, base_dir: str | Path, *, seeds: Iterable[int] | None = None,
                kafka_versions: Iterable[str] | None = None, duration: float | None = None,
                backends: Iterable[str] | None = None) -> list[Cell]:
    """The suite's cells (harness.detect.suite.expand, with the same overrides), then each zoo
    part's. Raises SuiteError saying what to fix (a zoo part's file, or a zoo entry named like a
    scenario of the suite)."""
    base = Path(base_dir)
    out = expand(suite, base, seeds=seeds, kafka_versions=kafka_versions, duration=duration, backends=backends)
    if not suite.zoos:
        return out
    seed_list = list(seeds) if seeds else _seed_list(suite.seeds)
    ids = {c.id for c in out}
    for part in suite.zoos:
        path = base / part.path
        try:
            if path.is_file():
                folder, chosen, _runs = load_selection(path)
                entries = load_zoo(folder, part.only or chosen)
            else:
                entries = load_zoo(path, part.only or None)
            found = zoo_cells(entries, path, runs=part.runs, first_seed=seed_list[0], write=False)
        except ZooError as exc:
            raise SuiteError(f"zoos: {part.path}: {exc}") from None
        for c in found:
            c.source = _display_path(next(e.path for e in entries if e.name == c.name))
            if c.id in ids:
                raise SuiteError(f"zoos: {part.path}: cell {c.id} is already in the suite (two parts name "
                                 "the same zoo entry, or a zoo entry is named like a scenario)")
            ids.add(c.id)
            out.append(c)
    return out
