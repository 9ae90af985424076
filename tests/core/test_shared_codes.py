"""A slice layer keeps each distinct code once (bnviz.core.rows.shared_code_rows, the
Polygons' code table): every polygon's code is the one it had, whatever the rows' widths,
with a hash collision built on purpose, and joined part after part.  On the slice engine's
real cuts (the table: each layer's distinct codes, fewer than its regions):
tests/slices/test_engine.py."""

from __future__ import annotations

import numpy as np
import pytest

from bnviz.core.partition import Polygons, join_polygons
from bnviz.core.rows import row_keys, row_words, shared_code_rows, word_multipliers


def _square_polygons(n: int, packed: np.ndarray, units: int) -> Polygons:
    corners = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float64)
    verts = np.concatenate([corners + i for i in range(n)]) if n else np.zeros((0, 2))
    return Polygons(np.arange(0, 4 * n + 1, 4, dtype=np.int64), verts, packed, units)


@pytest.mark.parametrize("width", [0, 1, 7, 8, 9, 24, 192])
@pytest.mark.parametrize("rows", [0, 1, 500])
def test_each_row_keeps_its_code(width, rows):
    rng = np.random.default_rng(width * 1000 + rows)
    table = rng.integers(0, 256, (max(rows // 20, 1), width), dtype=np.uint8)
    packed = np.ascontiguousarray(table[rng.integers(0, len(table), rows)])
    kept, index = shared_code_rows(packed)
    np.testing.assert_array_equal(kept[index], packed)
    # as many rows as distinct codes, counted independently (numpy's sort of the rows)
    distinct = len(np.unique(packed, axis=0)) if rows else 0
    assert len(kept) == (distinct if width else min(rows, 1))
    assert index.dtype.kind == "u" and len(index) == rows


def test_a_hash_collision_still_keeps_every_code():
    """Two different rows of two words whose hashes agree mod 2**64:
    (m1, -m0) . (m0, m1) = 0 = (0, 0) . (m0, m1)."""
    m0, m1 = (int(v) for v in word_multipliers(2))
    row = np.array([m1, (-m0) % 2**64], np.uint64).view(np.uint8)
    packed = np.stack([row, np.zeros(16, np.uint8), row, np.zeros(16, np.uint8)])
    keys = row_keys(row_words(packed))
    assert keys[0] == keys[1] and not np.array_equal(packed[0], packed[1])  # it collides
    kept, index = shared_code_rows(packed)
    assert len(kept) == 2
    np.testing.assert_array_equal(kept[index], packed)
    np.testing.assert_array_equal(index, [0, 1, 0, 1])


def test_codes_strings_and_joins_are_those_of_the_rows():
    rng = np.random.default_rng(3)
    units = 13
    parts = []
    for n in (5, 0, 40, 7):
        packed = np.packbits(rng.random((n, units)) < 0.3, axis=1) if n else \
            np.zeros((0, 2), np.uint8)
        plain = _square_polygons(n, packed, units)
        shared = plain.with_shared_codes()
        np.testing.assert_array_equal(shared.codes, plain.codes)
        assert shared.code_strings((6, 7)) == plain.code_strings((6, 7))
        parts.append((plain, shared))
    plain = join_polygons([p for p, _ in parts])
    for mixed in ([s for _, s in parts], [parts[0][0]] + [s for _, s in parts[1:]]):
        joined = join_polygons(mixed)
        assert joined.code_index is not None
        np.testing.assert_array_equal(joined.packed_codes, plain.packed_codes)
        np.testing.assert_array_equal(joined.ptr, plain.ptr)
        np.testing.assert_array_equal(joined.vertices, plain.vertices)
        assert len(joined.code_rows) == len(np.unique(plain.packed_codes, axis=0))
