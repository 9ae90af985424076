"""Property tests of bnviz.data.datasets: generated sets, loading and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from bnviz.data import datasets as ds
from bnviz.data.datasets import DATASETS, Dataset, as_dataset, make_dataset

# Documented classes of each generated set.
CLASSES = {
    "star": {0, 1},
    "moons": {0, 1},
    "circles": {0, 1},
    "blobs": {0, 1, 2},
    "spiral": {0, 1},
    "gaussian": {0, 1},
}

names = st.sampled_from(DATASETS)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
sizes = st.integers(min_value=1, max_value=400)
SETTINGS = settings(max_examples=40, deadline=None)


def star_outline() -> shapely.Polygon:
    """The star, built here from its definition (radii 1 and 0.4, first tip up)."""
    vertices = []
    for k in range(10):
        r = 1.0 if k % 2 == 0 else 0.4
        a = math.pi / 2 + k * math.pi / 5
        vertices.append((r * math.cos(a), r * math.sin(a)))
    return shapely.Polygon(vertices)


def distance_to_outline(points: np.ndarray) -> np.ndarray:
    boundary = star_outline().exterior
    return shapely.distance(shapely.points(points), boundary)


# --------------------------------------------------------------------------- generated sets


def test_names_and_class_table_agree():
    assert DATASETS == ("star", "moons", "circles", "blobs", "spiral", "gaussian")
    assert set(ds.NUM_CLASSES) == set(DATASETS) == set(ds.DEFAULT_NOISE)
    for name in DATASETS:
        assert set(range(ds.NUM_CLASSES[name])) == CLASSES[name]


@SETTINGS
@given(name=names, n=sizes, seed=seeds)
def test_same_seed_same_arrays(name, n, seed):
    a = make_dataset(name, n=n, seed=seed)
    b = make_dataset(name, n=n, seed=seed)
    assert a.name == b.name == name
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.labels, b.labels)


@SETTINGS
@given(name=names, seed=seeds)
def test_different_seeds_differ(name, seed):
    a = make_dataset(name, n=50, seed=seed)
    b = make_dataset(name, n=50, seed=seed + 1)
    assert not np.array_equal(a.points, b.points)


@SETTINGS
@given(name=names, n=sizes, seed=seeds)
def test_shapes_dtypes_labels_and_bounds(name, n, seed):
    d = make_dataset(name, n=n, seed=seed)
    assert isinstance(d, Dataset)
    assert d.points.shape == (n, 2) and d.points.dtype == np.float64
    assert d.labels.shape == (n,) and d.labels.dtype == np.int64
    assert d.n == n
    assert np.all(np.isfinite(d.points))
    assert np.all(np.abs(d.points) <= ds.DATA_BOUND)
    assert np.all(np.abs(d.points) <= 3.0)  # inside the default input box
    assert set(np.unique(d.labels).tolist()) <= CLASSES[name]
    if n >= 40:  # every documented class is present
        assert set(np.unique(d.labels).tolist()) == CLASSES[name]


@SETTINGS
@given(name=names, seed=seeds, noise=st.floats(min_value=0.0, max_value=1.0))
def test_any_allowed_noise_stays_in_bounds(name, seed, noise):
    d = make_dataset(name, n=200, seed=seed, noise=noise)
    assert np.all(np.isfinite(d.points))
    assert np.all(np.abs(d.points) <= ds.DATA_BOUND)


@pytest.mark.parametrize("name", ["moons", "circles", "blobs", "spiral"])
def test_classes_balanced(name):
    d = make_dataset(name, n=301, seed=3)
    counts = np.bincount(d.labels, minlength=ds.NUM_CLASSES[name])
    assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("name", ["star", "gaussian"])
def test_classes_balanced_in_expectation(name):
    d = make_dataset(name, n=4000, seed=3)
    assert abs(d.labels.mean() - 0.5) < 0.05


def test_noise_changes_points_not_labels_by_default():
    quiet = make_dataset("moons", n=100, seed=1, noise=0.0)
    noisy = make_dataset("moons", n=100, seed=1, noise=0.2)
    np.testing.assert_array_equal(quiet.labels, noisy.labels)
    assert not np.allclose(quiet.points, noisy.points)


def test_default_noise_is_used():
    for name in DATASETS:
        a = make_dataset(name, n=60, seed=5)
        b = make_dataset(name, n=60, seed=5, noise=ds.DEFAULT_NOISE[name])
        np.testing.assert_array_equal(a.points, b.points)


# --------------------------------------------------------------------------- star


@SETTINGS
@given(n=st.integers(min_value=1, max_value=500), seed=seeds)
def test_star_points_on_outline_without_noise(n, seed):
    d = make_dataset("star", n=n, seed=seed, noise=0.0)
    assert np.all(distance_to_outline(d.points) < 1e-12)


@SETTINGS
@given(n=st.integers(min_value=1, max_value=500), seed=seeds)
def test_star_points_near_outline_with_default_noise(n, seed):
    noise = ds.DEFAULT_NOISE["star"]
    d = make_dataset("star", n=n, seed=seed)
    # 2D Gaussian jitter of sd sigma exceeds 6 sigma with probability exp(-18) per point.
    assert np.all(distance_to_outline(d.points) < 6 * noise)


def test_star_jitter_has_the_stated_scale():
    noise = 0.02
    d = make_dataset("star", n=4000, seed=11, noise=noise)
    dist = distance_to_outline(d.points)
    # Distance to a line of an isotropic jitter: |N(0, sd^2)|, mean sd * sqrt(2 / pi) ~ 0.8 sd;
    # near the vertices it is a little smaller.
    assert 0.6 * noise < dist.mean() < 0.9 * noise


def test_star_uniform_along_perimeter():
    n = 1000
    d = make_dataset("star", n=n, seed=2, noise=0.0)
    angle = np.mod(np.arctan2(d.points[:, 1], d.points[:, 0]) - math.pi / 2, 2 * math.pi)
    edge = np.floor(angle / (math.pi / 5)).astype(int)  # each edge spans one angular sector
    counts = np.bincount(edge, minlength=10)
    assert counts.sum() == n
    assert np.all(np.abs(counts - n / 10) <= 2)  # stratified by arc length


@SETTINGS
@given(n=st.integers(min_value=1, max_value=400), seed=seeds)
def test_star_label_is_outer_half_of_arm(n, seed):
    d = make_dataset("star", n=n, seed=seed, noise=0.0)
    poly = np.asarray(star_outline().exterior.coords)[:-1]
    tips, inner = poly[0::2], poly[1::2]
    to_tip = np.min(np.linalg.norm(d.points[:, None, :] - tips[None], axis=2), axis=1)
    to_inner = np.min(np.linalg.norm(d.points[:, None, :] - inner[None], axis=2), axis=1)
    clear = np.abs(to_tip - to_inner) > 1e-9  # skip points exactly at an edge's midpoint
    expected = (to_tip < to_inner).astype(np.int64)
    np.testing.assert_array_equal(d.labels[clear], expected[clear])


def test_star_vertices_match_definition():
    np.testing.assert_allclose(
        ds.star_vertices(), np.asarray(star_outline().exterior.coords)[:-1], atol=1e-15
    )


# --------------------------------------------------------------------------- other shapes


def test_circles_radii():
    d = make_dataset("circles", n=300, seed=4, noise=0.0)
    r = np.linalg.norm(d.points, axis=1)
    np.testing.assert_allclose(r[d.labels == 0], 1.0, atol=1e-12)
    np.testing.assert_allclose(r[d.labels == 1], 0.5, atol=1e-12)


def test_moons_are_unit_half_circles():
    d = make_dataset("moons", n=300, seed=4, noise=0.0)
    upper, lower = d.points[d.labels == 0], d.points[d.labels == 1]
    np.testing.assert_allclose(np.linalg.norm(upper - [-0.5, -0.25], axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(lower - [0.5, 0.25], axis=1), 1.0, atol=1e-12)
    assert np.all(upper[:, 1] >= -0.25 - 1e-12)
    assert np.all(lower[:, 1] <= 0.25 + 1e-12)


def test_blobs_points_nearest_their_centre():
    d = make_dataset("blobs", n=600, seed=4)
    centres = np.array(
        [[1.5 * math.cos(math.radians(a)), 1.5 * math.sin(math.radians(a))] for a in (90, 210, 330)]
    )
    nearest = np.argmin(np.linalg.norm(d.points[:, None] - centres[None], axis=2), axis=1)
    assert np.mean(nearest == d.labels) > 0.97
    for k in range(3):
        np.testing.assert_allclose(d.points[d.labels == k].mean(axis=0), centres[k], atol=0.1)


def test_spiral_arms_are_rotations_of_each_other():
    d = make_dataset("spiral", n=400, seed=4, noise=0.0)
    r = np.linalg.norm(d.points, axis=1)
    assert np.all((r >= 0.2 - 1e-12) & (r <= 1.5 + 1e-12))
    # theta = 2.5 pi (r - 0.2) / 1.3 + pi * label, modulo 2 pi.
    theta = np.arctan2(d.points[:, 1], d.points[:, 0])
    expected = 2.5 * math.pi * (r - 0.2) / 1.3 + math.pi * d.labels
    diff = np.angle(np.exp(1j * (theta - expected)))
    np.testing.assert_allclose(diff, 0.0, atol=1e-9)


def test_gaussian_labels_by_sign_and_moments():
    d = make_dataset("gaussian", n=20000, seed=4)
    np.testing.assert_array_equal(d.labels, (d.points.sum(axis=1) > 0).astype(np.int64))
    np.testing.assert_allclose(d.points.mean(axis=0), 0.0, atol=0.05)
    np.testing.assert_allclose(d.points.std(axis=0), 1.0, atol=0.05)


# --------------------------------------------------------------------------- argument errors


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as info:
        make_dataset("stars")
    message = str(info.value)
    assert "stars" in message
    for name in DATASETS:
        assert name in message


@pytest.mark.parametrize("n", [0, -1, 1_000_001])
def test_n_out_of_range(n):
    with pytest.raises(ValueError, match="n must be between 1 and"):
        make_dataset("moons", n=n)


def test_n_limits_accepted():
    assert make_dataset("gaussian", n=1).n == 1


@pytest.mark.parametrize("kwargs", [{"n": 2.5}, {"n": True}, {"seed": -1}, {"seed": "a"}])
def test_bad_n_or_seed(kwargs):
    with pytest.raises(ValueError):
        make_dataset("moons", **kwargs)


@pytest.mark.parametrize("noise", [-0.1, 1.5, float("nan"), float("inf"), "x"])
def test_bad_noise(noise):
    with pytest.raises(ValueError, match="noise"):
        make_dataset("moons", noise=noise)


# --------------------------------------------------------------------------- as_dataset


def test_as_dataset_copies_and_converts():
    pts = np.array([[1, 2], [3, 4]], dtype=np.int16)
    d = as_dataset(pts, labels=[0, 2])
    assert d.points.dtype == np.float64 and d.labels.dtype == np.int64
    np.testing.assert_array_equal(d.labels, [0, 2])
    pts[0, 0] = 99
    assert d.points[0, 0] == 1.0
    assert as_dataset(pts).labels.tolist() == [0, 0]


@pytest.mark.parametrize(
    ("points", "labels", "problem"),
    [
        (np.zeros((3, 3)), None, "shape (n, 2)"),
        (np.zeros((0, 2)), None, "no points"),
        (np.array([[0.0, np.nan]]), None, "non-finite"),
        (np.array([[True, False]]), None, "real numbers"),
        (np.zeros((3, 2)), [0, 1], "labels must have shape (3,)"),
        (np.zeros((2, 2)), [0, -1], "non-negative"),
        (np.zeros((2, 2)), [0.0, 0.5], "whole numbers"),
        (np.zeros((2, 2)), ["a", "b"], "labels must be integers"),
    ],
)
def test_as_dataset_rejects(points, labels, problem):
    with pytest.raises(ValueError) as info:
        as_dataset(points, labels)
    assert problem in str(info.value)


def test_too_many_points_rejected():
    with pytest.raises(ValueError, match="too many points"):
        as_dataset(np.zeros((ds.MAX_POINTS + 1, 2)))


@SETTINGS
@given(name=names, n=sizes, seed=seeds)
def test_as_dataset_accepts_generated_sets(name, n, seed):
    d = make_dataset(name, n=n, seed=seed)
    e = as_dataset(d.points, d.labels, name=name)
    np.testing.assert_array_equal(e.points, d.points)
    np.testing.assert_array_equal(e.labels, d.labels)


def test_dataset_constructor_checks_invariants():
    with pytest.raises(ValueError):
        Dataset("x", np.zeros((2, 3)), np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError):
        Dataset("x", np.zeros((2, 2)), np.zeros(2))  # float labels
