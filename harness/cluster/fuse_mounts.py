"""The harness's FUSE mounts (harness.cluster.unsynced_fs) seen from the controller: mount one
over a broker's log dir, talk to it, lose its unsynced writes, unmount it, and find and remove
every one a crashed run left (``eos-chaos cleanup``).

Each mount is a process of its own (``python -m harness.cluster.unsynced_fs``, own session, so
a Ctrl-C on the controller does not take a broker's disk away under it), listed in
/proc/mounts as type ``fuse.eosc-lazyfs``: that type alone is how leftovers are found, also
after a SIGKILL of the controller.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.cluster.unsynced_fs import FSTYPE

MOUNT_TYPE = f"fuse.{FSTYPE}"


class FuseError(RuntimeError):
    """A layer could not be mounted or answered no control command; the message says why."""


def missing() -> list[str]:
    """What the layer needs that this machine lacks ("" list when it can mount): /dev/fuse,
    libfuse3 (Debian fuse3 / libfuse3-3) and the mfusepy package."""
    out = []
    if not os.path.exists("/dev/fuse"):
        out.append("/dev/fuse (the kernel's FUSE module: modprobe fuse)")
    if shutil.which("fusermount3") is None:
        out.append("fuse3 (apt-get install fuse3)")
    try:
        import mfusepy  # noqa: F401  (loads libfuse3: fails without it)
    except ImportError:
        out.append("mfusepy (pip install -e .)")
    except (OSError, EnvironmentError) as exc:
        out.append(f"libfuse3 ({exc}; apt-get install fuse3)")
    return out


def _unescape(field: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as octal (\\040 ...)."""
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, ch)
    return field


def harness_mounts(mounts_text: str | None = None) -> list[tuple[str, str]]:
    """(source, mount point) of every harness FUSE mount in /proc/mounts (or ``mounts_text``)."""
    if mounts_text is None:
        mounts_text = Path("/proc/mounts").read_text()
    out = []
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == MOUNT_TYPE:
            out.append((_unescape(parts[0]), _unescape(parts[1])))
    return out


def _umount(target: str) -> str | None:
    """Unmount ``target``, lazily when it is busy; None when done, else why not."""
    for argv in (["umount", target], ["umount", "-l", target]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if r.returncode == 0:
            return None
        err = (r.stderr or r.stdout).strip()
    return err or f"umount {target} failed"


def layer_pids(mountpoint: str) -> list[int]:
    """Pids of the layer processes serving ``mountpoint`` (their argv names it)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"harness.cluster.unsynced_fs" in argv and os.fsencode(mountpoint) in argv:
            pids.append(int(d.name))
    return pids


def _end_layer(pids: list[int], grace_s: float = 5.0) -> None:
    """After the unmount: wait for the layer processes to exit, SIGKILL what is left. A copy of
    the mount in another mount namespace (a process started with ``ip netns exec`` while the
    mount existed keeps one) holds the FUSE connection open, so the process may not see the
    unmount; killing it ends that copy too (its reads fail with ENOTCONN)."""
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if Path(f"/proc/{p}").exists() and
                not Path(f"/proc/{p}/stat").read_text().split(")")[-1].split()[0] == "Z"]
        time.sleep(0.05)
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


#: where a cluster's layers are mounted (harness.cluster.kafka, docker_backend): n<i>/lazyfs in
#: the run's nodes/ folder
CLUSTER_MOUNT = re.compile(r"/n\d+/lazyfs$")


def cleanup_mounts(under: str | Path | None = None, clusters_only: bool = False) -> list[str]:
    """Unmount every harness FUSE mount (only those at or below ``under`` when given; only a
    cluster's, ``.../n<i>/lazyfs``, with ``clusters_only``: what a run's leftover cleanup may
    take, leaving a unit test's or a benchmark's layer alone), lazily when busy, and end its
    process; return what could not be unmounted, one line each (empty when none is left)."""
    problems = []
    root = None if under is None else os.path.join(os.path.realpath(under), "")
    for source, target in harness_mounts():
        if root is not None and not os.path.join(target, "").startswith(root):
            continue
        if clusters_only and not CLUSTER_MOUNT.search(target):
            continue
        pids = layer_pids(target)
        why = _umount(target)
        if why is not None:
            problems.append(f"could not unmount FUSE mount {source} on {target}: {why}")
            continue
        _end_layer(pids)
    return problems


_libc = None


def syncfs(path: str | Path) -> None:
    """syncfs(2) of the file system holding ``path``: the kernel writes back its dirty pages."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), str(path))
    finally:
        os.close(fd)


class LazyMount:
    """``backing`` mounted at ``mountpoint`` through the layer; ``name`` ("n1") labels it."""

    def __init__(self, backing: Path, mountpoint: Path, log_path: Path, name: str):
        self.backing, self.mountpoint = Path(backing), Path(mountpoint)
        self.log_path, self.name = Path(log_path), name
        tag = hashlib.sha1(str(self.mountpoint.resolve()).encode()).hexdigest()[:12]
        self.control_name = f"{FSTYPE}-{tag}"
        self.proc: subprocess.Popen | None = None

    def mounted(self) -> bool:
        target = str(self.mountpoint.resolve())
        return any(t == target for _, t in harness_mounts())

    def mount(self, timeout: float = 20.0) -> None:
        """Start the layer's process and wait for the mount. Raises FuseError with its log."""
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.cluster.unsynced_fs", str(self.backing.resolve()),
                 str(self.mountpoint.resolve()),
                 "--control", self.control_name, "--name", self.name],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.mounted():
                try:
                    self.request("stats", timeout=5)
                    return
                except FuseError:
                    pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        tail = self.log_path.read_text(errors="replace")[-1500:] if self.log_path.exists() else ""
        self.unmount()
        raise FuseError(f"the FUSE layer over {self.backing} did not mount at {self.mountpoint} in {timeout:g} s "
                        f"(see {self.log_path}):\n{tail}")

    def request(self, cmd: str, timeout: float = 60.0) -> dict[str, Any]:
        """Send a control command; its JSON answer. Raises FuseError."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect("\0" + self.control_name)
                s.sendall(json.dumps({"cmd": cmd}).encode() + b"\n")
                reply = json.loads(s.makefile("rb").readline())
        except (OSError, ValueError) as exc:
            raise FuseError(f"FUSE layer {self.name} did not answer {cmd!r}: {exc}") from None
        if "error" in reply:
            raise FuseError(f"FUSE layer {self.name}: {reply['error']}")
        return reply

    def sync_all(self) -> dict[str, Any]:
        """Everything written so far counts as on disk (after formatting the log dir)."""
        syncfs(self.mountpoint)
        return self.request("sync")

    def lose_unsynced(self) -> dict[str, Any]:
        """Lose what was written and not fsynced. Call it with the broker dead (the order of the
        fault: kill, this, start): the kernel first writes back the dead broker's dirty mmap
        pages (so they reach the layer as unsynced writes and are lost too, as on a power
        loss), then the layer restores every file to its last fsync. Returns the layer's
        report: ``bytes``, ``files`` (path -> bytes), ``pages``, ``truncated``."""
        syncfs(self.mountpoint)
        return self.request("drop")

    def unmount(self) -> list[str]:
        """Unmount (lazily when busy) and end the layer's process; what could not be done."""
        problems = []
        if self.mounted():
            why = _umount(str(self.mountpoint.resolve()))
            if why:
                problems.append(f"could not unmount the FUSE layer on {self.mountpoint}: {why}")
        if self.proc is not None:
            _end_layer([self.proc.pid] if self.proc.poll() is None else [])
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                problems.append(f"the FUSE layer process of {self.name} (pid {self.proc.pid}) did not exit")
        if not problems:
            try:
                self.mountpoint.rmdir()
            except OSError:
                pass
        return problems
