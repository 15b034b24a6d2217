"""zombie-write: an older instance of a transactional.id writes or commits after fencing."""

from __future__ import annotations

import polars as pl

from ..history import History
from ..history.log import describe_op, write_pos, writes


def _instances(h: History) -> pl.DataFrame:
    """Instances of each transactional.id: (transactional_id, process, first, start).

    ``first`` orders them: when the instance's first ``init`` completed ok (ns), else when
    its first op was invoked. Producer epochs follow the order in which InitProducerId
    completed at the coordinator (KIP-98), not the order the processes started: an instance
    paused inside init may register after its replacement did, and then fences it.
    ``start`` is when that ok ``init`` was invoked (else ``first``): the coordinator bumped
    the epoch somewhere in [start, first], and a client paused after it did records its ok
    only once resumed, so two instances whose init intervals overlap are in no certain order.
    """
    def build(h: History) -> pl.DataFrame:
        ops = h.ops.filter(pl.col("transactional_id").is_not_null())
        ok_init = (pl.col("f") == "init") & (pl.col("type") == "ok")
        first_ok = pl.col("complete_time").filter(ok_init).min()
        return ops.group_by("transactional_id", "process").agg(
            first=pl.coalesce(first_ok, pl.col("invoke_time").min()),
            start=pl.coalesce(pl.col("invoke_time").filter(ok_init & (pl.col("complete_time") == first_ok)).min(),
                              first_ok, pl.col("invoke_time").min()))
    return h.cached("tid_instances", build)


def _ambiguous(h: History) -> set[tuple[str, int]]:
    """(transactional_id, process) of instances that some newer instance (in ``first``
    order) began its ``init`` before this one's completed: which of the two holds the newer
    epoch is not known from the history."""
    inst = _instances(h)
    pairs = inst.join(inst.rename({"process": "p2", "first": "first2", "start": "start2"}),
                      on="transactional_id")
    amb = pairs.filter((pl.col("first2") > pl.col("first")) & (pl.col("start2") < pl.col("first")))
    return set(amb.select("transactional_id", "process").iter_rows())


def _fences(h: History, inst: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per (transactional_id, process p): the earliest time an instance newer than p
    completed ``init`` ok, and that init op. Instances are ordered as in ``_instances``
    (or ``inst``, the same frame with another ``first`` order)."""
    ops = h.ops.filter(pl.col("transactional_id").is_not_null())
    inst = (_instances(h) if inst is None else inst).select("transactional_id", "process", "first")
    inits = (
        ops.filter((pl.col("f") == "init") & (pl.col("type") == "ok")
                   & pl.col("complete_time").is_not_null())
        .select("transactional_id", new_process="process", fence_time="complete_time",
                fence_op="op")
        .join(inst.rename({"process": "new_process", "first": "new_first"}),
              on=["transactional_id", "new_process"])
    )
    schema = {"transactional_id": pl.String, "process": pl.Int64, "fence_time": pl.Int64,
              "fence_op": pl.UInt32, "new_process": pl.Int64}
    if inits.is_empty():
        return pl.DataFrame(schema=schema)
    # per init, in instance order, the earliest ok init at or after it: a suffix minimum
    # (a loop over inits, which are as few as instances); each instance takes the one of
    # the first newer instance (as-of join), instead of pairing every two instances
    inits = inits.sort("transactional_id", "new_first", "fence_time", "fence_op")
    best: list = [None] * inits.height
    cur, cur_tid = None, object()
    rows = inits.select("transactional_id", "fence_time", "fence_op", "new_process").rows()
    for i in range(len(rows) - 1, -1, -1):
        tid, ft, fo, np_ = rows[i]
        if tid != cur_tid:
            cur, cur_tid = None, tid
        if cur is None or ft <= cur[0]:
            cur = (ft, fo, np_)
        best[i] = cur
    suffix = inits.select("transactional_id", "new_first").with_columns(
        fence_time=pl.Series([b[0] for b in best], dtype=pl.Int64),
        fence_op=pl.Series([b[1] for b in best], dtype=pl.UInt32),
        new_process=pl.Series([b[2] for b in best], dtype=pl.Int64))
    return (
        inst.sort("first")
        .join_asof(suffix.sort("new_first"), left_on="first", right_on="new_first",
                   by="transactional_id", strategy="forward", allow_exact_matches=False,
                   check_sortedness=False)
        .drop_nulls("fence_time")
        .select(list(schema))
    )


def zombie_write_cases(h: History) -> list[dict]:
    """zombie-write: after ``init`` of a transactional.id completed ok for a newer
    instance, a value that an older instance of that id sent becomes visible, or the older
    instance's commit completes ok (KIP-98 zombie fencing by producer epoch).

    Instances of an id are its processes, ordered by when their ``init`` completed ok
    (else their first op). Evidence, per op X of
    an older instance, against the earliest ok init of a newer instance (the *fence*):

    * ``write-after-fence``: X was invoked after the fence and completed ok or had a value
      read;
    * ``commit-after-fence``: X was invoked before the fence and its commit was asked for
      after it (``meta.commit_ns``; without it, X's ok completion), yet completed ok: the
      fence should have aborted the old epoch's open transaction. A commit asked for before
      the fence may complete ok afterwards: its EndTxn reached the coordinator first, and
      the newer init waited for it (CONCURRENT_TRANSACTIONS), e.g. a zombie paused inside
      ``commit_transaction``;
    * ``visible-after-newer``: a value of X was read at a position of a key's committed
      log after a value the newer instance wrote.

    Fenced errors (``_FENCED``, ``PRODUCER_FENCED``, ``INVALID_PRODUCER_EPOCH``) on the old
    instance are the expected outcome and are counted in each example.

    Ambiguous order: an instance paused after its InitProducerId was answered but before
    it read the answer records its ``init`` ok only once resumed, after a replacement that
    registered later. A case against an instance whose order to a newer one is not certain
    (the newer one invoked its ``init`` before this one's completed) stands only if the
    other order, by when each ``init`` was invoked, also gives a case for that
    transactional.id: one of the two then wrote as a zombie whichever registered first.

    Example: {"anomaly": "zombie-write", "evidence", "transactional_id", "op": op ref,
    "fence": op ref of the newer init, "values": [{"key", "value", "offset"}], "explanation"}.
    """
    cases = _cases(h)
    if not cases:
        return []
    amb = _ambiguous(h)
    if not amb:
        return cases
    doubt = [c for c in cases if (c["transactional_id"], c["op"]["process"]) in amb]
    if not doubt:
        return cases
    by_start = _instances(h).with_columns(first=pl.col("start"))
    other = {c["transactional_id"] for c in _cases(h, by_start)}
    return [c for c in cases if c not in doubt or c["transactional_id"] in other]


def _cases(h: History, inst: pl.DataFrame | None = None) -> list[dict]:
    """The cases of ``zombie_write_cases`` under one order of the instances: ``inst``
    (transactional_id, process, first), by default ``_instances``."""
    inst = (_instances(h) if inst is None else inst).select("transactional_id", "process", "first")
    fences = _fences(h, inst)
    if fences.is_empty():
        return []
    wall = writes(h).select("op", "key", "value", "offset", "read", "transactional_id",
                            "process").with_columns(pos=pl.Series(write_pos(h)))
    # only fenced (older) instances can be zombies; only newer ones fence
    old = fences["process"].unique().implode()
    w = wall.filter(pl.col("process").is_in(old) & pl.col("transactional_id").is_not_null())
    opsx = (
        h.ops.filter(pl.col("f").is_in(["txn", "send"]) & pl.col("process").is_in(old))
        .join(fences, on=["transactional_id", "process"], how="inner")
    )
    read_ops = w.filter(pl.col("read")).select("op").unique().with_columns(any_read=pl.lit(True))
    opsx = opsx.join(read_ops, on="op", how="left").with_columns(pl.col("any_read").fill_null(False))
    after = opsx.filter((pl.col("invoke_time") > pl.col("fence_time"))
                        & ((pl.col("type") == "ok") | pl.col("any_read")))
    # when the commit was asked for (meta.commit_ns), if the client says; else its completion
    commit = opsx.filter((pl.col("invoke_time") <= pl.col("fence_time")) & (pl.col("type") == "ok")
                         & (pl.coalesce("commit_time", "complete_time") > pl.col("fence_time")))
    # visible-after-newer: an old value read above the newer instance's first position
    # newer instances: all but the first of each id; per (id, key), in instance order, the
    # lowest position any instance at or after it wrote (a suffix minimum), taken by each
    # instance from the first newer one (as-of join)
    newer = (inst.filter(pl.col("first") > pl.col("first").min().over("transactional_id"))
             ["process"].unique().implode())
    nw = wall.filter(pl.col("process").is_in(newer) & pl.col("transactional_id").is_not_null()
                     & (pl.col("pos") >= 0))
    if inst["process"].n_unique() == inst.height:  # one id per process: group by number
        firstpos = (nw.group_by("process", "key").agg(newpos=pl.col("pos").min())
                    .join(inst.select("process", "transactional_id"), on="process"))
    else:
        firstpos = nw.group_by("transactional_id", "process", "key").agg(newpos=pl.col("pos").min())
    suffix = (
        firstpos.join(inst, on=["transactional_id", "process"])
        .sort("transactional_id", "key", "first")
        .with_columns(newpos=pl.col("newpos").cum_min(reverse=True).over("transactional_id", "key"))
        .select("transactional_id", "key", nfirst="first", newpos="newpos")
    )
    newer_first = (
        inst.join(suffix.select("transactional_id", "key").unique(), on="transactional_id")
        .sort("first")
        .join_asof(suffix.sort("nfirst"), left_on="first", right_on="nfirst",
                   by=["transactional_id", "key"], strategy="forward", allow_exact_matches=False,
                   check_sortedness=False)
        .drop_nulls("newpos")
        .select("transactional_id", "process", "key", "newpos")
    )
    vis_ops = (
        w.filter(pl.col("pos") >= 0).filter(pl.col("read"))
        .join(newer_first, on=["transactional_id", "process", "key"], how="inner")
        .filter(pl.col("pos") > pl.col("newpos"))["op"].unique().to_list()
    )
    evidence: dict[int, str] = {}
    for op in after["op"].to_list():
        evidence.setdefault(op, "write-after-fence")
    for op in commit["op"].to_list():
        evidence.setdefault(op, "commit-after-fence")
    for op in vis_ops:
        evidence.setdefault(op, "visible-after-newer")
    if not evidence:
        return []
    fence_of = {r["op"]: r for r in opsx.select("op", "fence_op", "fence_time").iter_rows(named=True)}
    fenced = h.ops.filter(pl.col("error").str.contains("FENCED|INVALID_PRODUCER_EPOCH"))
    fenced_n = dict(fenced.group_by("transactional_id").len().iter_rows())
    out = []
    for op in sorted(evidence):
        ref = h.op_ref(op)
        tid = ref["transactional_id"]
        ev = evidence[op]
        fr = fence_of.get(op)
        fence = h.op_ref(fr["fence_op"]) if fr else None
        vals = [{"key": h.keys[k], "value": v, "offset": o, "read": r} for k, v, o, r in
                w.filter(pl.col("op") == op).select("key", "value", "offset", "read").iter_rows()]
        fdesc = describe_op(h, fr["fence_op"]) if fr else "a newer init"
        what = {
            "write-after-fence": "was invoked after the fence and "
                                 + ("committed" if ref["type"] == "ok" else "had a value read"),
            "commit-after-fence": (
                "began before the fence but asked to commit after it, and the commit completed ok"
                if h.ops["commit_time"][op] is not None else
                "began before the fence but its commit completed ok after it (the history does "
                "not say when it asked to commit: no meta.commit_ns)"),
            "visible-after-newer": "has a value read above a value of the newer instance",
        }[ev]
        out.append({
            "anomaly": "zombie-write",
            "evidence": ev,
            "transactional_id": tid,
            "op": ref,
            "fence": fence,
            "values": vals[:20],
            "fenced_errors_for_id": fenced_n.get(tid, 0),
            "explanation": (
                f"{describe_op(h, op)} is an older instance of transactional.id {tid} fenced "
                f"by {fdesc}, yet it {what}"
            ),
        })
    return out
