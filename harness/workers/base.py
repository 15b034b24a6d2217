"""What every worker shares: the event emitter and the stop signal."""
from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from harness.workers.configs import WorkerConfig


class Worker:
    """Base of a worker process. ``cfg``: the JSON config the controller passed (a dict), read
    into the role's model ``Config`` (harness.workers.configs; a model is taken as it is)."""

    Config: type[WorkerConfig] = WorkerConfig

    def __init__(self, cfg: WorkerConfig | dict[str, Any]):
        self.cfg = cfg if isinstance(cfg, WorkerConfig) else self.Config.model_validate(cfg)
        self.start_ns: int = self.cfg.start_ns
        self.stopping = threading.Event()
        self._out_lock = threading.Lock()
        self.proc = 0  # the current client instance, a new one after each replacement
        threading.Thread(target=self._watch_stdin, daemon=True).start()

    def _watch_stdin(self) -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                self.stopping.set()
        self.stopping.set()  # stdin closed: the controller is gone

    def kafka_conf(self, conf: dict[str, Any]) -> dict[str, Any]:
        """``conf`` with the cluster's client security settings on top (``cfg["security"]``:
        an external cluster's security.protocol / sasl.* / ssl.*, harness.cluster.client_access).
        Every Kafka client a worker makes takes its settings through here."""
        return {**conf, **self.cfg.security}

    def now(self) -> int:
        return time.monotonic_ns() - self.start_ns

    def _write(self, obj: dict) -> None:
        line = json.dumps(obj, separators=(",", ":")) + "\n"
        with self._out_lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def emit(self, type_: str, f: str, value: Any, *, time_ns: int | None = None,
             error: list[str] | None = None, meta: dict | None = None) -> None:
        ev: dict[str, Any] = {"proc": self.proc, "time": self.now() if time_ns is None else time_ns,
                              "type": type_, "f": f, "value": value}
        if error:
            ev["error"] = error
        if meta:
            ev["meta"] = meta
        self._write(ev)

    def control(self, **msg: Any) -> None:
        self._write({"ctl": msg})

    def log(self, msg: str) -> None:
        sys.stderr.write(f"[{self.now() / 1e9:9.3f}] {msg}\n")
        sys.stderr.flush()

    def new_instance(self) -> None:
        """The next client instance is a new logical process in the history."""
        self.proc += 1

    def run(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError
