"""Power loss of one node: what it wrote and never fsynced is gone (Jepsen's lazyfs faults).

``lose-unsynced`` SIGKILLs the node, then has the FUSE layer under its log dir
(harness.cluster.unsynced_fs) put every file back as it was at its last fsync, and leaves the
node down; ``power-on`` starts it again. The order matters: a dead JVM's dirty pages are still
in the kernel and would be written back after the drop, so the layer first has the kernel
write them back, then drops (harness.cluster.fuse_mounts.LazyMount.lose_unsynced).

The completion of ``lose-unsynced`` records what was lost: ``lost_bytes``, ``lost_files``
(path under the log dir -> bytes, the largest 20), ``lost_file_count``, ``restored_pages``,
``truncated_files``. Targets as for ``kill`` (a node, or a role resolved when the fault begins).
"""
from __future__ import annotations

from nemesis.process import NodeFault

#: files named in an op value at most (the largest losses); the count is always there
MAX_FILES = 20


def loss_fields(report: dict) -> dict:
    """The op-value fields of a layer's drop report (harness.cluster.unsynced_fs.Journal.drop)."""
    files = dict(sorted((report.get("files") or {}).items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_FILES])
    return {"lost_bytes": int(report.get("bytes", 0)), "lost_file_count": len(report.get("files") or {}),
            "lost_files": files, "restored_pages": int(report.get("pages", 0)),
            "truncated_files": int(report.get("truncated", 0))}


class LoseUnsyncedNemesis(NodeFault):
    """``lose-unsynced``: SIGKILL, lose the unsynced writes, stay down; ``power-on``: start.
    Teardown starts every node still down."""

    start_f, end_f = "lose-unsynced", "power-on"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._lost: dict | None = None

    def begin(self, node_id: int) -> str:
        node = self.ctx.cluster.node(node_id)
        if not hasattr(node, "lose_unsynced"):
            raise RuntimeError(f"node {node_id} has no FUSE layer under its log dir (backend "
                               f"{getattr(self.ctx.cluster, 'name', '?')})")
        was = node.kill()
        self._lost = loss_fields(node.lose_unsynced())
        return (f"{'killed' if was else 'was not running'}; lost {self._lost['lost_bytes']} unsynced bytes "
                f"of {self._lost['lost_file_count']} files")

    def end(self, node_id: int) -> str:
        return f"started pid {self.ctx.cluster.node(node_id).start()}"

    def invoke(self, op):
        self._lost = None
        done = super().invoke(op)
        if op["f"] == self.start_f and self._lost is not None:
            done["value"].update(self._lost)
        return done
