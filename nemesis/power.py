"""Power loss of one node: what it wrote and never fsynced is gone (Jepsen's lazyfs faults).

``lose-unsynced`` SIGKILLs the node, then has the FUSE layer under its log dir
(harness.cluster.unsynced_fs) put every file back as it was at its last fsync, and leaves the
node down; ``power-on`` starts it again. The order matters: a dead JVM's dirty pages are still
in the kernel and would be written back after the drop, so the layer first has the kernel
write them back, then drops (harness.cluster.fuse_mounts.LazyMount.lose_unsynced).

The completion of ``lose-unsynced`` records what was lost: ``lost_bytes``, ``lost_files``
(path under the log dir -> bytes, the largest 20), ``lost_file_count``, ``restored_pages``,
``truncated_files``. Targets as for ``kill`` (a node, or a role resolved when the fault begins),
or ``nodes: all``: every node at once (a rack losing power).
"""
from __future__ import annotations

from nemesis.process import NodeFault
from nemesis.targets import choose_node_target, only_params

#: files named in an op value at most (the largest losses); the count is always there
MAX_FILES = 20


def loss_fields(report: dict) -> dict:
    """The op-value fields of a layer's drop report (harness.cluster.unsynced_fs.Journal.drop)."""
    files = dict(sorted((report.get("files") or {}).items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_FILES])
    return {"lost_bytes": int(report.get("bytes", 0)), "lost_file_count": len(report.get("files") or {}),
            "lost_files": files, "restored_pages": int(report.get("pages", 0)),
            "truncated_files": int(report.get("truncated", 0))}


def power_params(name: str, params: dict) -> None:
    """``nodes: all``: every node loses power at once (a rack); default one node (``target``)."""

    only_params(name, params, frozenset({"nodes"}))
    if params.get("nodes", "one") not in ("one", "all"):
        raise ValueError(f"nodes must be one or all, got {params['nodes']!r}")


def choose_power_target(rng, spec: dict, nodes: list[int], clients: list[str]) -> dict:
    if spec.get("nodes") == "all":
        return {"nodes": "all"}
    return choose_node_target(rng, spec, nodes, clients)


class LoseUnsyncedNemesis(NodeFault):
    """``lose-unsynced``: SIGKILL, lose the unsynced writes, stay down; ``power-on``: start.
    With ``{"nodes": "all"}`` every node is killed first, then each loses its unsynced writes
    (lost files named ``n<i>/path``), and ``power-on`` starts them all. Teardown starts every
    node still down."""

    start_f, end_f = "lose-unsynced", "power-on"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._lost: dict | None = None

    def resolve(self, value: dict):
        if value.get("nodes") == "all":
            return tuple(self.ctx.cluster.node_ids())
        return super().resolve(value)

    def describe(self, target) -> dict:
        return {"nodes": list(target)} if isinstance(target, tuple) else {"node": target}

    def _layered(self, node_id: int):
        node = self.ctx.cluster.node(node_id)
        if not hasattr(node, "lose_unsynced"):
            raise RuntimeError(f"node {node_id} has no FUSE layer under its log dir (backend "
                               f"{getattr(self.ctx.cluster, 'name', '?')})")
        return node

    def begin(self, target) -> str:
        ids = list(target) if isinstance(target, tuple) else [target]
        nodes = {i: self._layered(i) for i in ids}
        killed = [i for i, n in nodes.items() if n.kill()]  # all dead before any loses its cache
        reports = {i: n.lose_unsynced() for i, n in nodes.items()}
        if isinstance(target, tuple):
            merged = {"bytes": sum(r.get("bytes", 0) for r in reports.values()),
                      "pages": sum(r.get("pages", 0) for r in reports.values()),
                      "truncated": sum(r.get("truncated", 0) for r in reports.values()),
                      "files": {f"n{i}/{f}": b for i, r in reports.items() for f, b in (r.get("files") or {}).items()}}
        else:
            merged = reports[target]
        self._lost = loss_fields(merged)
        who = "killed" if killed == ids else f"killed {killed} of {ids}" if killed else "was not running"
        return f"{who}; lost {self._lost['lost_bytes']} unsynced bytes of {self._lost['lost_file_count']} files"

    def end(self, target) -> str:
        ids = list(target) if isinstance(target, tuple) else [target]
        pids = [self.ctx.cluster.node(i).start() for i in ids]
        return f"started pid {pids[0]}" if len(pids) == 1 else f"started pids {pids}"

    def invoke(self, op):
        self._lost = None
        done = super().invoke(op)
        if op["f"] == self.start_f and self._lost is not None:
            done["value"].update(self._lost)
        return done
