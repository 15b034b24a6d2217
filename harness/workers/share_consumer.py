"""The share workload's consumer: a member of a share group (KIP-932, queues for Kafka) on
confluent-kafka's ``ShareConsumer`` with explicit acknowledgement.

Config: ``harness.workers.configs.ShareConsumerConfig``. The Java twin is
harness/workers/java/src/eosc/ShareConsumers.java; both write the same ops
(docs/history.md "Share groups"):

* ``share-config``: the group configs set first (IncrementalAlterConfigs on the GROUP
  resource), value ``{name: value}``; retried until ``config_timeout_s``, then ``fail``.
* ``acquire``: one non-empty ``poll()``; completion value ``{key: [[offset, value,
  delivery_count], ...]}`` in the order returned (``delivery_count`` as the broker reports
  it, null where the client gives none). Like ``poll``, written when it completes, with the
  invoke's real time; empty polls are not recorded.
* ``process``: the records this instance processed (the workload's "output"), value
  ``{key: [[offset, value], ...]}``; ``ok`` when processing finished.
* ``ack``: one partition's acknowledgements, committed by their own ``commit_sync()`` (the
  invoke is written before the commit is sent): value ``[[type, key, offset, value],
  ...]`` with type ``accept`` | ``release`` | ``reject``; ``ok`` when the broker accepted the
  partition's acknowledgements, ``fail`` when it refused them (INVALID_RECORD_STATE: the
  acquisition lock had expired or the record was not this member's), ``info`` otherwise.

Order per batch: acquire, then process + accept (``ack_order: after-processing``) or accept
then process (``before-processing``, the zoo mutant: a consumer killed between the two has
accepted records it never processed). Released and rejected records are never processed.
A ``{"ctl": {"share_acquired": n, "last_ns": t}}`` line every second after new acquisitions
lets the workload's settle step wait until the group has gone quiet.
"""
from __future__ import annotations

import random
import time

from harness.workers.base import Worker
from harness.workers.configs import ShareConsumerConfig

#: acknowledgement errors that say the broker did not apply them (KIP-932): the op is ``fail``
REFUSED = frozenset({"INVALID_RECORD_STATE", "_INVALID_RECORD_STATE"})


def error_name(exc: BaseException) -> str:
    """The Kafka error's name (KafkaError.name()) of ``exc``, else its class name."""
    err = exc.args[0] if getattr(exc, "args", None) else None
    name = getattr(err, "name", None)
    try:
        return str(name()) if callable(name) else type(exc).__name__
    except Exception:  # noqa: BLE001 - a name is only for the history
        return type(exc).__name__


class ShareConsumerWorker(Worker):
    Config = ShareConsumerConfig

    def meta(self) -> dict:
        iso = self.cfg.group_configs.get("share.isolation.level")
        return {"group_id": self.cfg.group_id, **({"isolation_level": iso} if iso else {})}

    def configure_group(self) -> bool:
        """Set ``group_configs`` on the group (a ``share-config`` op); True when it took."""
        if not self.cfg.group_configs:
            return True
        from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        admin = AdminClient(self.kafka_conf({"bootstrap.servers": self.cfg.bootstrap, "socket.timeout.ms": 10000}))
        value = dict(self.cfg.group_configs)
        self.emit("invoke", "share-config", value, meta=self.meta())
        deadline = time.monotonic() + self.cfg.config_timeout_s
        last = None
        while time.monotonic() < deadline and not self.stopping.is_set():
            res = ConfigResource(ResourceType.GROUP, self.cfg.group_id, incremental_configs=[
                ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in value.items()])
            try:
                admin.incremental_alter_configs([res])[res].result(timeout=15)
                self.emit("ok", "share-config", value, meta=self.meta())
                return True
            except Exception as exc:  # noqa: BLE001 - a broker down: retry until the deadline
                last = exc
                self.log(f"share-config: {exc}")
                time.sleep(1)
        self.emit("fail", "share-config", value, error=[error_name(last) if last else "STOPPED", str(last)[:300]],
                  meta=self.meta())
        return False

    def consumer(self):
        from confluent_kafka import ShareConsumer

        c = ShareConsumer(self.kafka_conf({
            "bootstrap.servers": self.cfg.bootstrap, "group.id": self.cfg.group_id,
            "share.acknowledgement.mode": "explicit", "socket.timeout.ms": 10000,
            **self.cfg.consumer}))
        c.subscribe(list(self.cfg.topics))
        return c

    def run(self) -> None:
        from confluent_kafka import AcknowledgeType

        kinds = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE,
                 "reject": AcknowledgeType.REJECT}
        rng = random.Random(self.cfg.seed)
        self.configure_group()
        c = self.consumer()
        acquired, last_ns, told = 0, 0, 0.0
        try:
            while not self.stopping.is_set():
                t0 = self.now()
                try:
                    msgs = c.poll(0.5)
                except Exception as exc:  # noqa: BLE001 - a broker down: poll again
                    self.log(f"poll: {exc}")
                    time.sleep(0.2)
                    continue
                got, by_key = [], {}
                for m in msgs:
                    if m.error() is not None:
                        self.log(f"share consumer error: {m.error()}")
                        continue
                    key = f"{m.topic()}/{m.partition()}"
                    try:
                        value = int(m.value())
                    except (TypeError, ValueError):
                        self.log(f"foreign record at {key}@{m.offset()}: {m.value()!r}")
                        c.acknowledge(m, AcknowledgeType.ACCEPT)
                        continue
                    got.append((m, key, value))
                    by_key.setdefault(key, []).append([m.offset(), value, m.delivery_count()])
                if not got:
                    continue
                self.emit("invoke", "acquire", None, time_ns=t0, meta=self.meta())
                self.emit("ok", "acquire", by_key, meta=self.meta())
                acquired += len(got)
                last_ns = self.now()
                plan = []
                for m, key, value in got:
                    r = rng.random()
                    kind = ("release" if r < self.cfg.release_probability else
                            "reject" if r < self.cfg.release_probability + self.cfg.reject_probability else "accept")
                    plan.append((m, key, value, kind))
                accepted = [(m, k, v) for m, k, v, kind in plan if kind == "accept"]
                if self.cfg.ack_order == "after-processing":
                    self.process(accepted)
                    self.acknowledge(c, plan, kinds)
                else:
                    self.acknowledge(c, plan, kinds)
                    self.process(accepted)
                if time.monotonic() - told >= 1.0:
                    self.control(share_acquired=acquired, last_ns=last_ns)
                    told = time.monotonic()
        finally:
            self.control(share_acquired=acquired, last_ns=last_ns)
            try:
                c.close()
            except Exception as exc:  # noqa: BLE001 - closing under faults may fail; the locks expire
                self.log(f"close: {exc}")
        self.control(done=True)

    def process(self, records: list) -> None:
        """"Process" the accepted records (``process_ms`` ms) and record them as output."""
        if not records:
            return
        t0 = self.now()
        out: dict[str, list] = {}
        for _m, key, value in records:
            out.setdefault(key, []).append([_m.offset(), value])
        if self.cfg.process_ms:
            time.sleep(self.cfg.process_ms / 1000)
        self.emit("invoke", "process", out, time_ns=t0, meta=self.meta())
        self.emit("ok", "process", out, meta=self.meta())

    def acknowledge(self, c, plan: list, kinds: dict) -> None:
        """Acknowledge every record of ``plan``: one ``commit_sync()`` and one ``ack`` op per
        partition, the op's invoke written before the commit is sent. A member killed inside
        ``commit_sync()`` then leaves an open invoke (info: the broker may have taken it),
        not a history without the acknowledgement: a reject the broker archived must not read
        as share-lost (CI 2026-11-29, seed 2: a reject killed in flight did)."""
        by_key: dict[str, list] = {}
        for m, key, value, kind in plan:
            by_key.setdefault(key, []).append((m, [kind, key, m.offset(), value]))
        for key, part in by_key.items():
            acks = [a for _m, a in part]
            self.emit("invoke", "ack", acks, meta=self.meta())
            for m, a in part:
                c.acknowledge(m, kinds[a[0]])
            results, err = {}, None
            try:
                results = c.commit_sync(15.0) or {}
            except Exception as exc:  # noqa: BLE001 - the outcome is unknown: info
                err = exc
            res_by_key = {f"{tp.topic}/{tp.partition}": r for tp, r in results.items()}
            if err is not None:
                self.emit("info", "ack", acks, error=[error_name(err), str(err)[:300]], meta=self.meta())
            elif key not in res_by_key:
                self.emit("info", "ack", acks, error=["NO_RESULT", "commit_sync named no result for the partition"],
                          meta=self.meta())
            elif res_by_key[key] is None:
                self.emit("ok", "ack", acks, meta=self.meta())
            else:
                name = error_name(res_by_key[key])
                self.emit("fail" if name in REFUSED else "info", "ack", acks,
                          error=[name, str(res_by_key[key])[:300]], meta=self.meta())
