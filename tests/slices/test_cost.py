"""The region estimate a slice's caps act on (bnviz.slices.cost, issue 44 item 4): a sample
covering the whole window counts every region exactly (Euler's formula read right from the
cut), small windows are counted exactly, larger ones are estimated within their stated error
with the bound above the exact count, and the cap acts on that bound before any cut, saying
so in one line.  bench/slice_estimate.py checks the same up to 10^6 regions; here windows of
3 x 10^2 to 4 x 10^4 regions on small conv nets (seconds)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_nets import conv_net

from bnviz.params.fields import InputError
from bnviz.params.slice import SliceParams, check_slice_regions, slice_region_cap
from bnviz.slices.cost import Z, estimate_regions, sampled_estimate
from bnviz.slices.engine import cut_slice
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.plane import plane_through_images
from bnviz.slices.view import check_regions


def _setup(tmp_path, **kw):
    size = kw.get("size", 6)
    net = load_onnx(conv_net(tmp_path / "net.onnx", **kw))
    return net, plane_through_images(np.random.default_rng(1).normal(0, 1, (3, 1, size, size)))


@pytest.mark.parametrize("kw", [dict(residual=True), dict(maxpool=True, stride2=False),
                                dict(leaky=True, residual=True)])
def test_a_sample_of_the_whole_window_is_the_exact_count(tmp_path, kw):
    """Every half-tile cut whole and every strip the whole side: 1 + B/2 + W, read from the
    rectangles' regions and the sides they touch, is the window's count, with no error (max
    pooling makes vertices where three cells meet: weight 1/2)."""
    net, plane = _setup(tmp_path, **kw)
    for e in (0.7, 2.0):
        window = (-e, e, -0.8 * e, 1.1 * e)
        exact = cut_slice(net, plane, window, device="cpu").counts[-1]
        sample = sampled_estimate(net, plane, window, 1.0)
        assert sample.regions == exact and sample.variance == 0, (e, exact, sample)


@pytest.mark.parametrize(("kw", "e", "least"), [
    (dict(residual=True), 20.0, 15000),
    (dict(channels=6, size=8, maxpool=True, stride2=False, residual=True), 3.0, 35000)])
def test_the_bound_holds_and_the_estimate_is_within_its_error(tmp_path, kw, e, least):
    net, plane = _setup(tmp_path, **kw)
    window = (-e, e, -e, e)
    exact = cut_slice(net, plane, window, device="cpu").counts[-1]
    est = estimate_regions(net, plane, window, device="cpu")
    assert exact > least and est.fraction < 0.5 and est.error > 0  # sampled, not counted
    assert est.bound >= exact, (exact, est)
    assert abs(est.regions - exact) <= Z * est.error, (exact, est)
    # the bound: Z errors, widened to Student's t at the error's degrees of freedom
    assert est.regions + Z * est.error <= est.bound <= est.regions + 4.5 * est.error + 1
    assert est.error < 0.1 * est.regions  # a stated error that says something
    assert est.sampled < exact / 2  # cheaper than the cut (a sample cuts ~3 TARGET)


def test_a_small_window_is_counted_exactly(tmp_path):
    net, plane = _setup(tmp_path, residual=True)
    exact = cut_slice(net, plane, (-1, 1, -1, 1), device="cpu").counts[-1]
    est = estimate_regions(net, plane, (-1, 1, -1, 1), device="cpu")
    assert (est.regions, est.error, est.bound, est.fraction) == (exact, 0, exact, 1.0)


def test_the_cap_acts_on_the_bound_in_one_line():
    params = SliceParams(max_regions=1000)
    check_slice_regions(900, 30, 990, params)  # the bound under the cap: accepted
    with pytest.raises(InputError) as caught:
        check_slice_regions(900, 50, 1050, params)  # the estimate under, the bound over
    message = str(caught.value)
    assert "\n" not in message and "about 900 regions, standard error 50" in message
    assert "a bound of 1,050 (the estimate + 3.0 standard errors)" in message
    assert "over the cap of 1,000" in message
    with pytest.raises(InputError, match=r"more than 3,000,000 regions \(a sample"):
        check_slice_regions(3_000_000, 0, 3_000_000, params, exceeded=True)
    two = SliceParams(max_regions=1000, bn="train", batches=2)
    with pytest.raises(InputError, match=r"a mini-batch, .*2,100 for 2, over the cap of 2,000"):
        check_slice_regions(1000, 10, 1050, two)


def test_a_heavy_networks_caps_are_scaled_by_its_multiply_adds():
    # a region's cut costs in proportion to the network's multiply-adds an image: past
    # SLICE_REFERENCE_MULTIPLY_ADDS (2^25) every region cap shrinks by as much
    params = SliceParams(max_regions=1000)
    check_slice_regions(900, 30, 990, params, multiply_adds=2**25)  # the reference: all of it
    with pytest.raises(InputError) as caught:
        check_slice_regions(900, 30, 990, params, multiply_adds=2**26)  # twice: half the cap
    message = str(caught.value)
    assert "\n" not in message and "over the cap of 500 (for a network of 67,108,864 " \
        "multiply-adds an image: caps are scaled down past 33,554,432)" in message
    assert "(--submit, up to 10,000,000)" in message  # the job's cap, scaled too
    assert slice_region_cap(params, 2**27) == 250 and slice_region_cap(params, 10) == 1000


def test_a_heavy_network_is_refused_a_window_a_light_one_gets(tmp_path, monkeypatch):
    """One window, counted exactly: under the cap for the network as it is, refused in one
    line that says why when the reference is half the network's multiply-adds (as for a
    network twice as heavy as the reference)."""
    import bnviz.params.slice as slice_params
    from bnviz.slices.slice_net import multiply_adds

    net, plane = _setup(tmp_path, residual=True)
    work = multiply_adds(net)
    assert work == 6 * 6 * 4 * 9 + 3 * 3 * 4 * 36 * 3 + 4 * 3  # its four convs, classifier
    exact = cut_slice(net, plane, (-1, 1, -1, 1), device="cpu").counts[-1]
    params = SliceParams(max_regions=exact)
    assert check_regions(net, plane, (-1.0, 1.0, -1.0, 1.0), params, device="cpu").regions \
        == exact
    monkeypatch.setattr(slice_params, "SLICE_REFERENCE_MULTIPLY_ADDS", work // 2)
    with pytest.raises(InputError, match=rf"over the cap of {exact // 2:,} \(for a network of "
                                         rf"{work:,} multiply-adds an image"):
        check_regions(net, plane, (-1.0, 1.0, -1.0, 1.0), params, device="cpu")


def test_a_window_over_the_cap_is_refused_before_the_cut(tmp_path):
    """The count itself, not a grid's guess under it, meets the cap: a window of 321 regions
    (the grid of the old estimate saw 309) under a cap of 315 is refused before any cut."""
    net, plane = _setup(tmp_path, residual=True)
    exact = cut_slice(net, plane, (-1, 1, -1, 1), device="cpu").counts[-1]
    params = SliceParams(max_regions=exact - 1)
    with pytest.raises(InputError, match=rf"would have {exact:,} regions \(counted exactly\)"):
        check_regions(net, plane, (-1.0, 1.0, -1.0, 1.0), params, device="cpu")
    assert check_regions(net, plane, (-1.0, 1.0, -1.0, 1.0), SliceParams(max_regions=exact),
                         device="cpu").regions == exact


def test_near_the_cap_the_sample_grows_until_the_decision_is_clear(tmp_path):
    """A window of some 2 x 10^5 regions: without a cap one sample; with a cap inside its
    bound, a larger sample (within 5 % of the regions), a smaller error."""
    net, plane = _setup(tmp_path, channels=8, size=8, residual=True)
    window = (-10.0, 10.0, -10.0, 10.0)
    first = estimate_regions(net, plane, window, device="cpu")
    cap = first.regions + first.error
    grown = estimate_regions(net, plane, window, device="cpu", cap=cap)
    assert grown.fraction > 1.5 * first.fraction and grown.error < 0.95 * first.error
    assert grown.sampled < 0.05 * grown.regions + first.sampled  # the first, then <= 5 %


def test_a_sample_that_outgrows_its_budget_is_a_lower_bound(tmp_path, monkeypatch):
    from bnviz.slices import cost

    net, plane = _setup(tmp_path, residual=True)
    monkeypatch.setattr(cost, "BUDGET", 30)
    est = estimate_regions(net, plane, (-20.0, 20.0, -20.0, 20.0), device="cpu")
    assert est.exceeded and est.bound == est.regions > 30
    with pytest.raises(InputError, match=r"^this window would have more than [\d,]+ regions"):
        check_slice_regions(est.regions, est.error, est.bound,
                            SliceParams(max_regions=est.regions - 1), est.exceeded)
