"""The exact partition's one parameter model (the explorer page, ``bnviz partition``, the
lecture): each side of each bound, the page's tighter bounds, the cross-field checks, and the
BN batch."""

from __future__ import annotations

import pytest
from bounds import check_bounds
from fuzzing import FUZZ, JUNK, assert_clear
from hypothesis import given
from hypothesis import strategies as st

from bnviz.params import InputError, PartitionParams, parse

#: name -> (lowest, highest, whole, other fields that keep only this one at stake)
PARTITION_BOUNDS = {
    "depth": (1, 16, True, {"width": 2}),
    "width": (1, 256, True, {"depth": 1}),
    "n_points": (1, 1_000_000, True, {"mode": "zero_bias"}),
    "weight_seed": (0, 2**63 - 1, True, {}),
    "data_seed": (0, 2**63 - 1, True, {}),
    "batch_seed": (0, 2**63 - 1, True, {}),
    "batch_size": (2, 1_000_000, True, {}),
    "head": (0, 2, True, {}),
    "mu_t": (0.0, 1.5, False, {}),
    "sigma_s": (0.25, 4.0, False, {}),
    "target_layer": (1, 16, True, {"depth": 16, "width": 2}),
    "target_unit": (0, 255, True, {"depth": 1, "width": 256}),
    "layer": (1, 16, True, {"depth": 16, "width": 2}),
}


@pytest.mark.parametrize("name", sorted(PARTITION_BOUNDS))
def test_partition_bounds(name):
    lo, hi, whole, room = PARTITION_BOUNDS[name]
    check_bounds(PartitionParams, name, lo, hi, whole, room)


def test_partition_extent_is_positive_up_to_the_engine_limit():
    check_bounds(PartitionParams, "extent", 0.0, 1e6, False, lo_open=True)


def test_the_defaults_are_the_pages():
    p = PartitionParams()
    assert (p.depth, p.width, p.activation, p.alpha, p.mode, p.dataset, p.n_points,
            p.weight_seed, p.data_seed, p.batch_seed, p.extent, p.weights) == (
        4, 8, "leaky_relu", 0.1, "bn", "moons", 100, 0, 0, 0, 3.0, "random")
    assert p.layer_widths == (8, 8, 8, 8)
    assert PartitionParams(widths=(3, 5)).layer_widths == (3, 5)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.5, 2.0])
def test_leaky_relu_needs_a_slope_between_0_and_1(alpha):
    with pytest.raises(InputError, match=r"^alpha: leaky_relu needs 0 < alpha < 1"):
        PartitionParams(activation="leaky_relu", alpha=alpha)
    assert PartitionParams(activation="relu", alpha=alpha).alpha == alpha  # unused there


def test_the_slider_target_is_clamped_into_a_generated_network_and_checked_in_a_files():
    assert PartitionParams(depth=2, scope="layer", target_layer=3).target_layer == 2
    assert PartitionParams(width=5, scope="unit", target_unit=9).target_unit == 4
    with pytest.raises(InputError, match=r"^target layer: the network has 2 layers, got 3$"):
        PartitionParams(depth=8, widths=(4, 4), scope="layer", target_layer=3)
    with pytest.raises(InputError, match=r"^target unit: layer 2 has units 0\.\.2, got 3$"):
        PartitionParams(widths=(8, 3), scope="unit", target_layer=2, target_unit=3)
    with pytest.raises(InputError, match=r"^weights: a network read from a file"):
        PartitionParams(widths=(8, 3), weights="trained")


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
    with pytest.raises(InputError, match=r"^n points: a BN batch needs at least 2 points "
                                         r"\(sigma of 1 point is 0 for every unit\)$"):
        PartitionParams(n_points=1)
    with pytest.raises(InputError, match=r"^batch size: a BN batch needs at least 2 points"):
        PartitionParams(n_points=1, batch_size=5)
    assert PartitionParams(n_points=1, mode="zero_bias").n_points == 1  # no statistics
    assert PartitionParams(n_points=1, data_file=True).n_points == 1  # checked once read
    assert PartitionParams(n_points=2, batch_size=2).batch_size == 2


# --------------------------------------------------------------------------- the page's bounds

PAGE_BOUNDS = {
    "depth": (1, 12, True),
    "width": (2, 64, True),
    "alpha": (0.01, 0.99, False),
    "weight_seed": (0, 2**31 - 1, True),
    "n_points": (2, 2000, True),
    "data_seed": (0, 2**31 - 1, True),
    "batch_seed": (0, 2**31 - 1, True),
    "mu_t": (0.0, 1.5, False),
    "sigma_s": (0.25, 4.0, False),
    "extent": (0.5, 20.0, False),
    "shift_x": (-2.0, 2.0, False),
    "shift_y": (-2.0, 2.0, False),
}


@pytest.mark.parametrize("name", sorted(PAGE_BOUNDS))
def test_the_page_holds_its_controls_to_its_own_bounds(name):
    lo, hi, whole = PAGE_BOUNDS[name]
    for value in (lo, hi):
        assert getattr(PartitionParams.from_page({name: value}), name) == value
    step = 1 if whole else (hi - lo) * 1e-3
    for value in (lo - step, hi + step):
        with pytest.raises(InputError) as info:
            PartitionParams.from_page({name: value})
        assert str(info.value).startswith(name.replace("_", " ") + ": "), info.value


def test_the_page_names_every_setting_outside_its_bounds_in_one_line():
    with pytest.raises(InputError) as info:
        PartitionParams.from_page({"depth": 13, "width": 100, "n_points": 5000})
    text = str(info.value)
    assert "\n" not in text and text.count(";") == 2, text
    assert text.startswith("depth: ") and "width: 2 to 64 on this page, got 100" in text
    # the command line's bounds are wider: the same values are a valid model
    assert PartitionParams(depth=13, width=100, n_points=5000).width == 100


def test_the_page_accepts_its_largest_network_and_the_command_costs_it():
    """The page's own region cap refuses a too fine partition within about a second, so the
    largest network is a valid setting there; the command line refuses it at once, by the
    estimate (:meth:`PartitionParams.check_cost`)."""
    largest = PartitionParams.from_page({"depth": 12, "width": 64})
    assert largest.width == 64
    with pytest.raises(InputError, match=r"^layer \d+ would have about .* regions \(estimated "
                                         r"before any work\)"):
        largest.check_cost()
    PartitionParams.from_page({"depth": 3, "width": 64}).check_cost()


def test_dependent_settings_are_clamped():
    s = PartitionParams(depth=3, width=4, layer=12, target_layer=9, target_unit=60)
    assert (s.layer, s.target_layer, s.target_unit) == (3, 3, 3)
    assert PartitionParams(depth=2).layer == 2  # the default highlighted layer too


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
