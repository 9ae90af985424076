"""The figure pieces the pages share (callbacks/plotting.py): typed arrays as plotly itself
writes them, colours, and polylines that decode back to the segments."""

from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go
import pytest
from dash import dcc
from explorer_helpers import walk

from bnviz.web.callbacks.plotting import colourscale, line, rgba, segments, typed_array


def plotly_encoding(values: np.ndarray):
    """What plotly's public API writes for ``values`` in a figure (Figure.to_dict)."""
    if values.ndim == 2:
        trace = go.Heatmap(z=values)
        return go.Figure(trace, layout_template=None).to_dict()["data"][0]["z"]
    return go.Figure(go.Scatter(x=values), layout_template=None).to_dict()["data"][0]["x"]


def decoded(spec: dict) -> np.ndarray:
    out = np.frombuffer(base64.b64decode(spec["bdata"]), np.dtype("<" + spec["dtype"]))
    return out.reshape([int(n) for n in spec["shape"].split(",")]) if "shape" in spec else out


@pytest.mark.parametrize("values", [
    np.linspace(-1, 1, 7, dtype=np.float32), np.linspace(-1, 1, 7), np.arange(12, dtype=np.uint8),
    np.arange(-5, 5), np.array([0, 70_000]), np.array([-(2**31), 2**31 - 1]),
    np.arange(600, dtype=np.int16), np.array([1.5, np.nan, -np.inf], dtype=np.float32),
    np.arange(12, dtype=np.uint8).reshape(3, 4), np.linspace(0, 1, 6).reshape(2, 3),
], ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_typed_array_is_what_plotly_writes(values):
    spec = typed_array(values)
    assert spec == plotly_encoding(values)
    np.testing.assert_array_equal(decoded(spec), values)


def test_typed_array_of_other_arrays():
    assert typed_array(np.zeros(0, np.float32)) == []
    flags = typed_array(np.array([True, False, True]))
    assert flags["dtype"] == "u1" and decoded(flags).tolist() == [1, 0, 1]
    big = typed_array(np.array([0, 2**40]))  # no 64-bit integers in plotly.js
    assert big["dtype"] == "f8" and decoded(big).tolist() == [0, 2**40]
    swapped = typed_array(np.arange(3, dtype=">f4"))  # big-endian input: little-endian bytes
    assert swapped["dtype"] == "f4" and decoded(swapped).tolist() == [0, 1, 2]
    strided = typed_array(np.arange(10, dtype=np.float64)[::3])
    assert decoded(strided).tolist() == [0, 3, 6, 9]


def test_segments_decode_to_the_segments_with_breaks():
    seg = np.array([[0, 0, 1, 1], [2, -1, 3, 0.5]])
    xs, ys = segments(seg)
    x, y = decoded(xs), decoded(ys)
    assert x.dtype == np.float32 and len(x) == 3 * len(seg)
    np.testing.assert_array_equal(np.stack([x[0::3], y[0::3], x[1::3], y[1::3]], 1), seg)
    assert np.isnan(x[2::3]).all() and np.isnan(y[2::3]).all()
    trace = line(seg, "#123456", 2.0, "facets", axes=("x2", "y2"))
    assert trace["line"] == {"color": "#123456", "width": 2.0}
    assert (trace["xaxis"], trace["yaxis"], trace["name"]) == ("x2", "y2", "facets")


def test_colours():
    assert rgba("#1f5fd6", 0.45) == "rgba(31, 95, 214, 0.45)"
    assert rgba("#000000", 1) == "rgba(0, 0, 0, 1)"
    assert colourscale(((0.0, "#ffffff"), (1.0, "#000000"))) == [[0.0, "#ffffff"],
                                                                 [1.0, "#000000"]]


def test_graphs_with_nothing_yet_say_what_to_press():
    """Before there is a result, a graph shows no axes (an empty plot's -1..6 ticks) but one
    line saying what to do: the jobs page's two graphs, as laid out and as the callbacks
    answer with no job open or chosen, and the density page's two graphs. Valid for
    plotly (go.Figure accepts it)."""
    from bnviz.web.callbacks.jobs import callbacks as cj
    from bnviz.web.callbacks.jobs import ids as job_ids
    from bnviz.web.callbacks.jobs.figures import NO_JOB, NO_OVERLAY
    from bnviz.web.layouts import density, jobs

    def said(fig: dict) -> str:
        go.Figure(fig)
        layout = fig["layout"]
        assert fig["data"] == [] and not layout["xaxis"]["visible"]
        assert not layout["yaxis"]["visible"]
        (note,) = layout["annotations"]
        return note["text"]

    def graphs(tree) -> dict:
        return {c.id: c.figure for c in walk(tree) if isinstance(c, dcc.Graph)}

    shown = graphs(jobs.layout())
    assert said(shown[job_ids.GRAPH]) == NO_JOB and said(shown[job_ids.OVERLAY_GRAPH]) == NO_OVERLAY
    assert said(cj.show_job(1, None, None)[1]) == NO_JOB
    assert said(cj.overlay([], 1)) == NO_OVERLAY
    texts = [said(f) for f in graphs(density.layout()).values()]
    assert len(texts) == 2 and "press compute" in texts[0]
