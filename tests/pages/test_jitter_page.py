"""The jitter page's callbacks (BN paper Figures 6 and 7; issue 4): the controls parsed into
settings, the Figure 6 picture, curve, margins and numbers checked against the engine
(``run_jitter``), bad values kept off the picture, and Figure 7 for the paper's setup and for
this page's network. The engine is tested in tests/views/test_jitter.py; the page's training
job, uploads and their callbacks in tests/views/test_training_cache.py."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from dash import html, no_update

from bnviz.params import JitterParams
from bnviz.views.jitter import JITTER_LIMITS, run_jitter
from bnviz.web.callbacks.jitter import callbacks as cj
from bnviz.web.callbacks.jitter import ids

#: One intra-op thread, as the server runs (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def decode_typed(spec) -> np.ndarray:
    """A plotly typed-array spec ({'dtype', 'bdata'}) or a plain list, as a numpy array."""
    if isinstance(spec, dict):
        return np.frombuffer(base64.b64decode(spec["bdata"]), dtype=spec["dtype"])
    return np.asarray(spec, dtype=np.float64)


def test_parse_settings_good():
    s = cj.parse_settings("circles", 150, 2, 6, 4, 5, 6, 5, 12, None)
    assert s == JitterParams(dataset="circles", n_points=150, data_seed=5, depth=2, width=6,
                             weight_seed=4, batch_size=32, realizations=12,
                             virtual_batch_size=None, batch_seed=6)
    assert cj.parse_settings("moons", "200", "3", "8", "0", "0", "0", 4, 16,
                             "").virtual_batch_size is None
    assert cj.parse_settings("moons", 200, 3, 8, 0, 0, 0, 4, 16, 8).virtual_batch_size == 8
    assert cj.parse_settings("moons", 200, 3, 8, 0, 0, 0, 4, 16, 16).virtual_batch_size == 16
    assert cj.parse_settings("moons", 512, 3, 8, 0, 0, 0, 9, 16, None).batch_size == 512


@pytest.mark.parametrize(("args", "words"), [
    ((5, 3, 8, 0, 0, 0, 4, 16, None), "points"),
    ((2001, 3, 8, 0, 0, 0, 4, 16, None), "points"),
    (("abc", 3, 8, 0, 0, 0, 4, 16, None), "points"),
    ((None, 3, 8, 0, 0, 0, 4, 16, None), "points"),
    ((200, 3, 8, 0, 0, 0, 8, 16, None), "larger than the data"),  # 256 > 200
    ((200, 3, 8, 0, 0, 0, 0, 16, None), "batch size"),
    ((200, 3, 8, 0, 0, 0, 10, 16, None), "batch size"),
    ((200, 3, 8, 0, 0, 0, 4.5, 16, None), "batch size"),
    ((200, 3, 8, 0, 0, 0, 4, 16, 17), "virtual batch"),
    ((200, 3, 8, 0, 0, 0, 4, 16, 1), "virtual batch"),
    ((200, 3, 8, 0, 0, 0, 4, 16, "x"), "virtual batch"),
    ((200, 0, 8, 0, 0, 0, 4, 16, None), "depth"),
    ((200, 7, 8, 0, 0, 0, 4, 16, None), "depth"),
    ((200, 3, 1, 0, 0, 0, 4, 16, None), "width"),
    ((200, 3, 33, 0, 0, 0, 4, 16, None), "width"),
    ((200, 3, 8, -1, 0, 0, 4, 16, None), "^weight seed"),
    ((200, 3, 8, 0, -1, 0, 4, 16, None), "^data seed"),
    ((200, 3, 8, 0, 0, 2**31, 4, 16, None), "^batch seed"),
    ((200, 3, 8, 0, 0, 0, 4, 0, None), "realisations"),
    ((200, 3, 8, 0, 0, 0, 4, 129, None), "realisations"),
    ((200, 3, 8, 0, 0, 0, 4, 1e400, None), "realisations"),
])
def test_parse_settings_bad(args, words):
    with pytest.raises(ValueError, match=words):
        cj.parse_settings("moons", *args)


def _trace(fig: dict, name_part: str) -> dict:
    return next(t for t in fig["data"] if name_part in t["name"])


def test_update_jitter_figure():
    out = cj.update_jitter("moons", 100, 2, 6, 0, 0, 0, 4, 8, None, None)
    fig, curve, margins, numbers, message, is_open = out
    assert message == "" and is_open is False
    assert fig["layout"]["title"]["text"] == "|B| = 16, 8 mini-batches, at initialisation"
    s = cj.parse_settings("moons", 100, 2, 6, 0, 0, 0, 4, 8, None)
    ref = run_jitter(s, device="cpu")
    blue = _trace(fig, "mini-batches")
    black = _trace(fig, "test time")
    xs, ys = decode_typed(blue["x"]), decode_typed(blue["y"])
    # one NaN break after each segment: the K boundaries' segments, all of them
    assert np.isnan(xs).sum() == np.isnan(ys).sum() == sum(len(b) for b in ref.boundaries)
    assert np.isnan(decode_typed(black["x"])).sum() == len(ref.test_boundary)
    assert "8 mini-batches" in blue["name"] and black["line"]["color"] == "black"
    classes = [t for t in fig["data"] if t["name"].startswith("class")]
    assert len(classes) == 2
    assert [len(decode_typed(t["x"])) for t in classes] == [
        int(np.sum(ref.data.labels == c)) for c in (0, 1)]
    # the curve marks the current |B| at its area; the numbers show the same area
    assert curve["data"][0]["x"] == [2, 4, 8, 16, 32, 64]
    assert curve["data"][1]["x"] == [16]
    assert curve["data"][1]["y"][0] == curve["data"][0]["y"][3]
    assert f"{ref.disagreement_area:.4f}" in str(numbers)
    assert np.isfinite(decode_typed(margins["data"][0]["x"])).all()


def test_update_jitter_virtual_batch_title():
    fig = cj.update_jitter("moons", 100, 2, 6, 0, 0, 0, 4, 8, 4, None)[0]
    assert fig["layout"]["title"]["text"].endswith(", B′ = 4")


def _find(component, wanted: str):
    """The component of a Dash tree with id ``wanted``."""
    if getattr(component, "id", None) == wanted:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if hasattr(child, "children") or hasattr(child, "id"):
            found = _find(child, wanted)
            if found is not None:
                return found
    return None


def test_update_jitter_virtual_batch_is_calibrated():
    """With a virtual batch the numbers give the calibration the engine computed (its strength
    and the disagreements it matched), the curve is of real batches (the same as without the
    virtual batch) and marks the calibrated virtual batch at B'."""
    from bnviz.views.virtual_batch import calibrate_strength, virtual_curve_point

    _, curve, _, numbers, message, _ = cj.update_jitter("moons", 100, 2, 6, 0, 0, 0, 4, 8, 4, None)
    assert message == ""
    s = cj.parse_settings("moons", 100, 2, 6, 0, 0, 0, 4, 8, 4)
    ref = run_jitter(s, device="cpu")
    cal = calibrate_strength(ref.network, ref.data.points, 16, 4, 8, 0, (-3, 3, -3, 3), "cpu")
    assert _find(numbers, "jitter-virtual-target").children == f"{cal.target:.3f}"
    assert _find(numbers, "jitter-virtual-matched").children == f"{cal.matched:.3f}"
    assert f"c = {cal.strength:.2f}" in str(numbers)
    plain = cj.update_jitter("moons", 100, 2, 6, 0, 0, 0, 4, 8, None, None)[1]
    assert curve["data"][:2] == plain["data"][:2] and len(plain["data"]) == 2
    marker = curve["data"][2]
    assert marker["x"] == [4] and "virtual" in marker["name"]
    assert marker["y"] == [virtual_curve_point(s, ref.network, ref.data, device="cpu")]


@pytest.mark.parametrize("args", [
    ("moons", 5, 2, 6, 0, 0, 0, 4, 8, None, None),
    ("moons", 100, 2, 6, 0, 0, 0, 7, 8, None, None),
    ("moons", 100, 2, 6, 0, 0, 0, 4, 8, 99, None),
    ("moons", 100, 9, 6, 0, 0, 0, 4, 8, None, None),
    ("moons", 100, 2, 6, 0, 0, 0, 4, 8, None, "../../etc/passwd"),  # a forged store value
    ("moons", 100, 2, 6, 0, 0, 0, 4, 8, None, "0" * 24),  # no such trained network
])
def test_update_jitter_bad_values_keep_the_picture(tmp_home, args):
    out = cj.update_jitter(*args)
    assert out[:4] == (no_update,) * 4
    assert isinstance(out[4], str) and out[4]
    assert out[5] is True


def test_layout_controls_match_the_limits():
    from bnviz.web.layouts import jitter as lay

    page = str(lay.layout())
    for name in ("DATASET", "N_POINTS", "DEPTH", "WIDTH", "WEIGHT_SEED", "DATA_SEED",
                 "BATCH_SEED", "BATCH", "REALIZATIONS", "VIRTUAL",
                 "TRAIN_STEPS", "OPTIMIZER", "LR", "TRAIN", "UNTRAIN", "PROGRESS", "POLL", "JOB",
                 "TRAINED", "SAVE", "DOWNLOAD", "LOAD", "STATUS", "GRAPH", "CURVE", "MARGINS",
                 "NUMBERS", "MESSAGE"):
        assert f"'{getattr(ids, name)}'" in page, name
    assert JITTER_LIMITS["realizations"] == (1, 128)
    assert JITTER_LIMITS["batch_size"] == (2, 512)


def test_update_figure7():
    net_args = ("moons", 200, 3, 8, 0, 0, None)
    fig, table = cj.update_figure7("paper", 6, 3, 32, *net_args)  # B = 2^6, N = 10^3
    assert isinstance(fig, dict) and fig["data"]
    assert isinstance(table, html.Table)
    for args, words in [((6, 3, 100), "virtual batch"), ((12, 3, 32), "batch size"),
                        ((6, 1, 32), "training set"), ((6, "x", 32), "training set")]:
        fig, msg = cj.update_figure7("paper", *args, *net_args)
        assert fig is no_update and words in msg.children
    # units of this page's network: layer 2 of the depth-3 network; a layer it lacks
    fig, table = cj.update_figure7("2", 5, 3, 16, *net_args)
    assert isinstance(fig, dict) and len(fig["data"]) == 3 * 2 * 3
    fig, msg = cj.update_figure7("5", 5, 3, 16, *net_args)
    assert fig is no_update and "3 layers" in msg.children


def test_the_batch_size_axis_is_labelled_in_powers_of_2():
    """issue 31: the curve's log axis read "2 5 10 2 5 100"; its ticks are now batch sizes,
    powers of 2 from the smallest to the largest, each labelled in full."""
    from bnviz.web.callbacks.jitter.figures import disagreement_curve

    sizes = [2, 4, 8, 16, 32, 64, 128, 256, 512]
    axis = disagreement_curve(sizes, [1.0 / s for s in sizes], 16)["layout"]["xaxis"]
    assert axis["type"] == "log"
    assert axis["tickvals"] == [2, 8, 32, 128, 512]
    assert axis["ticktext"] == ["2", "8", "32", "128", "512"]
    small = disagreement_curve([4, 8, 16], [0.3, 0.2, 0.1], 8)["layout"]["xaxis"]
    assert small["tickvals"] == [4, 8, 16] and small["ticktext"] == ["4", "8", "16"]
