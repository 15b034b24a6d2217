"""The exact micro-op reader: one op's value at a time, every malformed micro-op reported."""

from __future__ import annotations

from typing import Any, Callable

from .model import POLL, SEND


def _i64(v: Any) -> bool:
    return type(v) is int and -(1 << 63) <= v < (1 << 63)


def _py_completion(cmp: Any, where: str, inv_index: int, problem: Callable[[str], None]):
    """Micro-op rows [(kind 0 send / 1 poll, key, offset|None, value)] of a completion
    value, and how many sends it listed. Malformed micro-ops are skipped and reported."""
    rows: list[tuple[int, str, int | None, int]] = []
    n_sends = 0
    if isinstance(cmp, list):
        for mop in cmp:
            try:
                kind = mop[0]
                if kind == SEND:
                    key = mop[1]
                    if not isinstance(key, str):
                        raise ValueError(f"key {key!r} is not a string")
                    ov = mop[2]
                    if type(ov) is list:
                        off, v = ov
                    else:  # completion echoing the invoke's ["send", k, v]
                        off, v = None, ov
                    if not _i64(v) or (off is not None and not _i64(off)):
                        raise ValueError("offset/value not int")
                    rows.append((0, key, off, v))
                    n_sends += 1
                elif kind == POLL:
                    if len(mop) < 2:
                        continue  # an echoed ["poll"]: nothing was returned
                    for key, recs in mop[1].items():
                        if not isinstance(key, str):
                            raise ValueError(f"key {key!r} is not a string")
                        for off, v in recs:
                            if not _i64(v) or not _i64(off):
                                raise ValueError("offset/value not int")
                            rows.append((1, key, off, v))
                else:
                    raise ValueError(f"unknown micro-op {kind!r}")
            except (TypeError, ValueError, IndexError, AttributeError, KeyError) as e:
                problem(f"{where}: op {inv_index}: malformed micro-op {mop!r:.80}: {e}")
    elif cmp is not None:
        problem(f"{where}: op {inv_index}: completion value is not a list")
    return rows, n_sends


def _py_invoke_sends(inv: Any) -> list:
    """The send micro-ops of an invoke value (what the completion may fail to list)."""
    if not isinstance(inv, list):
        return []
    return [m for m in inv if type(m) is list and m and m[0] == SEND]


def _py_invoke_rows(sends: list, where: str, inv_index: int, problem: Callable[[str], None]):
    out = []
    for mop in sends:
        try:
            key = mop[1]
            if not isinstance(key, str):
                raise ValueError(f"key {key!r} is not a string")
            v = mop[2]
            if isinstance(v, list):  # tolerate an invoke already carrying [offset, v]
                v = v[1]
            if not _i64(v):
                raise ValueError("value not int")
        except (TypeError, ValueError, IndexError) as e:
            problem(f"{where}: op {inv_index}: malformed invoke micro-op: {e}")
            continue
        out.append((key, v))
    return out

