"""The fast micro-op reader: a grammar over polars' canonical JSON text of a value, and a
tokenizer that turns many values into micro-op rows with numpy."""

from __future__ import annotations

import numpy as np
import polars as pl

_K = r'"[^"\\]*"'
_I = r"-?\d{1,18}"  # at most 18 digits: always an int64; longer numbers go the exact way
_REC = rf"\[{_I}, {_I}\]"
_SEND = rf"\[\"send\", {_K}, (?:\[(?:{_I}|null), {_I}\]|{_I})\]"
_PKEY = rf"{_K}: \[(?:{_REC}(?:, {_REC})*)?\]"
_MOP = rf"(?:{_SEND}|\[\"poll\"\]|\[\"poll\", \{{(?:{_PKEY}(?:, {_PKEY})*)?\}}\])"
#: a value made only of well-formed micro-ops, as polars re-serialises it
VALUE_GRAMMAR = rf"^\[(?:{_MOP}(?:, {_MOP})*)?\]$"
# tokens of a grammatical value, in order: a send's key (with its "send" prefix), a poll
# record list's key (with its ": " suffix), an integer, null (a send's unknown offset)
_TOKEN = r'"send", "[^"]*"|"[^"]*": |-?\d+|null'
_SEND_PREFIX = '["send", '


def _tokenize(rid: pl.Series, values: pl.Series):
    """Micro-op rows of grammatical value texts.

    Returns (frame, keys): frame columns rid (of the value), kind (u8: 0 send, 1 poll), key
    (u32 index into ``keys``), offset (i64|null), value (i64); one row per send and per
    polled record, in value order.
    """
    tok = (pl.DataFrame({"rid": rid, "v": values})
           .select("rid", t=pl.col("v").str.extract_all(_TOKEN))
           .explode("t").drop_nulls("t"))
    n = tok.height
    if n == 0:
        return pl.DataFrame(schema={"rid": rid.dtype, "kind": pl.UInt8,
                                    "key": pl.UInt32, "offset": pl.Int64,
                                    "value": pl.Int64}), []
    t = tok["t"]
    is_key = t.str.starts_with('"').to_numpy()
    num = t.cast(pl.Int64, strict=False)  # keys and null -> null
    nums = num.fill_null(0).to_numpy()
    numnull = num.is_null().to_numpy()
    del num
    mpos = np.flatnonzero(is_key)
    markers = t.gather(mpos)
    del t
    # distinct markers are few (two per key at most): name their keys in Python
    um = markers.unique(maintain_order=True)
    names = [m[9:-1] if m.startswith('"send", "') else m[1:-3] for m in um.to_list()]
    keys = list(dict.fromkeys(names))
    kpos = {k: i for i, k in enumerate(keys)}
    m_key = np.array([kpos[k] for k in names], dtype=np.uint32)
    m_send = np.array([m.startswith('"send", "') for m in um.to_list()], dtype=bool)
    mk = markers.cast(pl.Enum(um)).to_physical().to_numpy()  # marker -> distinct marker
    del markers, um
    msend = m_send[mk]
    # the grammar guarantees: every value's tokens start with a key; a poll key is followed
    # by pairs (offset, value); a send key by its value or by (offset|null, value). A
    # record is anchored at its value token: 2nd, 4th, ... after a poll key, last after a
    # send key; its offset is the token before (a send key or null: unknown).
    cnt = np.diff(np.append(mpos, n)) - 1
    if not (cnt[msend] & 1).any():
        # every key is followed by pairs: the numbers pair up globally, in order
        numidx = np.flatnonzero(~is_key)
        del is_key
        vidx = numidx[1::2]
        oidx = numidx[0::2]
        del numidx
        midx = np.repeat(np.arange(len(mpos)), cnt // 2)
    else:
        it = np.int32 if n < (1 << 31) else np.int64
        cnt = cnt.astype(it)
        gm = (np.cumsum(is_key, dtype=it) - 1)  # marker of each token
        del is_key
        within = np.arange(n, dtype=it) - mpos.astype(it)[gm]  # 0 at the marker
        anchor = np.where(msend[gm], within == cnt[gm], (within > 0) & ((within & 1) == 0))
        del within
        vidx = np.flatnonzero(anchor)
        del anchor
        midx = gm[vidx]
        del gm
        oidx = vidx - 1
    frame = pl.DataFrame({
        "rid": tok["rid"].gather(vidx),
        "kind": (~msend[midx]).astype(np.uint8),
        "key": m_key[mk[midx]],
        "offset": pl.Series(nums[oidx]).set(pl.Series(numnull[oidx]), None),
        "value": nums[vidx],
    })
    return frame, keys

