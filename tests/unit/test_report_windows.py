"""The report's Windows section (harness.report.soak_windows) read from a recorded soak's
windows.jsonl (docs/soak-runs/2026-11-25-soak-s1) and from hostile lines."""

import json
import shutil
from pathlib import Path

from harness.report.soak_windows import MAX_ROWS, windows_section

SOAK = Path(__file__).parent.parent.parent / "docs" / "soak-runs" / "2026-11-25-soak-s1"


def test_the_recorded_soak_s_windows_are_all_shown_valid_with_their_peak_rss(tmp_path):
    shutil.copy(SOAK / "windows.jsonl", tmp_path / "windows.jsonl")
    s = windows_section(tmp_path, {})
    assert (s["total"], s["invalid"], s["errors"], s["hidden"]) == (16, 0, 0, 0)
    assert s["rows"][0]["span"] == "0-300 s" and s["peak_rss_mib"] == 123.6 and s["stopped"] is None


def test_no_file_is_no_section_and_bad_lines_are_errors_not_exceptions(tmp_path):
    assert windows_section(tmp_path, {}) is None and windows_section(None, None) is None
    rows = [{"k": k, "start_s": k * 5, "end_s": k * 5 + 5, "valid": k != 3, "anomaly_counts": {"G1a": 2} if k == 3 else {},
             "controller_rss_mib": 100 + k} for k in range(MAX_ROWS + 10)]
    lines = [json.dumps(r) for r in rows] + ["{torn", "[1, 2]", json.dumps({"error": "exit 1: boom"})]
    (tmp_path / "windows.jsonl").write_text("\n".join(lines) + "\n")
    s = windows_section(tmp_path, {"stopped_at_window": "stopped at window 3 (15-20 s; anomalies G1a)"})
    assert s["total"] == MAX_ROWS + 13 and s["invalid"] == 1 and s["errors"] == 3
    shown = [r["k"] for r in s["rows"]]
    assert 3 in shown and len(shown) == MAX_ROWS and s["hidden"] == 13  # the invalid one kept, then the latest
    assert s["stopped"].startswith("stopped at window 3") and s["peak_rss_mib"] == 100 + MAX_ROWS + 9
