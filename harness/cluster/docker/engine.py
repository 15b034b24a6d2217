"""The Docker engine: install it from Debian's packages, start it with flags that keep it off the
host's network, and hand out docker-py clients.

``dockerd`` is started with DOCKERD_FLAGS (see docs/docker.md):

- ``--iptables=false --ip6tables=false``: dockerd writes no firewall rules and leaves the FORWARD
  policy alone, so the netns backend's bridge keeps forwarding on a machine where dockerd runs;
- ``--ip-masq=false``: no NAT (no container talks to anything outside the test range);
- ``--bridge=none``: no docker0, which would take 172.17.0.0/16, a private range no test traffic
  may use here (no container registry is reachable from the machines this runs on);
- ``--default-address-pool base=198.19.0.0/16,size=24``: every network dockerd picks itself sits
  on 198.18.0.0/15, the range set aside for network testing (RFC 2544).

Without iptables rules nothing blocks host <-> container traffic: a user-defined bridge network
gives the host its gateway address on the bridge, so the host reaches containers directly.

Its own ``--config-file`` (an empty ``{}``) keeps a host ``/etc/docker/daemon.json`` from
contradicting these flags; pidfile and log live under ``<cache>/dockerd/``.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import docker
from docker.errors import DockerException


class DockerError(RuntimeError):
    """The engine, an image build or a container failed; the message is one line saying what
    to do (install, start, free, or read which log)."""



#: the test range (RFC 2544 198.18.0.0/15), upper half: harness.cluster.namespaces uses 198.18.0.0/24
ADDRESS_POOL = "198.19.0.0/16"
POOL_SIZE = 24

DOCKERD_FLAGS: list[str] = [
    "--iptables=false",
    "--ip6tables=false",
    "--ip-masq=false",
    "--bridge=none",
    "--default-address-pool", f"base={ADDRESS_POOL},size={POOL_SIZE}",
]

DEFAULT_SOCKET = "unix:///var/run/docker.sock"


def state_dir() -> Path:
    """``<cache>/dockerd``: pidfile, log and config file of the dockerd we start."""
    from harness.cluster.artifacts import cache_dir

    path = cache_dir() / "dockerd"
    path.mkdir(parents=True, exist_ok=True)
    return path


def dockerd_argv(dockerd: str = "dockerd", state: Path | None = None) -> list[str]:
    """The command line ``ensure_engine`` starts dockerd with (``state``: where its pidfile and
    config file go; default state_dir())."""
    state = state or state_dir()
    return [dockerd, "--config-file", str(state / "daemon.json"), "--pidfile", str(state / "dockerd.pid"),
            *DOCKERD_FLAGS]


def _client(timeout: float) -> docker.DockerClient:
    # version="auto": Debian's dockerd 20.10 speaks API 1.41, docker-py asks for newer by default
    return docker.DockerClient(base_url=os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET,
                               version="auto", timeout=timeout)


def engine_client(timeout: float = 10.0) -> docker.DockerClient | None:
    """A client of the engine at $DOCKER_HOST (default the local socket) when it answers
    ``ping()``; None when none answers. Never installs or starts anything."""
    try:
        client = _client(timeout)
        client.ping()
        return client
    except (DockerException, OSError):
        return None


def _apt_install(*packages: str) -> None:
    """apt-get update + install ``packages`` (no recommends). A missing /usr/sbin/policy-rc.d is
    put in place for the install: the package must not start the stock docker.service, whose
    docker0 would take 172.17.0.0/16."""
    if os.geteuid() != 0:
        raise DockerError(f"{', '.join(packages)} missing: run as root, or install it: "
                          f"sudo apt-get install -y {' '.join(packages)}")
    policy = Path("/usr/sbin/policy-rc.d")
    made_policy = False
    if not policy.exists():
        policy.write_text("#!/bin/sh\n# kafka-eos-chaos: no service starts during its install\nexit 101\n")
        policy.chmod(0o755)
        made_policy = True
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    try:
        for argv in (["apt-get", *lock, "update", "-qq"],
                     ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", *packages]):
            proc = subprocess.run(argv, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["?"]
                raise DockerError(f"`{' '.join(argv)}` failed: {last[0]} (install {' '.join(packages)} by hand)")
    finally:
        if made_policy:
            policy.unlink(missing_ok=True)


def _pid_alive(pidfile: Path) -> int | None:
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def ensure_engine(install: bool = True, timeout: float = 60.0) -> docker.DockerClient:
    """A client of a running Docker engine, installing and starting one when needed.

    - ``dockerd`` missing and ``install``: Debian's ``docker.io`` is installed (apt-get, root);
    - no daemon answers on the local socket: ``dockerd`` is started with DOCKERD_FLAGS in its
      own session (it outlives this process; stop_engine stops it), logging to
      ``<cache>/dockerd/dockerd.log``;
    - then up to ``timeout`` seconds of ``ping()``.

    A daemon that already answers is used as it is (its flags are the owner's business;
    docs/docker.md says what to check). Raises DockerError: not root, apt failed, $DOCKER_HOST
    set but not answering, dockerd exited or did not answer in time (with its log's last line).
    """
    client = engine_client()
    if client is not None:
        return client
    if os.environ.get("DOCKER_HOST"):
        raise DockerError(f"no Docker engine answers at DOCKER_HOST={os.environ['DOCKER_HOST']}: "
                          "start it, or unset DOCKER_HOST to let eos-chaos start a local dockerd")
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        if not install:
            raise DockerError("dockerd is not installed: run `eos-chaos setup --docker` "
                              "(or apt-get install -y docker.io)")
        # mmdebstrap too (the image's base, harness.cluster.docker.image): one apt-get update for both
        _apt_install("docker.io", *([] if shutil.which("mmdebstrap") else ["mmdebstrap"]))
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    if os.geteuid() != 0:
        raise DockerError("no Docker engine answers and starting dockerd needs root: "
                          "run as root, or start dockerd (see docs/docker.md)")
    state = state_dir()
    config = state / "daemon.json"
    config.write_text("{}\n")
    pid = _pid_alive(state / "dockerd.pid")
    if pid is None:
        log = open(state / "dockerd.log", "ab")
        log.write(f"\n===== eos-chaos: starting dockerd {time.strftime('%Y-%m-%dT%H:%M:%S')} =====\n".encode())
        log.flush()
        proc = subprocess.Popen(dockerd_argv(dockerd, state), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
    else:
        proc = None  # one we started earlier is still coming up (or hung): wait for it
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        client = engine_client(timeout=5.0)
        if client is not None:
            return client
        if proc is not None and proc.poll() is not None:
            raise DockerError(f"dockerd exited ({proc.returncode}): {_last_line(state / 'dockerd.log')} "
                              f"(full log: {state / 'dockerd.log'})")
        time.sleep(0.25)
    raise DockerError(f"dockerd did not answer within {timeout:.0f} s: read {state / 'dockerd.log'}")


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[-1] if lines else "(empty log)"
    except OSError:
        return "(no log)"


def stop_engine(timeout: float = 30.0) -> bool:
    """Stop the dockerd ensure_engine started (SIGTERM, SIGKILL after ``timeout`` s); False when
    its pidfile names no running process. A daemon started by anyone else is left alone."""
    pidfile = state_dir() / "dockerd.pid"
    pid = _pid_alive(pidfile)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    return True
