"""The write rate of the lose-unsynced FUSE layer (harness.cluster.unsynced_fs):
``sudo .venv/bin/python -m harness.bench.fuse_layer [--block B] [--seconds S] [--fsync-every N]``.

Sequential appends of ``block`` bytes (Kafka's segment writes: a record batch at a time) to one
file, with an fsync every ``fsync_every`` blocks (0: none, as Kafka's segments between rolls),
for ``seconds``; once through the layer, once straight into the backing directory (the same
tmpfs or disk). Also a mmap'd index-like file: 4 KiB pages written through a shared mapping
and msync'd. Reports MB/s and write calls/s; the rate a busy run needs is in docs/benchmarks.md.
"""
from __future__ import annotations

import mmap
import os
import tempfile
import time
from pathlib import Path

from harness.cluster.fuse_mounts import LazyMount


def _appends(path: Path, block: int, seconds: float, fsync_every: int) -> dict:
    data = os.urandom(block)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    n = 0
    t0 = time.perf_counter()
    try:
        while time.perf_counter() - t0 < seconds:
            for _ in range(64):
                os.write(fd, data)
                n += 1
                if fsync_every and n % fsync_every == 0:
                    os.fsync(fd)
    finally:
        os.close(fd)
    dt = time.perf_counter() - t0
    return {"mb_s": round(n * block / dt / 1e6, 1), "writes_s": round(n / dt)}


def _mmap_pages(path: Path, pages: int) -> dict:
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, pages * 4096)
        t0 = time.perf_counter()
        with mmap.mmap(fd, pages * 4096) as mm:
            for p in range(pages):
                mm[p * 4096:p * 4096 + 8] = p.to_bytes(8, "big")
            mm.flush()
        dt = time.perf_counter() - t0
    finally:
        os.close(fd)
    return {"pages_s": round(pages / dt)}


def run_fuse_bench(block: int = 16384, seconds: float = 5.0, fsync_every: int = 0,
                   where: str | None = None) -> dict:
    """Both measurements through the layer and straight to the backing dir (under ``where``,
    default a temp dir on /tmp). Needs root and FUSE."""
    base = Path(tempfile.mkdtemp(prefix="eosc-fuse-bench-", dir=where))
    m = LazyMount(base / "backing", base / "mnt", base / "layer.log", "bench")
    m.mount()
    try:
        out = {"block": block, "seconds": seconds, "fsync_every": fsync_every,
               "layer": _appends(base / "mnt" / "seg", block, seconds, fsync_every),
               "direct": _appends(base / "backing" / "direct", block, seconds, fsync_every),
               "mmap_layer": _mmap_pages(base / "mnt" / "idx", 2560),
               "mmap_direct": _mmap_pages(base / "backing" / "idx-direct", 2560),
               "layer_stats": m.request("stats")}
        out["drop"] = {k: v for k, v in m.lose_unsynced().items() if k != "files"}
    finally:
        m.unmount()
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    ap = argparse.ArgumentParser(description="write rate of the lose-unsynced FUSE layer (root)")
    ap.add_argument("--block", type=int, action="append", help="bytes per write (repeatable; default 1024 16384 131072)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--fsync-every", type=int, default=0)
    args = ap.parse_args(argv)
    for block in args.block or [1024, 16384, 131072]:
        out = run_fuse_bench(block, args.seconds, args.fsync_every)
        out.pop("layer_stats", None)
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
