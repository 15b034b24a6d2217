"""Release entries of the bug zoo without a cluster: one file becomes the bug's side (a mutant)
and the fix's side (its control), --only by the file's name selects both, a not-reproduced
entry runs only when named, bad upstream blocks say what to fix, and zoo.json pairs the two
sides (harness.detect.zoo_releases)."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import app
from harness.detect import zoo
from harness.detect.zoo_releases import release_line
from tests.unit.test_zoo import BASE, StandIn, _g1a

ROOT = Path(__file__).resolve().parents[2]

RELEASE = """base: ../base.yaml
name: kafka-1
must_find: [G1a]
upstream:
  id: KAFKA-1
  title: a bug that shipped
  link: https://issues.apache.org/jira/browse/KAFKA-1
  affected: {kafka_version: 3.5.2}
  fixed: {kafka_version: 3.6.0}
"""


def release_zoo(tmp_path: Path, text: str = RELEASE) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "base.yaml").write_text(BASE)
    d = tmp_path / "zoo"
    d.mkdir()
    (d / "kafka-1.yaml").write_text(text)
    (d / "ctl.yaml").write_text("base: ../base.yaml\nname: ctl\ncontrol: true\n")
    return d


def test_a_release_entry_is_a_mutant_on_the_affected_release_and_a_control_on_the_fixed_one(tmp_path):
    entries = zoo.load_zoo(release_zoo(tmp_path))
    got = [(e.name, e.kind, e.must_find, e.scenario.cluster.kafka_version, e.side) for e in entries]
    assert got == [("kafka-1.affected", "mutant", ("G1a",), "3.5.2", "affected"),
                   ("ctl", "control", (), "4.3.1", None),
                   ("kafka-1.fixed", "control", (), "3.6.0", "fixed")]
    assert entries[0].scenario.workload.producers == 2            # the base still merges under both sides
    only = zoo.load_zoo(release_zoo(tmp_path / "o"), only=["kafka-1"])
    assert [e.name for e in only] == ["kafka-1.affected", "kafka-1.fixed"]
    assert [e.name for e in zoo.load_zoo(release_zoo(tmp_path / "f"), only=["kafka-1.fixed"])] == ["kafka-1.fixed"]


def test_a_side_can_change_the_client_instead_of_the_release(tmp_path):
    text = RELEASE.replace("affected: {kafka_version: 3.5.2}", "affected: {kafka_version: 4.4.0, client: librdkafka}") \
                  .replace("fixed: {kafka_version: 3.6.0}", "fixed: {kafka_version: 4.4.0, client: java}")
    a, _, f = zoo.load_zoo(release_zoo(tmp_path, text))
    assert (a.scenario.workload.client, f.scenario.workload.client) == ("librdkafka", "java")
    assert a.scenario.cluster.kafka_version == f.scenario.cluster.kafka_version == "4.4.0"
    from harness.detect.zoo_releases import describe_side
    assert (describe_side(a.scenario, f.scenario), describe_side(f.scenario, a.scenario)) == (
        "Kafka 4.4.0, librdkafka", "Kafka 4.4.0, java")


def test_an_entry_not_reproduced_so_far_runs_only_when_named(tmp_path):
    text = RELEASE.replace("  fixed:", "  reproduced: false\n  tried: kills and pauses, 10 runs\n  fixed:")
    assert [e.name for e in zoo.load_zoo(release_zoo(tmp_path, text))] == ["ctl"]
    named = zoo.load_zoo(release_zoo(tmp_path / "n", text), only=["kafka-1"])
    assert [e.name for e in named] == ["kafka-1.affected", "kafka-1.fixed"] and not named[0].upstream.reproduced


@pytest.mark.parametrize("change, message", [
    (("  fixed: {kafka_version: 3.6.0}", "  fixed: {kafka_version: 3.5.2}"), "affected and fixed are the same"),
    (("  fixed: {kafka_version: 3.6.0}\n", ""), "fixed"),
    (("must_find: [G1a]", "control: true"), "needs must_find"),
    (("  id: KAFKA-1", "  id: '../x'"), "upstream block:\n  id: String should match"),
    (("affected: {kafka_version: 3.5.2}", "affected: {kafka_version: ../x}"), "affected side"),
    (("  title: a bug that shipped\n", "  title: a bug that shipped\n  typo: 1\n"), "typo"),
])
def test_bad_release_entries_say_what_to_fix(tmp_path, change, message):
    d = release_zoo(tmp_path, RELEASE.replace(*change))
    with pytest.raises(zoo.ZooError, match=message):
        zoo.load_entries(d / "kafka-1.yaml")


def test_zoo_json_pairs_the_bugs_two_sides(tmp_path):
    entries = zoo.load_zoo(release_zoo(tmp_path), only=["kafka-1"])
    valid = {"valid": True, "failing": [], "anomaly_counts": {}, "anomalies": {}}

    def outcome(name, seed):
        if name == "kafka-1.affected":
            return valid if seed == 2 else _g1a(seed)
        return _g1a(seed) if seed == 3 else valid

    results = tmp_path / "results"
    summary, paths = zoo.run_zoo(entries, results, results / "suites" / "zoo", runs=3, runner=StandIn(outcome))
    row, = summary["releases"]
    assert (row["id"], row["affected"]["on"], row["fixed"]["on"]) == ("KAFKA-1", "Kafka 3.5.2", "Kafka 3.6.0")
    assert (row["affected"]["runs"], row["affected"]["detected"], row["affected"]["missed_seeds"]) == (3, 2, [2])
    assert (row["fixed"]["runs"], row["fixed"]["invalid"], row["fixed"]["invalid_seeds"]) == (3, 1, [3])
    assert row["affected"]["ci95"] == zoo.wilson(2, 3)
    assert zoo.exit_code(summary) == 1                               # a miss and a false alarm
    line = release_line(row)
    assert "Kafka 3.5.2: caught 2/3" in line and "Kafka 3.6.0: 1/3 invalid" in line
    html = paths["zoo_html"].read_text()
    assert "Upstream bugs" in html and "KAFKA-1" in html and "2/3" in html
    assert zoo.public_json(summary)["releases"] == summary["releases"]
    # the merged scenario of each side is runnable, named by side
    scn = (results / "suites" / "zoo" / "scenarios" / "kafka-1.fixed.yaml").read_text()
    assert "KAFKA-1 on its fixed side" in scn and "kafka_version: 3.6.0" in scn


def test_cli_dry_run_names_the_bug_and_its_side(tmp_path):
    res = CliRunner().invoke(app, ["zoo", "--dry-run", "--runs", "1", "--zoo", str(release_zoo(tmp_path)),
                                   "--only", "kafka-1", "--results", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "kafka-1.affected/s1/kafka-3.5.2" in text and "KAFKA-1 affected, mutant: must find G1a" in text
    assert "kafka-1.fixed/s1/kafka-3.6.0" in text and "KAFKA-1 fixed, control: must be valid" in text


def test_the_shipped_release_entries_load():
    """Every shipped release entry loads with both sides on a release this harness runs."""
    entries = [e for f in sorted((ROOT / "scenarios" / "zoo").glob("*.yaml")) for e in zoo.load_entries(f)]
    for e in entries:
        if e.upstream is not None:
            assert e.side in ("affected", "fixed") and e.release and e.upstream.link.startswith("https://")


def test_a_selection_file_names_the_zoo_folder_entries_and_runs(tmp_path):
    d = release_zoo(tmp_path)
    sel = tmp_path / "releases.yaml"
    sel.write_text("suite: releases\nzoo: zoo\nentries: [kafka-1]\nruns: 2\n")
    assert zoo.load_selection(sel) == (d.resolve(), ["kafka-1"], 2)
    res = CliRunner().invoke(app, ["zoo", "--dry-run", "--zoo", str(sel), "--results", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "kafka-1.affected/s2" in text and "kafka-1.fixed/s2" in text and "ctl/" not in text
    assert "4 runs, 4 to run" in text
    for bad, message in (("suite: r\nzoo: zoo\nentries: kafka-1\n", "entries must be a list"),
                         ("suite: r\nzoo: zoo\nentries: [kafka-1]\nruns: 0\n", "runs must be"),
                         ("suite: r\nzoo: zoo\nentries: [kafka-1]\nseeds: 2\n", "unknown key"),
                         ("suite: r\nentries: [kafka-1]\n", "not a zoo selection")):
        sel.write_text(bad)
        with pytest.raises(zoo.ZooError, match=message):
            zoo.load_selection(sel)
    sel.write_text("suite: r\nzoo: zoo\nentries: [nope]\n")
    res = CliRunner().invoke(app, ["zoo", "--dry-run", "--zoo", str(sel)])
    assert res.exit_code == 2 and "no zoo entry named" in res.output


def test_the_shipped_selection_names_every_release_entry():
    folder, entries, runs = zoo.load_selection(ROOT / "scenarios" / "releases.yaml")
    ups = [e for f in sorted(folder.glob("*.yaml")) for e in zoo.load_entries(f) if e.upstream]
    # every reproduced bug, both sides; one not reproduced so far may be listed to try it nightly
    assert {e.release for e in ups if e.upstream.reproduced} <= set(entries) <= {e.release for e in ups}
    assert runs == 2
    from harness.detect.suite import SuiteError, is_suite_file, load_suite
    assert is_suite_file(ROOT / "scenarios" / "releases.yaml")      # scenario listers skip it
    with pytest.raises(SuiteError, match="eos-chaos zoo --zoo"):
        load_suite(ROOT / "scenarios" / "releases.yaml")


def test_dry_run_json_prints_the_plan_as_json(tmp_path):
    """Issue 36: `eos-chaos zoo --dry-run --json` printed the text plan."""
    import json

    res = CliRunner().invoke(app, ["zoo", "--dry-run", "--json", "--runs", "2", "--zoo", str(release_zoo(tmp_path)),
                                   "--only", "kafka-1", "--results", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert (doc["total"], doc["to_run"]) == (4, 4) and doc["estimate_s"] > 0
    assert [(r["scenario"], r["seed"], r["kafka_version"]) for r in doc["runs"][:2]] == [
        ("kafka-1.affected", 1, "3.5.2"), ("kafka-1.fixed", 1, "3.6.0")]
    assert doc["runs"][1]["what"] == "KAFKA-1 fixed, control: must be valid"
