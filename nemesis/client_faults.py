"""Faults on client processes: SIGKILL a producer, consumer, processor, Spark driver or app
instance and restart it (as a new history process, same transactional.id), stop it gracefully
and start it again (``stop-client``: SIGTERM, as a rolling deploy does), or SIGSTOP it and
resume it (a zombie in the making). The op value names the client as the schedule drew it:
``{"client": "producer-1"}``; the fault hits that client's newest incarnation (after a ``zombie``
fault, its replacement: ``ClientControl.current_client``), which the completion names as
``worker``.

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
        return self.clients.current_client(value["client"])

    def describe(self, target: str) -> dict:
        """``{"worker": the worker the fault hit}`` (module docstring)."""
        return {"worker": target}


class ClientKillNemesis(ClientFault):
    start_f, end_f = "kill-client", "restart-client"

    def __init__(self, ctx: NemesisContext):
        super().__init__(ctx)
        self._ok_wait: dict[str, dict] = {}   # client -> how its after_ok_s kill waited (``describe``)

    def begin(self, name: str) -> str:
        after = self.params.get("after_ok_s")
        if after is not None:
            t = time.monotonic()
            saw = self.clients.wait_next_ok(name, OK_WAIT_S)
            if saw:
                time.sleep(float(after))
            self._ok_wait[name] = {"after_ok_s": float(after), "waited_ok_s": round(time.monotonic() - t, 3),
                                   "ok_seen": saw}
        return self.clients.kill_client(name)   # "killed pid N": harness.workloads.spark reads the pid

    def describe(self, name: str) -> dict:
        """``worker`` (ClientFault.describe) and the start op's ``after_ok_s``, seconds waited in all (``waited_ok_s``) and whether
        an ok op came (``ok_seen``: false when the kill went ahead after ``OK_WAIT_S``)."""
        return {**super().describe(name), **self._ok_wait.pop(name, {})}

    def end(self, name: str) -> str:
        return self.clients.restart_client(name)


class ClientPauseNemesis(ClientFault):
    start_f, end_f = "pause-client", "resume-client"

    def begin(self, name: str) -> str:
        return self.clients.pause_client(name)

    def end(self, name: str) -> str:
        return self.clients.resume_client(name)


class ClientStopNemesis(ClientFault):
    """A rolling deploy's restart of one instance: a graceful stop (the worker is asked to stop;
    an app instance sends its application SIGTERM and waits for it, SIGKILL after a grace
    period), then, when the fault ends, a start with the same arguments."""

    start_f, end_f = "stop-client", "start-client"

    def begin(self, name: str) -> str:
        return self.clients.stop_client(name)

    def end(self, name: str) -> str:
        return self.clients.restart_client(name)
