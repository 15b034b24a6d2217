"""Cycles Kafka cannot produce: a contradiction in the order of the events behind the edges.

Kafka's transactions are atomic, not isolated: a record's place in a partition is fixed when
it is appended, not when its transaction commits. So G0-realtime, G0-process and
G1c-realtime cycles (cycles.py) occur in correct runs, and scenarios with several
transactional producers list them in ``expected``. Some such cycles are nevertheless
impossible in Kafka, and ``expected`` must not excuse those: a send acknowledged before
another began that lands after it, a poll that returns a value before its writer was
invoked, a read_committed poll that returns a transaction's value before that transaction
asked to commit. This finder tells the two apart.

Each op x has three events on the harness's one clock (docs/history.md: one CLOCK_MONOTONIC):
its invoke I(x), its commit point C(x) (a transaction's commit on the coordinator; a send's
acknowledged append; a poll's read) and its completion K(x), with I(x) <= C(x) <= K(x).
Every append of a transaction precedes its commit, and every record a read_committed
consumer returns belongs to a transaction that committed first. So each edge of the
dependency graph says an event came strictly before another:

==================  =========================================  ===========================
edge A -> B         meaning                                    events
==================  =========================================  ===========================
ww (key k)          A's value sits just before B's in k's log  I(A) < C(B)
wr                  B polled a value A wrote                   I(A) < C(B)
wr, read_committed  ... and A is a transaction                 C(A) < C(B)
process, realtime   A completed (ok) before B was invoked       K(A) < I(B)
commit              A completed ok before txn B asked to        K(A) < C(B)
                    commit (B's ``meta.commit_ns``)
==================  =========================================  ===========================

A cycle in the graph of events (nodes I, C, K of every op and the ok completion times;
edges as above plus I(x) -> C(x) -> K(x)) is a set of strict inequalities that cannot all
hold: the history is impossible in Kafka, whatever its isolation. It is reported under the
Elle name of the op-level cycle it projects to (G1c if it uses a wr edge, else G0; then
-realtime if it uses a realtime or commit edge, else -process if it uses a process edge)
with ``"impossible": True``; ``checkers.verdict`` fails a run on such a case even when the
scenario expects the name. A pure ww cycle never closes (nothing leads out of a commit but
its own completion and reads), which is why plain G0 stays possible.

The isolation level of a poll comes from its process's ``assign`` ops
(``meta.isolation_level``); a process without one is judged as read_uncommitted (the weaker
edge), so an unknown level can only hide a contradiction, never invent one.

Cost, O(n log n) in ops (issue 20): first a certificate in O(E) (``time_order``): times for
the events, measured ones for invokes, completions and time nodes and the least consistent
ones for commit points, that rise along every edge. Every correct history seen so far has
one (simulated ones of both shapes, the real runs in tests/data), and it proves there is no
cycle, so the search below never runs on them. Without one: the strongly connected
components of the op-level union graph (cycles.py's, plus an edge into each transaction
from the last completion before it asked to commit); only ops in a non-trivial one can lie
on a cycle of events, so the event graph is rebuilt on those ops alone. Components by
``scipy.sparse.csgraph``; one shortest cycle per non-trivial component of the event graph
(breadth-first in the component, whose edges come from one sort for all components), at most
``MAX_CASES`` explained.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import polars as pl

from .cycles import proc_rt, read_writers, sccs, union_edges, ww_chain, ww_pairs
from ..history import History
from ..history.log import index, reads

INTRA, WW, WR, WR_RC, PROC, RT, COMMIT = range(7)
MAX_CASES = 50  # components explained; the rest are counted in the last case's explanation
INF = 1 << 62
TIME_SCALE = 1024  # certificate times per measured ns (time_order)
CHAIN_ROUNDS = 64  # rounds of C(A) -> C(B) relaxation before time_order gives up


def _read_committed_processes(h: History) -> set[int]:
    """Processes whose assign ops all say isolation_level read_committed."""
    rc, other = set(), set()
    proc = h.ops["process"]
    for op, ex in h.extras.items():
        iso = (ex.get("meta") or {}).get("isolation_level")
        if iso is None:
            continue
        (rc if iso == "read_committed" else other).add(int(proc[op]))
    return rc - other


def _commit_edges(h: History) -> tuple[np.ndarray, np.ndarray]:
    """(time node index j, txn op) pairs: the j-th ok completion is the last one before the
    op asked to commit (``commit_time``). int64 arrays; shared, do not modify."""
    return h.cached("commit_edges", _build_commit_edges)


def _build_commit_edges(h: History) -> tuple[np.ndarray, np.ndarray]:
    m, *_, times = proc_rt(h)
    ct = h.ops["commit_time"]
    cb = np.flatnonzero((ct.is_not_null() & (h.ops["f"] == "txn")).to_numpy())
    if not m or not len(cb):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    j = np.searchsorted(times, ct.fill_null(0).to_numpy()[cb], side="left")
    ok = j > 0
    return j[ok] - 1, cb[ok].astype(np.int64)


def candidate_ops(h: History) -> np.ndarray:
    """Ops that can lie on a cycle of events: those in a non-trivial strongly connected
    component of the op-level union graph (cycles.union_edges) with the commit edges added
    (time node -> op). An event cycle projects onto a closed walk of that graph, so no op
    outside these components is on one; in an acyclic history this is empty and the event
    graph is never built."""
    n = h.ops.height
    n_nodes, src, dst = union_edges(h)
    tj, cb = _commit_edges(h)
    src = np.concatenate([src, n + tj])
    dst = np.concatenate([dst, cb])
    comps = sccs(n_nodes, (src, dst))
    if not comps:
        return np.zeros(0, np.int64)
    nodes = np.concatenate(comps)
    return np.sort(nodes[nodes < n]).astype(np.int64)


def _wr_pairs(h: History, keep: np.ndarray | None = None, dedup: bool = True):
    """(reads(h) row, writer op, reader op, strong) of the wr edges between two distinct
    ops both in ``keep`` (a mask over ops; all if None); strong: the writer is a transaction
    and the reader's process reads committed (C(A) -> C(B); else I(A) -> C(B)). ``dedup``:
    one per (writer, reader) pair, sorted by the pair; else one per read, in read order."""
    n = h.ops.height
    rw = read_writers(h)
    rrow = np.flatnonzero(rw >= 0)
    a, b = rw[rrow], index(h).r_op[rrow].astype(np.int64)
    k = (a != b) if keep is None else (a != b) & keep[a] & keep[b]
    rrow, a, b = rrow[k], a[k], b[k]
    if dedup and len(rrow):  # one edge per (writer, reader) pair is enough
        _, first = np.unique(a * n + b, return_index=True)
        rrow, a, b = rrow[first], a[first], b[first]
    is_txn = (h.ops["f"] == "txn").to_numpy()  # a bool mask: strings would cost O(n) objects
    proc = h.ops["process"].to_numpy().astype(np.int64)
    lo = int(proc.min()) if n else 0
    rc = np.zeros(int(proc.max()) - lo + 1 if n else 1, bool)  # by process id: a lookup, not a search
    rc[np.array(sorted(_read_committed_processes(h)), np.int64) - lo] = True
    return rrow, a, b, is_txn[a] & rc[proc[b] - lo]


def event_graph(h: History, ops_in: np.ndarray | None = None) -> dict:
    """The graph of events, restricted to the ops ``ops_in`` (all if None; time nodes are
    always kept). Node ids: I(x) = x, C(x) = n + x, K(x) = 2n + x for op x < n, time node j
    (the j-th ok completion in time order) = 3n + j. Returns {"n", "m", "src", "dst",
    "kind", "eid" (int64 arrays: eid indexes the kind's own detail: the ww_chain row of a
    ww edge, the reads(h) row of a wr edge), "times" (ns of the time nodes)}."""
    n = h.ops.height
    m, ps, pd, rs, rd, times = proc_rt(h)
    keep = np.ones(n + m, bool)
    if ops_in is not None:
        keep[:n] = False
        keep[ops_in] = True

    src, dst, kind, eid = [], [], [], []

    def add(s, d, k, e=None, a=None, b=None):
        """Edges s -> d of kind k between ops (or time nodes) a -> b."""
        s = np.asarray(s, np.int64)
        d = np.asarray(d, np.int64)
        e = np.arange(len(s), dtype=np.int64) if e is None else np.asarray(e, np.int64)
        if a is not None and ops_in is not None:
            k_ = keep[a] & keep[b]
            s, d, e = s[k_], d[k_], e[k_]
        src.append(s)
        dst.append(d)
        kind.append(np.full(len(s), k, np.int8))
        eid.append(e)

    allx = np.arange(n, dtype=np.int64) if ops_in is None else np.asarray(ops_in, np.int64)
    add(allx, n + allx, INTRA)
    add(n + allx, 2 * n + allx, INTRA)
    # ww: I(A) -> C(B)
    ws, wd, wrow = ww_pairs(h)
    add(ws, n + wd, WW, wrow, ws, wd)
    # wr: I(A) -> C(B), or C(A) -> C(B) when A is a transaction and B reads committed
    rrow, a, b, strong = _wr_pairs(h, None if ops_in is None else keep)
    add(a[~strong], n + b[~strong], WR, rrow[~strong])
    add(n + a[strong], n + b[strong], WR_RC, rrow[strong])
    # process: K(A) -> I(B)
    add(2 * n + ps, pd, PROC, None, ps, pd)
    # realtime through time nodes: K(A) -> T(A) -> ... -> T_j -> I(B)
    s_rt = np.where(rs < n, 2 * n + rs, 3 * n + (rs - n))
    d_rt = np.where(rd < n, rd, 3 * n + (rd - n))
    add(s_rt, d_rt, RT, None, rs, rd)
    # commit: T_j -> C(B), j the last ok completion before B asked to commit
    tj, cb = _commit_edges(h)
    add(3 * n + tj, n + cb, COMMIT, None, n + tj, cb)
    return {"n": n, "m": m, "src": np.concatenate(src), "dst": np.concatenate(dst),
            "kind": np.concatenate(kind), "eid": np.concatenate(eid), "times": times}


def event_times(h: History) -> np.ndarray | None:
    """A certificate that the graph of events (``event_graph(h)``, same node ids) has no
    cycle, found in O(E) without building it: a time for every event (int64, ns scaled by
    ``TIME_SCALE`` from the history's first time) that rises strictly along every edge except
    I(x) -> C(x) -> K(x), K(A) -> T(A) and T_j -> T_j+1, which may keep it equal and among
    which there is no cycle; so no cycle can return to where it started. I(x), K(x) and T_j
    take their measured times (an unknown invoke -inf, an unknown or info completion +inf);
    each C(x), never measured, the least time above every event with an edge into it (a
    fixpoint over the read_committed wr edges C(A) -> C(B), at most ``CHAIN_ROUNDS``
    rounds), which fails only where no times for the commit points would do. None when no
    certificate was found (a cycle, or two events in the same ns: the search decides)."""
    n = h.ops.height
    m, ps, pd, rs, rd, times = proc_rt(h)
    ops = h.ops
    it, ct = ops["invoke_time"], ops["complete_time"]
    known = np.concatenate([it.drop_nulls().to_numpy(), ct.drop_nulls().to_numpy(), times])
    if not n or not len(known):
        return None
    t0, span = int(known.min()), int(known.max()) - int(known.min())
    if span >= INF // TIME_SCALE:
        return None
    p_i = np.where(it.is_null().to_numpy(), -INF, (it.fill_null(t0).to_numpy() - t0) * TIME_SCALE)
    k_open = (ct.is_null() | (ops["type"] == "info")).to_numpy()
    p_k = np.where(k_open, INF, (ct.fill_null(t0).to_numpy() - t0) * TIME_SCALE)
    p_t = (np.asarray(times, np.int64) - t0) * TIME_SCALE
    # C(x): at least I(x), and above the tail of every edge into it (ww, wr, commit)
    p_c = p_i.copy()
    ws, wd, _ = ww_pairs(h)
    np.maximum.at(p_c, wd, p_i[ws] + 1)
    _, a, b, strong = _wr_pairs(h, dedup=False)
    np.maximum.at(p_c, b[~strong], p_i[a[~strong]] + 1)
    tj, cb = _commit_edges(h)
    np.maximum.at(p_c, cb, p_t[tj] + 1)
    cs, cd = a[strong], b[strong]
    for _ in range(CHAIN_ROUNDS):
        before = p_c[cd]
        np.maximum.at(p_c, cd, p_c[cs] + 1)
        if np.array_equal(before, p_c[cd]):
            break
    else:
        return None
    p = np.concatenate([p_i, p_c, p_k, p_t])
    # the edges into C(x) hold by construction; the rest are checked
    if not (p_c <= p_k).all() or not (p_k[ps] < p_i[pd]).all():  # C(x) -> K(x); process
        return None
    s_rt = np.where(rs < n, 2 * n + rs, 3 * n + (rs - n))  # realtime, as event_graph has it
    d_rt = np.where(rd < n, rd, 3 * n + (rd - n))
    ok = np.where(d_rt >= 3 * n, p[s_rt] <= p[d_rt], p[s_rt] < p[d_rt])
    return p if ok.all() else None


def time_order(h: History) -> bool:
    """True when ``event_times`` finds a certificate: the graph of events has no cycle."""
    return event_times(h) is not None


def _edges_within(g: dict, comps: list[np.ndarray], n_nodes: int) -> list[np.ndarray]:
    """For each component, the ascending indices of the edges with both ends in it: one
    stable sort for all (a scan of every edge per component would cost O(E) each)."""
    label = np.full(n_nodes, -1, np.int64)
    for i, c in enumerate(comps):
        label[c] = i
    ls, ld = label[g["src"]], label[g["dst"]]
    inside = np.flatnonzero((ls >= 0) & (ls == ld))
    order = inside[np.argsort(ls[inside], kind="stable")]
    ends = np.cumsum(np.bincount(ls[inside], minlength=len(comps)))
    return np.split(order, ends[:-1])


def _shortest_cycle(g: dict, sel: np.ndarray) -> list[int] | None:
    """Edge indices of a shortest cycle in a component, given ``sel``, the ascending indices
    of its edges (BFS from the head of one of its inter-op edges back to its tail), None if
    none (cannot happen in an SCC)."""
    adj: dict[int, list[int]] = {}
    for e in sel:
        adj.setdefault(int(g["src"][e]), []).append(int(e))
    # start from a dependency edge (ww/wr), else any inter-op edge
    kinds = g["kind"][sel]
    pick = sel[np.isin(kinds, [WW, WR, WR_RC])]
    if not len(pick):
        pick = sel[kinds != INTRA]
    if not len(pick):
        return None
    best = None
    for e0 in pick[:8]:
        s0, d0 = int(g["src"][e0]), int(g["dst"][e0])
        parent = {d0: -1}
        dq = deque([d0])
        while dq:
            x = dq.popleft()
            if x == s0:
                break
            for e in adj.get(x, ()):
                y = int(g["dst"][e])
                if y not in parent:
                    parent[y] = e
                    dq.append(y)
        if s0 not in parent:
            continue
        path, x = [], s0
        while x != d0:
            e = parent[x]
            path.append(e)
            x = int(g["src"][e])
        cyc = [int(e0)] + path[::-1]
        if best is None or len(cyc) < len(best):
            best = cyc
    return best


def _op_index(h: History):
    """op id -> the invoke index the history names it by (steps and explanations)."""
    idx = h.ops["invoke_index"]
    return lambda x: int(idx[x])


def _step(h: History, g: dict, e: int, ch: pl.DataFrame, rd: pl.DataFrame) -> dict | None:
    """Explain one inter-op edge of a cycle (None for an intra-op or time-chain edge)."""
    n = g["n"]
    k, s, d, i = int(g["kind"][e]), int(g["src"][e]), int(g["dst"][e]), int(g["eid"][e])
    ref = _op_index(h)
    if k == WW:
        a, b = s, d - n
        r0, r1 = ch.row(i, named=True), ch.row(i + 1, named=True)
        key = h.keys[r0["key"]]
        return {"from": ref(a), "to": ref(b), "kind": "ww", "key": key, "value": r0["value"],
                "next_value": r1["value"], "events": "I(A) < C(B)",
                "explanation": f"op {ref(a)} wrote {r0['value']} to {key} at offset {r0['offset']}, "
                               f"just before op {ref(b)}'s {r1['value']} at offset {r1['offset']}: "
                               f"op {ref(a)} was invoked before op {ref(b)} committed"}
    if k in (WR, WR_RC):
        a, b = (s - n if k == WR_RC else s), d - n
        r = rd.row(i, named=True)
        key = h.keys[r["key"]]
        when = ("op {a} committed before op {b} read it (read_committed)" if k == WR_RC
                else "op {a} was invoked before op {b} read it").format(a=ref(a), b=ref(b))
        return {"from": ref(a), "to": ref(b), "kind": "wr", "key": key, "value": r["value"],
                "events": "C(A) < C(B)" if k == WR_RC else "I(A) < C(B)",
                "explanation": f"op {ref(b)} polled {r['value']} of {key} at offset {r['offset']}, "
                               f"which op {ref(a)} wrote: {when}"}
    return None


def _timed_steps(h: History, g: dict, cyc: list[int], ch: pl.DataFrame, rd: pl.DataFrame) -> list[dict]:
    """Collapse runs of process/realtime/commit edges (through time nodes) into one step
    from the op whose completion starts the run to the op whose invoke or commit ends it.
    ``ch``, ``rd``: ww_chain(h) and reads(h), built once for all cycles."""
    n = g["n"]
    ct, it, cm = h.ops["complete_time"], h.ops["invoke_time"], h.ops["commit_time"]
    ref = _op_index(h)
    ms = lambda t: f"{t / 1e6:.3f} ms"  # noqa: E731

    def starts_step(e: int) -> bool:  # a dependency edge, or a timed run leaving a completion
        return int(g["kind"][e]) in (WW, WR, WR_RC) or 2 * n <= int(g["src"][e]) < 3 * n

    for _ in range(len(cyc)):
        if starts_step(cyc[0]):
            break
        cyc = cyc[1:] + cyc[:1]
    steps, run_from, run_kinds = [], None, set()
    for e in cyc:
        k, s, d = int(g["kind"][e]), int(g["src"][e]), int(g["dst"][e])
        if k in (WW, WR, WR_RC):
            steps.append(_step(h, g, e, ch, rd))
            continue
        if k == INTRA:
            continue
        if 2 * n <= s < 3 * n:  # leaves an op's completion
            run_from, run_kinds = s - 2 * n, set()
        if run_from is None:
            continue
        run_kinds.add(k)
        if d < n:  # reaches an op's invoke
            b = d
            kindname = "process" if run_kinds == {PROC} else "realtime"
            steps.append({"from": ref(run_from), "to": ref(b), "kind": kindname,
                          "events": "K(A) < I(B)",
                          "explanation": f"op {ref(run_from)} completed at {ms(ct[run_from])}, before "
                                         f"op {ref(b)} was invoked at {ms(it[b])}"})
        elif n <= d < 2 * n:  # reaches a transaction's commit point
            b = d - n
            steps.append({"from": ref(run_from), "to": ref(b), "kind": "realtime",
                          "events": "K(A) < C(B)",
                          "explanation": f"op {ref(run_from)} completed at {ms(ct[run_from])}, before "
                                         f"op {ref(b)} asked to commit at {ms(cm[b])}"})
    return steps


def impossible_cycle_cases(h: History) -> list[dict]:
    """Realtime/process/wr cycles that Kafka cannot produce (module docstring).

    Example: {"anomaly": "G0-realtime" | "G1c-realtime" | "G0-process" | "G1c-process" |
    "G1c", "impossible": True, "ops": [op refs in cycle order], "steps": [{"from", "to",
    "kind", "events", "key"?, "value"?, "explanation"}], "component_size": int,
    "explanation": str}. One case per strongly connected component of the event graph.
    """
    if h.ops.is_empty():
        return []
    if time_order(h):  # the usual case, a correct history: O(E), no graph, no search
        return []
    cand = candidate_ops(h)
    if not len(cand):
        return []
    g = event_graph(h, cand)
    n_nodes = 3 * g["n"] + g["m"]
    comps = sccs(n_nodes, (g["src"], g["dst"]))
    out = []
    n = g["n"]
    if not comps:
        return out
    by_index = {int(v): i for i, v in enumerate(h.ops["invoke_index"].to_list())}
    ch, rd = ww_chain(h), reads(h)
    shown = comps[:MAX_CASES]
    for comp, sel in zip(shown, _edges_within(g, shown, n_nodes)):
        cyc = _shortest_cycle(g, sel)
        if cyc is None:
            continue
        steps = _timed_steps(h, g, cyc, ch, rd)
        kinds = {s["kind"] for s in steps}
        name = ("G1c" if "wr" in kinds else "G0") + (
            "-realtime" if "realtime" in kinds else "-process" if "process" in kinds else "")
        ops_in = []
        for s in steps:
            if s["from"] not in ops_in:
                ops_in.append(s["from"])
        size = len({int(x) % n for x in comp if x < 3 * n})
        out.append({
            "anomaly": name,
            "impossible": True,
            "ops": [h.op_ref(by_index[i]) for i in ops_in],
            "steps": steps,
            "component_size": size,
            "explanation": f"{name} cycle of {len(steps)} steps that Kafka cannot produce: "
                           + "; ".join(s["explanation"] for s in steps)
                           + ". Each step says one event came before another ("
                           + ", ".join(s["events"] for s in steps)
                           + "); together they form a cycle in time",
        })
    if len(comps) > MAX_CASES and out:
        out[-1]["explanation"] += f" ({len(comps) - MAX_CASES} more such components not explained)"
    return out
