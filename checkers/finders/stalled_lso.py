"""stalled-lso: a read_committed consumer cannot advance on a key for too long."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..history import History
from ..history.log import I64_MAX, OK, index, log, writes

#: the nemesis info event the runner writes before the final drain (harness.cluster.open_txns)
OPEN_TXNS_F = "open-transactions"


def availability(h: History) -> pl.DataFrame:
    """Per committed-log position, when it was certainly readable: the earlier of its
    writer's ok completion and its first read. Columns: key, pos, avail (ns)."""
    def build(h: History):
        ix = index(h)
        ct = h.ops["complete_time"].fill_null(I64_MAX).to_numpy()
        best = np.full(ix.n_slots, I64_MAX, np.int64)
        if len(ix.r_op):  # scatters over the slots: no group-by of every read
            np.minimum.at(best, ix.r_slot, ct[ix.r_op])
        okw = (ix.w_type == OK) & (ix.w_slot >= 0)
        np.minimum.at(best, ix.w_slot[okw], ct[ix.w_op[okw]])
        rows = np.flatnonzero(ix.in_log)
        av = best[rows]
        keep = av < I64_MAX
        return pl.DataFrame({"key": ix.slot_key[rows][keep].astype(np.uint32),
                             "pos": ix.log_pos[keep], "avail": av[keep]})
    return h.cached("availability", build)


def _last_reads(h: History) -> pl.DataFrame:
    """The last read of each run of one op's reads of one key (only those can wait: the
    reads before it in the run are followed at once by a read of the same op). Columns:
    process, key, op, pos, t (the op's completion)."""
    ix = index(h)
    v = np.flatnonzero(ix.r_pos >= 0)
    op, key = ix.r_op[v], ix.r_key[v]
    last = np.ones(len(v), bool)
    if len(v) > 1:
        last[:-1] = (op[1:] != op[:-1]) | (key[1:] != key[:-1])
    sel = v[last]
    rop = ix.r_op[sel]
    return pl.DataFrame({
        "process": h.ops["process"].gather(rop),
        "key": ix.r_key[sel].astype(np.uint32),
        "op": rop.astype(np.uint32),
        "pos": ix.r_pos[sel].astype(np.int64),
        "t": h.ops["complete_time"].gather(rop),
    })


def _end_times(h: History) -> dict[int, int]:
    """When each process stopped: its last event if it crashed (an info op or ``crash``),
    else the end of the history (empty polls are not recorded, so a live consumer's last
    event says nothing about when it stopped polling)."""
    times = [t for t in (h.ops["complete_time"].max(), h.ops["invoke_time"].max()) if t is not None]
    times += [e.get("time") for e in h.nemesis if isinstance(e.get("time"), int)]
    end = max(times) if times else 0
    last = h.ops.group_by("process").agg(
        t=pl.max_horizontal(pl.col("complete_time").max(), pl.col("invoke_time").max()),
        dead=((pl.col("type") == "info") | (pl.col("f") == "crash")).any())
    return {p: (t if dead else end) for p, t, dead in last.iter_rows()}


def _ending(row: dict) -> str:
    if row["revoke_t"] is not None and (row["next_t"] is None or row["revoke_t"] < row["next_t"]):
        return ", until a rebalance took the key away"
    return " and never read it" if row["next_t"] is None else ""


def open_transactions_event(h: History) -> dict | None:
    """The history's last ``open-transactions`` event (its ``index``, ``time`` and ``value``),
    or None."""
    for e in reversed(h.nemesis):
        if e.get("f") == OPEN_TXNS_F and isinstance(e.get("value"), dict):
            return e
    return None


def open_transactions(h: History) -> dict | None:
    """The value of the history's last ``open-transactions`` event (harness.cluster.open_txns:
    which transactions held which keys' last stable offset when the writers stopped, which
    ended while the harness waited, which keys the final drain left out), or None."""
    ev = open_transactions_event(h)
    return ev["value"] if ev is not None else None


def _txn_op(h: History, key: str, offset: int, tid: str | None) -> dict | None:
    """The op that wrote ``key`` at ``offset`` (of transactional id ``tid`` when given): its
    ref and invoke time, or None."""
    if key not in h.keys:
        return None
    w = writes(h).filter((pl.col("key") == h.keys.index(key)) & (pl.col("offset") == offset))
    if tid is not None and w.height:
        w = w.filter(pl.col("transactional_id") == tid)
    if not w.height:
        return None
    op = int(w["op"][0])
    return {**h.op_ref(op), "invoke_time": h.ops["invoke_time"][op]}


def holder_phrase(h: History, hd: dict) -> str:
    """'t0/3 last stable offset held at 135 by producer id 1 epoch 0 (eosc-txn-4), open since
    35.2 s (txn op 860 of process 6), coordinator state Ongoing on broker 2 ...'."""
    tid = hd.get("transactional_id")
    out = (f"{hd['key']} last stable offset held at {hd['start_offset']} by producer id {hd['producer_id']} "
           f"epoch {hd['producer_epoch']}" + (f" ({tid})" if tid else ""))
    op = _txn_op(h, hd["key"], hd["start_offset"], tid)
    if op is not None and op["invoke_time"] is not None:
        out += (f", open since {op['invoke_time'] / 1e9:.1f} s ({op['f']} op {op['invoke_index']} of process "
                f"{op['process']}, {op['type']})")
    if hd.get("state"):
        out += f", coordinator state {hd['state']} on broker {hd.get('coordinator')}"
        extra = [f"timeout {hd['timeout_ms']} ms" if hd.get("timeout_ms") else None,
                 f"begun {hd['started_s']:.1f} s by the coordinator's clock" if hd.get("started_s") is not None else None]
        extra = [x for x in extra if x]
        if extra:
            out += f" ({', '.join(extra)})"
    if hd.get("status") == "hanging":
        out += f"; a hanging transaction: {hd.get('why')}"
    elif hd.get("status") == "unknown":
        out += f"; coordinator state unknown: {hd.get('why')}"
    if hd.get("released_s") is not None:
        out += f"; the offset moved on at {hd['released_s']:.1f} s while the harness waited before the final drain"
    elif hd.get("status") is not None:
        out += "; still held when the final drain began"
    return out


def _held_by(h: History, ot: dict | None, key: str, stuck: int | None, nxt: int | None) -> list[dict]:
    """The holders the open-transactions record names for ``key`` that explain a stall between
    offsets ``stuck`` (last read) and ``nxt`` (the next committed record): start offset in
    (stuck, nxt]."""
    if not ot:
        return []
    out = []
    for hd in (ot.get("holders") or {}).get(key) or []:
        so = hd.get("start_offset")
        if not isinstance(so, int):
            continue
        if (stuck is None or so > stuck) and (nxt is None or so <= nxt):
            out.append({**hd, "explanation": holder_phrase(h, hd)})
    return out


def unjudged_cases(h: History) -> list[dict]:
    """One unknown stalled-lso case per key the final drain left out because a transaction its
    coordinator still lists as open held it past the wait (harness.cluster.open_txns): the
    verdict says so instead of judging that key's reads (no torn-transaction or unseen for it)."""
    ot = open_transactions(h)
    out = []
    for key, why in sorted(((ot or {}).get("unjudged") or {}).items()):
        hs = [{**hd, "explanation": holder_phrase(h, hd)} for hd in (ot.get("holders") or {}).get(key) or []]
        out.append({"anomaly": "stalled-lso", "key": key, "unknown": True, "held_by": hs,
                    "explanation": why + (f" ({hs[0]['explanation']})" if hs else "")})
    return out


def stalled_lso_cases(h: History, bound_s: float | None = None) -> list[dict]:
    """stalled-lso: a read_committed consumer cannot advance on a key for longer than the
    scenario's bound (``meta.liveness.stalled_lso_bound_s``) while the key has records: a hanging
    transaction holds the last stable offset back (KIP-98; KAFKA-17754 family). A liveness
    report: it fails a run only when listed in ``meta["fail_on"]``; with no bound, no cases.

    For each consumer and key, after each read at position p (or from its assign op, at
    position -1 when assigned from the beginning), the wait is the time until its next read
    of the key, minus the time position p+1 became available (its writer's ok completion or
    anyone's first read of it). A consumer that never read p+1 waits until it crashed or the
    history ended, or until an ``assign`` op gave it an assignment without the key, or gave
    the key to another member of its consumer group (a rebalance moved the key, and the new
    owner's reads count). One case per
    (consumer, key): the longest wait over the bound.

    When the history has the runner's ``open-transactions`` event (the brokers asked, before the
    final drain, which transactions held which keys: harness.cluster.open_txns), a case whose
    stall a holder explains (its first offset between the last offset read and the next
    committed one) gets ``held_by`` and says who held it; keys the final drain left out
    because their holder was still open are unknown cases (``unjudged_cases``).

    Example: {"anomaly": "stalled-lso", "key", "process", "stuck_at": {"pos", "offset"},
    "next": {"pos", "value", "available_ns"}, "stalled_ms", "held_by": [holder], "explanation"}.
    """
    unjudged = unjudged_cases(h)
    if bound_s is None:
        return unjudged
    return _stalls(h, bound_s) + unjudged


def _stalls(h: History, bound_s: float) -> list[dict]:
    r = _last_reads(h)
    starts, revokes, gains = [], [], []
    members: dict[str, list[int]] = {}  # consumer group -> its processes
    for gid, proc in (h.ops.filter(pl.col("group_id").is_not_null())
                      .select("group_id", "process").unique().sort("process").iter_rows()):
        members.setdefault(gid, []).append(proc)
    for op, ex in h.extras.items():
        row = h.ops.row(op, named=True)
        if row["f"] != "assign" or row["type"] != "ok" or not isinstance(ex.get("value"), list):
            continue
        meta = ex.get("meta") or {}
        for k in ex["value"]:
            if k in h.keys and meta.get("from") == "beginning":
                starts.append((row["process"], h.keys.index(k), op, -1, row["complete_time"]))
        # An assign op carries the whole new assignment: every other key is revoked here.
        revokes += [(row["process"], i, row["invoke_time"])
                    for i, k in enumerate(h.keys) if k not in ex["value"]]
        # A group member assigned a key owns it from now on: every other member lost it
        # (a fenced or paused member, e.g. a zombie, records no assign op of its own).
        mine = [h.keys.index(k) for k in ex["value"] if k in h.keys]
        revokes += [(p, i, row["invoke_time"]) for p in members.get(row["group_id"], ())
                    if p != row["process"] for i in mine]
        gains += [(row["process"], i, row["invoke_time"]) for i in mine]
    if starts:
        r = pl.concat([r, pl.DataFrame(starts, schema=r.schema, orient="row")])
    if r.is_empty():
        return []
    ends = _end_times(h)
    av = availability(h)
    steps = (
        r.sort("process", "key", "t", "pos")
        .with_columns(next_t=pl.col("t").shift(-1).over("process", "key"))
        .with_columns(npos=pl.col("pos") + 1)
        .join(av.rename({"pos": "npos"}), on=["key", "npos"], how="inner")
        .with_columns(end=pl.col("process").replace_strict(ends, default=None, return_dtype=pl.Int64))
    )
    if revokes:
        schema = {"process": r.schema["process"], "key": r.schema["key"], "at": pl.Int64}
        rv = pl.DataFrame(revokes, schema=schema, orient="row").rename({"at": "revoke_t"})
        # a read while the key belonged to another member (a zombie's, say) owes nothing:
        # keep a step only if the process's latest assignment event for the key gave it
        owns = pl.concat([
            pl.DataFrame(gains, schema=schema, orient="row").with_columns(owns=pl.lit(True)),
            rv.rename({"revoke_t": "at"}).with_columns(owns=pl.lit(False))]).sort("at", "owns")
        steps = (steps.sort("t")
                 .join_asof(owns, left_on="t", right_on="at", by=["process", "key"],
                            strategy="backward", check_sortedness=False)
                 .filter(pl.col("owns").fill_null(True)).drop("at", "owns"))
        rv = rv.sort("revoke_t")
        steps = (steps.sort("t")
                 .join_asof(rv, left_on="t", right_on="revoke_t", by=["process", "key"],
                            strategy="forward", check_sortedness=False)
                 .with_columns(end=pl.min_horizontal("end", "revoke_t")))
    else:
        steps = steps.with_columns(revoke_t=pl.lit(None, pl.Int64))
    steps = (
        steps
        .with_columns(wait=pl.min_horizontal("next_t", "end") - pl.max_horizontal("t", "avail"))
        .filter(pl.col("wait") > int(bound_s * 1e9))
        .sort("wait", descending=True)
        .group_by("process", "key", maintain_order=True).first()
        .sort("process", "key")
    )
    lg = log(h)
    ot = open_transactions(h)
    out = []
    for row in steps.iter_rows(named=True):
        key = h.keys[row["key"]]
        nxt = lg.filter((pl.col("key") == row["key"]) & (pl.col("pos") == row["npos"]))
        noff, nval = (nxt["offset"][0], nxt["value"][0]) if nxt.height else (None, None)
        cur = lg.filter((pl.col("key") == row["key"]) & (pl.col("pos") == row["pos"]))
        ms = row["wait"] / 1e6
        stuck = cur["offset"][0] if cur.height else None
        held_by = _held_by(h, ot, key, stuck, noff)
        out.append({
            "anomaly": "stalled-lso",
            "key": key,
            "process": row["process"],
            "stuck_at": {"pos": row["pos"], "offset": stuck},
            "next": {"pos": row["npos"], "offset": noff, "value": nval,
                     "available_ns": row["avail"]},
            "stalled_ms": ms,
            "held_by": held_by,
            "explanation": (
                f"process {row['process']} did not read position {row['npos']} of key {key} "
                f"(value {nval}, offset {noff}) for {ms:.0f} ms after it was committed "
                f"(bound {bound_s} s)" + _ending(row)
                + "".join(f"; {hd['explanation']}" for hd in held_by)
            ),
        })
    return out
