"""Faults on client processes: SIGKILL a producer, consumer, processor or Spark driver and
restart it (as a new history process, same transactional.id), or SIGSTOP it and resume it
(a zombie in the making). The op value names the client worker: ``{"client": "producer-1"}``."""
from __future__ import annotations

from nemesis.core import NemesisContext, Op


class ClientFault:
    start_f = end_f = ""

    def __init__(self, ctx: NemesisContext):
        if ctx.clients is None:
            raise ValueError(f"{type(self).__name__} needs the client pool")
        self.clients = ctx.clients
        self.active: set[str] = set()

    def fs(self) -> set[str]:
        return {self.start_f, self.end_f}

    def setup(self) -> None:
        pass

    def invoke(self, op: Op) -> Op:
        name = op["value"]["client"]
        if op["f"] == self.start_f:
            result = self.begin(name)
            self.active.add(name)
        else:
            result = self.end(name)
            self.active.discard(name)
        return {"f": op["f"], "value": dict(op["value"], result=result)}

    def teardown(self) -> list[str]:
        problems = []
        for name in sorted(self.active):
            try:
                self.end(name)
            except Exception as exc:
                problems.append(f"could not undo {self.start_f} of client {name}: {exc}")
        self.active.clear()
        return problems


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
