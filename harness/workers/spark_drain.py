"""The final drain of the Spark workload: the ordinary drain, then wait for Spark to reach it.

1. Reads every input key to its high watermark, exactly as ``DrainWorker`` (its polls are the
   history's final reads, ``meta.final``).
2. Waits up to ``catchup_s`` seconds until the Spark query has committed a micro-batch whose
   end offset reaches that high watermark on every non-empty input key, judged from the
   ``progress`` lines of ``<work_dir>/events.jsonl`` (Spark's StreamingQueryProgress,
   ``sources[].endOffset``: {topic: {partition: next offset}}), which Spark posts after the
   batch's commit. A read_committed source's latest offset is the last stable offset, which
   equals the high watermark once no transaction is open.
3. With ``output_keys`` (the Kafka sink), reads those keys from the beginning to their high
   watermark (read_uncommitted: Spark's Kafka sink does not write transactionally) and writes
   every record to ``<work_dir>/output.jsonl`` as ``[out_key, out_offset, record_key,
   value]`` (record_key and value as strings, None for null). These reads are not history ops:
   they are the sink's content, judged by the sink checkers.

Writes ``<work_dir>/catchup.json``: {"caught_up": bool, "waited_s", "high": {key: offset},
"spark_end": {key: offset}, "behind": {key: [spark_end, high]}, "output_records": int}.
The one ``drained`` control message is the ordinary drain's, plus ``spark_caught_up``.

Config: ``harness.workers.configs.SparkDrainConfig`` (its fields, defaults and units).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from harness.workers.consumer import DrainWorker, _tp
from harness.workers.configs import SparkDrainConfig


def spark_end_offsets(events_path: Path) -> dict[str, int]:
    """Highest end offset per key ("topic/partition") over the progress reports in
    ``events_path`` (missing file: {})."""
    end: dict[str, int] = {}
    try:
        lines = events_path.read_text().splitlines()
    except FileNotFoundError:
        return end
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue  # a torn last line of a killed driver
        if ev.get("event") != "progress":
            continue
        for src in ev["progress"].get("sources") or []:
            offs = src.get("endOffset")
            if isinstance(offs, str):
                try:
                    offs = json.loads(offs)
                except ValueError:
                    continue
            for topic, parts in (offs or {}).items():
                for part, off in parts.items():
                    key = f"{topic}/{part}"
                    end[key] = max(end.get(key, -1), int(off))
    return end


class SparkDrainWorker(DrainWorker):
    Config = SparkDrainConfig

    def __init__(self, cfg: dict[str, Any]):
        super().__init__(cfg)
        self.work = Path(self.cfg.work_dir)
        self._drained: dict | None = None

    def control(self, **msg: Any) -> None:
        if msg.get("drained") and self._drained is None:
            self._drained = msg  # held back until Spark has been waited for
            return
        super().control(**msg)

    def wait_for_spark(self, high: dict[str, int], low: dict[str, int]) -> dict:
        deadline = time.monotonic() + float(self.cfg.catchup_s)
        t0 = time.monotonic()
        todo = {k: h for k, h in high.items() if h > low.get(k, 0)}
        while True:
            end = spark_end_offsets(self.work / "events.jsonl")
            behind = {k: [end.get(k), h] for k, h in todo.items() if end.get(k, -1) < h}
            if not behind or time.monotonic() > deadline or self.stopping.is_set():
                break
            time.sleep(0.5)
        waited = round(time.monotonic() - t0, 2)
        if behind:
            self.log(f"Spark did not reach the end of the input within {waited} s: {behind}")
        return {"caught_up": not behind, "waited_s": waited, "high": high,
                "spark_end": {k: end.get(k) for k in high}, "behind": behind}

    def read_output(self, keys: list[str]) -> int:
        c = Consumer(self.kafka_conf({"bootstrap.servers": self.cfg.bootstrap, "group.id": "eosc-spark-output",
                                      "enable.auto.commit": False, "isolation.level": "read_uncommitted",
                                      "enable.partition.eof": False, "fetch.wait.max.ms": 100}))
        deadline = time.monotonic() + float(self.cfg.drain_timeout_s)
        high = {}
        for key in keys:
            while key not in high:
                try:
                    high[key] = c.get_watermark_offsets(_tp(key), timeout=5, cached=False)[1]
                except Exception as exc:
                    if time.monotonic() > deadline:
                        raise
                    self.log(f"watermarks of {key}: {exc}")
        c.assign([_tp(k) for k in keys])
        pos = {k: 0 for k in keys}
        n = 0
        with open(self.work / "output.jsonl", "w") as out:
            while any(pos[k] < high[k] for k in keys) and time.monotonic() < deadline:
                for m in c.consume(num_messages=1000, timeout=0.5):
                    if m.error() is not None:
                        self.log(f"output consumer error: {m.error()}")
                        continue
                    key = f"{m.topic()}/{m.partition()}"
                    pos[key] = max(pos[key], m.offset() + 1)
                    rk = m.key().decode() if m.key() is not None else None
                    val = m.value().decode() if m.value() is not None else None
                    out.write(json.dumps([key, m.offset(), rk, val]) + "\n")
                    n += 1
        c.close()
        missing = {k: [pos[k], high[k]] for k in keys if pos[k] < high[k]}
        if missing:
            self.log(f"output not read to its end: {missing}")
        return n

    def run(self) -> None:
        super().run()
        drained = self._drained or {"drained": True, "complete": False, "high": {}, "positions": {}}
        low = {}  # every input key starts at offset 0 (no retention deletes within a run)
        status = self.wait_for_spark(drained.get("high") or {}, low)
        if self.cfg.output_keys:
            status["output_records"] = self.read_output(self.cfg.output_keys)
        (self.work / "catchup.json").write_text(json.dumps(status, indent=1))
        super().control(**dict(drained, spark_caught_up=status["caught_up"]))
