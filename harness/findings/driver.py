"""What the findings' step-by-step drivers share (harness/findings/f2.py, f9.py): the client
process they drive (harness/findings/f2_client.py in the client namespace, one JSON request
per line), the history they record (docs/history.md, so that the checkers judge what the
clients saw), the admin lookups and waits between steps, and the checkers' verdict at the end.
"""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CLIENT = Path(__file__).with_name("f2_client.py")


class DriverError(RuntimeError):
    """A step of the driver failed (the message names it); the run folder keeps what happened."""


@dataclass
class DriverResult:
    run_dir: Path
    result: dict
    evidence: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class ClientProc:
    """f2_client.py in the client namespace, one JSON line per request."""

    def __init__(self, fc, log: Path):
        self._err = open(log, "ab")
        self.proc = subprocess.Popen(fc.service.client_host.exec_prefix() + [sys.executable, str(CLIENT), fc.bootstrap],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     bufsize=1, start_new_session=True)
        self._replies: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self._replies.put(x) for x in self.proc.stdout] + [self._replies.put(None)],
                         daemon=True).start()

    def __call__(self, cmd: str, timeout: float = 120, **args):
        self.proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
        self.proc.stdin.flush()
        try:
            line = self._replies.get(timeout=timeout)
        except queue.Empty:
            raise DriverError(f"client gave no answer to {cmd} in {timeout:.0f} s") from None
        if line is None:
            raise DriverError(f"client exited during {cmd}; see its log in logs/")
        reply = json.loads(line)
        if not reply["ok"]:
            raise DriverError(f"{cmd}: {reply['error']}")
        return reply["result"]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        except Exception:
            self.proc.kill()
        self._err.close()


class Recorder:
    """The driver's ops as a harness history (docs/history.md): so that the checkers judge
    what the clients saw, as in any run (``eos-chaos check history.jsonl``). Processes: 0 = T,
    1 = U, 2 = the final read_committed drain; the cut, kill and heal as nemesis events."""

    def __init__(self, path: Path):
        from harness.run.history_writer import HistoryWriter

        self.h = HistoryWriter(path)

    def op(self, process: int, f: str, invoke, ok, t0: int, meta: dict, type_: str = "ok") -> None:
        self.h.append({"process": process, "type": "invoke", "f": f, "value": invoke, "time": t0, "meta": meta})
        self.h.append({"process": process, "type": type_, "f": f, "value": ok, "meta": meta})

    def now(self) -> int:
        return self.h.now()

    def final_reads(self, client, keys: list[str]) -> tuple[dict, dict]:
        """Read every key ("topic/partition") read_committed and read_uncommitted with
        ``client`` (a ClientProc), and record the read_committed ones as the final drain
        (process 2: an assign and a poll). Returns the reads ({"topic/p/isolation": the
        client's read}) and meta.json's ``drain``. Raises DriverError as ClientProc does."""
        t0 = self.now()
        reads = {}
        for key in keys:
            topic, part = key.rsplit("/", 1)
            for iso in ("read_committed", "read_uncommitted"):
                reads[f"{key}/{iso}"] = client("read", topic=topic, partition=int(part), isolation=iso, timeout=90)
        drained = {k: sorted([int(o), int(v)] for o, v in reads[f"{k}/read_committed"]["records"].items())
                   for k in keys}
        dmeta = {"isolation_level": "read_committed", "final": True, "worker": "final-reader"}
        self.op(2, "assign", keys, keys, t0, dict(dmeta, **{"from": "beginning"}))
        self.op(2, "poll", [["poll"]], [["poll", {k: v for k, v in drained.items() if v}]], t0, dmeta)
        high = {k: reads[f"{k}/read_committed"]["high"] for k in keys}
        # each read ran to its end (partition EOF): for read_committed the LSO
        return reads, {"drained": True, "complete": True, "high": high, "positions": dict(high)}


def partition(agent, topic: str, part: int) -> dict | None:
    d = agent.request("describe", timeout=10, topics=[topic])
    t = d["topics"].get(topic)
    return (t or {}).get("partitions", {}).get(str(part)) if t and not t["error"] else None


def wait_for(what: str, cond, timeout: float) -> float:
    t0 = time.monotonic()
    last = ""
    while time.monotonic() - t0 < timeout:
        try:
            if cond():
                return round(time.monotonic() - t0, 2)
        except Exception as exc:  # the agent may fail while a broker is down: not yet; quoted on timeout
            last = f" (last error: {type(exc).__name__}: {exc})"
        time.sleep(0.5)
    raise DriverError(f"timed out after {timeout:.0f} s waiting for {what}{last}")


def judge(run_dir: Path, meta: dict) -> dict:
    """The checkers' verdict on the driver's history (verdict.json), and the HTML report when
    it renders; returns ``{"valid", "anomaly_counts"}``, with ``report_error`` when it does not."""
    import checkers

    try:
        verdict = checkers.check(run_dir / "history.jsonl", meta=meta, allowed=[])
    except Exception as exc:  # the driver's figures stand without a verdict
        return {"valid": "unknown", "error": f"{type(exc).__name__}: {exc}"}
    checkers.RunDir(run_dir).write_verdict(verdict)
    out = {"valid": verdict.valid, "anomaly_counts": verdict.anomaly_counts}
    try:
        from harness.report import render_report

        render_report(run_dir)
    except Exception as exc:  # the verdict stands without a report; f2.json says why there is none
        out["report_error"] = f"{type(exc).__name__}: {exc}"
    return out
