"""G0 / G1c (and -process / -realtime variants): cycles in the dependency graph.

Nodes are ops that wrote or read. Edges (Adya; Elle ``list_append.clj``, Jepsen ``kafka.clj``):

* ``ww`` (write-write): in a key's committed log, the writer of the value at position p
  precedes the writer of the value at position p+1 (first occurrence of each value only, so
  duplicates do not make cycles of their own; aborted writes are never in the log).
* ``wr`` (write-read): the writer of a value precedes every op that polled it (aborted
  writers are left out: reading them is G1a).
* ``process``: consecutive ops of one process (none out of an ``info`` op, whose effect may
  come later).
* ``realtime``: op A completed ok before op B was invoked. Built in O(n) through a chain of
  *time nodes*, one per ok completion in time order: A -> T(A), T_j -> T_j+1, and T_j -> B
  for the last completion before B's invoke; paths through time nodes are exactly the
  realtime order, without the O(n^2) edges of its transitive closure.

A cycle of only ww edges is G0; ww+wr with a wr edge is G1c; a cycle that needs process
(realtime) edges is G0-process / G1c-process (G0-realtime / G1c-realtime). Strongly
connected components come from ``scipy.sparse.csgraph.connected_components``; in each
non-trivial component one shortest cycle (fewest ops, 0-1 BFS) through an edge of the kind
the variant needs is reported, with each edge explained.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .duplicate import duplicated_values
from .history import History
from .history import stable_order
from .log import FAIL, index, log, reads, shift_in_group, take, writes
from .polls import process_rank

KINDS = ("ww", "wr", "process", "realtime")
WW, WR, PROC, RT = range(4)
# (name, edge kinds allowed, kind a reported cycle must use or None)
VARIANTS = [
    ("G0", (WW,), None),
    ("G1c", (WW, WR), WR),
    ("G0-process", (WW, PROC), PROC),
    ("G1c-process", (WW, WR, PROC), PROC),
    ("G0-realtime", (WW, RT), RT),
    ("G1c-realtime", (WW, WR, RT), RT),
]
MAX_TRIES = 16  # candidate edges tried per component when looking for a shortest cycle


def writers(h: History) -> pl.DataFrame:
    """(key, value) -> writer: the first op (in op order) whose send of it did not fail."""
    return h.cached("writers", lambda h: writes(h).filter(pl.col("type") != "fail")
                    .group_by("key", "value").agg(writer=pl.col("op").first()))


def _log_writers(h: History) -> np.ndarray:
    """Writer op of the value at each committed-log row, -1 if none."""
    return h.cached("log_writers", _build_log_writers)


def _build_log_writers(h: History) -> np.ndarray:
    ix = index(h)
    if not ix.dup_kv.is_empty():  # values at several offsets: by value
        lw = (log(h).select("key", "value")
              .join(writers(h), on=["key", "value"], how="left", maintain_order="left")["writer"])
        return lw.fill_null(-1).cast(pl.Int64).to_numpy()
    # no value sits at two offsets, so the sends of a log value with a known offset sit at
    # its slot: the writer is the first such op that did not fail (or an earlier send of the
    # value whose offset is unknown)
    big = np.iinfo(np.int64).max
    nf = ix.w_type != FAIL
    rows = np.flatnonzero(ix.in_log)
    ws = np.flatnonzero(nf & (ix.w_slot >= 0))
    lr = ix.log_row[ix.w_slot[ws]]
    ws, lr = ws[lr >= 0], lr[lr >= 0]
    match = ix.log_val[lr] == ix.w_val[ws]
    first = np.full(len(rows), big, np.int64)
    np.minimum.at(first, lr[match], ix.w_op[ws[match]].astype(np.int64))
    unk = np.flatnonzero(nf & (ix.w_slot < 0))
    if len(unk):
        u = (pl.DataFrame({"key": ix.w_key[unk], "value": ix.w_val[unk],
                           "op": ix.w_op[unk].astype(np.int64)})
             .group_by("key", "value").agg(pl.col("op").min()))
        hit = log(h).select("key", "value").with_row_index("row").join(u, on=["key", "value"])
        if hit.height:
            np.minimum.at(first, hit["row"].to_numpy().astype(np.int64), hit["op"].to_numpy())
    return np.where(first == big, -1, first)


def _ww_chain(h: History) -> pl.DataFrame:
    """The committed log restricted to values with a writer, first occurrence of each value:
    key, pos, offset, value, writer; sorted by key and position."""
    lg = log(h).with_columns(writer=pl.Series(_log_writers(h))).filter(pl.col("writer") >= 0)
    if not duplicated_values(h).is_empty():
        lg = lg.unique(["key", "value"], keep="first", maintain_order=True)
    return lg.with_columns(pl.col("writer").cast(pl.UInt32))


def _proc_rt(h: History) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(time nodes, process src, dst, realtime src, dst, ok completion times)."""
    return h.cached("proc_rt", _build_proc_rt)


def _build_proc_rt(h: History):
    n = h.ops.height
    o = h.ops
    bulk = np.flatnonzero(o["f"].is_in(["txn", "send", "poll"]).to_numpy())
    pr, _ = process_rank(h)
    b = bulk[stable_order(pr[bulk])]  # by process, then op
    same = pr[b[1:]] == pr[b[:-1]]
    ps, pd = b[:-1][same], b[1:][same]
    keep = (o["type"] != "info").to_numpy()[ps]
    ps, pd = ps[keep].astype(np.int64), pd[keep].astype(np.int64)
    # realtime through time nodes
    ct = o["complete_time"]
    okm = ((o["type"] == "ok") & ct.is_not_null()).to_numpy()[bulk]
    ok_ops = bulk[okm]
    ctv = ct.fill_null(0).to_numpy()
    srt = np.argsort(ctv[ok_ops], kind="stable")
    ok_ops = ok_ops[srt]
    times = ctv[ok_ops]
    m = len(times)
    tnode = np.arange(n, n + m, dtype=np.int64)
    rt_src = [ok_ops.astype(np.int64), tnode[:-1]]
    rt_dst = [tnode, tnode[1:]]
    it = o["invoke_time"]
    inv = bulk[it.is_not_null().to_numpy()[bulk]]
    j = np.searchsorted(times, it.fill_null(0).to_numpy()[inv], side="left")  # completions < invoke
    has = j > 0
    rt_src.append(tnode[j[has] - 1])
    rt_dst.append(inv.astype(np.int64)[has])
    rt_s = np.concatenate(rt_src) if m else np.zeros(0, np.int64)
    rt_d = np.concatenate(rt_dst) if m else np.zeros(0, np.int64)
    return m, ps, pd, rt_s, rt_d, times


def union_edges(h: History) -> tuple[int, np.ndarray, np.ndarray]:
    """(n_nodes, src, dst) of a graph with the same reachability as the union of all edge
    kinds, for finding the strongly connected components fast:

    * wr edges come from each read's offset (the writer of the value there) when the reads
      of that offset agree with the log; by value otherwise; duplicates are kept.
    * an edge a -> b between ops where a completed ok before b was invoked is left out: the
      realtime chain a -> T(a) -> ... -> b already connects them.
    """
    n = h.ops.height
    ix = index(h)
    m, ps, pd, rs, rd, _ = _proc_rt(h)
    ch = _ww_chain(h)
    ck, cw = ch["key"].to_numpy(), ch["writer"].to_numpy().astype(np.int64)
    same = (ck[1:] == ck[:-1]) & (cw[1:] != cw[:-1])
    ws, wd = cw[:-1][same], cw[1:][same]
    lw = _log_writers(h)
    lr = take(ix.log_row, ix.r_slot)
    by_slot = (lr >= 0) & ix.r_cons[ix.r_slot]
    by_slot[by_slot] = ix.log_val[lr[by_slot]] == ix.r_val[by_slot]
    rsrc = np.full(len(lr), -1, np.int64)
    rsrc[by_slot] = lw[lr[by_slot]]
    rest = np.flatnonzero(~by_slot)
    if len(rest):
        rk = pl.DataFrame({"key": ix.r_key[rest], "value": ix.r_val[rest]})
        rsrc[rest] = rk.join(writers(h), on=["key", "value"], how="left",
                             maintain_order="left")["writer"].fill_null(-1).cast(pl.Int64).to_numpy()
    # a -> b is implied when a completed ok before b was invoked: as times, a's ok
    # completion (+inf if none) against b's invoke (-inf if unknown)
    ct = np.where(((h.ops["type"] == "ok") & h.ops["complete_time"].is_not_null()).to_numpy(),
                  h.ops["complete_time"].fill_null(0).to_numpy(), np.iinfo(np.int64).max)
    it = h.ops["invoke_time"].fill_null(np.iinfo(np.int64).min).to_numpy()

    def needed(src, dst):
        k = ct[src] >= it[dst]
        return src[k], dst[k]

    ws, wd = needed(ws, wd)
    rk = np.flatnonzero(rsrc >= 0)
    rs_, rd_ = rsrc[rk], ix.r_op[rk].astype(np.int64)
    del rsrc, rk
    k = (rs_ != rd_) & (ct[rs_] >= it[rd_])
    rs_, rd_ = rs_[k], rd_[k]
    ps, pd = needed(ps, pd)
    return n + m, np.concatenate([ws, rs_, ps, rs]), np.concatenate([wd, rd_, pd, rd])


def graph(h: History, nodes: np.ndarray | None = None) -> dict:
    """The dependency graph, restricted to edges between ``nodes`` (all if None):
    {"n_ops", "n_nodes", "edges": DataFrame(src, dst, kind, eid), "ww": DataFrame of ww
    details, "wr": DataFrame of wr details, "time": array of the ok completion times behind
    the time nodes}."""
    n = h.ops.height
    m, ps, pd, rs, rd, times = _proc_rt(h)
    mask = None
    if nodes is not None:
        mask = np.zeros(n + m, bool)
        mask[nodes] = True
    ww = (
        shift_in_group(_ww_chain(h), ["key"], {"dst": "writer", "next_value": "value",
                                               "next_offset": "offset", "next_pos": "pos"}, n=-1)
        .drop_nulls("dst")
        .filter(pl.col("writer") != pl.col("dst"))
        .rename({"writer": "src"})
        .unique(["src", "dst"], keep="first", maintain_order=True)
    )
    r = reads(h)
    if mask is not None:
        ww = ww.filter(pl.Series(mask[ww["src"].to_numpy()] & mask[ww["dst"].to_numpy()]))
        r = r.filter(pl.Series(mask[r["op"].to_numpy()]))
    wr = (
        r.select("key", "value", "offset", dst="op")
        .join(writers(h).rename({"writer": "src"}), on=["key", "value"], how="inner",
              maintain_order="left")
        .filter(pl.col("src") != pl.col("dst"))
        .unique(["src", "dst"], keep="first", maintain_order=True)
    )
    if mask is not None:
        wr = wr.filter(pl.Series(mask[wr["src"].to_numpy()]))
        k = mask[ps] & mask[pd]
        ps, pd = ps[k], pd[k]
        k = mask[rs] & mask[rd]
        rs, rd = rs[k], rd[k]

    def part(src, dst, kind):
        src = np.asarray(src, dtype=np.int64)
        return pl.DataFrame({"src": src, "dst": np.asarray(dst, dtype=np.int64),
                             "kind": np.full(len(src), kind, np.int8),
                             "eid": np.arange(len(src), dtype=np.int64)})

    edges = pl.concat([
        part(ww["src"].to_numpy(), ww["dst"].to_numpy(), WW),
        part(wr["src"].to_numpy(), wr["dst"].to_numpy(), WR),
        part(ps, pd, PROC),
        part(rs, rd, RT),
    ])
    return {"n_ops": n, "n_nodes": n + m, "edges": edges, "ww": ww, "wr": wr, "time": times}


def _sccs(n_nodes: int, edges: pl.DataFrame | tuple) -> list[np.ndarray]:
    """Node arrays of the non-trivial strongly connected components."""
    if isinstance(edges, tuple):
        src, dst = edges
    else:
        src, dst = edges["src"].to_numpy(), edges["dst"].to_numpy()
    if not len(src):
        return []
    mat = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n_nodes, n_nodes))
    _, labels = connected_components(mat, directed=True, connection="strong")
    counts = np.bincount(labels)
    big = np.flatnonzero(counts > 1)
    if not len(big):
        return []
    order = np.argsort(labels, kind="stable")
    sl = labels[order]
    return [order[np.searchsorted(sl, c, "left"):np.searchsorted(sl, c, "right")] for c in big]


def _within(edges: pl.DataFrame, n_nodes: int, nodes: np.ndarray) -> pl.DataFrame:
    """Edges whose both ends are in ``nodes``."""
    mask = np.zeros(n_nodes, dtype=bool)
    mask[nodes] = True
    keep = mask[edges["src"].to_numpy()] & mask[edges["dst"].to_numpy()]
    return edges.filter(pl.Series(keep))


def _shortest_cycle(n_ops: int, edges: pl.DataFrame, need: int | None):
    """Fewest-op cycle in a strongly connected edge set, through an edge of kind ``need``
    (any edge if None). Returns a list of (src, dst, kind, eid) or None."""
    adj: dict[int, list] = {}
    for s, d, k, e in edges.iter_rows():
        adj.setdefault(s, []).append((d, k, e))
    cands = edges if need is None else edges.filter(pl.col("kind") == need)
    if need == RT:  # a realtime step ends on an op
        cands = cands.filter(pl.col("dst") < n_ops)
    rows = cands.rows()
    if len(rows) > MAX_TRIES:
        rows = [rows[i] for i in np.linspace(0, len(rows) - 1, MAX_TRIES).astype(int)]
    best = None
    for s, d, k, e in rows:
        # 0-1 BFS from d back to s; entering an op costs 1, a time node 0
        dist = {d: 0}
        parent: dict[int, tuple] = {}
        dq = deque([d])
        while dq:
            x = dq.popleft()
            if x == s:
                break
            for y, ky, ey in adj.get(x, ()):
                c = dist[x] + (1 if y < n_ops else 0)
                if c < dist.get(y, 1 << 60):
                    dist[y] = c
                    parent[y] = (x, ky, ey)
                    (dq.append if y < n_ops else dq.appendleft)(y)
        if s not in dist:
            continue
        path = []
        x = s
        while x != d:
            px, kx, ex = parent[x]
            path.append((px, x, kx, ex))
            x = px
        cyc = [(s, d, k, e)] + path[::-1]
        if best is None or dist[s] < best[0]:
            best = (dist[s], cyc)
    return None if best is None else best[1]


def _steps(h: History, g: dict, cyc: list) -> list[dict]:
    """Collapse time-node runs and explain each op-to-op edge."""
    n = g["n_ops"]
    steps = []
    # rotate so the cycle starts at an op
    while cyc[0][0] >= n:
        cyc = cyc[1:] + cyc[:1]
    src = None
    for s, d, k, e in cyc:
        if s < n:
            src = s
        if d >= n:
            continue
        steps.append(_explain(h, g, src, d, k, e))
    return steps


def _explain(h: History, g: dict, a: int, b: int, kind: int, eid: int) -> dict:
    ia, ib = h.ops["invoke_index"][a], h.ops["invoke_index"][b]
    base = {"from": ia, "to": ib, "kind": KINDS[kind]}
    if kind == WW:
        r = g["ww"].row(eid, named=True)
        key = h.keys[r["key"]]
        base.update(key=key, value=r["value"], next_value=r["next_value"])
        base["explanation"] = (
            f"op {ia} wrote {r['value']} to {key} at offset {r['offset']} (position {r['pos']}), "
            f"just before op {ib}'s {r['next_value']} at offset {r['next_offset']}")
    elif kind == WR:
        r = g["wr"].row(eid, named=True)
        key = h.keys[r["key"]]
        base.update(key=key, value=r["value"])
        base["explanation"] = f"op {ib} polled {r['value']} of {key}, which op {ia} wrote"
    elif kind == PROC:
        base["explanation"] = f"process {h.ops['process'][a]} ran op {ib} after op {ia}"
    else:
        ta, tb = h.ops["complete_time"][a], h.ops["invoke_time"][b]
        base["explanation"] = (f"op {ia} completed at {ta / 1e6:.3f} ms, before op {ib} was "
                               f"invoked at {tb / 1e6:.3f} ms")
    return base


def _name(kinds: set[int]) -> str:
    base = "G1c" if WR in kinds else "G0"
    if RT in kinds:
        return base + "-realtime"
    if PROC in kinds:
        return base + "-process"
    return base


def cycle_cases(h: History) -> list[dict]:
    """G0, G1c, G0-process, G1c-process, G0-realtime, G1c-realtime: see the module
    docstring for the graph.

    * G0 (write cycle): a cycle of write-write edges: two ops' writes interleave in
      different orders on different keys (Adya G0).
    * G1c (circular information flow): a cycle of ww and wr edges with a wr edge (Adya G1c).
    * -process / -realtime: the same, closed by process order / realtime order (Elle).

    Example: {"anomaly": name, "ops": [op refs in cycle order], "steps": [{"from", "to",
    "kind", "key"?, "value"?, "explanation"}], "explanation"}.
    """
    n_nodes, src, dst = union_edges(h)
    union = _sccs(n_nodes, (src, dst))
    del src, dst
    if not union:
        return []
    # only now the exact graph, on the nodes of the cyclic components
    g = graph(h, np.concatenate(union))
    sub = g["edges"]
    out, seen = [], set()
    for name, kinds, need in VARIANTS:
        e = sub.filter(pl.col("kind").is_in(list(kinds)))
        for comp in _sccs(g["n_nodes"], e):
            ce = _within(e, g["n_nodes"], comp)
            cyc = _shortest_cycle(g["n_ops"], ce, need)
            if cyc is None:
                continue
            ops = [s for s, _, _, _ in cyc if s < g["n_ops"]]
            found = _name({k for _, _, k, _ in cyc})
            sig = (found, frozenset(ops))
            if sig in seen:
                continue
            seen.add(sig)
            steps = _steps(h, g, cyc)
            out.append({
                "anomaly": found,
                "ops": [h.op_ref(o) for o in ops],
                "steps": steps,
                "component_size": int(sum(1 for x in comp if x < g["n_ops"])),
                "explanation": f"{found} cycle of {len(steps)} ops: "
                               + "; ".join(s["explanation"] for s in steps),
            })
    return out


def g0_cases(h: History) -> list[dict]:
    """G0 (write cycle): a cycle of write-write (log order) edges between ops: two ops'
    writes land in one order on one key and the opposite order on another (Adya). Returns
    G0, G0-process and G0-realtime cases."""
    return [c for c in cycle_cases(h) if c["anomaly"].startswith("G0")]


def g1c_cases(h: History) -> list[dict]:
    """G1c (circular information flow): a cycle of write-write and write-read edges with at
    least one write-read edge (Adya). Returns G1c, G1c-process and G1c-realtime cases."""
    return [c for c in cycle_cases(h) if c["anomaly"].startswith("G1c")]
