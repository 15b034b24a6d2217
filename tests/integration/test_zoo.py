"""The bug zoo end to end on the real cluster, one mutant once: `eos-chaos zoo --only
read-uncommitted --runs 1 --duration 40` must catch the read_uncommitted consumers (G1a) and
write zoo.json / zoo.html; `--json` prints the detection figures. The run is also the netns
negative control of smoke.yaml (the zoo entry is smoke with read_uncommitted consumers): the
aborted value read is in every replica's kept log dir, closed by its producer's ABORT marker.
About 70 s."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster.segments import read_partition

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EOS = Path(sys.executable).parent / "eos-chaos"


def test_zoo_catches_read_uncommitted_consumers(tmp_path):
    results = tmp_path / "results"
    res = subprocess.run([str(EOS), "zoo", "--only", "read-uncommitted", "--runs", "1", "--duration", "40",
                          "--json", "--results", str(results)], cwd=ROOT, capture_output=True, text=True,
                         timeout=3900)  # > the cluster lock's own 3600 s wait
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    doc = json.loads(res.stdout)
    m, = doc["mutants"]
    assert (m["name"], m["runs"], m["detected"], m["rate"]) == ("read-uncommitted", 1, 1, 1.0)
    assert m["anomalies"].get("G1a") == 1 and m["ci95"][1] == 1.0
    # G1a is seen once a consumer's poll returns an aborted record: the consumers poll all
    # along, so within the run: 40 s of load, then the heal and the final drain (time to
    # detect is an upper bound: the earliest of the listed examples, which are few)
    assert m["median_time_to_detect_s"] is not None and 0 < m["median_time_to_detect_s"] <= 120
    assert doc["controls"] == []
    zoo_dir = results / "suites" / "zoo"
    assert json.loads((zoo_dir / "zoo.json").read_text())["mutants"][0]["detected"] == 1
    assert "read-uncommitted" in (zoo_dir / "zoo.html").read_text()
    row, = json.loads((zoo_dir / "summary.json").read_text())["runs"]
    assert row["status"] == "invalid" and "G1a" in row["failing"]

    # the negative control's evidence (was a run of its own in test_smoke_run): the run is not
    # valid, so it kept the brokers' log dirs; the aborted value read by the consumer is in
    # every replica's log, and a later ABORT marker of its producer closes it
    run_dir = (zoo_dir / row["run_dir"]).resolve()
    ex = json.loads((run_dir / "verdict.json").read_text())["anomalies"]["G1a"][0]
    assert "explanation" in ex and "abort" in ex["explanation"]
    replicas = read_partition(run_dir, ex["key"])
    assert len(replicas) == 3
    for rep in replicas:
        rec = next(r for r in rep.records if r.value == str(ex["value"]))
        assert rec.offset == ex["offset"] and rec.transactional
        markers = [r.marker for r in rep.records
                   if r.offset > rec.offset and r.producer_id == rec.producer_id and r.marker]
        assert markers and markers[0] == "ABORT", (rep.node, markers[:3])
