"""Wait for the user's application to catch up (role ``app-catch-up``; harness.workloads.app).

Runs after the input producers stopped and the faults healed, while the application still
runs: it reads every input key to its end (read_committed: the committed input) and the output
with the scenario's match (the output keys' records, or the committed rows of the file sinks in
``output_dirs``, read every ``files_poll_s`` s: harness.workers.app_files), until every committed input is named by some output record,
or no new output arrived for ``quiet_s`` seconds, or ``bound_s`` seconds passed. It records
nothing in the history (the final drain does, after the application stopped); it reports
``{"ctl": {"caught_up": bool, "inputs": n, "covered": n, "waited_s": s, "ended": "covered" |
"quiet" | "bound" | "stopped", "matched": n, "unmatched": n, "samples": [...],
"committed_offsets": {"in/0": offset, ...}}}``: with ``app_group``, the offsets that consumer
group (the application's, ``{group}``) had committed on the input partitions when the wait ended
(a partition without one left out): an input below its partition's committed offset was
consumed by the application's own account, so a missing output for it is a loss, not a stall
(checkers.finders.app_end_to_end).

Config: ``bootstrap``, ``input_keys``, ``output_keys``, ``output_dirs``, ``files_poll_s``, ``match``,
``base_dir``, ``bound_s`` (default 120), ``quiet_s`` (default 20), ``consumer`` (extra settings),
``security``, ``app_group`` (the application's consumer group, or None).
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer

from harness.workers.consumer import _tp
from harness.workers.app_files import FileOutput
from harness.workers.base import Worker
from harness.workers.app_match import compile_match
from harness.workers.configs import AppCatchUpConfig


class AppCatchUpWorker(Worker):
    Config = AppCatchUpConfig

    def run(self) -> None:
        match = compile_match(self.cfg.match, self.cfg.base_dir)
        c = Consumer(self.kafka_conf({
            "bootstrap.servers": self.cfg.bootstrap, "group.id": self.cfg.group_id,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed", "enable.partition.eof": False,
            "fetch.wait.max.ms": 100, **(self.cfg.consumer or {})}))
        t0 = time.monotonic()
        bound, quiet = float(self.cfg.bound_s), float(self.cfg.quiet_s)
        inputs: set[int] = set()
        covered: set[int] = set()
        outputs = set(self.cfg.output_keys)
        matched = unmatched = 0
        samples: list[dict] = []
        high: dict[str, int] = {}
        for key in self.cfg.input_keys:
            while key not in high and time.monotonic() - t0 < bound:
                try:
                    high[key] = c.get_watermark_offsets(_tp(key), timeout=5, cached=False)[1]
                except Exception as exc:  # a broker still recovering: retry within the bound
                    self.log(f"watermarks of {key}: {exc}")
        c.assign([_tp(k) for k in [*self.cfg.input_keys, *self.cfg.output_keys]])
        files = FileOutput(self.cfg.output_dirs, match) if self.cfg.output_dirs else None
        files_due = 0.0
        last_new = time.monotonic()
        ended = "bound"
        try:
            while time.monotonic() - t0 < bound:
                if self.stopping.is_set():
                    ended = "stopped"
                    break
                if files is not None and time.monotonic() >= files_due:
                    files_due = time.monotonic() + float(self.cfg.files_poll_s)
                    for rows in files.poll().values():
                        new = {v for _off, v in rows if v is not None} - covered
                        if new:
                            covered |= new
                            last_new = time.monotonic()
                for m in c.consume(num_messages=500, timeout=0.5):
                    if m.error() is not None:
                        continue
                    key = f"{m.topic()}/{m.partition()}"
                    if key in outputs:
                        v = match(m.key(), m.value())
                        if v is None:
                            unmatched += 1
                            if len(samples) < 3:
                                samples.append({"at": f"{key}@{m.offset()}", "key": repr(m.key())[:120],
                                                "value": repr(m.value())[:200]})
                        else:
                            matched += 1
                            if v not in covered:
                                covered.add(v)
                                last_new = time.monotonic()
                    else:
                        try:
                            inputs.add(int(m.value()))
                        except (TypeError, ValueError):
                            pass
                pos = {f"{tp.topic}/{tp.partition}": tp.offset for tp in c.position([_tp(k) for k in high])}
                inputs_read = all(pos.get(k, -1) >= h or h == 0 for k, h in high.items())
                if inputs_read and inputs <= covered:
                    ended = "covered"
                    break
                if inputs_read and time.monotonic() - last_new > quiet:
                    ended = "quiet"
                    break
        finally:
            c.close()
        if files is not None:
            matched, unmatched = matched + files.matched, unmatched + files.unmatched
            samples = (samples + files.samples)[:3]
        self.control(caught_up=ended == "covered", inputs=len(inputs), covered=len(inputs & covered),
                     waited_s=round(time.monotonic() - t0, 2), ended=ended, matched=matched,
                     unmatched=unmatched, samples=samples,
                     **({"committed_offsets": self.app_offsets()} if self.cfg.app_group else {}))

    def app_offsets(self) -> dict[str, int]:
        """The application's group's committed offsets on the input keys (an OffsetFetch: this
        consumer never joins the group); {} when the lookup fails (logged)."""
        c = Consumer(self.kafka_conf({"bootstrap.servers": self.cfg.bootstrap, "group.id": self.cfg.app_group,
                                      "enable.auto.commit": False}))
        try:
            return {f"{tp.topic}/{tp.partition}": tp.offset
                    for tp in c.committed([_tp(k) for k in self.cfg.input_keys], timeout=10) if tp.offset >= 0}
        except Exception as exc:  # noqa: BLE001 - no offsets: every missing input stays loss-or-stall
            self.log(f"committed offsets of {self.cfg.app_group}: {exc}")
            return {}
        finally:
            c.close()
