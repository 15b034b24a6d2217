"""Network namespaces, veth pairs and a private bridge for the cluster and its clients.

Every host of a run (each Kafka node, the client host) is a network namespace named
``eosc-<host>`` with one interface ``eth0`` on the bridge ``eosc-br`` and an address in
198.18.0.0/24, a slice of 198.18.0.0/15 (RFC 2544, set aside for network testing). The bridge
has no address: the root namespace stays out of the test network, and every process the
harness starts lives in one of its namespaces, so that ``cleanup`` can find and kill it
(``ip netns pids``) even after the controller itself crashed.

Uses iproute2 (``ip``), which needs root. Errors raise NetError naming the command that failed.
"""
from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
from dataclasses import dataclass

PREFIX = "eosc"
BRIDGE = f"{PREFIX}-br"
SUBNET = ipaddress.ip_network("198.18.0.0/24")
CLIENT_HOST = "c"


class NetError(RuntimeError):
    """An ``ip`` command failed; the message holds the command and its stderr."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``ip ARGS``; raise NetError with the command and stderr when it fails and check is set."""
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise NetError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc


def ns_name(host: str) -> str:
    return f"{PREFIX}-{host}"


def node_address(node_id: int) -> str:
    """Address of Kafka node ``node_id`` (1-based): 198.18.0.11, .12, ..."""
    return str(SUBNET.network_address + 10 + node_id)


def client_address() -> str:
    return str(SUBNET.network_address + 100)


@dataclass(frozen=True)
class Host:
    """One namespace on the test bridge."""

    name: str  # short name: "n1", "c"
    address: str

    @property
    def netns(self) -> str:
        return ns_name(self.name)

    def exec_prefix(self) -> list[str]:
        """argv prefix that runs a command inside this host's namespace (pid is preserved)."""
        return ["ip", "netns", "exec", self.netns]

    def run(self, *argv: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run ``argv`` inside this host's namespace and wait (``timeout`` seconds) for it.

        Used by the partition nemesis for ``iptables``: rules made this way live in this
        namespace only, never in the root namespace. Returns the completed process (text
        stdout/stderr); raises NetError naming the command and its stderr when it fails
        (non-zero exit with ``check``, or a timeout)."""
        cmd = self.exec_prefix() + list(argv)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise NetError(f"`{' '.join(cmd)}` timed out after {timeout:.0f} s") from exc
        if check and proc.returncode != 0:
            raise NetError(f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc


class TestNetwork:
    """The bridge and the hosts of one run. ``up()`` creates them, ``down()`` removes them."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, node_ids: list[int]):
        self.hosts: dict[str, Host] = {f"n{i}": Host(f"n{i}", node_address(i)) for i in node_ids}
        self.hosts[CLIENT_HOST] = Host(CLIENT_HOST, client_address())

    def node(self, node_id: int) -> Host:
        return self.hosts[f"n{node_id}"]

    @property
    def client(self) -> Host:
        return self.hosts[CLIENT_HOST]

    def up(self) -> None:
        """Create bridge, namespaces, veth pairs and addresses. Raises NetError."""
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("link", "set", BRIDGE, "up")
        for host in self.hosts.values():
            self._add_host(host)

    def _add_host(self, host: Host) -> None:
        ip("netns", "add", host.netns)
        outer = f"{PREFIX}-{host.name}"  # root-side end of the veth, on the bridge
        ip("link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
        ip("link", "set", outer, "master", BRIDGE)
        ip("link", "set", outer, "up")
        ip("-n", host.netns, "addr", "add", f"{host.address}/{SUBNET.prefixlen}", "dev", "eth0")
        ip("-n", host.netns, "link", "set", "eth0", "up")
        ip("-n", host.netns, "link", "set", "lo", "up")

    def down(self) -> list[str]:
        """Remove what ``up`` made; return what could not be removed (empty when clean)."""
        return cleanup()


def list_namespaces() -> list[str]:
    """Names of the harness's namespaces that exist now (from any run, this one or a crashed one)."""
    out = ip("netns", "list", check=False).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [n for n in names if n.startswith(PREFIX + "-")]


def namespace_pids(netns: str) -> list[int]:
    out = ip("netns", "pids", netns, check=False).stdout
    return [int(p) for p in out.split() if p.strip().isdigit()]


def _harness_links() -> list[str]:
    out = ip("-o", "link", "show", check=False).stdout
    links = []
    for line in out.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(PREFIX + "-"):
                links.append(name)
    return links


def cleanup() -> list[str]:
    """Kill every process inside the harness's namespaces, delete the namespaces, veths and bridge.

    Safe to call at any time, also when nothing exists. Returns a list of human-readable
    descriptions of what could not be undone (empty when everything is gone).

    Firewall rules: the partition nemesis only ever adds iptables rules inside the harness's
    namespaces (its own chain ``EOSC`` there), never in the root namespace. A network
    namespace owns its netfilter tables, so deleting it removes its rules with it (checked on
    this kernel with the nft backend: a rule added in a namespace is gone with ``ip netns del``
    and the root ruleset never changes). Nothing extra is needed for rules here; a namespace
    that cannot be deleted is reported, and with it whatever rules it still holds.
    """
    problems: list[str] = []
    for netns in list_namespaces():
        for pid in namespace_pids(netns):
            try:
                os.kill(pid, signal.SIGKILL)  # also ends SIGSTOPped processes
            except ProcessLookupError:
                pass
            except OSError as exc:
                problems.append(f"could not kill pid {pid} in {netns}: {exc}")
        proc = ip("netns", "del", netns, check=False)
        if proc.returncode != 0:
            problems.append(f"could not delete namespace {netns}: {proc.stderr.strip()}")
    for link in _harness_links():
        proc = ip("link", "del", link, check=False)
        # deleting one end of a veth removes its peer; a vanished link is not a problem
        if proc.returncode != 0 and "Cannot find device" not in proc.stderr:
            problems.append(f"could not delete link {link}: {proc.stderr.strip()}")
    for netns in list_namespaces():
        problems.append(f"namespace {netns} still exists")
    return problems


class LocalHost(Host):
    """The controller's own network namespace, for clients of a cluster the harness did not
    start (the external backend): whatever the machine reaches, they reach. Commands run as
    they are; nothing here is in a namespace ``cleanup`` could empty, so processes started on
    it must end on their own (workers and the agent exit when their stdin closes)."""

    def exec_prefix(self) -> list[str]:
        return []


LOCAL = LocalHost("local", "127.0.0.1")
