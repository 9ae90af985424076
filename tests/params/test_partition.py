"""The exact partition's parameters: the CLI's ``partition`` (PartitionParams) and the explorer
page (ExplorerParams), each side of each bound, the cross-field checks, and the BN batch."""

from __future__ import annotations

import pytest
from bounds import check_bounds
from fuzzing import FUZZ, JUNK, assert_clear
from hypothesis import given
from hypothesis import strategies as st

from bnviz.params import ExplorerParams, InputError, PartitionParams, parse

#: name -> (lowest, highest, whole, other fields that keep only this one at stake)
PARTITION_BOUNDS = {
    "depth": (1, 16, True, {"width": 2}),
    "width": (1, 256, True, {"depth": 1}),
    "n": (1, 1_000_000, True, {"mode": "zero_bias"}),
    "seed": (0, 2**63 - 1, True, {}),
    "batch_seed": (0, 2**63 - 1, True, {}),
    "batch_size": (2, 1_000_000, True, {}),
    "head": (0, 2, True, {}),
    "mu_scale": (0.0, 1.5, False, {}),
    "sigma_scale": (0.25, 4.0, False, {}),
    "target_layer": (1, 16, True, {}),
    "target_unit": (0, 255, True, {}),
}


@pytest.mark.parametrize("name", sorted(PARTITION_BOUNDS))
def test_partition_bounds(name):
    lo, hi, whole, room = PARTITION_BOUNDS[name]
    check_bounds(PartitionParams, name, lo, hi, whole, room)


def test_partition_extent_is_positive_up_to_the_engine_limit():
    check_bounds(PartitionParams, "extent", 0.0, 1e6, False, lo_open=True)


def test_partition_defaults_are_the_cli_defaults():
    p = PartitionParams()
    assert (p.depth, p.width, p.activation, p.alpha, p.mode, p.dataset, p.n, p.extent) == (
        4, 6, "leaky_relu", 0.1, "bn", "moons", 100, 3.0)
    assert p.layer_widths == (6, 6, 6, 6)
    assert PartitionParams(widths=(3, 5)).layer_widths == (3, 5)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.5, 2.0])
def test_leaky_relu_needs_a_slope_between_0_and_1(alpha):
    with pytest.raises(InputError, match=r"^alpha: leaky_relu needs 0 < alpha < 1"):
        PartitionParams(activation="leaky_relu", alpha=alpha)
    assert PartitionParams(activation="relu", alpha=alpha).alpha == alpha  # unused there


def test_slider_target_must_be_in_the_network():
    assert PartitionParams(depth=2, scope="layer", target_layer=2).target_layer == 2
    with pytest.raises(InputError, match=r"^target layer: the network has 2 layers, got 3$"):
        PartitionParams(depth=2, scope="layer", target_layer=3)
    assert PartitionParams(depth=2, target_layer=3).scope == "all"  # no target: not checked
    with pytest.raises(InputError, match=r"^target unit: layer 1 has units 0\.\.4, got 5$"):
        PartitionParams(width=5, scope="unit", target_unit=5)
    with pytest.raises(InputError, match=r"^target unit: layer 2 has units 0\.\.2, got 3$"):
        PartitionParams(widths=(8, 3), scope="unit", target_layer=2, target_unit=3)


def test_networks_from_files_keep_to_the_engine_limits():
    assert PartitionParams(widths=(256,) * 1).layer_widths == (256,)
    for widths in ((257,), (2,) * 17, (), (0, 3)):
        with pytest.raises(InputError, match=r"^widths: a network of widths .* is over the "
                                             r"limits \(depth <= 16, width <= 256\)"):
            PartitionParams(widths=widths)


def test_a_bn_batch_of_one_point_is_refused():
    """sigma of one point is 0 for every unit (biased std, eq. 3): BN's division would be by
    the sigma floor only, ~1e-13 (it used to be accepted silently)."""
    with pytest.raises(InputError, match=r"^batch size: enter 'all' or a whole number from 2"):
        parse(PartitionParams, {"batch_size": "1"})
    with pytest.raises(InputError, match=r"^n: a BN batch needs at least 2 points \(sigma of 1 "
                                         r"point is 0 for every unit\)$"):
        PartitionParams(n=1)
    with pytest.raises(InputError, match=r"^batch size: a BN batch needs at least 2 points"):
        PartitionParams(n=1, batch_size=5)
    assert PartitionParams(n=1, mode="zero_bias").n == 1  # no statistics: any data
    assert PartitionParams(n=1, data_file=True).n == 1  # the file's points are checked later
    assert PartitionParams(n=2, batch_size=2).batch_size == 2


# --------------------------------------------------------------------------- explorer

EXPLORER_BOUNDS = {
    "depth": (1, 12, True, {}),
    "width": (2, 64, True, {}),
    "alpha": (0.01, 0.99, False, {}),
    "weight_seed": (0, 2**31 - 1, True, {}),
    "n_points": (2, 2000, True, {}),
    "data_seed": (0, 2**31 - 1, True, {}),
    "batch_seed": (0, 2**31 - 1, True, {}),
    "mu_t": (0.0, 1.5, False, {}),
    "sigma_s": (0.25, 4.0, False, {}),
    "target_layer": (1, 12, True, {"depth": 12}),
    "target_unit": (0, 63, True, {"width": 64}),
    "layer": (1, 12, True, {"depth": 12}),
    "extent": (0.5, 20.0, False, {}),
}


@pytest.mark.parametrize("name", sorted(EXPLORER_BOUNDS))
def test_explorer_bounds(name):
    lo, hi, whole, room = EXPLORER_BOUNDS[name]
    check_bounds(ExplorerParams, name, lo, hi, whole, room)


def test_explorer_accepts_its_largest_network():
    """The page's own region cap refuses a too fine partition within about a second, so the
    largest network is a valid setting (no estimate refuses it here)."""
    assert ExplorerParams(depth=12, width=64).width == 64


def test_explorer_clamps_dependent_settings():
    s = ExplorerParams(depth=3, width=4, layer=12, target_layer=9, target_unit=60)
    assert (s.layer, s.target_layer, s.target_unit) == (3, 3, 3)
    assert ExplorerParams(depth=2).layer == 2  # the default highlighted layer too


@FUZZ
@given(raw=st.dictionaries(st.sampled_from(sorted(PARTITION_BOUNDS) + [
    "activation", "mode", "dataset", "scope", "alpha", "extent"]), JUNK, max_size=5))
def test_partition_junk_gives_params_or_one_clear_line(raw):
    try:
        p = parse(PartitionParams, raw)
    except InputError as exc:
        assert_clear(str(exc))
        return
    assert 1 <= p.depth <= 16 and 1 <= p.width <= 256 and 0 < p.extent <= 1e6
