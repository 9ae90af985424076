"""Helpers on the rows of arrays, in plain Python and numpy, so that this module never
imports numba: a growable array's one helper (the compiled kernels jit it,
:mod:`bnviz.core.clipping`, and the slice's max-pooling cells run it uncompiled on small
cuts, :mod:`bnviz.slices.maxcells`), and the distinct rows of a byte array (a slice layer's
codes kept once each, :class:`bnviz.core.partition.Polygons`)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["grow_rows", "row_keys", "row_words", "shared_code_rows", "word_multipliers"]


def grow_rows(a: Any, n: int) -> Any:
    """``a`` with at least ``n`` rows (doubling), the old rows kept."""
    if n <= a.shape[0]:
        return a
    out = np.empty((max(n, 2 * a.shape[0]),) + a.shape[1:], a.dtype)
    out[: a.shape[0]] = a
    return out


def shared_code_rows(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, index): the distinct rows of ``packed`` (R, B) uint8 and the row of each, so
    that ``rows[index]`` equals ``packed`` (rows in the order of their first polygon).

    Each row is hashed as 64-bit words (a weighted sum mod 2^64, one einsum), the hashes
    sorted, and the groups of equal hashes checked word for word; only a collision (2^-64
    a pair) sorts the rows themselves.  np.unique over the rows as B-byte keys took 62 ms
    for 50 000 rows of 256 bytes, this 3 ms; the slice engine calls it once a layer
    (0.01-0.03 s of the per-core networks' 4-10 s cuts).  The index is the smallest
    unsigned type that holds the row count."""
    r, b = packed.shape
    packed_words = row_words(packed)
    key = row_keys(packed_words)
    order = np.argsort(key, kind="stable")
    starts = np.empty(r, bool)
    starts[:1] = True
    np.not_equal(key[order[1:]], key[order[:-1]], out=starts[1:])
    index = np.empty(r, np.int64)
    index[order] = np.cumsum(starts) - 1
    first = order[starts]  # the first row of each hash (stable: the lowest index)
    if not np.array_equal(packed_words[first][index], packed_words):  # a collision
        rows = np.ascontiguousarray(packed).view(np.dtype((np.void, b)))[:, 0]
        _, first, index = np.unique(rows, return_index=True, return_inverse=True)
    # rows in the order of their first polygon
    rank = np.empty(len(first), np.int64)
    by_first = np.argsort(first, kind="stable")
    rank[by_first] = np.arange(len(first))
    index = rank[index.ravel()].astype(np.min_scalar_type(max(len(first) - 1, 0)))
    return np.ascontiguousarray(packed[first[by_first]]), index


def row_words(packed: np.ndarray) -> np.ndarray:
    """(R, W) uint64: the rows of ``packed`` (R, B) uint8 as 64-bit words, zero-padded to
    whole words (at least one); a view where B is a multiple of 8 and the rows contiguous."""
    r, b = packed.shape
    if b % 8 or b == 0 or not packed.flags.c_contiguous:
        padded = np.zeros((r, -(-b // 8) * 8 or 8), np.uint8)
        padded[:, :b] = packed
        return padded.view(np.uint64)
    return packed.view(np.uint64)


def row_keys(words: np.ndarray) -> np.ndarray:
    """(R,) uint64: each row of words' hash, sum_j words[:, j] * m_j mod 2^64."""
    return np.einsum("ij,j->i", words, word_multipliers(words.shape[1]))


def word_multipliers(n: int) -> np.ndarray:
    """(n,) odd uint64: :func:`shared_code_rows`'s hash weights, fixed: splitmix64 of the
    word's index (a few array operations, nothing kept between calls)."""
    z = (np.arange(n, dtype=np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31)) | np.uint64(1)
