"""The index tools of bnviz.core.mesh against plain Python / numpy re-implementations: ragged
ranges, CSR starts, the two-key stable sort, exact grouping of int64 key rows, the packing of
sign vectors into int64 words, and the box mesh the partition starts from."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bnviz.core.mesh import (
    PACK,
    box_mesh,
    group_first,
    lexsort,
    pack_local,
    ragged_arange,
    starts,
)


def test_ragged_arange_and_starts():
    counts = torch.tensor([3, 0, 1, 4, 0, 2])
    group, offset = ragged_arange(counts)
    want = [(g, o) for g, c in enumerate(counts.tolist()) for o in range(c)]
    assert list(zip(group.tolist(), offset.tolist(), strict=True)) == want
    assert starts(counts).tolist() == [0, 3, 3, 4, 8, 8]
    empty_group, empty_offset = ragged_arange(torch.zeros(3, dtype=torch.int64))
    assert empty_group.numel() == empty_offset.numel() == 0


@pytest.mark.parametrize("seed", range(4))
def test_lexsort_is_numpys_stable_two_key_sort(seed):
    rng = np.random.default_rng(seed)
    primary = rng.integers(0, 5, 200)
    secondary = rng.normal(size=200).round(1)  # many ties in both keys
    got = lexsort(torch.as_tensor(primary), torch.as_tensor(secondary)).numpy()
    np.testing.assert_array_equal(got, np.lexsort((secondary, primary)))  # stable


@pytest.mark.parametrize("seed", range(4))
def test_group_first_groups_equal_rows(seed):
    """Same rows, same group; different rows, different groups; first = smallest index. Keys
    mix wide and narrow columns (the fusing of columns must not merge distinct rows)."""
    rng = np.random.default_rng(seed)
    base = np.stack([rng.integers(-3, 3, 40), rng.integers(0, 2**61, 40),
                     rng.integers(0, 4, 40)], 1)
    rows = base[rng.integers(0, 40, 300)]
    first, inverse = group_first(torch.as_tensor(rows))
    first, inverse = first.numpy(), inverse.numpy()
    _, want_inverse = np.unique(rows, axis=0, return_inverse=True)
    want_inverse = want_inverse.reshape(-1)
    # the same partition of the rows into groups
    pairs = set(zip(inverse.tolist(), want_inverse.tolist(), strict=True))
    assert len(pairs) == len(set(inverse.tolist())) == len(set(want_inverse.tolist()))
    for g, f in enumerate(first):
        members = np.flatnonzero(inverse == g)
        assert f == members.min()
        assert np.all(rows[members] == rows[f])


def test_pack_local_round_trips_and_is_an_exact_key():
    """Each point's signs (-1, 0, 1) over its lines, packed PACK to a word: unpacking gives
    them back, and two points get equal words exactly when their sign vectors are equal."""
    rng = np.random.default_rng(5)
    n_points, n_lines = 50, 70
    n_words = -(-n_lines // PACK)
    signs = rng.integers(-1, 2, (n_points, n_lines))
    signs[1] = signs[0]
    signs[2] = signs[0]
    signs[2, 40] = -signs[0, 40] if signs[0, 40] else 1
    point = torch.arange(n_points).repeat_interleave(n_lines)
    local = torch.arange(n_lines).repeat(n_points)
    words = pack_local(point, local, torch.as_tensor(signs.reshape(-1), dtype=torch.int8),
                       n_points, n_words)
    assert words.shape == (n_points, n_words) and bool((words >= 0).all())
    li = np.arange(n_lines)
    unpacked = (words.numpy()[:, li // PACK] >> ((li % PACK) * 2)) & 3
    np.testing.assert_array_equal(unpacked - 1, signs)
    same = (words[:, None] == words[None]).all(-1).numpy()
    np.testing.assert_array_equal(same, (signs[:, None] == signs[None]).all(-1))
    assert same[0, 1] and not same[0, 2]


def test_box_mesh():
    box = (-1.0, 2.0, -0.5, 3.0)
    mesh = box_mesh(box, "cpu", groups=3)
    assert mesh.n_regions == 3 and mesh.ptr.tolist() == [0, 4, 8, 12]
    v = mesh.verts.view(3, 4, 2).numpy()
    np.testing.assert_array_equal(v[1], [[-1.0, -0.5], [2.0, -0.5], [2.0, 3.0], [-1.0, 3.0]])
    x, y = v[..., 0], v[..., 1]
    area = 0.5 * (x * np.roll(y, -1, 1) - np.roll(x, -1, 1) * y).sum(1)
    np.testing.assert_allclose(area, 3.0 * 3.5)  # counter-clockwise: positive
    assert mesh.group.tolist() == [0, 1, 2] and mesh.codes.shape == (3, 0)
    # the identity map z = x on every polygon, and the cyclic neighbours of each corner
    pts = torch.tensor([[0.3, -0.2]], dtype=torch.float64)
    z = mesh.aff[0] * pts[:, :1] + mesh.aff[1] * pts[:, 1:] + mesh.aff[2]
    np.testing.assert_array_equal(z.numpy(), np.tile([[0.3, -0.2]], (3, 1)))
    assert mesh.nxt[:4].tolist() == [1, 2, 3, 0] and mesh.prv[4:8].tolist() == [7, 4, 5, 6]
