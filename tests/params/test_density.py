"""Facet concentration (Figure 3): the CLI's DensityParams and the page's DensityPageParams,
each side of each bound, the layers, and the one cost cap grid^2 x depth x width^2."""

from __future__ import annotations

import pytest
from bounds import check_bounds

from bnviz.params import DensityPageParams, DensityParams, InputError, default_layers, parse
from bnviz.params.cost import density_work

SMALL = {"depth": 2, "width": 8, "grid": 16}

DENSITY_BOUNDS = {
    "depth": (1, 16, True, {"width": 8}),
    "width": (1, 4096, True, {"depth": 1, "grid": 16}),
    "n_points": (1, 1_000_000, True, SMALL),
    "weight_seed": (0, 2**63 - 1, True, SMALL),
    "data_seed": (0, 2**63 - 1, True, SMALL),
    "grid": (2, 2048, True, {"depth": 1, "width": 8}),
    "eps": (1.0, 16.0, False, SMALL),
}
PAGE_BOUNDS = {
    "depth": (1, 16, True, {"width": 8}),
    "width": (2, 1024, True, {"depth": 1}),
    "n_points": (2, 2000, True, SMALL),
    "weight_seed": (0, 2**31 - 1, True, SMALL),
    "data_seed": (0, 2**31 - 1, True, SMALL),
    "grid": (16, 512, True, {"depth": 1, "width": 8}),
    "eps": (1.0, 8.0, False, SMALL),
}


@pytest.mark.parametrize("name", sorted(DENSITY_BOUNDS))
def test_cli_bounds(name):
    lo, hi, whole, room = DENSITY_BOUNDS[name]
    check_bounds(DensityParams, name, lo, hi, whole, room)


@pytest.mark.parametrize("name", sorted(PAGE_BOUNDS))
def test_page_bounds(name):
    lo, hi, whole, room = PAGE_BOUNDS[name]
    check_bounds(DensityPageParams, name, lo, hi, whole, room)


def test_radius_and_extent_are_positive():
    check_bounds(DensityParams, "radius", 0.0, 1e6, False, SMALL, lo_open=True)
    check_bounds(DensityParams, "extent", 0.0, 1e6, False, SMALL, lo_open=True)


@pytest.mark.parametrize("model", [DensityParams, DensityPageParams])
def test_the_cost_cap_both_sides(model):
    """The paper's Figure 3 (11 layers of 1024 at grid 512) is 3.0e12 multiply-adds: allowed;
    16 layers is 4.5e12: over the cap of 4e12, refused before anything runs."""
    assert density_work(512, 11, 1024) == 512**2 * 11 * 1024**2 <= 4e12
    assert model(depth=11, width=1024, grid=512).grid == 512
    with pytest.raises(InputError, match=r"^grid\^2 x depth x width\^2 is over the cap of "
                                         r"4e\+12: lower the grid, the width or the depth$"):
        model(depth=16, width=1024, grid=512)


def test_layers_default_and_checked():
    assert default_layers(11) == (1, 7, 11) and default_layers(2) == (1, 2)
    assert default_layers(1) == (1,)
    assert DensityParams(depth=11, width=8).layers == (1, 7, 11)
    assert parse(DensityParams, SMALL | {"layers": " 2 ,1,2"}).layers == (1, 2)
    for bad in ("0", "3", "1,x", "", ",", "1.5", "9" * 5000, [0], 3):
        with pytest.raises(InputError, match=r"^layers: comma-separated layer numbers from 1 "
                                             r"to the depth \(2\), got "):
            parse(DensityParams, SMALL | {"layers": bad})


def test_the_page_has_one_activation():
    with pytest.raises(InputError, match=r"^activation: choose one of leaky_relu"):
        DensityPageParams(activation="relu")
