"""How a consume-transform-produce pipeline came to process inputs twice (eos-duplicate).

``pipeline_cases`` reports one eos-duplicate case per input record, so a processor that
started a partition over from offset 0 yields thousands of cases, and the verdict's first
ten examples all describe one event. This module says what the event was, from the history
alone (docs/anomalies.md "eos-duplicate: reprocessed ranges"):

* A *reprocessed range* is a run of eos-duplicate inputs at consecutive positions of one
  input key's committed log (``ranges``): "in/3, offsets 0-4598, 4,599 inputs".
* A *restart behind the committed offset* (``restarts``): a processor's consumer was
  assigned an input partition (an ``ok`` ``assign`` op, e.g. ``via: rebalance``) and its
  first read of it after the assign started at offset ``f``, while the transaction that
  committed last before the assign was invoked (one that must have committed: ``ok``, or
  ``info`` with a value read; by completion time, the lowest of any that overlap it) had
  polled that partition up to offset ``c - 1``. With the group's offsets sent in
  the transaction (KIP-98 ``send_offsets_to_transaction``; KIP-447) the committed offset was
  then at least ``c``, and a consumer that fetched it would start at ``c`` or later; it started
  at ``f < c``. Two kinds, by where it started:

  - ``offset-reset``: at the key's log start (the smallest offset the history saw on it), as
    ``auto.offset.reset=earliest`` does when the consumer has no committed offset. When a
    transaction of another process that polled the partition was open across the assign
    (invoked before it and settled after it: ``_resolved``), this is the signature of
    librdkafka's reset of a partition whose OffsetFetch met pending offsets during a
    rebalance (docs/findings/F4.md). Without one, both that (pending offsets of a
    transaction the history does not show) and docs/findings/F5.md (no offset found) fit.
  - ``behind-committed``: at an older, non-zero offset: the consumer was given an old
    committed offset (docs/findings/F5.md: a group coordinator answering OffsetFetch from a
    partly loaded ``__consumer_offsets`` shard).

  Without a restart behind a range, the inputs were processed twice some other way: two
  processors held the partition at once (fencing), or offsets were not committed with the
  output (auto-commit, offsets outside the transaction).

The restart facts need the processors' own reads in the history (the eos-pipeline workload
records them: ``explain``) and offsets sent in the transaction (``pipeline["offsets"]`` is
``"transaction"`` or absent). The app workload's application is a black box: its cases get
ranges only, and a range that starts at a partition's first committed input says so
(``explain_app``). These facts explain cases; they never add or remove one.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..history import History
from ..history.log import log, must_commit_txns, reads

#: at most this many restarts are named per range, and pending transactions per restart
_MAX_NAMED = 3
#: open transactions are looked up for the first this many restarts (``pending``: None after)
_MAX_PENDING = 200


def ranges(items: list[tuple[str, int, int]]) -> list[dict]:
    """Runs of ``items`` ((input key, offset, position in the key's committed log), one per
    eos-duplicate case) at consecutive positions of one key.

    Returns, in (key, position) order: {"key", "from_offset", "to_offset", "inputs",
    "cases": [indices into ``items``]}."""
    order = sorted(range(len(items)), key=lambda i: (items[i][0], items[i][2]))
    out: list[dict] = []
    for i in order:
        key, off, pos = items[i]
        cur = out[-1] if out else None
        if cur and cur["key"] == key and pos == cur["_pos"] + 1:
            cur.update(to_offset=off, inputs=cur["inputs"] + 1, _pos=pos)
            cur["cases"].append(i)
        else:
            out.append({"key": key, "from_offset": off, "to_offset": off, "inputs": 1, "cases": [i], "_pos": pos})
    for r in out:
        del r["_pos"]
    return out


def _span(r: dict) -> str:
    return (f"{r['key']} offsets {r['from_offset']}-{r['to_offset']}" if r["inputs"] > 1
            else f"{r['key']} offset {r['from_offset']}") + f" ({r['inputs']} input(s))"


def _heads_first(cases: list[dict], rs: list[dict], head) -> list[dict]:
    """``cases`` with ``range`` set, the first case of each range (``head(case, range)``
    returns its new form) first, then the rest, each group in (key, position) order."""
    heads, rest = [], []
    for r in rs:
        info = {k: r[k] for k in ("key", "from_offset", "to_offset", "inputs")}
        first, *others = r["cases"]
        heads.append(head(dict(cases[first], range=info), r))
        rest += [dict(cases[i], range=info) for i in others]
    return heads + rest


def _resolved(h: History, op: pl.Series) -> pl.Series:
    """When each transaction op's outcome was settled on the brokers, as far as the history
    tells (ns; null: never): its completion when ``ok`` or ``fail``; for ``info`` (a killed
    processor's transaction stays open on the brokers) the completion of the next ``ok``
    ``init`` of its transactional.id (``initTransactions`` aborts it, KIP-98), else null."""
    ops = h.ops
    t = pl.DataFrame({"row": pl.int_range(op.len(), eager=True), "op": op}).with_columns(
        type=ops["type"].gather(op), tid=ops["transactional_id"].gather(op),
        t=ops["invoke_time"].gather(op), done=ops["complete_time"].gather(op))
    inits = (ops.filter((pl.col("f").cast(pl.String) == "init") & (pl.col("type") == "ok")
                        & pl.col("transactional_id").is_not_null())
             .select(tid="transactional_id", t="invoke_time", init_done="complete_time").sort("t"))
    t = t.sort("t").join_asof(inits, on="t", by="tid", strategy="forward",
                                      check_sortedness=False).sort("row")
    return t.select(pl.when(pl.col("type") == "info").then(pl.col("init_done"))
                    .otherwise(pl.col("done")).alias("resolved"))["resolved"]


def restarts(h: History, in_keys: list[int]) -> list[dict]:
    """Restarts behind the committed offset on the input keys ``in_keys`` (key ids of ``h``;
    see the module docstring). One dict per (assign op, key) whose first read after the
    assign started behind the committed offset, in history order: {"key", "kind"
    ("offset-reset" | "behind-committed"), "assign": op ref, "first_read": {"offset", "op":
    op ref}, "committed": {"offset" (the lower bound c), "op": op ref of the transaction that
    committed it}, "pending": [op refs of other processes' transactions that polled the key
    and were open across the assign; at most 3; None past the first 200 restarts, not looked
    up], "log_start" (smallest offset seen on the key)}.
    Empty when the history has no ``ok`` assign of an input key or no transaction polled one."""
    ops = h.ops
    is_assign = ((ops["f"].cast(pl.String) == "assign") & (ops["type"] == "ok")).to_numpy()
    a_rows = []
    for op in np.flatnonzero(is_assign):
        ex = h.extras.get(int(op)) or {}
        val = ex.get("completion_value")
        if not isinstance(val, list):
            val = ex.get("value")
        for k in val if isinstance(val, list) else ():
            if isinstance(k, str) and k in h.keys:
                kid = h.keys.index(k)
                if kid in in_keys:
                    a_rows.append((int(op), kid))
    if not a_rows:
        return []
    a = pl.DataFrame(a_rows, schema={"a_op": pl.UInt32, "key": pl.UInt32}, orient="row")
    a = a.with_columns(process=ops["process"].gather(a["a_op"]),
                       a_index=ops["invoke_index"].gather(a["a_op"]),
                       a_time=ops["invoke_time"].gather(a["a_op"]),
                       a_done=ops["complete_time"].gather(a["a_op"]))
    is_txn = (ops["f"].cast(pl.String) == "txn").to_numpy()
    r = reads(h).filter(pl.col("key").is_in(in_keys))
    if r.is_empty():
        return []
    r = r.filter(pl.Series(is_txn[r["op"].to_numpy()]))
    per = (r.group_by("op", "key", maintain_order=True)
           .agg(first=pl.col("offset").first(), hi=pl.col("offset").max()))
    per = per.with_columns(process=ops["process"].gather(per["op"]),
                           index=ops["invoke_index"].gather(per["op"]),
                           invoke_time=ops["invoke_time"].gather(per["op"]),
                           complete_time=ops["complete_time"].gather(per["op"]))
    per = per.with_columns(resolved=_resolved(h, per["op"]))
    # each process's reads of a key belong to its latest assign of that key before them
    seg = (per.sort("index")
           .join_asof(a.sort("a_index").select("a_index", "a_op", "process", "key"),
                      left_on="index", right_on="a_index", by=["process", "key"], strategy="backward",
                      check_sortedness=False)
           .filter(pl.col("a_op").is_not_null()))
    first = seg.sort("index").group_by("a_op", "key", maintain_order=True).first()
    first = first.join(a.select("a_op", "key", "a_time", "a_done"), on=["a_op", "key"])
    # the group's committed offset at the assign: that of the transaction that committed last
    # before it (its last offset polled + 1). A reprocessing consumer commits lower offsets
    # again, so this is not a running max. Completion order stands in for commit order: when
    # other committing transactions overlap that last one, the smallest of their offsets is
    # taken (any of them may have committed last).
    must = must_commit_txns(h)
    c = (per.filter(pl.Series(must[per["op"].to_numpy()]) & pl.col("complete_time").is_not_null())
         .select("key", "complete_time", c_invoke="invoke_time", c_op="op", c=pl.col("hi") + 1)
         .sort("complete_time"))
    if c.is_empty():
        return []
    j = (first.sort("a_time")
         .join_asof(c, left_on="a_time", right_on="complete_time",
                    by="key", strategy="backward", allow_exact_matches=False, check_sortedness=False)
         .filter(pl.col("c").is_not_null() & (pl.col("first") < pl.col("c"))))
    rows = []
    for row in j.iter_rows(named=True):  # few: only reads behind the last commit
        overlap = c.filter((pl.col("key") == row["key"]) & (pl.col("complete_time") > row["c_invoke"])
                           & (pl.col("complete_time") < row["a_time"]))
        low = overlap.sort("c").row(0, named=True) if overlap.height else row
        if row["first"] < low["c"]:
            rows.append(dict(row, c=low["c"], c_op=low["c_op"]))
    j = pl.DataFrame(rows, schema=j.schema, orient="row").sort("index") if rows else j.clear()
    if j.is_empty():
        return []
    start = dict(log(h).group_by("key").agg(pl.col("offset").min()).iter_rows())
    out = []
    for n, row in enumerate(j.iter_rows(named=True)):
        k = row["key"]
        lo = min(start.get(k, row["first"]), row["first"])
        # other processes' txns that polled the key, invoked before the assign, still open after
        # it (a scan of the key's txns per restart: bounded to the first _MAX_PENDING restarts)
        after = row["a_done"] if row["a_done"] is not None else row["a_time"]
        pend = per.filter((pl.col("key") == k) & (pl.col("process") != row["process"])
                          & (pl.col("invoke_time") < row["a_time"])
                          & (pl.col("resolved").is_null() | (pl.col("resolved") > after))
                          ) if n < _MAX_PENDING else None
        out.append({
            "key": h.keys[k],
            "kind": "offset-reset" if row["first"] <= lo else "behind-committed",
            "assign": h.op_ref(row["a_op"]),
            "first_read": {"offset": row["first"], "op": h.op_ref(row["op"])},
            "committed": {"offset": row["c"], "op": h.op_ref(row["c_op"])},
            "pending": None if pend is None else [h.op_ref(p) for p in pend["op"].head(_MAX_NAMED)],
            "log_start": lo,
        })
    return out


def _why(h: History, s: dict) -> str:
    """One sentence on a restart (``restarts``' shape)."""
    a, fr, cm = s["assign"], s["first_read"], s["committed"]
    who = f"process {a['process']}" + (f" ({a['transactional_id']})" if a["transactional_id"] else "")
    where = "its log start" if s["kind"] == "offset-reset" else "behind that commit"
    text = (f"{who} was assigned {s['key']} (assign op {a['invoke_index']}) and read it from offset "
            f"{fr['offset']} (txn op {fr['op']['invoke_index']}), {where}, although txn op "
            f"{cm['op']['invoke_index']} of process {cm['op']['process']} had polled it up to offset "
            f"{cm['offset'] - 1} and committed before the assign")
    if s["kind"] == "behind-committed":
        return text + ("; an old committed offset was fetched: the signature of a group coordinator "
                       "answering from a partly loaded __consumer_offsets partition (docs/findings/F5.md)")
    text += "; the position came from auto.offset.reset (earliest), as when no committed offset is found"
    if s["pending"]:
        ps = ", ".join(f"txn op {p['invoke_index']}" for p in s["pending"])
        return text + (f", while a transaction of another process that polled {s['key']} was open across "
                       f"the assign ({ps}): the signature of librdkafka's reset after a rebalance that met "
                       "pending offsets (docs/findings/F4.md)")
    if s["pending"] is None:
        return text + " (open transactions not looked up past the first restarts)"
    return text + (f": librdkafka does so after a rebalance that met pending offsets (docs/findings/F4.md; "
                   f"no transaction of the history that polled {s['key']} was open across the assign), "
                   "and a group coordinator answering from a __consumer_offsets partition it has not "
                   "loaded yet finds none (docs/findings/F5.md)")


def explain(h: History, cases: list[dict], in_keys: list[int], offsets: str | None) -> list[dict]:
    """``cases`` (eos-duplicate, ``pipeline_cases`` shape) with the facts above: each case
    gets ``range`` ({"key", "from_offset", "to_offset", "inputs"}); the first case of each
    range also ``restarts`` (the restarts whose first read lies at or before the range's
    first offset, and whose committed offset lies past it; ``restarts``' shape) and a
    sentence added to its explanation. Returned reordered: the first case of every range,
    then the rest, each group in (key, position) order, so the verdict's first examples cover
    the distinct ranges. ``offsets``: how the pipeline commits the group's offsets
    (``"transaction"``, ``"consumer"``, ...; None: not recorded, taken as the transaction):
    restarts are looked for only when they go with the transaction."""
    if not cases:
        return cases
    looked = offsets in (None, "transaction")
    try:
        found = restarts(h, in_keys) if looked else []
    except Exception as e:  # noqa: BLE001 - an explanation must never cost the cases themselves
        return _unexplained(cases, e)

    def head(c: dict, r: dict) -> dict:
        why = [s for s in found if s["key"] == r["key"]
               and s["first_read"]["offset"] <= r["from_offset"] < s["committed"]["offset"]]
        c["restarts"] = why[:_MAX_NAMED]
        text = f"; first of the reprocessed range {_span(r)}"
        if why:
            text += ": " + _why(h, why[0]) + "".join(f". Again: {_why(h, w)}" for w in why[1:_MAX_NAMED])
        elif looked:
            text += (": no restart behind the committed offset precedes it (two processors holding "
                     "the partition at once, or offsets not committed with the output?)")
        c["explanation"] += text
        return c

    try:
        items = [(c["input"]["key"], c["input"]["offset"], c["input"]["pos"]) for c in cases]
        return _heads_first(cases, ranges(items), head)
    except Exception as e:  # noqa: BLE001
        return _unexplained(cases, e)


def _unexplained(cases: list[dict], e: Exception) -> list[dict]:
    """``cases`` as they came, each saying why it has no range: what explains them failed."""
    why = f" (reprocessed ranges not computed: {type(e).__name__}: {e})"
    return [dict(c, explanation=c.get("explanation", "") + why) for c in cases]


def explain_app(cases: list[dict], positions: dict[tuple[str, int], int],
                first: dict[str, int]) -> list[dict]:
    """The app workload's eos-duplicate ``cases`` (checkers/finders/app_end_to_end.py shape: ``key``,
    ``offset`` of the input) with their ``range`` and the first case of each range first;
    its explanation says whether the range starts at the key's first committed input
    (``first``: key -> offset), the mark of a partition started over from its log start.
    ``positions``: (key, offset) -> position among the key's committed inputs. The
    application's own reads are not in the history, so no restart is named."""
    def head(c: dict, r: dict) -> dict:
        text = f"; first of the duplicated range {_span(r)}"
        if r["inputs"] > 1 and first.get(r["key"]) == r["from_offset"]:
            text += (", from the partition's first input: as when a consumer starts over from "
                     "auto.offset.reset=earliest instead of the group's committed offset (offsets "
                     "not committed, or not found: docs/findings/F4.md, F5.md)")
        c["explanation"] += text
        return c

    try:
        items = [(c["key"], c["offset"], positions.get((c["key"], c["offset"]), -1)) for c in cases]
        return _heads_first(cases, ranges(items), head)
    except Exception as e:  # noqa: BLE001
        return _unexplained(cases, e)


def summary(cases: list[dict], limit: int = 50) -> list[dict]:
    """The reprocessed ranges of eos-duplicate ``cases`` (as ``explain``/``explain_app`` left
    them: the first case of each range first) for ``Verdict.stats["reprocessed_ranges"]``:
    every range, not only those among the examples, at most ``limit``. One dict per range:
    {"key", "from_offset", "to_offset", "inputs", "restarts": [{"kind", "assign_index",
    "first_offset", "committed_offset", "pending"}] (empty without restarts; absent for the
    app workload, where none are looked for)}."""
    out, seen = [], set()
    for c in cases:
        r = c.get("range")
        if not r or (r["key"], r["from_offset"]) in seen:
            continue
        seen.add((r["key"], r["from_offset"]))
        row = dict(r)
        if "restarts" in c:
            row["restarts"] = [{"kind": s["kind"], "assign_index": s["assign"]["invoke_index"],
                                "first_offset": s["first_read"]["offset"],
                                "committed_offset": s["committed"]["offset"],
                                "pending": None if s["pending"] is None else len(s["pending"])}
                               for s in c["restarts"]]
        out.append(row)
        if len(out) >= limit:
            break
    return out
