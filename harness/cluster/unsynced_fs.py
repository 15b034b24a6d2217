"""A FUSE layer that can lose what was written but not fsynced (the ``lose-unsynced`` fault).

Jepsen puts lazyfs under each database node for this; lazyfs is not packaged anywhere this
project installs from, so this is the same idea on mfusepy (pure ctypes over Debian's libfuse3,
no compiler, no trio; docs/benchmarks.md has the write rate it sustains). The file system passes
every call through to a backing directory (``nodes/n<i>/data``) and keeps, per file written
since its last fsync, what the file was at that fsync: its size and the pre-image of every page
overwritten below that size. ``drop`` puts every such file back: the pages restored, the size
cut (or grown back) to the synced one. What a power loss would lose is therefore exactly what
the broker wrote and never fsynced; the backing directory always holds what the broker wrote
(a crash of this process or of the harness loses nothing), and appends, Kafka's usual write,
cost no copy at all.

Model, as lazyfs's: file *contents* (write, truncate) are volatile until ``fsync`` or
``fdatasync`` of that file (an ``msync`` of an mmap reaches here as writes then an fsync);
metadata (create, mkdir, rename, unlink) is durable at once. A file created and never fsynced
comes back empty, not absent. An unlinked file is gone for good. Kafka's checkpoint files
(write to a temp file, fsync, rename) come back whole; its segments come back at their last
fsync (a roll or a flush), its index files as they were at their last msync.

The kernel's page cache stays on (no direct_io): Kafka mmaps its index files, and writable
shared mmap on FUSE needs the page cache. So dirty mmap pages of a killed broker may still sit
in the kernel; ``LazyMount.lose_unsynced`` (harness.cluster.fuse_mounts) first has the kernel
write them back (syncfs: they arrive here as unsynced writes), then drops, and each file's
cached pages are thrown away by the kernel when the restarted broker opens it (no keep_cache).

Control: one JSON line per connection on the abstract Unix socket named on the command line:
``{"cmd": "drop"}`` -> ``{"bytes": N, "files": {relpath: bytes}, "pages": n, "truncated": n}``;
``{"cmd": "sync"}`` (everything counts as on disk, e.g. after ``kafka-storage format``);
``{"cmd": "stats"}``.

Run: ``python -m harness.cluster.unsynced_fs BACKING MOUNTPOINT --control NAME`` (foreground;
``umount MOUNTPOINT`` ends it). The mount shows in /proc/mounts as ``eosc-lazyfs:<name>`` of
type ``fuse.eosc-lazyfs``, which is how ``eos-chaos cleanup`` finds it.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

PAGE = 4096
FSTYPE = "eosc-lazyfs"  # /proc/mounts: source "eosc-lazyfs:<name>", type "fuse.eosc-lazyfs"
#: the pre-image of a page that was all zeros (a hole of a preallocated index file, say)
ZERO = b""


@dataclass
class FileState:
    """A file written since its last fsync: its size then, and the pre-images (at that fsync) of
    the pages overwritten since, page number -> bytes (the page's bytes below ``synced_size``;
    ZERO when they were all zeros)."""

    synced_size: int
    saved: dict[int, bytes] = field(default_factory=dict)
    #: bytes of the write calls since that fsync (what a drop loses; an ftruncate that only
    #: preallocates, as Kafka's index files, writes none)
    written: int = 0


class Journal:
    """The bookkeeping of unsynced writes, by inode number; every method takes an open fd of
    the backing file (pure of FUSE: the unit tests drive it on plain files)."""

    def __init__(self) -> None:
        self.dirty: dict[int, FileState] = {}
        self.stats = {"writes": 0, "bytes_written": 0, "fsyncs": 0, "pages_saved": 0, "drops": 0}

    def _state(self, ino: int, fd: int) -> FileState:
        st = self.dirty.get(ino)
        if st is None:
            st = self.dirty[ino] = FileState(os.fstat(fd).st_size)
        return st

    def _save(self, st: FileState, fd: int, lo: int, hi: int) -> None:
        """Keep the pre-images of the pages of [lo, hi) (clipped to the synced size) not kept yet."""
        hi = min(hi, st.synced_size)
        if lo >= hi:
            return
        for page in range(lo // PAGE, (hi - 1) // PAGE + 1):
            if page in st.saved:
                continue
            want = min(PAGE, st.synced_size - page * PAGE)
            data = os.pread(fd, want, page * PAGE)
            data += bytes(want - len(data))  # past the current end: zeros, as a regrown file reads
            st.saved[page] = ZERO if not any(data) else data
            self.stats["pages_saved"] += 1

    def created(self, ino: int) -> None:
        """A new file: nothing of it is on disk until it is fsynced."""
        self.dirty[ino] = FileState(0)

    def before_write(self, ino: int, fd: int, offset: int, length: int) -> None:
        st = self._state(ino, fd)
        self._save(st, fd, offset, offset + length)
        st.written += length
        self.stats["writes"] += 1
        self.stats["bytes_written"] += length

    def before_truncate(self, ino: int, fd: int, length: int) -> None:
        st = self._state(ino, fd)
        self._save(st, fd, length, os.fstat(fd).st_size)

    def synced(self, ino: int) -> None:
        """fsync / fdatasync: the file as it is now is on disk."""
        self.dirty.pop(ino, None)
        self.stats["fsyncs"] += 1

    def forget(self, ino: int) -> None:
        """The file was unlinked (or renamed over): nothing of it is to be restored."""
        self.dirty.pop(ino, None)

    def sync_all(self) -> int:
        n = len(self.dirty)
        self.dirty.clear()
        return n

    def drop(self, paths: dict[int, str], root: str = "") -> dict[str, Any]:
        """Put every dirty file back as it was at its last fsync. ``paths``: inode number ->
        path of the files that still exist (a dirty inode without a path was unlinked).
        Returns ``bytes`` lost (of the write calls since each file's last fsync), ``files``
        (path relative to ``root`` -> those bytes, files that lost any), ``pages`` restored
        (pre-images that differed from the file) and ``truncated`` (files whose size was put
        back: appends cut off, a preallocation undone)."""
        out: dict[str, Any] = {"bytes": 0, "files": {}, "pages": 0, "truncated": 0}
        for ino, st in sorted(self.dirty.items()):
            path = paths.get(ino)
            if path is None:
                continue
            fd = os.open(path, os.O_RDWR)
            try:
                lost = st.written
                for page, pre in sorted(st.saved.items()):
                    want = min(PAGE, st.synced_size - page * PAGE)
                    pre = pre or bytes(want)
                    now = os.pread(fd, want, page * PAGE)
                    if now != pre:
                        os.pwrite(fd, pre, page * PAGE)
                        out["pages"] += 1
                if os.fstat(fd).st_size != st.synced_size:
                    os.ftruncate(fd, st.synced_size)
                    out["truncated"] += 1
            finally:
                os.close(fd)
            if lost:
                out["bytes"] += lost
                out["files"][os.path.relpath(path, root) if root else path] = lost
        self.dirty.clear()
        self.stats["drops"] += 1
        return out


def inode_paths(root: str, inos: set[int]) -> dict[int, str]:
    """Inode number -> path under ``root`` of the regular files among ``inos``."""
    found: dict[int, str] = {}
    if not inos:
        return found
    for d, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            if st.st_ino in inos:
                found[st.st_ino] = p
    return found


def make_operations(root: str):
    """The mfusepy Operations over ``root`` with a Journal (imported here: the unit tests of
    Journal need no libfuse)."""
    import mfusepy

    class Ops(mfusepy.Operations):
        use_ns = True

        def __init__(self) -> None:
            self.root = os.path.realpath(root)
            self.journal = Journal()
            self.mutex = threading.Lock()
            self.ino: dict[int, int] = {}  # our fd -> inode number
            self.t0 = time.monotonic()

        def _p(self, path: str) -> str:
            return self.root + path

        # -- control --------------------------------------------------------------------
        def control(self, cmd: str) -> dict[str, Any]:
            with self.mutex:
                if cmd == "drop":
                    paths = inode_paths(self.root, set(self.journal.dirty))
                    return self.journal.drop(paths, self.root)
                if cmd == "sync":
                    return {"files": self.journal.sync_all()}
                if cmd == "stats":
                    return {**self.journal.stats, "dirty_files": len(self.journal.dirty)}
            return {"error": f"unknown command {cmd!r}; known: drop, sync, stats"}

        def destroy(self, path):
            # the layer's log ends with what it saw: the write rate a run needs (docs/benchmarks.md)
            up = round(time.monotonic() - self.t0, 1)
            print(f"eosc-lazyfs stats: {json.dumps(dict(self.journal.stats, seconds=up))}", flush=True)

        # -- metadata: passed through, durable at once ------------------------------------
        def getattr(self, path, fh=None):
            st = os.fstat(fh) if fh is not None else os.lstat(self._p(path))
            return {k: getattr(st, k) for k in ("st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid",
                                                 "st_size", "st_blocks", "st_blksize")} | {
                "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}

        def access(self, path, amode):
            if not os.access(self._p(path), amode):
                raise mfusepy.FuseOSError(errno.EACCES)
            return 0

        def readdir(self, path, fh):
            return [".", "..", *os.listdir(self._p(path))]

        def readlink(self, path):
            return os.readlink(self._p(path))

        def mkdir(self, path, mode):
            os.mkdir(self._p(path), mode)
            return 0

        def rmdir(self, path):
            os.rmdir(self._p(path))
            return 0

        def _forget_path(self, p: str) -> None:
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                return
            if st.st_nlink <= 1:
                self.journal.forget(st.st_ino)

        def unlink(self, path):
            with self.mutex:
                self._forget_path(self._p(path))
                os.unlink(self._p(path))
            return 0

        def rename(self, old, new):
            with self.mutex:
                self._forget_path(self._p(new))
                os.rename(self._p(old), self._p(new))
            return 0

        def symlink(self, target, source):
            os.symlink(source, self._p(target))
            return 0

        def link(self, target, source):
            os.link(self._p(source), self._p(target))
            return 0

        def chmod(self, path, mode):
            os.chmod(self._p(path), mode)
            return 0

        def chown(self, path, uid, gid):
            os.chown(self._p(path), uid, gid)
            return 0

        def utimens(self, path, times=None):
            os.utime(self._p(path), ns=times) if times else os.utime(self._p(path))
            return 0

        def statfs(self, path):
            sv = os.statvfs(self._p(path))
            return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                 "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

        # -- contents: volatile until fsync ---------------------------------------------
        def _opened(self, fd: int) -> int:
            self.ino[fd] = os.fstat(fd).st_ino
            return fd

        def open(self, path, flags):
            fd = os.open(self._p(path), flags & ~os.O_TRUNC)
            if flags & os.O_TRUNC:
                with self.mutex:
                    self.journal.before_truncate(os.fstat(fd).st_ino, fd, 0)
                    os.ftruncate(fd, 0)
            return self._opened(fd)

        def create(self, path, mode, flags=os.O_WRONLY):
            with self.mutex:
                fd = os.open(self._p(path), (flags | os.O_CREAT) & ~os.O_TRUNC, mode)
                st = os.fstat(fd)
                if st.st_size == 0:
                    self.journal.created(st.st_ino)
                self.ino[fd] = st.st_ino
            return fd

        def read(self, path, size, offset, fh):
            return os.pread(fh, size, offset)

        def write(self, path, data, offset, fh):
            with self.mutex:
                self.journal.before_write(self.ino[fh], fh, offset, len(data))
                return os.pwrite(fh, data, offset)

        def truncate(self, path, length, fh=None):
            fd = fh if fh is not None else os.open(self._p(path), os.O_RDWR)
            try:
                with self.mutex:
                    self.journal.before_truncate(os.fstat(fd).st_ino, fd, length)
                    os.ftruncate(fd, length)
            finally:
                if fh is None:
                    os.close(fd)
            return 0

        def fsync(self, path, datasync, fh):
            with self.mutex:
                self.journal.synced(self.ino[fh])
            return 0

        def fsyncdir(self, path, datasync, fh):
            return 0

        def flush(self, path, fh):
            return 0

        def release(self, path, fh):
            self.ino.pop(fh, None)
            os.close(fh)
            return 0

    return Ops()


def serve_control(ops, name: str) -> threading.Thread:
    """Answer control commands on the abstract Unix socket ``name`` (one JSON line in, one out)."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind("\0" + name)
    srv.listen(8)

    def loop() -> None:
        while True:
            conn, _ = srv.accept()
            with conn:
                try:
                    line = conn.makefile("rb").readline()
                    reply = ops.control(json.loads(line)["cmd"])
                except Exception as exc:  # a bad request is answered, never fatal
                    reply = {"error": f"{type(exc).__name__}: {exc}"}
                conn.sendall(json.dumps(reply).encode() + b"\n")

    t = threading.Thread(target=loop, name="control", daemon=True)
    t.start()
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("backing")
    ap.add_argument("mountpoint")
    ap.add_argument("--control", required=True, help="abstract Unix socket name for control commands")
    ap.add_argument("--name", default="fs", help="shown in /proc/mounts as eosc-lazyfs:<name>")
    args = ap.parse_args(argv)
    import mfusepy

    ops = make_operations(args.backing)
    serve_control(ops, args.control)
    try:  # the broker waits on every call it makes here: serve it ahead of the crowd (root only)
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except OSError:
        pass
    print(f"eosc-lazyfs {args.name}: {args.backing} on {args.mountpoint}", flush=True)
    # hard_remove: an open file that is unlinked goes at once (no .fuse_hidden* in Kafka's
    # partition dirs); page cache on (direct_io off) for Kafka's mmapped index files;
    # nothreads: one request at a time. Python runs one thread at a time anyway, and libfuse's
    # worker threads only fight over the GIL: 8 threads doing 700-byte pwrite+pread+fstat
    # through the layer on this loaded machine made 7562 calls in 4 s (p50 1.0 ms, p99 43 ms)
    # multithreaded, 26299 (p50 0.86 ms, p99 8.6 ms) single-threaded
    mfusepy.FUSE(ops, args.mountpoint, foreground=True, fsname=f"{FSTYPE}:{args.name}", subtype=FSTYPE,
                 hard_remove=True, nothreads=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
