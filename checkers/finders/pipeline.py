"""eos-duplicate / eos-loss / offsets-ahead / offsets-behind / pipeline-stalled for consume-transform-produce.

Run metadata (``meta["pipeline"]``)::

    {"keys": {"in/0": "out/0", ...},          # input key -> the output key it feeds
     "group_id": "eosc-proc",                  # optional, for explanations
     "committed_offsets": {"in/0": 1234, ...}, # optional: the group's committed offsets
                                               # (next offset to consume) after the run
     "value_divisor": 1000}                    # optional: output value // divisor = input

The processor writes each input value to the mapped output key, unchanged, or encoded as
``input * value_divisor + attempt`` so that every processing attempt writes a value of its
own (values stay unique per key, docs/history.md) and outputs are grouped by the input they carry
(with fan-in, writers must keep values unique across the input keys). When
``committed_offsets`` is absent, the last ok op with ``f == "committed-offsets"`` (value
{key: offset}) is used, if any.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..history import History
from ..history.log import describe_op, log, must_commit_txns, reads, writes
from .reprocessing import explain


def _occurrences(h: History) -> pl.DataFrame:
    """Committed records per (key, value): distinct offsets in the committed log, plus one
    per committed write whose offset is unknown and not otherwise placed. Columns: key,
    value, n, offsets, writers (ops)."""
    lg = log(h).select("key", "value", "offset")
    cw = writes(h).filter(pl.col("committed"))
    placed = cw.filter(pl.col("offset").is_null()).join(lg, on=["key", "value"], how="anti").select(
        "key", "value", offset=pl.lit(None, pl.Int64))
    occ = pl.concat([lg, placed]).group_by("key", "value").agg(
        n=pl.len(), offsets=pl.col("offset").sort())
    wr = cw.group_by("key", "value").agg(writers=pl.col("op").unique().sort())
    return occ.join(wr, on=["key", "value"], how="left")


def _committed_offsets(h: History, spec: dict) -> dict[str, int]:
    co = spec.get("committed_offsets")
    if isinstance(co, dict):
        return {k: int(v) for k, v in co.items() if isinstance(v, int)}
    best: dict = {}
    for op, ex in sorted(h.extras.items()):
        if h.ops["f"][op] == "committed-offsets" and h.ops["type"][op] == "ok":
            val = ex.get("completion_value") or ex.get("value")
            if isinstance(val, dict):
                best = {k: int(v) for k, v in val.items() if isinstance(v, int)}
    return best


def pipeline_cases(h: History, pipeline: dict | None = None) -> list[dict]:
    """eos-duplicate / eos-loss / offsets-ahead / offsets-behind (docs/anomalies.md; KIP-98
    ``send_offsets_to_transaction``, KIP-447):

    * eos-duplicate: a committed input record yields more than one committed output record
      (more than one offset of the output key, or more than one committed writer op).
    * eos-loss: a committed input record yields no committed output record, although an
      input record at a later position of the same input key did, or although a processor
      transaction that must have committed (ok, or info with a value of it read) polled it;
      the latter holds also for the last record of a partition, which no later input follows.
    * offsets-ahead: the group's committed offset of an input key points past an input
      record whose output is not committed (that input will never be processed: loss).
    * offsets-behind: the committed offset points at or before an input record whose output
      is committed (a restart reprocesses it: duplicate).
    * pipeline-stalled (liveness): an input key with committed records none of which has a
      committed output: the processors made no progress on it in the whole run. When that
      holds for every input key with records, the pipeline did nothing at all (processors
      that crash at their first output, a wrong topic), so exactly-once was not tested: one
      case marked ``unknown`` (the verdict is then unknown, never valid) instead.

    Committed input records are the input keys' committed log (``checkers.history.log``). Without
    ``pipeline`` there are no cases. Example: {"anomaly", "input": {"key", "value",
    "offset", "pos"}, "output_key", "outputs": {"offsets", "writers"}, "explanation"}.
    """
    kid = {k: i for i, k in enumerate(h.keys)}
    m = _key_map(h, pipeline)
    if m is None:
        return []
    mapping = dict(zip(m["key"].to_list(), m["out_key"].to_list()))
    inp = log(h).join(m, on="key", how="inner")
    occ = _occurrences(h).rename({"key": "out_key"})
    div = pipeline.get("value_divisor")
    if div:  # one output value per attempt: group the attempts by the input value they carry
        occ = (occ.with_columns(pl.col("value") // int(div))
               .group_by("out_key", "value")
               .agg(pl.col("n").sum(), pl.col("offsets").explode().drop_nulls().sort(),
                    pl.col("writers").explode().drop_nulls().unique().sort()))
    j = inp.join(occ, on=["out_key", "value"], how="left").with_columns(pl.col("n").fill_null(0))
    j = j.with_columns(has_out=pl.col("n") > 0)
    consumed = _consumed_by_committed_txn(h, list(mapping))
    j = j.join(consumed, on=["key", "value"], how="left").with_columns(
        pl.col("consumer").fill_null(-1))
    j = j.with_columns(
        last_out=pl.when(pl.col("has_out")).then(pl.col("pos")).otherwise(None).max().over("key"))
    cos = _committed_offsets(h, pipeline)
    j = j.with_columns(committed_offset=pl.col("key").replace_strict(
        {kid[k]: v for k, v in cos.items() if k in kid}, default=None, return_dtype=pl.Int64))
    group = pipeline.get("group_id") or "the group"
    out = []

    def case(name, row, why):
        ik, ok_ = h.keys[row["key"]], (h.keys[row["out_key"]] if row["out_key"] is not None else None)
        writers = row["writers"] or []
        out.append({
            "anomaly": name,
            "input": {"key": ik, "value": row["value"], "offset": row["offset"], "pos": row["pos"]},
            "output_key": ok_,
            "outputs": {"offsets": row["offsets"] or [],
                        "writers": [h.op_ref(w) for w in writers[:5]]},
            "committed_offset": row["committed_offset"],
            "explanation": f"input value {row['value']} at offset {row['offset']} of {ik} {why}",
        })

    dup = j.filter((pl.col("n") > 1) | (pl.col("writers").list.len() > 1)).sort("key", "pos")
    for row in dup.iter_rows(named=True):
        ws = ", ".join(describe_op(h, w) for w in (row["writers"] or [])[:3])
        case("eos-duplicate", row, f"yields {max(row['n'], len(row['writers'] or []))} committed "
             f"records on {h.keys[row['out_key']]} (offsets {row['offsets']}; written by {ws})")
    out = explain(h, out, list(mapping), pipeline.get("offsets"))  # ranges, restarts (checkers.finders.reprocessing)
    loss = j.filter(~pl.col("has_out") & ((pl.col("pos") < pl.col("last_out"))
                                          | (pl.col("consumer") >= 0))).sort("key", "pos")
    for row in loss.iter_rows(named=True):
        why = []
        if row["consumer"] >= 0:
            why.append(f"{describe_op(h, row['consumer'])}, which must have committed, polled it")
        if row["last_out"] is not None and row["pos"] < row["last_out"]:
            why.append(f"input position {row['last_out']} of the same key yielded output")
        case("eos-loss", row, f"yields no committed record on {h.keys[row['out_key']]}, although "
             + " and ".join(why))
    ahead = j.filter(~pl.col("has_out") & (pl.col("offset") < pl.col("committed_offset"))).sort("key", "pos")
    for row in ahead.iter_rows(named=True):
        case("offsets-ahead", row, f"has no committed output, yet {group}'s committed offset "
             f"{row['committed_offset']} is past it")
    behind = j.filter(pl.col("has_out") & (pl.col("offset") >= pl.col("committed_offset"))).sort("key", "pos")
    for row in behind.iter_rows(named=True):
        case("offsets-behind", row, f"has committed output, yet {group}'s committed offset "
             f"{row['committed_offset']} is not past it")
    out += _stalled(h, j, group)
    return out


def _key_map(h: History, pipeline: dict | None) -> pl.DataFrame | None:
    """(key, out_key) of ``pipeline["keys"]`` as key ids of ``h`` (out_key null when the
    output key is not in ``h``); None without a mapping or when no input key is in ``h``."""
    if not pipeline or not isinstance(pipeline.get("keys"), dict):
        return None
    kid = {k: i for i, k in enumerate(h.keys)}
    mapping = {kid[i]: kid.get(o) for i, o in pipeline["keys"].items() if i in kid}
    if not mapping:
        return None
    return pl.DataFrame({"key": list(mapping), "out_key": [mapping[k] for k in mapping]},
                        schema={"key": pl.UInt32, "out_key": pl.UInt32})


def pipeline_window_cases(h: History, pipeline: dict | None = None) -> list[dict]:
    """eos-duplicate as a *window finder* (checkers/engines/windows.py): the cases of
    ``pipeline_cases`` that hold on any contiguous slice of a history, so a soak's window
    check can stop the load at the first one.

    A case: a committed input record (a row of the input key's committed log) whose output
    key holds records written by two or more distinct ops that completed ``ok`` (commit
    returned), each carrying that input value (``output // value_divisor``, or the value
    itself without a divisor). Only ``ok`` writers count: an ``info`` op (outcome unknown,
    also an op whose completion lies after the slice) or a ``fail`` op never does, and the
    number of output offsets is not used. Every ``ok`` write is committed in the whole
    history too, so there the same input value has at least as many committed writer ops:
    ``pipeline_cases`` reports eos-duplicate for it (the argument and its one exception:
    checkers/engines/windows.py's module docstring).

    Without ``pipeline`` (or a mapping none of whose input keys is in ``h``) there are no
    cases. Example: as ``pipeline_cases``' ({"anomaly", "input": {"key", "value", "offset",
    "pos"}, "output_key", "outputs": {"offsets", "writers"}, "explanation"}), with the
    slice's positions and its ``ok`` writers only.
    """
    m = _key_map(h, pipeline)
    if m is None:
        return []
    out_keys = m["out_key"].drop_nulls().unique()
    if out_keys.is_empty():
        return []
    w = writes(h).filter((pl.col("type") == "ok") & pl.col("key").is_in(out_keys.implode()))
    if w.is_empty():
        return []
    div = pipeline.get("value_divisor")
    if div:
        w = w.with_columns(pl.col("value") // int(div))
    occ = (w.group_by(pl.col("key").alias("out_key"), "value")
           .agg(writers=pl.col("op").unique().sort(), offsets=pl.col("offset").drop_nulls().unique().sort())
           .filter(pl.col("writers").list.len() > 1))
    if occ.is_empty():
        return []
    j = (log(h).join(m, on="key", how="inner")
         .join(occ, on=["out_key", "value"], how="inner").sort("key", "pos"))
    out = []
    refs: dict[int, tuple[dict, str]] = {}  # op -> (op_ref, describe_op): a batch shares its writers

    def ref(op: int) -> tuple[dict, str]:
        if op not in refs:
            refs[op] = (h.op_ref(op), describe_op(h, op))
        return refs[op]

    for row in j.iter_rows(named=True):
        ik, ok_ = h.keys[row["key"]], h.keys[row["out_key"]]
        ws = row["writers"]
        names = ", ".join(ref(op)[1] for op in ws[:3])
        out.append({
            "anomaly": "eos-duplicate",
            "input": {"key": ik, "value": row["value"], "offset": row["offset"], "pos": row["pos"]},
            "output_key": ok_,
            "outputs": {"offsets": row["offsets"], "writers": [dict(ref(op)[0]) for op in ws[:5]]},
            "explanation": f"input value {row['value']} at offset {row['offset']} of {ik} yields "
                           f"committed records on {ok_} from {len(ws)} ops that completed ok "
                           f"(offsets {row['offsets']}; written by {names})",
        })
    return explain(h, out, m["key"].to_list(), pipeline.get("offsets"))


def _stalled(h: History, j: pl.DataFrame, group: str) -> list[dict]:
    """pipeline-stalled cases: input keys whose committed records all lack a committed output
    (``j``: one row per committed input record, with ``has_out``)."""
    per = (j.group_by("key").agg(n=pl.len(), done=pl.col("has_out").sum(), first=pl.col("offset").min())
           .sort("key"))
    idle = per.filter(pl.col("done") == 0)
    if idle.is_empty():
        return []
    if idle.height == per.height:  # nothing processed anywhere: a vacuous run, not a valid one
        n = int(idle["n"].sum())
        return [{"anomaly": "pipeline-stalled", "unknown": True,
                 "keys": [h.keys[k] for k in idle["key"]], "inputs": n,
                 "explanation": f"none of the {n} committed input records on {idle.height} input key(s) has "
                                f"a committed output: {group} made no progress at all (processors that never "
                                "started or crash at their first output; read their logs), so exactly-once "
                                "was not tested"}]
    return [{"anomaly": "pipeline-stalled", "liveness": True, "key": h.keys[r["key"]], "inputs": r["n"],
             "explanation": f"none of the {r['n']} committed input records of {h.keys[r['key']]} (from offset "
                            f"{r['first']}) has a committed output: {group} made no progress on it in the whole run"}
            for r in idle.iter_rows(named=True)]


def _consumed_by_committed_txn(h: History, in_keys: list[int]) -> pl.DataFrame:
    """(key, value, consumer): input records of ``in_keys`` that a ``txn`` op which must have
    committed polled; consumer is the first such op."""
    committed = np.flatnonzero(must_commit_txns(h))
    r = reads(h).filter(pl.col("key").is_in(in_keys)
                        & pl.col("op").is_in(pl.Series(committed, dtype=pl.UInt32).implode()))
    return (r.group_by("key", "value").agg(consumer=pl.col("op").min().cast(pl.Int64))
            .select(pl.col("key").cast(pl.UInt32), "value", "consumer"))
