"""Issue 24: the lose-unsynced FUSE layer's bookkeeping (on plain files, and on a real mount
as root), the power-loss and clock-skew nemeses on stand-ins, scenario flags and cleanup's
parsing of /proc/mounts."""
import os
import shutil

import pytest

from harness.cluster import unsynced_fs as ufs
from harness.cluster.fuse_mounts import MOUNT_TYPE, harness_mounts
from harness.run.scenario import Scenario
from nemesis.clock import ClockNemesis, choose_clock_target, offset_range
from nemesis.core import NemesisContext
from nemesis.power import LoseUnsyncedNemesis, loss_fields
from nemesis.registry import FAULTS
import random


# ---------------------------------------------------------------- the journal, on plain files

def _write(j, fd, data, off):
    j.before_write(os.fstat(fd).st_ino, fd, off, len(data))
    os.pwrite(fd, data, off)


def _fsync(j, fd):
    j.synced(os.fstat(fd).st_ino)


def _drop(j, root):
    return j.drop(ufs.inode_paths(str(root), set(j.dirty)), str(root))


def test_appends_after_the_last_fsync_are_lost_and_the_synced_prefix_stays(tmp_path):
    j = ufs.Journal()
    p = tmp_path / "seg.log"
    fd = os.open(p, os.O_CREAT | os.O_RDWR)
    j.created(os.fstat(fd).st_ino)
    _write(j, fd, b"a" * 5000, 0)
    _fsync(j, fd)
    _write(j, fd, b"b" * 3000, 5000)
    os.close(fd)
    out = _drop(j, tmp_path)
    assert p.read_bytes() == b"a" * 5000
    assert out["bytes"] == 3000 and out["files"] == {"seg.log": 3000} and out["truncated"] == 1


def test_overwrites_below_the_synced_size_are_put_back_page_by_page(tmp_path):
    j = ufs.Journal()
    p = tmp_path / "idx"
    p.write_bytes(bytes(3 * ufs.PAGE))  # existed before: counts as synced at its size
    fd = os.open(p, os.O_RDWR)
    _write(j, fd, b"x" * 10, 100)
    _write(j, fd, b"y" * 10, ufs.PAGE + 5)
    _write(j, fd, b"z" * 10, 100)  # the same page again: its pre-image is the synced one
    os.close(fd)
    assert j.stats["pages_saved"] == 2
    out = _drop(j, tmp_path)
    assert p.read_bytes() == bytes(3 * ufs.PAGE)
    assert out["pages"] == 2 and out["bytes"] == 30 and out["truncated"] == 0


def test_a_file_never_fsynced_comes_back_empty_and_an_unlinked_one_stays_gone(tmp_path):
    j = ufs.Journal()
    new, gone = tmp_path / "new", tmp_path / "gone"
    for p in (new, gone):
        fd = os.open(p, os.O_CREAT | os.O_RDWR)
        j.created(os.fstat(fd).st_ino)
        _write(j, fd, b"q" * 100, 0)
        os.close(fd)
    j.forget(os.stat(gone).st_ino)
    gone.unlink()
    out = _drop(j, tmp_path)
    assert new.exists() and new.read_bytes() == b""
    assert not gone.exists() and out["files"] == {"new": 100}


def test_a_truncation_below_the_synced_size_is_undone(tmp_path):
    j = ufs.Journal()
    p = tmp_path / "f"
    p.write_bytes(b"0123456789" * 1000)
    fd = os.open(p, os.O_RDWR)
    j.before_truncate(os.fstat(fd).st_ino, fd, 10)
    os.ftruncate(fd, 10)
    _fsync(j, fd) if False else None  # not synced: the cut is lost
    os.close(fd)
    _drop(j, tmp_path)
    assert p.read_bytes() == b"0123456789" * 1000


def test_fsync_makes_it_durable_and_sync_all_forgets_everything(tmp_path):
    j = ufs.Journal()
    p = tmp_path / "f"
    fd = os.open(p, os.O_CREAT | os.O_RDWR)
    j.created(os.fstat(fd).st_ino)
    _write(j, fd, b"a" * 10, 0)
    _fsync(j, fd)
    assert _drop(j, tmp_path)["bytes"] == 0 and p.read_bytes() == b"a" * 10
    _write(j, fd, b"b" * 10, 10)
    assert j.sync_all() == 1
    assert _drop(j, tmp_path)["bytes"] == 0 and p.read_bytes() == b"a" * 10 + b"b" * 10
    os.close(fd)


# ---------------------------------------------------------------- a real mount (root, FUSE)

def _can_mount() -> bool:
    from harness.cluster.fuse_mounts import missing

    return os.geteuid() == 0 and not missing()


@pytest.mark.skipif(not _can_mount(), reason="needs root, /dev/fuse, fuse3 and mfusepy")
def test_real_mount_write_fsync_part_drop_and_mmap(tmp_path):
    import mmap

    from harness.cluster.fuse_mounts import LazyMount

    m = LazyMount(tmp_path / "backing", tmp_path / "mnt", tmp_path / "layer.log", "unit")
    m.mount()
    try:
        mnt = tmp_path / "mnt"
        assert (str(mnt.resolve()) in {t for _, t in harness_mounts()})
        (mnt / "t0-1").mkdir()
        fd = os.open(mnt / "t0-1" / "00.log", os.O_CREAT | os.O_RDWR)
        os.write(fd, b"A" * 10000)
        os.fsync(fd)
        os.write(fd, b"B" * 5000)
        os.close(fd)
        # a checkpoint as Kafka writes one: temp file, fsync, rename
        fd = os.open(mnt / "cp.tmp", os.O_CREAT | os.O_WRONLY)
        os.write(fd, b"checkpoint")
        os.fsync(fd)
        os.close(fd)
        os.rename(mnt / "cp.tmp", mnt / "cp")
        # an index file as Kafka keeps one: preallocated, written through a shared mmap
        fd = os.open(mnt / "00.index", os.O_CREAT | os.O_RDWR)
        os.ftruncate(fd, 8 * 4096)
        os.fsync(fd)
        with mmap.mmap(fd, 8 * 4096) as mm:
            mm[0:8] = b"synced!!"
            mm.flush()  # msync: reaches the layer as writes and an fsync
            mm[4096:4104] = b"unsynced"  # dirty in the kernel only: lost with the power
        os.close(fd)
        out = m.lose_unsynced()
        assert out["bytes"] == 5000 + 4096, out  # the kernel writes the dirty mmap page back whole
        assert set(out["files"]) == {"t0-1/00.log", "00.index"}
        assert (mnt / "t0-1" / "00.log").read_bytes() == b"A" * 10000
        assert (mnt / "cp").read_bytes() == b"checkpoint"
        idx = (mnt / "00.index").read_bytes()
        assert idx[:8] == b"synced!!" and idx[4096:4104] == bytes(8) and len(idx) == 8 * 4096
        assert (tmp_path / "backing" / "t0-1" / "00.log").stat().st_size == 10000  # the data is in backing
    finally:
        assert m.unmount() == []
    assert str((tmp_path / "mnt").resolve()) not in {t for _, t in harness_mounts()}
    assert m.proc.poll() is not None


@pytest.mark.skipif(not _can_mount(), reason="needs root, /dev/fuse, fuse3 and mfusepy")
def test_cleanup_unmounts_a_layer_whose_controller_is_gone(tmp_path):
    """A controller SIGKILLed mid-run leaves the layer's process and mount behind (its own
    session): cleanup finds it in /proc/mounts by its type and unmounts it."""
    from harness.cluster.fuse_mounts import LazyMount, cleanup_mounts

    m = LazyMount(tmp_path / "b", tmp_path / "m", tmp_path / "l.log", "leftover")
    m.mount()
    proc, m.proc = m.proc, None  # forgotten, as by a dead controller
    assert cleanup_mounts(under=tmp_path) == []  # only this test's: a run may be going on
    assert str((tmp_path / "m").resolve()) not in {t for _, t in harness_mounts()}
    proc.wait(timeout=10)  # the layer's process is gone (exited or killed by cleanup)


def test_a_runs_leftover_cleanup_takes_only_cluster_layers():
    from harness.cluster.fuse_mounts import CLUSTER_MOUNT

    assert CLUSTER_MOUNT.search("/work/main/results/power-loss/20261125T021559Z-s1/nodes/n2/lazyfs")
    assert not CLUSTER_MOUNT.search("/tmp/pytest-of-root/pytest-3/test_real_mount0/mnt")
    assert not CLUSTER_MOUNT.search("/tmp/eosc-fuse-bench-x/mnt")


def test_harness_mounts_are_found_by_type_with_escaped_paths():
    text = (f"eosc-lazyfs:n1 /r/a\\040b/nodes/n1/lazyfs {MOUNT_TYPE} rw,nosuid 0 0\n"
            "tmpfs /tmp tmpfs rw 0 0\n"
            "bindfs /x fuse.bindfs rw 0 0\n")
    assert harness_mounts(text) == [("eosc-lazyfs:n1", "/r/a b/nodes/n1/lazyfs")]


# ---------------------------------------------------------------- the nemeses on stand-ins

class Node:
    def __init__(self, log, i):
        self.log, self.i = log, i

    def kill(self):
        self.log.append(("kill", self.i))
        return True

    def lose_unsynced(self):
        self.log.append(("drop", self.i))
        return {"bytes": 123, "files": {f"t0-{k}/0.log": k for k in range(30)}, "pages": 2, "truncated": 29}

    def start(self):
        self.log.append(("start", self.i))
        return 100 + self.i

    def set_clock_offset(self, s):
        self.log.append(("clock", self.i, s))
        return 0.0


class Cluster:
    name = "stand-in"

    def __init__(self):
        self.log = []

    def node_ids(self):
        return [1, 2, 3]

    def node(self, i):
        return Node(self.log, i)


def test_lose_unsynced_kills_then_drops_then_records_the_loss_and_power_on_starts():
    c = Cluster()
    n = LoseUnsyncedNemesis(NemesisContext(cluster=c))
    done = n.invoke({"f": "lose-unsynced", "value": {"node": 2}})
    assert c.log == [("kill", 2), ("drop", 2)]
    v = done["value"]
    assert v["node"] == 2 and v["lost_bytes"] == 123 and v["lost_file_count"] == 30
    assert len(v["lost_files"]) == 20 and "t0-29/0.log" in v["lost_files"]  # the largest 20
    assert "t0-0/0.log" not in v["lost_files"]
    assert "lost 123 unsynced bytes" in v["result"]
    done = n.invoke({"f": "power-on", "value": {"node": 2}})
    assert c.log[-1] == ("start", 2) and "lost_bytes" not in done["value"]
    assert n.teardown() == []


def test_every_node_at_once_is_killed_before_any_loses_its_writes():
    from nemesis.power import choose_power_target

    assert choose_power_target(random.Random(1), {"fault": "lose-unsynced", "nodes": "all"}, [1, 2, 3], []) == \
        {"nodes": "all"}
    c = Cluster()
    n = LoseUnsyncedNemesis(NemesisContext(cluster=c))
    done = n.invoke({"f": "lose-unsynced", "value": {"nodes": "all", "params": {"nodes": "all"}}})
    assert [e[0] for e in c.log] == ["kill"] * 3 + ["drop"] * 3
    v = done["value"]
    assert v["nodes"] == [1, 2, 3] and v["lost_bytes"] == 369 and v["lost_file_count"] == 90
    assert "n3/t0-29/0.log" in v["lost_files"]
    done = n.invoke({"f": "power-on", "value": {"nodes": "all", "params": {"nodes": "all"}}})
    assert c.log[-3:] == [("start", 1), ("start", 2), ("start", 3)] and "pids" in done["value"]["result"]
    with pytest.raises(ValueError, match="one or all"):
        FAULTS["lose-unsynced"].validate({"fault": "lose-unsynced", "nodes": "some"})


def test_lose_unsynced_refuses_a_node_without_the_layer():
    class Bare(Cluster):
        def node(self, i):
            class N:
                def kill(self):
                    return True
            return N()

    n = LoseUnsyncedNemesis(NemesisContext(cluster=Bare()))
    with pytest.raises(RuntimeError, match="no FUSE layer"):
        n.invoke({"f": "lose-unsynced", "value": {"node": 1}})


def test_loss_fields_of_an_empty_drop():
    assert loss_fields({"bytes": 0, "files": {}, "pages": 0, "truncated": 0})["lost_bytes"] == 0


def test_clock_skew_sets_and_resets_the_offset_the_schedule_drew():
    rng = random.Random(4)
    value = choose_clock_target(rng, {"fault": "clock-skew", "offset_s": [100, 200]}, [1, 2, 3], [])
    assert 100 <= value["offset_s"] <= 200 and value["node"] in (1, 2, 3)
    c = Cluster()
    n = ClockNemesis(NemesisContext(cluster=c))
    n.invoke({"f": "clock-skew", "value": dict(value)})
    n.invoke({"f": "clock-reset", "value": dict(value)})
    assert c.log == [("clock", value["node"], value["offset_s"]), ("clock", value["node"], 0.0)]


@pytest.mark.parametrize("bad", [True, "5m", [3, 1], [1, 2, 3], 10**6])
def test_clock_offsets_are_checked(bad):
    with pytest.raises(ValueError):
        offset_range({"offset_s": bad})
    assert offset_range({"offset_s": 30}) == (30.0, 30.0)


def test_faults_turn_on_the_broker_layers_and_other_backends_refuse_them():
    scn = Scenario.model_validate({"name": "p", "nemesis": {"faults": ["lose-unsynced"]}})
    assert scn.cluster.lazyfs and not scn.cluster.faketime
    scn = Scenario.model_validate({"name": "c", "nemesis": {"faults": ["clock-skew"]}})
    assert scn.cluster.faketime and not scn.cluster.lazyfs
    assert FAULTS["lose-unsynced"].needs == ("lazyfs",)
    scn = Scenario.model_validate({"name": "d", "cluster": {"backend": "docker"},
                                   "nemesis": {"faults": ["lose-unsynced", "clock-skew"]}})
    assert scn.cluster.lazyfs and scn.cluster.faketime
    with pytest.raises(ValueError, match="netns and docker backends only"):
        Scenario.model_validate({"name": "e", "cluster": {"backend": "external", "external": {"bootstrap": "h:9092"}},
                                 "nemesis": {"faults": ["lose-unsynced"]}})
    with pytest.raises(ValueError, match="at least 3 nodes"):
        Scenario.model_validate({"name": "x", "cluster": {"nodes": 1}, "nemesis": {"faults": ["lose-unsynced"]}})


def test_a_node_under_libfaketime_gets_its_control_file(tmp_path):
    from harness.cluster.kafka import KafkaNode, libfaketime_path

    class Host:
        address = "198.18.0.11"

        def exec_prefix(self):
            return []

    node = KafkaNode(1, Host(), dist=None, workdir=tmp_path, log_path=tmp_path / "n1.log")
    assert node.clock_env() == []
    node.clock_file = tmp_path / "faketime.rc"
    if libfaketime_path() is None:
        pytest.skip("libfaketime not installed")
    env = node.clock_env()
    assert env[0] == "env" and "FAKETIME_DONT_FAKE_MONOTONIC=1" in env
    assert node.clock_file.read_text() == "+0s\n"
    assert node.set_clock_offset(-120.5) == 0.0
    assert node.clock_file.read_text() == "-120.5s\n"
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_jvm_under_the_nodes_libfaketime_settings_is_offset_and_still_waits(tmp_path):
    """The settings KafkaNode.clock_env gives a broker, on a real JVM: currentTimeMillis moved
    by the control file's offset, timed waits as long as asked (with libfaketime's automatic
    pthread_cond_timedwait "monotonic fix" they returned at once)."""
    import subprocess
    import time

    from harness.cluster.kafka import KafkaNode, libfaketime_path

    if libfaketime_path() is None or shutil.which("java") is None:
        pytest.skip("needs java and libfaketime")

    class Host:
        address = "198.18.0.11"

        def exec_prefix(self):
            return []

    node = KafkaNode(1, Host(), dist=None, workdir=tmp_path, log_path=tmp_path / "n1.log")
    node.clock_file = tmp_path / "faketime.rc"
    env = node.clock_env()
    assert "FAKETIME_FORCE_MONOTONIC_FIX=0" in env
    node.set_clock_offset(300)
    src = tmp_path / "Probe.java"
    src.write_text("public class Probe { public static void main(String[] a) throws Exception {"
                   " long now = System.currentTimeMillis(); Object o = new Object(); long t = System.nanoTime();"
                   " for (int i = 0; i < 50; i++) synchronized (o) { o.wait(2); }"
                   " System.out.println(now + \" \" + (System.nanoTime() - t) / 1000000); } }")
    real = time.time()
    out = subprocess.run(env + ["java", str(src)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    now_ms, waited_ms = map(int, out.stdout.split())
    assert 250 <= now_ms / 1000 - real <= 360, "the wall clock is 300 s ahead"
    assert waited_ms >= 90, f"50 waits of 2 ms took {waited_ms} ms: timed waits return early"
