"""A suite's outputs from handmade records: summary.json, junit.xml, index.html."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.detect import suite as st
from harness.run.scenario import Scenario
from harness.detect.suite_outputs import index_html, junit_xml, write_outputs


def cell(name: str, seed: int, version: str = "4.3.1", duration: float = 30) -> st.Cell:
    scn = Scenario.model_validate({"name": name, "seed": seed, "duration": duration,
                                   "cluster": {"kafka_version": version}})
    return st.Cell(scn, f"scenarios/{name}.yaml")


def summary(tmp_path: Path) -> dict:
    suite_dir = tmp_path / "results" / "suites" / "nightly"
    cells = [cell("smoke", 1), cell("smoke", 1, "3.9.1"), cell("zombie", 2), cell("lag", 3), cell("smoke", 4)]
    run = tmp_path / "results" / "smoke" / "20261121T000000Z-s1"
    invalid = {"valid": False, "anomaly_counts": {"G1a": 3, "G0": 1}, "failing": ["G1a"], "allowed": ["G0"],
               "anomalies": {"G1a": [{"explanation": "poll read <script>alert(1)</script> of aborted txn"}],
                             "G0": [{"explanation": "a write cycle"}]}}
    unknown = {"valid": "unknown", "unknown_reasons": ["history has no client operations"]}
    records = {}
    for c, status, verdict, kw in [
        (cells[0], st.VALID, {"valid": True, "anomaly_counts": {"G0": 2}, "allowed": ["G0"], "failing": []}, {}),
        (cells[1], st.INVALID, invalid, {}),
        (cells[2], st.UNKNOWN, unknown, {}),
        (cells[3], st.ERROR, None, {"error": "WaitTimeout: 3 brokers registered"}),
    ]:
        rec = st.make_record(c, suite_dir, status=status, started=1_763_683_200, wall_s=71.2,
                             verdict=verdict, run_dir=None if status == st.ERROR else run,
                             report=None if status == st.ERROR else run / "report.html", **kw)
        records[c.id] = rec
    return st.summarize("nightly", "scenarios/nightly.yaml", cells, records)


def test_summary_totals_rows_and_relative_paths(tmp_path):
    s = summary(tmp_path)
    assert s["totals"] == {"runs": 5, "valid": 1, "invalid": 1, "unknown": 1, "error": 1, "interrupted": 0,
                           "not-run": 1, "pass": 1, "fail": 1}
    assert s["exit_code"] == 1 and s["complete"] is False
    assert s["anomaly_counts"] == {"G0": 3, "G1a": 3}
    assert [r["id"] for r in s["runs"]] == ["smoke/s1/kafka-4.3.1", "smoke/s1/kafka-3.9.1", "zombie/s2/kafka-4.3.1",
                                            "lag/s3/kafka-4.3.1", "smoke/s4/kafka-4.3.1"]
    assert s["runs"][0]["report"] == "../../smoke/20261121T000000Z-s1/report.html"
    assert s["runs"][4]["status"] == st.NOT_RUN and s["runs"][4]["report"] is None
    assert s["wall_s"] == round(4 * 71.2, 1)
    json.loads(json.dumps(s))


def test_junit_has_a_testcase_per_cell_with_failures_errors_skips_and_report(tmp_path):
    root = ET.fromstring(junit_xml(summary(tmp_path)))
    ts = root.find("testsuite")
    assert (ts.get("tests"), ts.get("failures"), ts.get("errors"), ts.get("skipped")) == ("5", "1", "2", "1")
    cases = ts.findall("testcase")
    assert [c.get("name") for c in cases][:2] == ["smoke[seed=1,kafka=4.3.1]", "smoke[seed=1,kafka=3.9.1]"]
    assert cases[0].get("classname") == "nightly.smoke" and cases[0].get("time") == "71.2"
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    props = {p.get("name"): p.get("value") for p in cases[0].find("properties")}
    assert props["report"] == "../../smoke/20261121T000000Z-s1/report.html" and props["kafka_version"] == "4.3.1"
    failure = cases[1].find("failure")
    assert failure.get("message") == "INVALID: G1a x3; new (no catalogued bug looks like it)"
    assert "G1a: 3 case(s)" in failure.text and "<script>alert(1)</script> of aborted txn" in failure.text
    assert "G0: 1 case(s) (allowed)" in failure.text
    assert "report: ../../smoke/20261121T000000Z-s1/report.html" in failure.text
    assert cases[2].find("error").get("message") == "UNKNOWN: history has no client operations"
    assert "WaitTimeout" in cases[3].find("error").get("message")
    assert cases[4].find("skipped") is not None


def test_index_has_a_row_per_run_with_verdict_counts_duration_and_report_link(tmp_path):
    html = index_html(summary(tmp_path))
    assert html.count("<tr id=") == 5
    assert 'href="../../smoke/20261121T000000Z-s1/report.html"' in html
    assert "INVALID" in html and "NOT RUN" in html and "ERROR" in html and "UNKNOWN" in html
    assert "G1a&nbsp;&times;3" in html and "1m11s" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "sudo eos-chaos run scenarios/smoke.yaml --seed 1 --kafka-version 3.9.1 --duration 30" in html
    assert "(allowed)" in html


def test_outputs_are_written_atomically_next_to_each_other(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    paths = write_outputs(d, summary(tmp_path))
    assert sorted(p.name for p in d.iterdir()) == ["index.html", "junit.xml", "summary.json"]
    assert json.loads(paths["summary"].read_text())["suite"] == "nightly"
    ET.parse(paths["junit"])
