"""Santurkar et al.'s 2D landscape run (LandscapeParams, NoisyBN): each side of each bound,
the step sizes, the batch against the data, each side of the work cap, the debate page's
controls (labels), the stored form of a run, and junk from hypothesis."""

from __future__ import annotations

from dataclasses import fields

import pytest
from bounds import check_bounds
from fuzzing import FUZZ, JUNK, assert_clear
from hypothesis import given
from hypothesis import strategies as st

from bnviz.params import InputError, LandscapeParams, NoisyBN, parse
from bnviz.params.landscape import landscape_from_page

#: name -> (lowest, highest, whole, other settings so that only this one is at stake).
CHEAP = {"steps": 1, "width": 2, "depth": 1}
BOUNDS = {
    "n_points": (16, 2000, True, {"batch_size": 4}),
    "depth": (1, 8, True, {"steps": 1}),
    "width": (2, 64, True, {"steps": 1}),
    "steps": (1, 2000, True, {"width": 2}),
    "batch_size": (4, 512, True, {"n_points": 2000, **CHEAP}),
    "lr": (1e-4, 2.0, False, {}),
    "etas": (2, 32, True, CHEAP),
    "weight_seed": (0, 2**31 - 1, True, {}),
    "data_seed": (0, 2**31 - 1, True, {}),
}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_bounds(name):
    lo, hi, whole, room = BOUNDS[name]
    check_bounds(LandscapeParams, name, lo, hi, whole, room)


def test_step_sizes():
    check_bounds(LandscapeParams, "eta_hi", 0.0, 100.0, False, {"eta_lo": 1e-12},
                 lo_open=True)
    assert LandscapeParams(eta_lo=1e-12, eta_hi=100.0).eta_lo == 1e-12
    for bad in (0.0, -1.0, 100.5):
        with pytest.raises(InputError, match=r"^eta lo: enter a number in \(0, 100\], got "):
            parse(LandscapeParams, {"eta_lo": bad, "eta_hi": 100.0})
    assert LandscapeParams(eta_lo=0.5, eta_hi=0.5000001).eta_hi == 0.5000001
    for lo, hi in ((4.0, 1.0), (2.0, 2.0)):
        with pytest.raises(InputError, match=rf"^eta hi: enter a step size \(a multiple of lr\) "
                                             rf"above eta lo \({lo:g}\), got {hi:g}$"):
            LandscapeParams(eta_lo=lo, eta_hi=hi)


def test_noisy_bn_bounds():
    for name, lo in (("n_mu", 0.0), ("n_sigma", 1.0), ("r_mu", 0.0), ("r_sigma", 0.0)):
        check_bounds(NoisyBN, name, lo, 10.0, False)
    assert NoisyBN() == NoisyBN(n_mu=0.5, n_sigma=1.25, r_mu=0.1, r_sigma=0.1)  # the paper's
    with pytest.raises(InputError, match=r"^noisy n sigma: enter a number from 1 to 10, got "
                                         r"0\.5$"):
        parse(LandscapeParams, {"noisy": {"n_sigma": 0.5}})


def test_batch_fits_the_data():
    assert LandscapeParams(n_points=100, batch_size=100).batch_size == 100
    with pytest.raises(InputError, match=r"^batch size: 101 is larger than the data \(100 "
                                         r"points\)$"):
        LandscapeParams(n_points=100, batch_size=101)


def test_work_cap_each_side():
    # 2 x steps x (etas + depth + 2) x batch x width^2 x depth <= 3e10
    at_cap = {"steps": 2000, "etas": 2, "depth": 1, "batch_size": 512, "n_points": 512}
    assert LandscapeParams(**at_cap, width=54).work() == 2 * 2000 * 5 * 512 * 54**2 == \
        pytest.approx(2.986e10, rel=1e-3)
    with pytest.raises(InputError, match=r"^steps x step sizes x batch x width\^2 x depth is "
                                         r"over the cap: lower the steps, the step sizes, the "
                                         r"batch or the width$"):
        LandscapeParams(**at_cap, width=55)  # 3.098e10


def test_stored_parameters_give_the_same_run():
    p = LandscapeParams(noisy=NoisyBN(), steps=5)
    stored = p.as_params()
    assert stored["noisy"] == {"n_mu": 0.5, "n_sigma": 1.25, "r_mu": 0.1, "r_sigma": 0.1}
    assert {f.name for f in fields(LandscapeParams)} == set(stored)
    assert parse(LandscapeParams, stored) == p
    assert LandscapeParams().as_params()["noisy"] is None


def test_page_controls():
    p = landscape_from_page(4, "32", 100, "0.05", True)
    assert (p.depth, p.width, p.steps, p.lr, p.noisy) == (4, 32, 100, 0.05, NoisyBN())
    assert landscape_from_page(3, 16, 200, 0.1, False) == LandscapeParams()
    assert landscape_from_page(3, 16, 200, 0.1, None).noisy is None
    for args, says in (((0, 16, 200, 0.1, False), "^depth: enter a whole number from 1 to 8"),
                       ((3, 16, 200, "x", False), "^learning rate: enter a number from 0.0001 "
                                                  "to 2, got 'x'$"),
                       ((3, 16, 2.5, 0.1, False), "^steps: enter a whole number from 1 to "
                                                  "2000, got 2.5$"),
                       ((8, 64, 2000, 0.1, False), "over the cap")):
        with pytest.raises(InputError, match=says):
            landscape_from_page(*args)


@FUZZ
@given(raw=st.dictionaries(st.sampled_from([f.name for f in fields(LandscapeParams)]), JUNK,
                           max_size=4))
def test_junk_gives_a_run_or_one_clear_line(raw):
    try:
        got = parse(LandscapeParams, raw)
    except InputError as exc:
        text = assert_clear(str(exc))
        label = text.split(":")[0].replace(" ", "_")  # a field, or "noisy n mu"
        named = any(label == f.name or label.startswith(f.name + "_")
                    for f in fields(LandscapeParams))
        assert named or "over the cap" in text, text
        return
    assert got.work() <= 3e10 and got.batch_size <= got.n_points and got.eta_lo < got.eta_hi
