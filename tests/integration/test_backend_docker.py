"""The docker backend (issue 10): brokers in containers of the locally built image, started,
killed, paused and partitioned through the docker SDK and nsenter; nothing left afterwards,
also after a SIGKILL of the controller followed by ``eos-chaos cleanup``.

The engine is started by the backend itself when no daemon answers (harness.cluster.docker.
ensure_engine), so ``make test`` needs no dockerd running. About 4.5 min: one run with kills,
pauses and a partition (~1.5 min), the read_uncommitted negative control (~1 min), the
controller SIGKILL (~1 min).
"""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.cluster import namespaces as net
from harness.cluster.lock import cluster_lock
from harness.run.runner import run_scenario
from harness.run.scenario import with_backend
from tests.integration.known_bugs import xfail_if_kafka_20734
from tests.integration.test_smoke_run import SMOKE, _scenario
from tests.integration.test_workloads_support import explain

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _docker():
    from harness.cluster.docker import engine_client, ensure_engine

    return engine_client() or ensure_engine()


def _leftovers(run_id=None) -> dict:
    from harness.cluster.docker import leftovers

    return {k: v for k, v in leftovers(run_id, client=_docker()).items() if v}


def _judge_machine():
    """Only judge the machine while no other run holds it (engineers share it; CI does not)."""
    import fcntl

    fd = os.open(os.environ.get("EOS_CHAOS_LOCK", "/tmp/kafka-eos-chaos.lock"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        pytest.skip("another run holds the cluster lock; its containers are not ours to judge")
    return fd


@pytest.fixture(scope="module")
def docker_run(results_root):
    scn = with_backend(_scenario(), "docker")
    n = scn.nemesis.model_copy(update={
        "faults": [*scn.nemesis.faults, type(scn.nemesis.faults[0])(fault="partition", grudge="isolate-one")],
        "interval_s": (7.0, 9.0), "fault_duration_s": (4.0, 6.0)})
    scn = scn.model_copy(update={"name": "docker-smoke-it", "duration": 45.0, "nemesis": n,
                                 "workload": scn.workload.model_copy(update={"producer": {"message.timeout.ms": 5000}})})
    return run_scenario(scn, results_root, source=str(SMOKE))


def test_docker_run_is_valid_under_kills_pauses_and_a_partition(docker_run):
    res = docker_run
    xfail_if_kafka_20734(res.run_dir, res.verdict)
    assert res.verdict.valid is True, explain(res.verdict)
    meta = json.loads((res.run_dir / "meta.json").read_text())
    assert meta["backend"] == "docker" and meta["image"].startswith("kafka-eos-chaos/kafka:")
    assert all(a.startswith("198.19.") for a in meta["nodes"].values()), meta["nodes"]
    assert meta["teardown_problems"] == [] and meta["final_reads_complete"] is True
    events = [json.loads(x) for x in (res.run_dir / "history.jsonl").read_text().splitlines()]
    done = [e for e in events if e["process"] == "nemesis" and "result" in (e["value"] or {})]
    fs = Counter(e["f"] for e in done)
    assert fs["kill"] >= 1 and fs["pause"] + fs["partition"] >= 1, fs
    for e in done:
        assert "error" not in str(e["value"]["result"]), e
        if e["f"] == "partition":
            assert e["value"]["rules"] == 4, e  # applied inside the containers' namespaces
    assert (res.run_dir / "logs" / "n1.log").stat().st_size > 0  # the container's log, saved


def test_docker_run_leaves_nothing(docker_run):
    fd = _judge_machine()
    try:
        assert _leftovers() == {}
        assert net.list_namespaces() == []
    finally:
        os.close(fd)


def test_read_uncommitted_is_caught_on_docker(results_root):
    """The netns negative control (test_zoo) on containers: G1a. 30 s of load from the producers'
    first ok: 10 % of the transactions abort, and the read_uncommitted final drain reads every
    aborted record, so one abort makes the case (40 s runs, 2026-11-29: 56 and 29 aborts, 2 or
    more in the first 5 s, before seed 3's first kill; the first abort at 18.9 s in a run that
    did not yet wait for the producers' first ok; 30 s: 46 aborts, 342 G1a)."""
    scn = with_backend(_scenario(isolation_level="read_uncommitted"), "docker")
    res = run_scenario(scn.model_copy(update={"duration": 30.0}), results_root, source=str(SMOKE))
    assert res.verdict.valid is False
    assert res.verdict.anomalies.get("G1a"), sorted(res.verdict.anomalies)
    # not valid: the log dirs, copied out of the volumes, are kept as on netns (eos-chaos dump-log)
    assert len(list(res.run_dir.glob("nodes/n*/data/t0-0"))) == 3


def test_cleanup_after_the_controller_is_killed(tmp_path):
    scn = yaml.safe_load(SMOKE.read_text())
    scn.update(name="docker-sigkill-it", duration=120)
    scn["cluster"]["backend"] = "docker"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scn))
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli.main", "run", str(tmp_path / "s.yaml"),
                             "--results", str(tmp_path / "results")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = tmp_path / "results" / "docker-sigkill-it"
    try:
        deadline = time.monotonic() + 3600  # it may wait for the lock first (other runs on this machine)
        run_id = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the run ended before its containers were up"
            run_id = next((d.name for d in runs.glob("*-s*")), None) if runs.is_dir() else None
            if run_id and len(_leftovers(run_id).get("containers", [])) == 3:
                break
            time.sleep(1)
        assert run_id and len(_leftovers(run_id)["containers"]) == 3
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _leftovers(run_id), "the killed controller left nothing to clean: nothing was tested"
    with cluster_lock():  # `eos-chaos cleanup` removes every run's leftovers: not while one runs
        out = subprocess.run([sys.executable, "-m", "harness.cli.main", "cleanup"], cwd=ROOT,
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert _leftovers() == {}
        assert net.list_namespaces() == []
