"""Faults on client processes: SIGKILL a producer, consumer, processor or Spark driver and
restart it (as a new history process, same transactional.id), or SIGSTOP it and resume it
(a zombie in the making). The op value names the client worker: ``{"client": "producer-1"}``.

``kill-client`` takes ``after_ok_s`` (seconds, 0 <= s < 60): the kill waits for the client's
next ok op (at most ``OK_WAIT_S``), then ``after_ok_s`` more, so it lands at a chosen point
of the client's work instead of anywhere. A Spark driver's ok is a committed micro-batch
(its ``op_ok`` message): ``after_ok_s: 0.6`` kills it in the next batch's write phase, after
the sink wrote records and before the batch is committed in the checkpoint. A driver killed
at a random time is often still starting (a restart takes 15-25 s) or planning a batch, and
then nothing is written twice (docs/detection.md).
"""
from __future__ import annotations

import time

from nemesis.core import NemesisContext, PairedFault

#: longest wait (s) for the client's next ok op before an ``after_ok_s`` kill goes ahead anyway
OK_WAIT_S = 45.0


class ClientFault(PairedFault):
    def __init__(self, ctx: NemesisContext):
        if ctx.clients is None:
            raise ValueError(f"{type(self).__name__} needs the client pool")
        super().__init__(ctx)
        self.clients = ctx.clients

    def resolve(self, value: dict) -> str:
        return value["client"]


class ClientKillNemesis(ClientFault):
    start_f, end_f = "kill-client", "restart-client"

    def begin(self, name: str) -> str:
        after = self.params.get("after_ok_s")
        if after is None:
            return self.clients.kill_client(name)
        t = time.monotonic()
        if not self.clients.wait_next_ok(name, OK_WAIT_S):
            return f"{self.clients.kill_client(name)} (no ok op within {OK_WAIT_S:.0f} s)"
        waited = time.monotonic() - t
        time.sleep(float(after))
        return f"{self.clients.kill_client(name)} {float(after):g} s after an ok op (waited {waited:.1f} s for it)"

    def end(self, name: str) -> str:
        return self.clients.restart_client(name)


class ClientPauseNemesis(ClientFault):
    start_f, end_f = "pause-client", "resume-client"

    def begin(self, name: str) -> str:
        return self.clients.pause_client(name)

    def end(self, name: str) -> str:
        return self.clients.resume_client(name)
