"""What a workload gives the run loop (harness.runner).

A workload names its topics and keys, the client workers to start (readers first, stopped
after the final drain; writers second, stopped before it), the final drain, the run metadata
the checkers need, and an optional ``finish`` step run after the drain while the history is
still open (a Spark workload turns its sink into poll ops there); what ``finish`` returns is
merged into the run's meta.json. Add a workload by writing a
module with a pydantic spec (with a ``name`` Literal) and a class, and registering both in
harness/workloads/__init__.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A scenario section: unknown fields are errors, so a typo never falls back to a default."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class WorkerSpec:
    """One client worker process: ``role`` is a harness.workers role, ``cfg`` its JSON config."""

    name: str
    role: str
    cfg: dict


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)


class Workload(Protocol):
    def topics(self) -> list[TopicSpec]: ...
    def keys(self) -> list[str]: ...
    def readers(self) -> list[WorkerSpec]: ...
    def writers(self) -> list[WorkerSpec]: ...
    def drain(self) -> WorkerSpec | None: ...
    def meta(self) -> dict[str, Any]: ...
    def respawn(self, spec: WorkerSpec) -> WorkerSpec: ...
    def finish(self, run_dir: Path, history) -> dict[str, Any]: ...
