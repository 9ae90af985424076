"""The explorer page's controls (issue 3): presets set every control to a figure of the
paper, the seed and animate buttons, and the added points (clicks on the plot, CSV uploads,
clear)."""

from __future__ import annotations

import base64
import math
from dataclasses import replace

import numpy as np
import pytest
from dash import html, no_update
from explorer_helpers import (
    SMALL,
    decode,
    fig_json,
    flat_query,
    good,
    line_traces,
    orange,
    preset_prop,
    space_fig,
    summary_rows,
    summary_text,
    views,
)
from fuzzing import in_callback

import bnviz.views.explorer as bx
from bnviz.params import PartitionParams
from bnviz.views.explorer import EXPLORER_LIMITS, PRESETS
from bnviz.web.callbacks.explorer import callbacks as ce
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer import state as es

# --------------------------------------------------------------------------- presets

@pytest.mark.parametrize("key", sorted(PRESETS))
def test_apply_preset(key):
    preset = PRESETS[key]
    clicks = [1 if k == key else None for k in PRESETS]
    out = in_callback(ce.apply_preset, preset_prop(key), clicks)
    controls = {k: out[k] for k in es.CONTROLS}
    assert controls == es.control_values(preset.settings)
    assert (out["view"], out["tls"], out["caption"], out["extra"], out["layer_max"]) == (
        preset.view, preset.tls, preset.caption, [], preset.settings.depth)
    s = es.settings_from_controls(controls)
    assert s == preset.settings
    res = good(ce.update_views(controls, out["extra"], out["view"], out["tls"], False))
    fig = res[{"space": 0, "layers": 1, "unit": 2}[preset.view]]
    assert isinstance(fig, dict)
    rows = summary_rows(res[3])
    assert len(rows) == preset.settings.depth
    if key == "fig1":
        assert (s.depth, s.width, s.activation) == (4, 6, "leaky_relu")
        assert len([k for k in fig["layout"] if k.startswith("xaxis")]) == 8
    elif key == "fig2a":
        assert (s.depth, s.width) == (2, 8)
        assert fig["data"][0]["type"] == "histogram" and "layer 2" in fig["layout"]["title"][
            "text"]
    elif key == "fig2b":
        assert [t["name"] for t in orange(fig)] == ["F(2,1)"]
    elif key == "fig2c":
        assert (s.scope, s.target_layer, s.sigma_s, s.layer) == ("layer", 1, 2.0, 2)
        plain = space_fig(replace(s, sigma_s=1.0))
        assert fig_json(line_traces(fig, "layer 2")) != fig_json(line_traces(plain, "layer 2"))
    elif key == "fig9":  # a trained network, layers 1 and 4, each on its own colour scale
        assert (s.weights, s.layer) == ("trained", 4)
        bars = [t for t in fig["data"] if t.get("marker", {}).get("showscale")]
        assert [b["marker"]["colorbar"]["title"]["text"].split("<br>")[1] for b in bars] == [
            "(layer 1, eq. 8)", "(layer 4, eq. 8)"]
    # the URL names the state (and page_layout restores it)
    assert es.initial_state(flat_query(res[6]))[:4] == (s, preset.view, preset.tls, False)


def test_apply_preset_without_a_click_changes_nothing():
    out = in_callback(ce.apply_preset, preset_prop("fig1"), [None] * len(PRESETS))
    assert all(v is no_update for v in out.values())
    assert set(out) == {*es.CONTROLS, "view", "tls", "caption", "preset", "extra", "layer_max"}


def test_triggered_id_helper_matches_dash():
    from dash import ctx

    seen = in_callback(lambda: ctx.triggered_id, preset_prop("fig2a"))
    assert seen == {"key": "fig2a", "type": ids.PRESET} and seen["key"] == "fig2a"
    assert in_callback(lambda: ctx.triggered_id, ids.ANIMATE + ".n_clicks") == ids.ANIMATE


# --------------------------------------------------------------------------- buttons

def test_resample_and_new_batch_increment():
    for fn in (ce.resample_weights, ce.draw_another_batch):
        assert fn(1, 0) == 1 and fn(5, 41) == 42 and fn(None, 7.0) == 8
        for bad in (None, -1, -5.5, "x", math.nan, [3]):
            assert fn(1, bad) == 0
        for seed in (0, 1, 999):
            assert PartitionParams.from_page({"weight_seed": fn(1, seed)}).weight_seed == seed + 1


def test_buttons_at_the_largest_seed_stay_valid():
    top = EXPLORER_LIMITS["weight_seed"][1]
    PartitionParams.from_page({"weight_seed": ce.resample_weights(1, top),
                            "batch_seed": ce.draw_another_batch(1, top)})


ANIM_CLICK = ids.ANIMATE + ".n_clicks"


ANIM_TICK = ids.ANIMATE_TIMER + ".n_intervals"


def test_animate_mu():
    mu, disabled = in_callback(ce.animate_mu, ANIM_CLICK, 1, None, 0.73, True)
    assert (mu, disabled) == (0.0, False)
    seen = [mu]
    for tick in range(1, 100):
        mu, disabled = in_callback(ce.animate_mu, ANIM_TICK, 1, tick, mu, disabled)
        seen.append(mu)
        if disabled:
            break
    assert seen[-1] == 1.0 and disabled is True
    assert len(seen) == 21
    assert np.allclose(np.diff(seen), 0.05)
    assert seen == [round(0.05 * i, 2) for i in range(21)]
    # a tick after the end (or before any click) changes nothing
    assert in_callback(ce.animate_mu, ANIM_TICK, 1, 50, 1.0, True) == (no_update, True)
    assert in_callback(ce.animate_mu, ANIM_TICK, None, 3, 0.4, True) == (no_update, True)
    # a second click restarts from 0; every value is a valid mu
    assert in_callback(ce.animate_mu, ANIM_CLICK, 2, 50, 1.0, True) == (0.0, False)
    for v in seen:
        PartitionParams.from_page({"mu_t": v})


# --------------------------------------------------------------------------- added points

CLICK = ids.CURSOR + ".data"


UPLOAD = ids.UPLOAD + ".contents"


CLEAR = ids.CLEAR_POINTS + ".n_clicks"


def data_url(text: bytes | str, mime: str = "text/csv") -> str:
    raw = text.encode() if isinstance(text, str) else text
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


def add(prop: str, click=None, contents=None, filename=None, extra=None):
    return in_callback(ce.add_points, prop, click, contents, None, filename, extra)


def test_click_adds_the_clicked_point_and_clear_empties():
    pts, msg = add(CLICK, click={"points": [{"x": 1.234567, "y": -0.5, "curveNumber": 0}]})
    assert pts == [[1.2346, -0.5]] and "1 added" in msg
    pts, msg = add(CLICK, click={"points": [{"x": 0.1, "y": 0.2}]}, extra=pts)
    assert pts == [[1.2346, -0.5], [0.1, 0.2]] and "2 added" in msg
    assert add(CLEAR, extra=pts) == ([], "")
    for bad in (None, {}, {"points": []}, {"points": [{"x": "a", "y": 1}]},
                {"points": [{"y": 1}]}):
        assert add(CLICK, click=bad, extra=pts) == (no_update, no_update)
    # the added point is part of the data the page shows
    out = good(views(SMALL, extra=[[1.2346, -0.5]]))
    data, = [t for t in out[0]["data"] if t.get("name") == "data"]
    assert decode(data["x"]).shape == (SMALL.n_points + 1,)
    assert "61 points" in summary_text(out[3])
    assert flat_query(out[6])["pts"] == "1.235,-0.5"


def test_click_cap():
    full = [[0.0, 0.0]] * bx.MAX_EXTRA_POINTS
    pts, msg = add(CLICK, click={"points": [{"x": 1, "y": 1}]}, extra=full)
    assert pts is no_update and str(bx.MAX_EXTRA_POINTS) in msg
    pts, _ = add(CLICK, click={"points": [{"x": 1, "y": 1}]}, extra=full[1:])
    assert len(pts) == bx.MAX_EXTRA_POINTS


GOOD_CSV = {
    "plain.csv": ("0.5,1\n-1,2.25\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "header.csv": ("x,y\n0.5,1\n-1,2.25\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "labels.CSV": ("X,Y,label\n0.5,1,0\n-1,2.25,1\n\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "nolabelheader.csv": ("0.5,1,3\n-1,2.25,0\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "crlf.csv": ("\ufeffx,y\r\n1e-3,-2\r\n", [[0.001, -2.0]]),
}


@pytest.mark.parametrize("name", sorted(GOOD_CSV))
def test_upload_good_csv(name):
    text, want = GOOD_CSV[name]
    assert np.array_equal(es.upload_points(data_url(text), name), want)
    assert np.array_equal(es.upload_points(data_url(text, "application/vnd.ms-excel"), name),
                          want)
    pts, msg = add(UPLOAD, contents=data_url(text), filename=name, extra=[[9.0, 9.0]])
    assert pts == [[9.0, 9.0], *want]
    assert msg == f"added {len(want)} points from {name}"


BAD_UPLOADS = {
    "bad base64": (lambda: "data:text/csv;base64,@@@not base64@@@", "f.csv", "not readable"),
    "no comma": (lambda: "garbage", "f.csv", "empty upload"),
    "none": (lambda: None, "f.csv", "empty upload"),
    "not csv": (lambda: data_url("1,2\n"), "points.txt", "expected a .csv"),
    "no name": (lambda: data_url("1,2\n"), None, "upload: expected a .csv"),
    "empty": (lambda: data_url(""), "f.csv", "empty"),
    "blank lines": (lambda: data_url("\n\n  \n"), "f.csv", "empty"),
    "too big": (lambda: data_url("0.1,0.2\n" * 140_000), "f.csv", "larger than 1000 kB"),
    "nan": (lambda: data_url("x,y\n1,nan\n"), "f.csv", "non-finite"),
    "inf": (lambda: data_url("1,inf\n"), "f.csv", "non-finite"),
    "huge": (lambda: data_url("1,1e300\n"), "f.csv", "beyond"),
    "one column": (lambda: data_url("1\n2\n"), "f.csv", "expected 2 columns"),
    "four columns": (lambda: data_url("1,2,3,4\n"), "f.csv", "expected 2 columns"),
    "ragged": (lambda: data_url("1,2\n3\n"), "f.csv", "expected 2 columns, got 1"),
    "bad header": (lambda: data_url("a,b\n1,2\n"), "f.csv", "header must be"),
    "header only": (lambda: data_url("x,y\n"), "f.csv", "no data rows"),
    "text cell": (lambda: data_url("1,2\n3,abc\n"), "f.csv", "not a number"),
    "bad label": (lambda: data_url("1,2,-1\n"), "f.csv", "labels"),
    "binary": (lambda: data_url(bytes(range(256)) * 4), "f.csv", "not a text CSV"),
    "nul bytes": (lambda: data_url(b"1,2\x00\n"), "f.csv", "not a text CSV"),
}


@pytest.mark.parametrize("case", sorted(BAD_UPLOADS))
def test_upload_errors_are_one_line_messages(case):
    contents, name, expect = BAD_UPLOADS[case]
    contents = contents()
    with pytest.raises(ValueError) as exc:
        es.upload_points(contents, name)
    msg = str(exc.value)
    assert msg.startswith(name or "upload") and expect in msg and "\n" not in msg
    before = [[0.25, 0.5]]
    pts, status = add(UPLOAD, contents=contents, filename=name, extra=before)
    assert pts is no_update  # the previous points stay
    assert isinstance(status, html.Span) and status.children == msg
    assert "danger" in status.className


def test_upload_over_the_point_cap_keeps_the_points():
    text = "\n".join(f"{i * 1e-3},0" for i in range(50))
    before = [[0.0, 0.0]] * (bx.MAX_EXTRA_POINTS - 10)
    pts, status = add(UPLOAD, contents=data_url(text), filename="many.csv", extra=before)
    assert pts is no_update and str(bx.MAX_EXTRA_POINTS) in status.children
