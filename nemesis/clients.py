"""Faults on client processes: SIGKILL a producer, consumer, processor or Spark driver and
restart it (as a new history process, same transactional.id), or SIGSTOP it and resume it
(a zombie in the making). The op value names the client worker: ``{"client": "producer-1"}``."""
from __future__ import annotations

from nemesis.core import NemesisContext, PairedFault


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
        return self.clients.kill_client(name)

    def end(self, name: str) -> str:
        return self.clients.restart_client(name)


class ClientPauseNemesis(ClientFault):
    start_f, end_f = "pause-client", "resume-client"

    def begin(self, name: str) -> str:
        return self.clients.pause_client(name)

    def end(self, name: str) -> str:
        return self.clients.resume_client(name)
