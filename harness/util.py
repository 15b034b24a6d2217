"""Small shared helpers."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

T = TypeVar("T")

#: environment variable that carries a worker's or the admin agent's JSON config: not argv,
#: which every local user can read in /proc/<pid>/cmdline (an external cluster's sasl.password)
CONFIG_ENV = "EOSC_CONFIG"


def config_from(argv: list[str], index: int) -> dict | None:
    """A child process's JSON config: ``argv[index]`` when given (tests, hand runs), else the
    CONFIG_ENV variable (the harness's way), removed from the environment so nothing the
    process starts inherits it; None when neither is there."""
    if len(argv) > index:
        return json.loads(argv[index])
    raw = os.environ.pop(CONFIG_ENV, None)
    return json.loads(raw) if raw is not None else None


class WaitTimeout(TimeoutError):
    """A condition did not hold in time; the message says which and the last error seen."""


def wait_until(condition: Callable[[], T], timeout: float, message: str, interval: float = 0.5) -> T:
    """Poll ``condition`` until it returns a truthy value and return that value.

    Exceptions raised by ``condition`` count as "not yet" and the last one is quoted in the
    WaitTimeout raised after ``timeout`` seconds (ducktape ``utils/util.py`` wait_until).
    """
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - quoted in the timeout message below
            last_exc = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_exc})" if last_exc else ""
            raise WaitTimeout(f"timed out after {timeout:.0f} s waiting for {message}{detail}")
        time.sleep(interval)


@dataclass(frozen=True)
class ErrorFacts:
    """What confluent-kafka tells about an error; built from a KafkaError or by hand in tests.
    Read by the workers' error table (harness.workers.outcomes) and the admin agent
    (harness.cluster.agent)."""

    name: str
    fatal: bool = False
    retriable: bool = False
    txn_requires_abort: bool = False

    @classmethod
    def of(cls, err) -> "ErrorFacts":
        """From a confluent_kafka.KafkaError (or a KafkaException wrapping one)."""
        if hasattr(err, "args") and err.args and hasattr(err.args[0], "name"):
            err = err.args[0]
        if not hasattr(err, "name"):
            return cls(name=type(err).__name__)
        return cls(name=err.name(), fatal=err.fatal(), retriable=err.retriable(),
                   txn_requires_abort=err.txn_requires_abort())
