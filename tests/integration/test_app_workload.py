"""The app workload on the real cluster (issue 22): the shipped example service as a user's
application, and the one-line errors of an app that cannot run.

* scenarios/app-copy-service.yaml, seed 1, 40 s: 3 instances of harness/examples/copy_service.py
  under instance kills, graceful restarts, zombies and broker faults; the run must be valid,
  the faults must have hit the instances, the lifecycle must be in the history, every
  committed input must have reached the output.
* A command that does not exist: the run ends with one line naming it, and nothing of the run
  is left running (no worker, no namespace). About 20 s.
* An instance that exits at once, a match that names nothing, an app that never writes: one
  line, or an unknown verdict that says what to check; nothing left running.
"""
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from harness.run.runner import run_scenario
from harness.workloads.app import AppError
from tests.integration.known_bugs import xfail_if_kafka_20734
from tests.integration.test_workloads_support import SCENARIOS, variant
from tests.integration.test_workloads_support import explain as _explain

pytestmark = pytest.mark.integration


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "history.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def app_run(results_root):
    scn = variant("app-copy-service", seed=1, duration=40)
    return run_scenario(scn, results_root, source=str(SCENARIOS / "app-copy-service.yaml"))


def test_example_service_is_exactly_once_under_faults(app_run):
    v = app_run.verdict
    xfail_if_kafka_20734(app_run.run_dir, v)
    assert v.valid is True, _explain(v) + json.dumps(v.unknown_reasons)
    stats = v.stats["app"]
    assert sum(stats["inputs"].values()) >= 50, stats
    assert sum(stats["outputs"].values()) == sum(stats["inputs"].values()), stats
    meta = json.loads((app_run.run_dir / "meta.json").read_text())
    assert meta["app"]["caught_up"] is True and meta["app"]["drain_complete"] is True, meta["app"]
    assert meta["app"]["unmatched"] == 0


def test_instances_were_hit_and_their_lifecycle_recorded(app_run):
    events = _events(app_run.run_dir)
    nem = Counter(e["f"] for e in events if e["process"] == "nemesis")
    assert nem["kill-client"] + nem["stop-client"] + nem["zombie"] >= 2, nem
    starts = [e for e in events if e.get("f") == "app-start" and e["type"] == "ok"]
    exits = [e for e in events if e.get("f") == "app-exit" and e["type"] == "ok"]
    # 3 first starts, and a start for each restart after a kill or a graceful stop
    assert len(starts) > 3, starts
    assert {e["value"]["instance"] for e in starts} == {0, 1, 2}
    assert any(e["value"]["by"] == "stop" for e in exits), exits
    assert any(e.get("f") == "app-poll" for e in events)
    assert (app_run.run_dir / "logs" / "app-0.log").stat().st_size > 0


def test_command_not_found_is_one_line_and_leaves_nothing(results_root):
    scn = variant("app-copy-service", seed=3, duration=10, suffix="-missing")
    app = scn.workload.app.model_copy(update={"command": ["no-such-command-eosc", "{bootstrap}"]})
    scn = scn.model_copy(update={"workload": scn.workload.model_copy(update={"app": app})})
    with pytest.raises(AppError) as e:
        run_scenario(scn, results_root)
    msg = str(e.value)
    assert "\n" not in msg and "command not found: no-such-command-eosc" in msg
    left = subprocess.run(["pgrep", "-f", "harness.workers app"], capture_output=True, text=True).stdout
    assert left.strip() == "", left
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "eosc" not in netns, netns


def _bad_app(name: str, seed: int, app: dict, output: dict | None = None):
    scn = variant("app-copy-service", seed=seed, duration=15, suffix=f"-{name}", faults=[{"fault": "pause"}],
                  first_fault_s=100)
    wl = scn.workload
    wl = wl.model_copy(update={"app": wl.app.model_copy(update=app),
                               "output": wl.output.model_copy(update=output or {})})
    return scn.model_copy(update={"workload": wl})


def test_an_instance_that_exits_at_once_is_one_line_with_its_log(results_root):
    scn = _bad_app("exits", 4, {"command": ["{python}", "-c", "import sys; print('no config here', file=sys.stderr); sys.exit(3)"]})
    with pytest.raises(AppError) as e:
        run_scenario(scn, results_root)
    msg = str(e.value)
    assert "\n" not in msg and "exited with code 3" in msg and "no config here" in msg, msg
    left = subprocess.run(["pgrep", "-f", "harness.workers app"], capture_output=True, text=True).stdout
    assert left.strip() == "", left


def test_a_match_that_names_nothing_is_unknown_with_samples_not_loss(results_root):
    # the example copies values unchanged: a JSON path finds nothing in them
    res = run_scenario(_bad_app("match", 5, {}, {"match": {"json": "id"}, "quiet_s": 5.0, "catch_up_s": 30.0}),
                       results_root)
    v = res.verdict
    assert v.valid == "unknown", v.anomaly_counts
    why = " ".join(v.unknown_reasons)
    assert "named no input in any of the" in why and "samples:" in why and "value=b'" in why, why
    assert "eos-loss" not in v.anomaly_counts


def test_an_app_that_never_writes_output_is_unknown_and_leaves_nothing(results_root):
    # up and running, but it never writes: no output at all is unknown with what to check, not
    # thousands of eos-loss cases, and its process goes with the run
    res = run_scenario(_bad_app("silent", 6, {"command": ["{python}", "-c", "import time; time.sleep(600)"]},
                                {"quiet_s": 5.0, "catch_up_s": 20.0}), results_root)
    v = res.verdict
    assert v.valid == "unknown", v.anomaly_counts
    why = " ".join(v.unknown_reasons)
    assert "wrote no record to" in why and "logs/app-*.log" in why, why
    assert "eos-loss" not in v.anomaly_counts
    left = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True).stdout
    assert left.strip() == "", left
