"""The /slice page's map tab (issue 45, item 4): a finished slice job is listed, shown as a
raster map over its whole window, and a zoom that leaves few enough regions in view is cut
again exactly and drawn as vectors, with the image on hover and the region's codes on click;
a double click goes back to the whole window. Through the callbacks, and in Chromium at
1280x720 (the tab, the map's picture, a zoom by the graph's own relayout, the exact view)."""

from __future__ import annotations

import pytest
from dash.testing import errors as dash_errors
from dash.testing.wait import until
from kept_jobs import kept_job

from bnviz import jobs
from bnviz.slices import slice_map
from bnviz.web.callbacks.slice import callbacks as cs
from bnviz.web.callbacks.slice import ids
from bnviz.web.callbacks.slice import map as cm

TIMEOUT = 60


@pytest.fixture
def slice_job(inline_jobs, monkeypatch):
    """A finished slice job of the kept job's two networks (window 0.3), and the cap of a
    view cut again set to a third of its regions: the whole window is a map."""
    job_id = kept_job()
    controls = (job_id, "bn_init", "zero_bias", "0,1,2", "eval", 1, 0.3, "digits")
    value, *_ = cs.tiled_compute(1, *controls)
    job = jobs.wait_job(value.split(".")[0], timeout=240, poll=0.05)
    assert job.status == "succeeded", job.error
    slice_map.open_map.cache_clear()
    cm._source.cache_clear()
    total = job.summary["regions"][0][-1] + job.summary["regions"][1][-1]
    monkeypatch.setattr(slice_map, "RECUT_MAX_REGIONS", total // 3)
    return job


def test_the_map_tab_lists_the_job_and_zooms_from_the_map_to_the_exact_cut(slice_job):
    options, value, tab = cm.map_sources(None, None, None)
    assert value == slice_job.id and tab is cm.no_update  # the newest, the tab left as it is
    assert f"{slice_job.summary['regions'][0][-1]:,} regions" in options[0]["label"]
    parts, part, top, marks, layer = cm.map_parts(slice_job.id, None)
    assert [p["label"] for p in parts] == ["bn_init", "zero_bias"] and part == "a0-b0"
    assert layer == top == len(marks)

    figure, note, view = cm.draw_map(slice_job.id, part, layer, None, None)
    total = slice_job.summary["regions"][0][-1] + slice_job.summary["regions"][1][-1]
    # the whole window: the job's exact merged count (both networks), no "about"
    assert note.startswith(f"map: {total:,} regions in view") and view["exact"] is False
    assert [t["name"] for t in figure["data"]] == ["images"]  # the three images, as stars
    assert figure["layout"]["images"][0]["source"].startswith(
        "data:image/png;base64,")
    window = cm._source(slice_job.id).window
    assert tuple(view["rect"]) == window

    # zoom to a ninth of the window about its centre: few enough regions, cut again exactly
    ca, cb = (window[0] + window[1]) / 2, (window[2] + window[3]) / 2
    wa, wb = (window[1] - window[0]) / 6, (window[3] - window[2]) / 6
    zoom = {"xaxis.range[0]": ca - wa, "xaxis.range[1]": ca + wa,
            "yaxis.range[0]": cb - wb, "yaxis.range[1]": cb + wb}
    figure, note, view = cm.draw_map(slice_job.id, part, layer, zoom, view)
    assert note.startswith("exact: this view cut again") and view["exact"] is True
    shown = cm._shown_arrays(view)
    regions = len(shown[f"a0_l{layer - 1}_ptr"]) - 1
    assert f"{regions:,} regions of layer {layer}" in note
    assert tuple(shown["window"]) == pytest.approx((ca - wa, ca + wa, cb - wb, cb + wb))
    assert any(t.get("name") == "facets" for t in figure["data"])

    point = {"points": [{"x": ca, "y": cb, "curveNumber": 1, "z": 3}]}
    hovered = cm.map_hover(point, view)
    assert hovered[0].src.startswith("data:image/png")
    clicked = cm.map_click(point, view)
    assert clicked[0].children.startswith("bn_init: region ") and \
        f"of layer {layer}" in clicked[0].children

    # a double click: the whole window, the map again
    figure, note, view = cm.draw_map(slice_job.id, part, layer, {"xaxis.autorange": True}, view)
    assert note.startswith(f"map: {total:,} regions in view") and \
        tuple(view["rect"]) == window
    assert cm.map_click(point, view) is cm.no_update  # no region to name on the map


def test_jobs_show_prints_a_slice_job_s_counts(slice_job):
    """``bnviz jobs show`` of a finished slice job: its counts per layer, tiles and folder
    (it raised AttributeError on the job's list of networks before)."""
    import json

    from bnviz.cli import execute

    text = execute(["jobs", "show", slice_job.id]).decode()
    lines = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    assert json.loads(lines["regions"]) == slice_job.summary["regions"]
    assert json.loads(lines["arms"]) == ["bn_init", "zero_bias"]
    assert int(lines["tiles"]) == slice_job.summary["tiles"] and "folder" in lines
    shown = json.loads(execute(["jobs", "show", slice_job.id, "--json"]))
    assert shown["summary"]["regions"] == slice_job.summary["regions"]


def test_no_finished_slice_job_says_how_to_make_one(jobs_home):
    options, value, _ = cm.map_sources(None, None, None)
    assert value == "" and "run as a job" in options[0]["label"]
    figure, note, view = cm.draw_map("", None, 1, None, None)
    assert view is None and note == ""


@pytest.mark.browser
def test_the_map_draws_and_a_zoom_cuts_the_view_again_in_chromium(slice_job, dash_duo):
    from bnviz.web.app import app

    dash_duo.start_server(app)
    driver = dash_duo.driver
    driver.set_window_size(1280, 720)
    driver.get(dash_duo.server_url + "/slice")
    dash_duo.wait_for_element(f"#{ids.TABS}", timeout=TIMEOUT)
    driver.find_element("link text", "map of a slice job").click()
    graph = f"document.querySelector('#{ids.MAP_GRAPH} .js-plotly-plot')"
    until(lambda: driver.execute_script(
        f"const g = {graph}; return !!(g && g.layout && g.layout.images && "
        "g.layout.images.length && g.layout.images[0].source.startsWith('data:image/png'));"),
        TIMEOUT, msg="the map's picture was not drawn")
    # the page's first callbacks all answered before the zoom (as a person's zoom comes)
    until(lambda: not driver.execute_script(
        "return !!document.querySelector('[data-dash-is-loading=\"true\"]');"), TIMEOUT)
    box = driver.execute_script(f"const r = {graph}.getBoundingClientRect(); "
                                "return [r.left, r.top, r.right, r.bottom];")
    assert box[0] >= 0 and box[2] <= 1280 and box[1] >= 0 and box[3] <= 720  # no scrolling
    window = cm._source(slice_job.id).window
    ca, cb = (window[0] + window[1]) / 2, (window[2] + window[3]) / 2
    wa, wb = (window[1] - window[0]) / 6, (window[3] - window[2]) / 6
    driver.execute_script(f"Plotly.relayout({graph}, {{'xaxis.range': [{ca - wa}, {ca + wa}], "
                          f"'yaxis.range': [{cb - wb}, {cb + wb}]}});")
    try:
        until(lambda: driver.execute_script(
            f"const g = {graph}; return g.data.some(t => t.name === 'facets');"), TIMEOUT)
    except dash_errors.TestingTimeoutError:
        note = driver.find_element("id", ids.MAP_NOTE).text
        raise AssertionError("the zoom did not cut the view again; the page says "
                             f"{note!r}") from None
    note = driver.find_element("id", ids.MAP_NOTE).text
    assert note.startswith("exact: this view cut again")
    assert driver.execute_script(f"return {graph}.layout.images || [];") == []
