"""Zombie faults: a transactional client is paused past its timeouts, a replacement takes over
its transactional.id, then the old instance resumes (KIP-98 zombie fencing; Kafka's exactly-once design, KIP-98/KIP-447).

``zombie`` (start op, value ``{"client": "processor-1", "params": {"fresh_id": false}}``):
retires the client's current incarnation and SIGSTOPs it, then starts a replacement worker
with the same transactional.id (``ClientControl.replace_client``). The replacement's ``init``
bumps the producer epoch: the paused instance is now a zombie. ``resume-zombie`` (end op)
SIGCONTs the old one, which carries on with its transaction and must be fenced: its next
produce/commit fails with a fatal fenced error (recorded in its op's ``error``), none of its
writes after the replacement's init may become visible (checkers.finders.zombie_write), and, being
retired, it exits instead of registering again (harness.workers.retire).

``params.fresh_id: true`` is the negative control: the replacement gets a fresh
transactional.id, so epoch fencing cannot stop the zombie.

The completion of the start op records ``{"paused": old worker, "replacement": new worker}``;
a later zombie fault on the same client name targets its newest incarnation. Teardown resumes
every zombie still paused.
"""
from __future__ import annotations

from nemesis.core import NemesisContext, Op


class ZombieNemesis:
    start_f, end_f = "zombie", "resume-zombie"

    def __init__(self, ctx: NemesisContext):
        if ctx.clients is None:
            raise ValueError("ZombieNemesis needs the client pool")
        self.clients = ctx.clients
        self.paused: dict[str, str] = {}  # client name in the schedule -> paused incarnation

    def fs(self) -> set[str]:
        return {self.start_f, self.end_f}

    def setup(self) -> None:
        pass

    def invoke(self, op: Op) -> Op:
        value = dict(op["value"])
        name = value["client"]
        if op["f"] == self.start_f:
            fresh = bool((value.get("params") or {}).get("fresh_id", False))
            old = self.clients.current_client(name)  # newest incarnation (ClientControl)
            new = self.clients.replace_client(old, fresh_id=fresh)
            self.paused[name] = old
            value.update(paused=old, replacement=new, fresh_id=fresh)
        else:
            old = self.paused.pop(name, None)
            value.update(resumed=old, result=self.clients.resume_client(old) if old else "nothing paused")
        return {"f": op["f"], "value": value}

    def teardown(self) -> list[str]:
        problems = []
        for name, old in sorted(self.paused.items()):
            try:
                self.clients.resume_client(old)
            except Exception as exc:
                problems.append(f"could not resume zombie {old} (of {name}): {exc}")
        self.paused.clear()
        return problems
