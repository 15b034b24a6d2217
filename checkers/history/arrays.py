"""Small numpy helpers over sorted integer arrays, shared by the reader and the finders."""

from __future__ import annotations

import numpy as np


def stable_order(g: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative integers (radix passes over 16-bit digits)."""
    if len(g) == 0:
        return np.zeros(0, np.int64)
    top = int(g.max())
    if top < (1 << 16):
        return np.argsort(g.astype(np.uint16), kind="stable")
    if top < (1 << 32):
        g = g.astype(np.int64)
        o = np.argsort((g & 0xFFFF).astype(np.uint16), kind="stable")
        return o[np.argsort((g[o] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(g, kind="stable")



def positions(keys: np.ndarray) -> np.ndarray:
    """0-based rank of each row within its run of equal sorted ``keys``."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.ones(n, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return np.arange(n, dtype=np.int64) - start
