"""Derived data shared by the finders: writes, reads, and each key's committed log.

Terms (docs/anomalies.md):

* A write *must have committed* when its op completed ``ok``, or completed ``info`` and any
  of the op's values was read by any poll (a transaction is atomic, so one read value
  commits all of them). In a non-transactional ``send`` op that completed ``info`` each
  record stands alone: it must have committed when it was read or its delivery report gave
  an offset (acknowledged by the leader, ``acks=all``).
* A key's *log* is the order of values by offset as observed by all sends and polls. The
  *committed log* keeps the offsets read by polls and those of writes that must have
  committed, less offsets held by writes of ``fail`` ops (aborted data is never part of it).
  Positions (0, 1, 2, ...) in this committed log are what finders compare: a transactional
  topic's offsets have gaps (control records, aborted batches), so offset arithmetic lies.

How it is computed (``index(h)``, memoised on the History): every (key, offset) that any
micro-op mentions gets an integer *slot* (dense: slots of one key are consecutive offsets,
so slot order is (key, offset) order). Per-slot facts (read how often, first value read,
whether all reads there agree, aborted, committed) are numpy scatters over the reads and
writes; the committed log is a mask over slots; a read's position is two gathers. Joins on
(key, value) are done only for the rows the slot facts cannot settle (values read at another
offset, unknown offsets, disagreeing reads): none in a consistent history.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from .arrays import positions
from .model import History

I64_MAX = np.iinfo(np.int64).max
OK, FAIL, INFO = 0, 1, 2  # physical codes of history.TYPE


def shift_in_group(df: pl.DataFrame, by: list[str], cols: dict[str, str], n: int = 1) -> pl.DataFrame:
    """Add ``{new: col shifted by n}`` within runs of equal ``by`` (null across a group
    boundary). ``df`` must be sorted by ``by``. A plain shift plus a boundary mask is much
    cheaper than ``.over()`` windows on millions of rows."""
    same = pl.all_horizontal([pl.col(g) == pl.col(g).shift(n) for g in by])
    return df.with_columns(
        [pl.when(same).then(pl.col(c).shift(n)).otherwise(None).alias(new) for new, c in cols.items()])


def take(a: np.ndarray, i: np.ndarray, fill: int = -1) -> np.ndarray:
    """``a[i]`` where ``i >= 0``, ``fill`` elsewhere."""
    if len(a) == 0 or len(i) == 0:
        return np.full(len(i), fill, dtype=a.dtype if len(a) else np.int64)
    if i.min() >= 0:
        return a[i]
    return np.where(i >= 0, a[np.maximum(i, 0)], fill).astype(a.dtype, copy=False)


def dense_rank(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(rank of each element among the distinct values, number of distinct values)."""
    if len(a) == 0:
        return np.zeros(0, np.int64), 0
    u, inv = np.unique(a, return_inverse=True)
    return inv.astype(np.int64), len(u)


OP_COLS = ["op", "invoke_index", "complete_index", "process", "f", "type",
           "invoke_time", "complete_time", "transactional_id", "final"]
W_OP_COLS = ["process", "f", "type", "complete_time", "transactional_id"]


@dataclass
class Index:
    """Slots, reads and writes as numpy arrays (see the module docstring). Read arrays are
    aligned with ``reads(h)``, write arrays with ``writes(h)``; slot arrays have n_slots
    entries; -1 means none."""

    n_slots: int
    slot_key: np.ndarray  # key of each slot
    slot_off: np.ndarray  # offset of each slot
    r_op: np.ndarray
    r_key: np.ndarray
    r_val: np.ndarray
    r_slot: np.ndarray
    r_cnt: np.ndarray  # reads per slot
    r_first: np.ndarray  # first value read at the slot
    r_cons: np.ndarray  # every read of the slot returned r_first
    w_op: np.ndarray
    w_key: np.ndarray
    w_val: np.ndarray
    w_slot: np.ndarray  # -1: offset unknown
    w_place: np.ndarray  # w_slot, or where a poll returned the value when the send's offset is unknown
    w_type: np.ndarray  # OK / FAIL / INFO of the writing op
    o_first: np.ndarray  # first value observed at the slot (reads first, then sends)
    o_cons: np.ndarray  # every observation of the slot (reads, sends with it) agrees
    dup_kv: pl.DataFrame  # (key, value) pairs observed at more than one offset
    w_read: np.ndarray  # bool: the (key, value) was returned by some poll
    w_committed: np.ndarray  # bool: must have committed
    in_log: np.ndarray  # bool per slot
    log_row: np.ndarray  # slot -> row of log(h) or -1
    log_pos: np.ndarray  # log row -> position
    log_val: np.ndarray  # log row -> value
    r_pos: np.ndarray  # position of each read in its key's committed log, -1 if none

    def read_kv(self) -> pl.DataFrame:
        """Distinct-enough (key, value) pairs returned by polls (one per consistent read
        slot, every distinct pair at the others); for semi joins."""
        s = np.flatnonzero((self.r_cnt > 0) & self.r_cons)
        parts = [pl.DataFrame({"key": self.slot_key[s].astype(np.uint32), "value": self.r_first[s]})]
        odd = ~self.r_cons[self.r_slot]
        if odd.any():
            parts.append(pl.DataFrame({"key": self.r_key[odd], "value": self.r_val[odd]}).unique())
        return pl.concat(parts)


def _slots(key: np.ndarray, off: np.ndarray, has: np.ndarray, n_keys: int):
    """Slot of every row (-1 where the offset is unknown), n_slots, slot_key, slot_off."""
    slot = np.full(len(key), -1, np.int64)
    if not has.any():
        return slot, 0, np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = key[has].astype(np.int64)
    o = off[has]
    lo = np.full(n_keys, I64_MAX, np.int64)
    hi = np.full(n_keys, -I64_MAX - 1, np.int64)
    np.minimum.at(lo, k, o)
    np.maximum.at(hi, k, o)
    present = np.flatnonzero(lo <= hi)
    spans = [int(hi[i]) - int(lo[i]) + 1 for i in present]
    total = sum(spans)
    if total <= 4 * len(o) + 1024:  # dense: offsets of a partition are nearly consecutive
        span = np.zeros(n_keys, np.int64)
        span[present] = spans
        base = np.cumsum(span) - span
        slot[has] = base[k] + (o - lo[k])
        slot_key = np.repeat(np.arange(n_keys, dtype=np.int64), span)
        slot_off = np.arange(total, dtype=np.int64) - base[slot_key] + lo[slot_key]
        return slot, total, slot_key, slot_off
    # sparse offsets: slots are the distinct (key, offset) pairs, in order
    d = pl.DataFrame({"key": k, "offset": o}).unique().sort("key", "offset")
    s = pl.DataFrame({"key": k, "offset": o}).join(
        d.with_row_index("slot"), on=["key", "offset"], how="left", maintain_order="left")
    slot[has] = s["slot"].to_numpy()
    return slot, d.height, d["key"].to_numpy(), d["offset"].to_numpy()


def distinct_obs(ix: Index, seen: np.ndarray | None = None) -> pl.DataFrame:
    """Distinct (key, offset, value, slot, consistent) observations: one row per slot whose
    observations agree, every distinct value at the others."""
    if seen is None:
        seen = ix.r_cnt > 0
        seen[ix.w_slot[ix.w_slot >= 0]] = True
    s = np.flatnonzero(seen & ix.o_cons)
    parts = [pl.DataFrame({"key": ix.slot_key[s].astype(np.uint32), "offset": ix.slot_off[s],
                           "value": ix.o_first[s], "slot": s,
                           "consistent": np.ones(len(s), bool)})]
    odd = np.flatnonzero(seen & ~ix.o_cons)
    if len(odd):
        bad = np.zeros(ix.n_slots, bool)
        bad[odd] = True
        ws = ix.w_slot >= 0
        w_slot = ix.w_slot[ws]
        rr, wr = bad[ix.r_slot], bad[w_slot]
        slots = np.concatenate([ix.r_slot[rr], w_slot[wr]])
        parts.append(pl.DataFrame({
            "key": ix.slot_key[slots].astype(np.uint32),
            "offset": ix.slot_off[slots],
            "value": np.concatenate([ix.r_val[rr], ix.w_val[ws][wr]]),
            "slot": slots,
            "consistent": np.zeros(len(slots), bool),
        }).unique(["slot", "value"], maintain_order=True))
    return pl.concat(parts)


def _duplicates(ix: Index, seen: np.ndarray) -> pl.DataFrame:
    """(key, value) pairs observed at more than one offset."""
    d = distinct_obs(ix, seen)
    k = d["key"].to_numpy().astype(np.int64)
    v = d["value"].to_numpy()
    empty = pl.DataFrame(schema={"key": pl.UInt32, "value": pl.Int64})
    if len(v) < 2:
        return empty
    lo, hi = int(v.min()), int(v.max())
    span = hi - lo + 1
    if span * (int(k.max()) + 1) < (1 << 62):  # pack (key, value) into one int64 and sort
        p = np.sort(k * span + (v - lo))
        dup = np.unique(p[1:][p[1:] == p[:-1]])
        if not len(dup):
            return empty
        return pl.DataFrame({"key": (dup // span).astype(np.uint32), "value": dup % span + lo})
    return d.filter(d.select("key", "value").is_duplicated()).select("key", "value").unique()


def _reads_of(rk: np.ndarray, rv: np.ndarray, wk: np.ndarray, wv: np.ndarray) -> np.ndarray:
    """Rows of the reads (rk, rv) whose (key, value) is among (wk, wv): packed into one int64
    when the values allow, so the few wanted pairs are found without grouping every read."""
    if not len(rk) or not len(wk):
        return np.zeros(0, np.int64)
    lo, hi = int(min(rv.min(), wv.min())), int(max(rv.max(), wv.max()))
    span = hi - lo + 1
    if span * (int(max(rk.max(), wk.max())) + 1) < (1 << 62):
        rp = rk.astype(np.int64) * span + (rv - lo)
        return np.flatnonzero(np.isin(rp, wk.astype(np.int64) * span + (wv - lo)))
    hit = pl.DataFrame({"key": rk, "value": rv}).with_row_index("row").join(
        pl.DataFrame({"key": wk, "value": wv}).unique(), on=["key", "value"], how="semi")
    return hit["row"].to_numpy()


def index(h: History) -> Index:
    return h.cached("index", _index)


def _index(h: History) -> Index:
    m = h.mops
    n_ops = h.ops.height
    kind = m["kind"].to_physical().to_numpy()
    key = m["key"].to_numpy()
    offs = m["offset"]
    has = offs.is_not_null().to_numpy()
    off = offs.fill_null(0).to_numpy()
    val = m["value"].to_numpy()
    op = m["op"].to_numpy()
    slot, S, slot_key, slot_off = _slots(key, off, has, len(h.keys))
    del off, has
    is_r = kind == 1
    ri, wi = np.flatnonzero(is_r), np.flatnonzero(~is_r)
    del kind, is_r
    # reads
    r_slot, r_val = slot[ri], val[ri]
    r_cnt = np.bincount(r_slot, minlength=S) if S else np.zeros(0, np.int64)
    r_first = np.zeros(S, np.int64)
    r_first[r_slot[::-1]] = r_val[::-1]  # the last assignment wins: the first read
    r_cons = np.ones(S, bool)
    r_cons[r_slot[r_val != r_first[r_slot]]] = False
    # writes
    w_op, w_key, w_val, w_slot = op[wi], key[wi], val[wi], slot[wi]
    w_type = h.ops["type"].to_physical().to_numpy()[w_op].astype(np.int8)
    ws = w_slot >= 0
    sl = w_slot[ws]
    # observations per slot (polls, sends that learned their offset) and the values seen
    # at more than one offset
    w_first = np.zeros(S, np.int64)
    w_first[sl[::-1]] = w_val[ws][::-1]
    o_first = np.where(r_cnt > 0, r_first, w_first)
    o_cons = r_cons.copy()
    o_cons[sl[w_val[ws] != o_first[sl]]] = False
    seen = r_cnt > 0
    seen[sl] = True
    read = np.zeros(len(wi), bool)
    read[ws] = (r_cnt[sl] > 0) & r_cons[sl] & (r_first[sl] == w_val[ws])
    ix = Index(S, slot_key, slot_off, op[ri], key[ri], r_val, r_slot, r_cnt, r_first, r_cons,
               w_op, w_key, w_val, w_slot, w_slot, w_type, o_first, o_cons, None, read,
               None, None, None, None, None, None)
    ix.dup_kv = _duplicates(ix, seen)
    # a value sent to a known offset and read must have been read there, unless it sits at
    # several offsets or the reads of its offset disagree: only those, and sends with an
    # unknown offset, are settled by value
    if ix.dup_kv.is_empty():
        w_cons = np.zeros(len(wi), bool)  # no slot at all (no offset known, nothing read): none
        w_cons[ws] = r_cons[sl]
        resid = np.flatnonzero(~read & ~w_cons)
    else:
        resid = np.flatnonzero(~read)
    if len(resid):  # settle the rest by value: was (key, value) returned anywhere?
        rk = pl.DataFrame({"key": w_key[resid], "value": w_val[resid]})
        hit = ix.read_kv().join(rk.unique(), on=["key", "value"], how="semi").unique()
        if hit.height:
            read[resid] = rk.join(hit.with_columns(_h=pl.lit(True)), on=["key", "value"],
                                  how="left", maintain_order="left")["_h"].fill_null(False).to_numpy()
    unplaced = np.flatnonzero(~ws & read)
    if len(unplaced):  # Jepsen places such a send where polls returned its value (the first offset)
        sel = _reads_of(key[ri], r_val, w_key[unplaced], w_val[unplaced])
        at = (pl.DataFrame({"key": key[ri][sel], "value": r_val[sel], "slot": r_slot[sel]})
              .group_by("key", "value").agg(pl.col("slot").min()))
        got = (pl.DataFrame({"key": w_key[unplaced], "value": w_val[unplaced]})
               .join(at, on=["key", "value"], how="left", maintain_order="left")["slot"])
        ix.w_place = w_slot.copy()
        ix.w_place[unplaced] = got.fill_null(-1).to_numpy()
    op_read = np.zeros(n_ops, bool)
    op_read[w_op[read]] = True
    if h.ops_read_elsewhere:  # a part of a history cut by key (checkers.engines.parts)
        op_read[np.asarray(h.ops_read_elsewhere, dtype=np.int64)] = True
    # a transaction is atomic: one read value commits all of the op's; the records of a
    # non-transactional send op are independent: each must have committed when it was read
    # or acknowledged (its delivery report gave an offset)
    is_send = (h.ops["f"].cast(pl.String) == "send").to_numpy()[w_op]
    committed = (w_type == OK) | ((w_type == INFO) & np.where(is_send, read | ws, op_read[w_op]))
    ix.w_committed = committed
    # the committed log
    aborted = np.zeros(S, bool)
    aborted[w_slot[ws & (w_type == FAIL)]] = True
    cw = ws & committed
    in_log = r_cnt > 0
    in_log[w_slot[cw]] = True
    in_log &= ~aborted
    lv = np.where((r_cnt > 0) & r_cons, r_first, I64_MAX)
    odd = ~r_cons[r_slot]
    if odd.any():
        np.minimum.at(lv, r_slot[odd], r_val[odd])
    np.minimum.at(lv, w_slot[cw], w_val[cw])
    rows = np.flatnonzero(in_log)
    log_row = np.full(S, -1, np.int64)
    log_row[rows] = np.arange(len(rows))
    ix.in_log, ix.log_row = in_log, log_row
    ix.log_pos = positions(slot_key[rows])
    ix.log_val = lv[rows]
    ix.r_pos = take(ix.log_pos, log_row[r_slot])
    return ix


def reads(h: History) -> pl.DataFrame:
    """One row per record returned by a poll micro-op, in (op, seq) order.

    Columns: op, seq, key, offset, value. The reading op's columns are one gather away
    (``op_col(h, name, reads(h)["op"])``).
    """
    return h.cached("reads", lambda h: h.mops.filter(pl.col("kind") == "poll").drop("kind"))


def op_col(h: History, name: str, ops: pl.Series | np.ndarray) -> pl.Series:
    """Column ``name`` of h.ops for each op id in ``ops`` (row number == op id)."""
    if isinstance(ops, np.ndarray):
        ops = pl.Series(ops)
    return h.ops[name].gather(ops)


def writes(h: History) -> pl.DataFrame:
    """One row per send micro-op.

    Columns: op, seq, key, offset (null if unknown), value, the op's process, f, type,
    complete_time and transactional_id, ``read`` (this (key, value) was returned by some
    poll), ``op_read`` (some value of the op was), ``committed`` (must have committed).
    """
    def build(h: History):
        ix = index(h)
        w = h.mops.filter(pl.col("kind") == "send").drop("kind")
        op_read = np.zeros(h.ops.height, bool)
        op_read[ix.w_op[ix.w_read]] = True
        return w.with_columns(
            [h.ops[c].gather(w["op"]) for c in W_OP_COLS]
            + [pl.Series("read", ix.w_read), pl.Series("op_read", op_read[ix.w_op]),
               pl.Series("committed", ix.w_committed)])
    return h.cached("writes", build)


def must_commit_txns(h: History) -> np.ndarray:
    """Bool per op (row of ``h.ops``): a ``txn`` op that must have committed (``ok``, or
    ``info`` with one of its written values read: a transaction is atomic)."""
    w = writes(h).filter(pl.col("op_read"))
    op_read = np.zeros(h.ops.height, bool)
    op_read[w["op"].to_numpy()] = True
    t = h.ops["type"]
    return ((h.ops["f"].cast(pl.String) == "txn")
            & ((t == "ok") | ((t == "info") & pl.Series(op_read)))).to_numpy()


def log(h: History) -> pl.DataFrame:
    """The committed log: one row per (key, offset), sorted, with its position.

    Columns: key, offset, pos (0-based position in the key's committed log), value (the
    value observed there; the smallest one if observations disagree).
    """
    def build(h: History):
        ix = index(h)
        rows = np.flatnonzero(ix.in_log)
        return pl.DataFrame({
            "key": ix.slot_key[rows].astype(np.uint32),
            "offset": ix.slot_off[rows],
            "pos": ix.log_pos,
            "value": ix.log_val,
        })
    return h.cached("log", build)


def log_index(h: History) -> tuple[pl.DataFrame, dict[int, int]]:
    """The log plus, per key, the row at which its position 0 sits (row = start + pos)."""
    def build(h: History):
        lg = log(h)
        starts = lg.group_by("key").agg(pl.col("pos").len().alias("n")).sort("key")
        # the log is sorted by key, so the start of each key is the running sum of lengths
        start, acc = {}, 0
        for k, n in starts.iter_rows():
            start[k] = acc
            acc += n
        return lg, start
    return h.cached("log_index", build)


def log_slice(h: History, key: int, lo_pos: int, hi_pos: int, limit: int = 10) -> list[dict]:
    """Committed-log entries of ``key`` at positions lo_pos..hi_pos-1 (at most ``limit``)."""
    lg, start = log_index(h)
    s = start.get(key)
    if s is None or hi_pos <= lo_pos:
        return []
    part = lg.slice(s + lo_pos, min(hi_pos - lo_pos, limit))
    return [{"offset": o, "pos": p, "value": v} for o, p, v in
            part.select("offset", "pos", "value").iter_rows()]


def write_pos(h: History) -> np.ndarray:
    """Committed-log position of each send (aligned with writes(h)), -1 when it cannot be
    placed (offset unknown and its value never read) or is not in the committed log. A send
    whose offset is unknown sits where polls returned its value (``Index.w_place``)."""
    def build(h: History):
        ix = index(h)
        return take(ix.log_pos, take(ix.log_row, ix.w_place))
    return h.cached("write_pos", build)


def reads_with_pos(h: History) -> pl.DataFrame:
    """reads(h) with the committed-log position of each record (null when the record sits at
    an offset that holds aborted data, i.e. an aborted read) and the reading op's process,
    final and complete_time. Built only by finders that need every read row."""
    def build(h: History):
        r = reads(h)
        pos = index(h).r_pos
        return r.with_columns(
            pl.Series("pos", pos).set(pl.Series(pos < 0), None),
            *[h.ops[c].gather(r["op"]) for c in ("process", "final", "complete_time")])
    return h.cached("reads_with_pos", build)


def final_keys(h: History) -> set[int]:
    """Keys the final drain covered: assigned to, subscribed by, or polled by a process that
    made a poll with ``meta.final = true``."""
    def build(h: History):
        fprocs = set(h.ops.filter(pl.col("final"))["process"].to_list())
        if not fprocs:
            return set()
        in_f = h.ops["process"].is_in(sorted(fprocs)).to_numpy()
        ix = index(h)
        keys = set(np.unique(ix.r_key[in_f[ix.r_op]]).tolist())
        procs = h.ops["process"]
        for op, ex in h.extras.items():
            if procs[op] not in fprocs:
                continue
            val = ex.get("value")
            if not isinstance(val, list):
                continue
            for item in val:
                if not isinstance(item, str):
                    continue
                if item in h.keys:
                    keys.add(h.keys.index(item))
                else:  # a topic name: every partition of it seen in the history
                    prefix = item + "/"
                    keys.update(i for i, k in enumerate(h.keys) if k.startswith(prefix))
        return keys
    return h.cached("final_keys", build)


def describe_op(h: History, op: int) -> str:
    """'txn op 1204 of process 3 (transactional.id eosc-txn-2, ok)' style phrase."""
    r = h.op_ref(op)
    tid = f"transactional.id {r['transactional_id']}, " if r["transactional_id"] else ""
    return f"{r['f']} op {r['invoke_index']} of process {r['process']} ({tid}{r['type']})"


OUTCOME = {"ok": "committed (ok)", "fail": "aborted (fail)", "info": "had an unknown outcome (info)"}
