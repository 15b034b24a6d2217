"""What every command shares: the consoles, exit codes, the root check, the one-line error and
the SIGINT/SIGTERM wiring (a first signal ends the load early; heal, drain, check and teardown
still run)."""
from __future__ import annotations

import os
import re
import signal
import threading
from typing import Callable

import typer
from rich.console import Console

# errors and notes stay one line each however narrow the terminal (logs, CI, grep)
console = Console(stderr=True, soft_wrap=True)
out = Console()

#: verdict ``valid`` -> exit code: 0 valid, 1 invalid, 2 unknown (and any error)
EXIT = {True: 0, False: 1, "unknown": 2}


def require_root(what: str = "eos-chaos", why: str = "it creates network namespaces and iptables rules") -> None:
    """Exit 2 with one line unless the process runs as root."""
    if os.geteuid() != 0:
        console.print(f"[red]{what} needs root[/]: {why}. Run it with sudo.")
        raise typer.Exit(2)


def stop_on_signals(stop: threading.Event, handler: Callable | None = None) -> None:
    """Route SIGINT and SIGTERM to ``handler`` (default: set ``stop``): the run or search ends
    its load early and still heals, drains, checks and cleans up."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler or (lambda *_: stop.set()))


def error_line(exc: BaseException) -> str:
    """The line ``eos-chaos run`` prints for an error that ended a run: for a namespace or link
    name, or a port, that something else holds, what it is and what to do; else the error."""
    text = str(exc)
    m = re.search(r"`ip (netns|link) add ([^\s`]+)", text)
    if m and "File exists" in text:
        kind, name = ("namespace", m.group(2)) if m.group(1) == "netns" else ("network link", m.group(2))
        return (f"{kind} {name} exists and could not be removed (another program made it or still uses it: "
                f"`ip netns pids {name}` / `ip link show {name}`); remove it, or run `sudo eos-chaos cleanup`, "
                "then run again")
    if "Address already in use" in text:
        # Kafka: "Socket server failed to bind to 198.18.0.11:9092: Address already in use"
        port = re.search(r"bind to \S*?:(\d+)|\bport (\d+)", text)
        which = f"port {port.group(1) or port.group(2)}" if port else "a port the run needs"
        return (f"{which} is taken by another program (Address already in use): `ss -ltnp` shows which; "
                "stop it, then run again")
    return f"{type(exc).__name__}: {text}"
