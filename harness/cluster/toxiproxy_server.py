"""A real toxiproxy server between the clients and the brokers: one proxy per broker.

Layout (docs/toxiproxy.md)::

    client namespace eosc-c                                    node namespace eosc-n<i>
    producers/consumers --> 198.18.0.100:1909<i> (proxy "n<i>") --> 198.18.0.1<i>:9094 CLIENT
    toxiproxy API 127.0.0.1:8474  <-- helper (this module, ``serve``) <-- stdin/stdout -- controller

Kafka clients reconnect to the addresses the brokers advertise, so each broker gets a second
listener, CLIENT on port 9094, advertised at its own proxy (harness.cluster); clients
bootstrap from the proxies (``bootstrap``), and every connection they make goes through
toxiproxy. Inter-broker traffic, the KRaft quorum and the admin agent stay on the direct
PLAINTEXT listener.

The controller lives in the root namespace, which has no route into the test network on
purpose (harness.cluster.namespaces), so it cannot reach the server's HTTP API itself. The API listens on the
client namespace's loopback, and a small helper process in that namespace (``python -m
harness.cluster.toxiproxy_server serve``) drives it with toxiproxy-python and answers the controller one
JSON line per request, as the admin agent does (harness.cluster.agent). Server and helper live in the
namespace, so ``net.cleanup`` kills them even after a crashed controller.

Toxics, their attributes and units: toxiproxy's README (https://github.com/Shopify/toxiproxy,
"Toxics"); nemesis.toxiproxy translates a scenario's toxic into them.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from harness.cluster.namespaces import Host, TestNetwork
from harness.util import wait_until

API_HOST = "127.0.0.1"  # inside the client namespace
API_PORT = 8474
#: the proxy of node i listens on the client host at PROXY_PORT_BASE + i (19091, 19092, ...)
PROXY_PORT_BASE = 19090
#: the brokers' CLIENT listener port (harness.cluster.CLIENT_PORT; repeated to avoid a cycle)
UPSTREAM_PORT = 9094


class ToxiproxyError(RuntimeError):
    """The toxiproxy server or its helper failed, refused a request, or did not answer in time."""


def proxy_name(node_id: int) -> str:
    """Name of node ``node_id``'s proxy: ``"n<id>"``, the node's host name."""
    return f"n{node_id}"


def proxy_addresses(network: TestNetwork, node_ids: list[int]) -> dict[int, str]:
    """node id -> "address:port" its proxy listens on (and the broker advertises)."""
    return {i: f"{network.client.address}:{PROXY_PORT_BASE + i}" for i in node_ids}


class ClientProxies:
    """The toxiproxy server of one run and the controller's handle on it.

    ``start()`` runs the server (from ``binary``, built by harness.cluster.artifacts.toxiproxy_server)
    and the helper in the client namespace and waits until every proxy listens; ``stop()``
    ends both and returns what it could not undo. In between, the methods below change
    toxics and proxies; they raise ToxiproxyError with toxiproxy's own message on failure.
    This is the ``ctx.extra["toxiproxy"]`` a nemesis gets (nemesis.toxiproxy.LinkControl).
    """

    def __init__(self, network: TestNetwork, node_ids: list[int], logdir: Path, *, seed: int = 0,
                 binary: Path | None = None):
        self.host: Host = network.client
        self.node_ids = sorted(node_ids)
        self.advertised = proxy_addresses(network, self.node_ids)
        self.upstreams = {i: f"{network.node(i).address}:{UPSTREAM_PORT}" for i in self.node_ids}
        self.logdir = Path(logdir)
        self.seed = seed
        self.binary = binary
        self.server: subprocess.Popen | None = None
        self.helper: subprocess.Popen | None = None
        self._replies: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._logs: list = []

    # -- layout --------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """Bootstrap servers for clients: every broker's proxy."""
        return ",".join(self.advertised[i] for i in self.node_ids)

    def proxy_for(self, node_id: int) -> str:
        """Name of the proxy in front of ``node_id``. Raises KeyError for an unknown node."""
        if node_id not in self.advertised:
            raise KeyError(f"no proxy for node {node_id}; proxied nodes: {self.node_ids}")
        return proxy_name(node_id)

    def config(self) -> list[dict]:
        """The server's ``-config`` file: one proxy per node, created enabled at start."""
        return [{"name": proxy_name(i), "listen": self.advertised[i], "upstream": self.upstreams[i],
                 "enabled": True} for i in self.node_ids]

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> None:
        """Start server and helper; wait until every proxy is listed, enabled and toxic-free.
        Raises ArtifactError (no binary), ToxiproxyError or WaitTimeout (see logs/toxiproxy.log)."""
        if self.binary is None:
            from harness.cluster.artifacts import toxiproxy_server

            self.binary = toxiproxy_server()
        self.logdir.mkdir(parents=True, exist_ok=True)
        cfg = self.logdir / "toxiproxy-config.json"
        cfg.write_text(json.dumps(self.config(), indent=1))
        server_log = open(self.logdir / "toxiproxy.log", "ab")
        helper_log = open(self.logdir / "toxiproxy-helper.log", "ab")
        self._logs = [server_log, helper_log]
        self.server = subprocess.Popen(
            self.host.exec_prefix() + [str(self.binary), "-host", API_HOST, "-port", str(API_PORT),
                                       "-config", str(cfg), "-seed", str(self.seed)],
            stdout=server_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=dict(os.environ, LOG_LEVEL="info"),
        )
        self.helper = subprocess.Popen(
            self.host.exec_prefix() + [sys.executable, "-m", "harness.cluster.toxiproxy_server", "serve", API_HOST, str(API_PORT)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=helper_log, text=True, bufsize=1,
            start_new_session=True,
        )
        threading.Thread(target=self._read_replies, args=(self.helper,), daemon=True,
                         name="toxiproxy-helper").start()
        wait_until(self._ready, timeout,
                   f"toxiproxy with proxies {[p['name'] for p in self.config()]} (see logs/toxiproxy.log)")

    def _ready(self) -> bool:
        if self.server is not None and self.server.poll() is not None:
            raise ToxiproxyError(f"toxiproxy server exited with code {self.server.returncode}")
        state = self.state(timeout=2)
        return all(self._clean(state.get(proxy_name(i))) for i in self.node_ids)

    @staticmethod
    def _clean(proxy: dict | None) -> bool:
        return bool(proxy) and proxy["enabled"] and not proxy["toxics"]

    def stop(self) -> list[str]:
        """End helper and server (SIGTERM, SIGKILL after 10 s); return what could not be ended."""
        problems: list[str] = []
        if self.helper is not None:
            try:
                self.helper.stdin.close()
                self.helper.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired) as exc:
                self.helper.kill()
                problems.append(f"toxiproxy helper did not exit on EOF ({type(exc).__name__}); killed")
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                problems.append("toxiproxy server ignored SIGTERM for 10 s; killed")
        for f in self._logs:
            f.close()
        self._logs = []
        return problems

    # -- requests to the helper ----------------------------------------------------------
    def _read_replies(self, helper: subprocess.Popen) -> None:
        for line in helper.stdout:
            self._replies.put(line)
        self._replies.put(None)  # the helper closed its output

    def request(self, cmd: str, timeout: float = 10.0, **args) -> Any:
        """One request to the helper. Raises ToxiproxyError (refused, helper gone, no answer in
        ``timeout`` seconds; a late answer is discarded before the next request)."""
        with self._lock:
            if self.helper is None or self.helper.poll() is not None:
                raise ToxiproxyError("toxiproxy helper is not running; see logs/toxiproxy-helper.log")
            while not self._replies.empty():  # a late answer of an earlier, timed-out request
                self._replies.get_nowait()
            self.helper.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
            self.helper.stdin.flush()
            try:
                line = self._replies.get(timeout=timeout)
            except queue.Empty:
                raise ToxiproxyError(f"toxiproxy helper gave no answer to {cmd} in {timeout:.0f} s") from None
        if line is None:
            raise ToxiproxyError("toxiproxy helper closed its output; see logs/toxiproxy-helper.log")
        reply = json.loads(line)
        if not reply["ok"]:
            raise ToxiproxyError(f"{cmd}: {reply['error']}")
        return reply["result"]

    def state(self, timeout: float = 10.0) -> dict[str, dict]:
        """Every proxy as the server sees it: ``{name: {"listen", "upstream", "enabled",
        "toxics": [{"name", "type", "stream", "toxicity", "attributes"}]}}``."""
        return self.request("state", timeout=timeout)

    def add_toxic(self, proxy: str, toxic: dict) -> dict:
        """Add ``toxic`` (toxiproxy's JSON: name, type, stream, toxicity, attributes) to
        ``proxy``; return the toxic as the server now holds it."""
        return self.request("add_toxic", proxy=proxy, toxic=toxic)

    def remove_toxic(self, proxy: str, name: str) -> bool:
        """Remove toxic ``name`` from ``proxy``; False when it was not there."""
        return self.request("remove_toxic", proxy=proxy, name=name)

    def set_enabled(self, proxy: str, enabled: bool) -> dict:
        """Disable (closes its connections, stops listening: toxiproxy's ``down``) or enable
        ``proxy``; return its state after the change."""
        return self.request("set_enabled", proxy=proxy, enabled=enabled)

    def reset(self) -> None:
        """Enable every proxy and remove every toxic (toxiproxy ``POST /reset``)."""
        self.request("reset")


# -- the helper, inside the client namespace ---------------------------------------------
def _serve_one(server, req: dict) -> Any:
    """Do one request against the toxiproxy API through toxiproxy-python."""
    cmd = req["cmd"]
    if cmd == "state":
        out = {}
        for name, proxy in server.proxies().items():
            toxics = [vars(t) for t in proxy.toxics().values()]
            out[name] = {"listen": proxy.listen, "upstream": proxy.upstream, "enabled": proxy.enabled,
                         "toxics": sorted(toxics, key=lambda t: t["name"])}
        return out
    proxy = None
    if "proxy" in req:
        proxy = server.get_proxy(req["proxy"])
        if proxy is None:
            raise LookupError(f"no proxy named {req['proxy']!r}")
    if cmd == "add_toxic":
        toxic = dict(req["toxic"])
        proxy.add_toxic(**toxic)
        held = proxy.get_toxic(toxic["name"])
        if held is None:  # toxiproxy-python does not check every status code: look again
            raise RuntimeError(f"toxic {toxic['name']!r} is not on proxy {proxy.name} after adding it")
        return vars(held)
    if cmd == "remove_toxic":
        if proxy.get_toxic(req["name"]) is None:
            return False
        proxy.destroy_toxic(req["name"])
        return True
    if cmd == "set_enabled":
        if req["enabled"]:
            proxy.enable()
        else:
            proxy.disable()
        now = server.get_proxy(proxy.name)
        if now is None or now.enabled != req["enabled"]:
            raise RuntimeError(f"proxy {proxy.name} is not {'enabled' if req['enabled'] else 'disabled'} after the change")
        return {"name": now.name, "enabled": now.enabled, "listen": now.listen}
    if cmd == "reset":
        if not server.reset():
            raise RuntimeError("POST /reset failed")
        return None
    raise ValueError(f"unknown toxiproxy helper command {cmd!r}")


def serve(api_host: str, api_port: int) -> None:
    """Answer JSON-line requests on stdin with JSON-line replies on stdout until stdin closes:
    ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "Type: message"}``."""
    from toxiproxy import Toxiproxy

    server = Toxiproxy()
    server.update_api_consumer(api_host, api_port)  # toxiproxy-python keeps this per process
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = {"ok": True, "result": _serve_one(server, json.loads(line))}
        except Exception as exc:  # answered to the controller, which raises ToxiproxyError
            detail = exc.args[0] if exc.args else exc
            if isinstance(detail, bytes):
                detail = detail.decode(errors="replace").strip()
            reply = {"ok": False, "error": f"{type(exc).__name__}: {detail}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "serve":
        sys.exit("usage: python -m harness.cluster.toxiproxy_server serve API_HOST API_PORT")
    serve(sys.argv[2], int(sys.argv[3]))
