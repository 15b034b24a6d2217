"""One anomaly table (issue 45): ``checkers.catalogue.TABLE`` holds one record per anomaly name
(family, definition, finders, workloads, allowed by default, doc anchor), and every other place
that names anomalies is read off it or held equal to it here: the verdict's FINDERS, the soak
windows' finders, ``checkers``' public names, the workloads, the report's definitions,
docs/anomalies.md's anchors and docs/checkers.md's finder table."""
from __future__ import annotations

import re
from pathlib import Path

import checkers
from checkers.catalogue import (ANOMALIES, BY_NAME, FAMILIES, LIVENESS_REPORTS, TABLE, allowed_by_default,
                                family)

ROOT = Path(__file__).resolve().parents[2]
FINDER_NAMES = {f for a in TABLE for f in a.finders}


def test_one_record_per_name_each_in_a_family():
    names = [a.name for a in TABLE]
    assert len(names) == len(set(names)) == len(ANOMALIES) == len(BY_NAME)
    assert {a.family for a in TABLE} == set(FAMILIES)
    assert set(ANOMALIES) == {n for f in FAMILIES for n in family(f)}
    assert all(a.definition.endswith(".") and a.finders for a in TABLE)


def test_finders_are_the_tables():
    from checkers.engines.windows import WINDOW_FINDERS
    from checkers.verdict import FINDERS, LIVENESS

    in_verdict = {name for name, _, _ in FINDERS}
    windows_only = {name for name, _, _ in WINDOW_FINDERS} - in_verdict
    assert windows_only == {"pipeline_window_cases"}
    assert FINDER_NAMES == in_verdict | windows_only, FINDER_NAMES ^ (in_verdict | windows_only)
    assert LIVENESS == frozenset(LIVENESS_REPORTS) == frozenset(family("liveness"))


def test_the_public_names_name_every_finder():
    # checkers.<finder> is loaded on first use from the module _WHERE names (g0_cases and
    # g1c_cases are the parts of cycle_cases)
    cases = {n for n in checkers._WHERE if n.endswith("_cases")}
    assert cases == FINDER_NAMES | {"g0_cases", "g1c_cases"}, cases ^ FINDER_NAMES
    for name in cases:
        assert checkers._WHERE[name].startswith("finders."), name
        assert callable(getattr(checkers, name))


def test_workloads_and_allowed_by_default():
    from harness.workloads import WORKLOADS

    named = {w for a in TABLE for w in a.workloads}
    assert named <= set(WORKLOADS), named - set(WORKLOADS)
    assert allowed_by_default("share") == ("share-duplicate",)
    assert all(allowed_by_default(w) == () for w in WORKLOADS if w != "share")


def test_the_reports_definitions_are_the_tables():
    from harness.report.definitions import ANOMALY_DEFINITIONS, anomaly_definition

    assert ANOMALY_DEFINITIONS == {a.name: a.definition for a in TABLE}
    assert anomaly_definition("g1c-REALTIME") == BY_NAME["G1c-realtime"].definition
    assert anomaly_definition("G1a (aborted read)") == BY_NAME["G1a"].definition


def test_docs_anomalies_has_an_anchor_for_every_name_and_no_other():
    text = (ROOT / "docs" / "anomalies.md").read_text()
    anchors = re.findall(r'<a id="([^"]+)"></a>', text)
    assert len(anchors) == len(set(anchors)), "an anchor twice"
    assert set(anchors) == set(ANOMALIES), set(anchors) ^ set(ANOMALIES)
    for a in TABLE:
        page, anchor = a.doc.split("#")
        assert (ROOT / page).is_file() and anchor in anchors


def test_docs_checkers_finder_table_lists_every_name_with_its_finder():
    table = (ROOT / "docs" / "checkers.md").read_text().split("| anomaly | finder (module)")[1].split("\n\n")[0]
    rows = re.findall(r"^\| ([^|`]+) \| `(\w+)`", table, re.M)
    documented: dict[str, set[str]] = {}
    for cell, finder in rows:
        for n in re.split(r"[,/]| with ", cell):
            if n.strip():
                documented.setdefault(n.strip(), set()).add(finder)
    assert set(documented) == set(ANOMALIES), set(documented) ^ set(ANOMALIES)
    for name, finders in documented.items():
        # a row names the finder, or the part of one (g0_cases of cycle_cases)
        assert finders <= set(BY_NAME[name].finders), (name, finders)
