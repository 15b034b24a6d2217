"""Candidate finding F5's standalone reproducer (harness/findings/f5_repro.py) on the harness's
own cluster (3 KRaft nodes, no proxies): the reproducer runs in the client namespace and asks
this driver, on its stdout, to pause / resume / restart a node (``--ctl-stdio``); the driver
does it on the node's process (SIGSTOP / SIGCONT / SIGKILL + start) and answers ``ok``.

Broker settings (``BROKER``): heartbeats every 500 ms and a 3 s broker session, so that the
controller fences a paused broker within seconds; ``offsets.load.buffer.size`` (``load_buffer``)
decides how many records the group coordinator's loader reads per batch (it checks that it still
leads the partition only between batches).

Layout of a run, ``<results>/f5-repro/<run-id>/``: ``tries.jsonl`` (one object per try, as the
reproducer prints them), ``logs/`` (broker logs n*.log, ``f5-repro.err``: the reproducer's steps),
``evidence.txt`` (the coordinator runtime's load/unload lines of the group's partition).
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from harness.findings.bringup import TriesResult, repro_run_dir, write_evidence

REPRO = Path(__file__).with_name("f5_repro.py")
BROKER = {"broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "3000"}


def _ctl(fc, action: str, node: int) -> str:
    n = fc.backend.node(node)
    if action == "pause":
        return "ok" if n.pause() else f"node {node} is not running"
    if action == "resume":
        return "ok" if n.resume() else f"node {node} is not running"
    if action == "restart":
        n.kill()
        n.start()
        return "ok"
    return f"unknown action {action}"


def run_f5(results: Path, *, tries: int = 1, records: int = 300000, partitions: int = 500,
           restart: bool = False, load_buffer: int | None = 256 << 20, extra: list[str] | None = None,
           kafka_version: str = "4.3.1", heap_mb: int = 1536,
           timeout_s: float = 1800) -> TriesResult:
    """Bring up a 3-node cluster, run the reproducer (``tries`` tries; ``extra``: more of its
    options), tear down, and return the tries with the broker log lines. Raises what
    harness.findings.bringup raises; RuntimeError when the reproducer failed to start."""
    from harness.findings.bringup import findings_cluster

    run_dir = repro_run_dir(results, "f5")
    logs = run_dir / "logs"
    broker = dict(BROKER)
    if load_buffer:
        broker["offsets.load.buffer.size"] = str(load_buffer)
    lines: list[dict] = []
    with findings_cluster(run_dir, kafka_version=kafka_version, proxies=False, broker=broker,
                          heap_mb=heap_mb) as fc:
        node_logs = [str(logs / f"n{i}.log") for i in fc.service.node_ids()]
        argv = [str(REPRO), "--bootstrap", fc.bootstrap, "--ctl-stdio", "--json", "--tries", str(tries),
                "--records", str(records), "--partitions", str(partitions)]
        argv += ["--restart"] if restart else []
        for p in node_logs:
            argv += ["--broker-log", p]
        argv += extra or []
        with open(logs / "f5-repro.err", "ab") as err:
            proc = subprocess.Popen(fc.service.client_host.exec_prefix() + [sys.executable, *argv],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                    bufsize=1, start_new_session=True)
            timer = threading.Timer(timeout_s, proc.kill)
            timer.start()
            try:
                for line in proc.stdout:
                    if not line.startswith("{"):
                        continue
                    obj = json.loads(line)
                    if "ctl" in obj:
                        try:
                            reply = _ctl(fc, obj["ctl"], int(obj["node"]))
                        except Exception as exc:  # noqa: BLE001 - told to the reproducer
                            reply = f"{type(exc).__name__}: {exc}"
                        with open(logs / "f5-repro.err", "a") as e2:
                            e2.write(f"driver: {obj['ctl']} n{obj['node']}: {reply}\n")
                        proc.stdin.write(reply.replace("\n", " ") + "\n")
                        proc.stdin.flush()
                    else:
                        lines.append(obj)
                proc.wait(timeout=60)
            finally:
                timer.cancel()
                if proc.poll() is None:
                    proc.kill()
        for n in fc.service.node_ids():  # a try that failed midway may leave a node paused
            if fc.backend.node(n).paused:
                fc.backend.node(n).resume()
        problems = fc.problems
    done = [x["result"] for x in lines if "result" in x]
    (run_dir / "tries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in done))
    summary = next((x["summary"] for x in lines if "summary" in x), None)
    if proc.returncode != 0 or summary is None:
        err = (logs / "f5-repro.err").read_text(errors="replace").strip().splitlines()[-5:]
        raise RuntimeError(f"the reproducer exited with {proc.returncode}: " + " / ".join(err))
    res = TriesResult(run_dir, done, summary, problems=problems)
    for t in done:
        res.evidence += [f"# try {t['try']}: __consumer_offsets-{t.get('offsets_partition')}, L = n{t.get('L')}"]
        res.evidence += t.get("log", [])
    write_evidence(run_dir, res.evidence)
    return res
