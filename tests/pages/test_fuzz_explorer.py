"""Property-based fuzzing of the partition explorer's inputs (issue 7): every control, the
added points (clicks, CSV uploads), the presets and buttons, and the URL query.

The properties every page fuzz test checks, and how a bug it finds is kept, are in
tests/pagefuzz.py."""

from __future__ import annotations

import math
from urllib.parse import urlencode

import pytest
from dash import html, no_update
from dash._pages import _parse_query_string
from dash.development.base_component import Component
from fuzzing import (
    FUZZ,
    HUGE,
    JUNK,
    TEXTS,
    TOO_BIG,
    _number,
    alert_of,
    assert_clear,
    bad_number,
    click,
    data_url,
    good,
    in_callback,
    mixed,
    upload,
)
from hypothesis import event, given
from hypothesis import strategies as st
from pagefuzz import (
    MAC_CSV,
)

from bnviz.core.network import ACTIVATIONS, MODES
from bnviz.data.datasets import DATASETS
from bnviz.params import PartitionParams
from bnviz.views.explorer import (
    EXPLORER_LIMITS,
    MAX_EXTRA_POINTS,
    PRESETS,
    SCOPES,
)
from bnviz.web.callbacks.explorer import callbacks as ce
from bnviz.web.callbacks.explorer import ids as EIDS
from bnviz.web.callbacks.explorer import state as es
from bnviz.web.layouts import density as density_layout
from bnviz.web.layouts import jitter as jitter_layout
from bnviz.web.layouts import jobs as jobs_layout
from bnviz.web.layouts.explorer import page_layout

LIM = EXPLORER_LIMITS


EXPLORER_VALID = {
    "depth": good(st.integers(1, 3)), "width": good(st.integers(2, 5)),
    "activation": st.sampled_from(ACTIVATIONS), "alpha": good(st.floats(0.01, 0.99)),
    "mode": st.sampled_from(MODES), "weight_seed": good(st.integers(0, 2**31 - 1)),
    "dataset": st.sampled_from(DATASETS), "n_points": good(st.integers(2, 120)),
    "data_seed": good(st.integers(0, 5)),
    "batch_size": st.one_of(st.sampled_from(["all", "ALL", " none ", None, ""]),
                            good(st.integers(2, 20))),
    "batch_seed": good(st.integers(0, 5)), "mu_t": good(st.floats(0, 1.5)),
    "sigma_s": good(st.floats(-2, 2)), "scope": st.sampled_from(SCOPES),
    "target_layer": good(st.integers(1, 12)), "target_unit": good(st.integers(1, 64)),
    "layer": good(st.integers(1, 12)),
}


EXPLORER_BAD = {name: JUNK for name in EXPLORER_VALID}
# depth and width drive the cost: junk never holds a valid but large one
EXPLORER_BAD["depth"] = bad_number(*LIM["depth"])
EXPLORER_BAD["width"] = bad_number(*LIM["width"])


VALID_CONTROLS = es.control_values(PartitionParams(depth=2, width=3, n_points=30, layer=2))


COORD = st.one_of(st.floats(-3, 3), st.sampled_from([math.nan, math.inf, -math.inf, 1e7,
                                                     HUGE, TOO_BIG, True, None, "x", "1"]))
#: Added points as the page stores them ([[x, y], ...]), and as a crafted request may.
EXTRA = st.one_of(
    st.none(), st.just([]),
    st.lists(st.lists(st.floats(-3, 3), min_size=2, max_size=2), max_size=5),
    st.lists(st.lists(COORD, min_size=2, max_size=2), min_size=1, max_size=3),
    st.lists(st.lists(st.floats(-3, 3), min_size=1, max_size=4), min_size=1, max_size=3),
    st.lists(JUNK, min_size=1, max_size=3), JUNK,
    st.just([[0.0, 0.0]] * (MAX_EXTRA_POINTS + 1)))


def _points(extra) -> list | None:
    """Added points as the page keeps them: a list of finite (x, y) pairs, as floats (a
    JSON integer arrives exact), else None."""
    if not isinstance(extra, list) or len(extra) > MAX_EXTRA_POINTS:
        return None
    for p in extra:
        if not (isinstance(p, list) and len(p) == 2 and all(
                isinstance(v, int | float) and not isinstance(v, bool)
                and _number(v) is not None for v in p)):
            return None
        if not all(math.isfinite(_number(v)) for v in p):
            return None
    return [[float(x), float(y)] for x, y in extra]


@FUZZ
@given(controls=mixed(EXPLORER_VALID, EXPLORER_BAD), extra=EXTRA,
       view=st.one_of(st.sampled_from(["space", "layers", "unit"]), JUNK),
       tls=JUNK, projector=JUNK,
       preset=st.one_of(st.sampled_from(sorted(PRESETS)), JUNK))
def test_update_views_answers_every_control_value(controls, extra, view, tls, projector,
                                                  preset):
    out = ce.update_views(controls, extra, view, tls, projector, preset)
    assert len(out) == 9
    space, layers, unit, summary, message, is_open, query, marked, caption = out
    event("refused" if is_open else "drawn")
    if is_open:
        assert_clear(message)
        assert all(o is no_update for o in (space, layers, unit, summary, query))
        assert marked == ce.STALE  # the kept picture is not the answer
        assert caption is no_update  # and its caption stays
    else:
        assert message == "" and isinstance(query, str) and marked == ""
        assert caption is no_update or isinstance(caption, str)
        assert summary is not no_update
        assert any(isinstance(f, dict) for f in (space, layers, unit))


@FUZZ
@given(depth=JUNK, width=JUNK, layer=JUNK, target_layer=JUNK, target_unit=JUNK)
def test_sync_ranges_never_raises(depth, width, layer, target_layer, target_unit):
    out = ce.sync_ranges(depth, width, layer, target_layer, target_unit)
    assert len(out) == 7
    if out[0] is not no_update:  # the ranges follow a valid depth and width only
        assert 1 <= out[0] <= LIM["depth"][1] and 2 <= out[5] <= LIM["width"][1]
        for value, hi in ((out[2], out[0]), (out[4], out[0]), (out[6], out[5])):
            assert value is no_update or 1 <= value <= hi


@FUZZ
@given(clicks=JUNK, seed=JUNK)
def test_seed_buttons_always_give_a_valid_seed(clicks, seed):
    for fn in (ce.resample_weights, ce.draw_another_batch):
        nxt = fn(clicks, seed)
        assert isinstance(nxt, int) and 0 <= nxt <= LIM["weight_seed"][1]


@FUZZ
@given(clicks=st.lists(JUNK, min_size=len(PRESETS), max_size=len(PRESETS)),
       key=st.sampled_from(sorted(PRESETS)))
def test_presets_with_any_click_counts(clicks, key):
    prop = f'{{"key":"{key}","type":"{EIDS.PRESET}"}}.n_clicks'
    out = in_callback(ce.apply_preset, prop, clicks)
    assert set(out) == {*es.CONTROLS, "view", "tls", "caption", "preset", "extra", "layer_max"}
    if out["preset"] is not no_update:
        assert out["preset"] == key
        PartitionParams.from_page(out | {"sigma_s": 2.0 ** out["sigma_s"],
                                      "target_unit": out["target_unit"] - 1})


@FUZZ
@given(trigger=st.sampled_from([EIDS.ANIMATE, EIDS.ANIMATE_TIMER]),
       mu=st.one_of(st.floats(0, 1.5), JUNK), disabled=JUNK)
def test_animate_never_raises(trigger, mu, disabled):
    value, stop = in_callback(ce.animate_mu, trigger + ".n_intervals", 1, 1, mu, disabled)
    assert value is no_update or (isinstance(value, float) and 0 <= value <= 1)
    assert isinstance(stop, bool)


@FUZZ
@given(x=st.one_of(st.floats(-3, 3), JUNK), y=st.one_of(st.floats(-3, 3), JUNK),
       shape=st.sampled_from(["point", "no points", "empty", "junk"]),
       extra=st.one_of(EXTRA, st.just([[0.0, 0.0]] * MAX_EXTRA_POINTS)))
def test_clicks_with_any_click_data(x, y, shape, extra):
    data = {"point": {"points": [{"x": x, "y": y}]}, "no points": {"points": []},
            "empty": {}, "junk": [x, y]}[shape]
    new, status = in_callback(ce.add_points, EIDS.CURSOR + ".data", data, None,
                              None, None, extra)
    if new is no_update:
        assert status is no_update or assert_clear(status)
    else:  # valid points ending with the finite clicked one (B7), within the cap
        assert _points(new) == new and len(new) <= MAX_EXTRA_POINTS
        assert "added points" in status
        if _points(extra) is not None:  # the points the page had are kept
            assert new[:-1] == _points(extra)


# ---- uploads

CSV_CELL = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-5, 5).map(str),
    st.floats(-3, 3).map(lambda v: f"{v:.3f}"),
    st.sampled_from(["", " ", "x", "y", "label", "abc", '"1"', '"1,2"', "1e400", "0x1", "NaN",
                     "-", '"', "1;2", "\t", "\x00", "1.5"]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8))


GOOD_ROW = st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(
    lambda p: [f"{p[0]:.4f}", f"{p[1]:.4f}"])


@st.composite
def csv_bytes(draw) -> bytes:
    header = draw(st.sampled_from([None, "x,y", "x,y,label", "X , Y", "a,b", "x"]))
    if draw(st.booleans()):
        rows = draw(st.lists(GOOD_ROW, min_size=1, max_size=20))
        if draw(st.booleans()):  # one damaged row
            rows[draw(st.integers(0, len(rows) - 1))] = draw(
                st.lists(CSV_CELL, min_size=1, max_size=4))
    else:
        rows = draw(st.lists(st.lists(CSV_CELL, min_size=1, max_size=4), max_size=12))
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = eol.join(([header] if header else []) + [",".join(r) for r in rows])
    text += draw(st.sampled_from(["", eol, eol * 3]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


GOOD_CSV = st.builds(
    lambda header, rows: ((header + "\n" if header else "")
                          + "".join(",".join(r) + "\n" for r in rows)).encode(),
    st.sampled_from(["", "x,y", "X,Y"]), st.lists(GOOD_ROW, min_size=1, max_size=30))


HUGE_UPLOAD = "data:text/csv;base64," + "!" * (es.EXPLORER_MAX_UPLOAD_BYTES * 4 // 3 + 8)


MIMES = st.sampled_from(["text/csv", "application/vnd.ms-excel", "application/octet-stream",
                         ""])


UPLOADS = st.one_of(
    st.builds(data_url, GOOD_CSV, MIMES),
    st.builds(data_url, csv_bytes(), MIMES),
    st.builds(data_url, st.binary(max_size=300), MIMES),
    st.text(max_size=60).map(lambda t: "data:text/csv;base64," + t),  # malformed base64
    st.text(max_size=30),  # not a data URL
    st.sampled_from([None, "", ",", "data:text/csv;base64,", "data:text/csv,1,2", HUGE_UPLOAD]),
    JUNK)


FILENAMES = st.one_of(
    st.sampled_from(["points.csv", "P.CSV", "data.txt", "noext", "", None, "\u00e4 \u00f6.csv",
                     ".csv", "a\nb.csv", "x" * 300 + ".csv"]),
    st.text(max_size=30).map(lambda s: s + ".csv"), JUNK)


OLD_POINTS = st.one_of(EXTRA, st.just([[0.5, 0.5]] * (MAX_EXTRA_POINTS - 1)))


@FUZZ
@given(contents=UPLOADS, filename=st.one_of(st.just("points.csv"), FILENAMES), extra=OLD_POINTS)
def test_uploads_are_parsed_or_refused_with_a_reason(contents, filename, extra):
    new, status = upload(contents, filename, extra)
    event("refused" if new is no_update else "added")
    if new is no_update:  # refused: the old points stay, the reason is shown in red
        assert isinstance(status, html.Span) and status.className == "text-danger"
        text = assert_clear(status)
        if contents is HUGE_UPLOAD:  # refused by its size, before decoding
            assert "larger than" in text
    else:  # valid points (the page's ones first, when they were valid), within the cap
        old = _points(extra) or []
        added = new[len(old):]
        assert new[:len(old)] == old and added and len(new) <= MAX_EXTRA_POINTS
        assert _points(new) == new and all(abs(v) <= 1e6 for p in added for v in p)
        assert assert_clear(status).startswith(f"added {len(added)} points from ")


def test_upload_over_the_size_cap_is_refused_before_decoding():
    big = b"x,y\n" + b"0.125,0.25\n" * (es.EXPLORER_MAX_UPLOAD_BYTES // 11 + 10)  # valid, > 1 MB
    for contents in (data_url(big), HUGE_UPLOAD):
        new, status = upload(contents, "big.csv", [[1.0, 2.0]])
        assert new is no_update and "larger than 1000 kB" in assert_clear(status)


def test_clear_always_empties():
    assert in_callback(ce.add_points, EIDS.CLEAR_POINTS + ".n_clicks", None, None, 3, None,
                       [[1.0, 1.0]]) == ([], "")


# ---- the page's state in the URL

QUERY_KEYS = st.one_of(
    st.sampled_from([*VALID_CONTROLS, "extent", "view", "tls", "projector", "pts", "preset",
                     "job"]),
    st.text(max_size=10))


QUERY_VALUES = st.one_of(
    st.sampled_from(["3", "0", "-1", "all", "bn", "relu", "fig1", "fig9", "layers", "unit",
                     "1", "1,2;3,4", "nan,1", "1,2,3;", ";;", "1e400,0", "inf", "1e9,1",
                     "0.25", "12", "64", "2000"]),
    TEXTS)


@st.composite
def url_queries(draw) -> dict:
    """A query as Dash Pages hands it to the layout: repeated keys arrive as lists."""
    if draw(st.booleans()):
        search = "?" + urlencode(draw(st.lists(st.tuples(QUERY_KEYS, QUERY_VALUES),
                                               max_size=8)))
    else:
        search = "?" + draw(st.text(max_size=80))
    return _parse_query_string(search)


@FUZZ
@given(query=url_queries())
def test_tampered_url_still_renders_the_explorer(query):
    page = page_layout(**query)
    assert isinstance(page, html.Div) and page.id == EIDS.ROOT
    alert = alert_of(page, EIDS.MESSAGE)
    assert alert.is_open == bool(alert.children)
    if alert.children:
        assert_clear(alert.children)


@FUZZ
@given(query=url_queries())
def test_tampered_url_still_renders_the_other_pages(query):
    for layout in (jobs_layout.layout, jitter_layout.layout, density_layout.layout):  # B1
        assert isinstance(layout(**query), Component)


@FUZZ
@given(on=JUNK)
def test_projector_mode_with_any_value(on):
    assert ce.projector_mode(on) in ("projector", "")


# =========================================================================== found, fixed
# Bugs this fuzzing found, fixed while it was written: each test is a bug's reproducers,
# kept as a regression test (the fuzz tests above feed these inputs too).

@pytest.mark.parametrize("raw", [MAC_CSV, b"1," + b"9" * 140_000 + b"\n"],
                         ids=["cr-line-endings", "field-over-128kB"])
def test_b2_upload_with_a_csv_error(raw):
    """B2: csv.Error (not a ValueError) escaped the upload callback: a CSV with classic Mac
    line endings, or a field over csv's 128 kB limit."""
    new, status = upload(data_url(raw), "points.csv", [])
    if new is no_update:
        assert_clear(status)
    else:
        assert new == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("x", [math.nan, math.inf, TOO_BIG], ids=["nan", "inf", "10**400"])
def test_b5_b7_click_with_a_non_finite_coordinate(x):
    """B5: a click at 10**400 raised OverflowError. B7: a click at NaN or inf was stored as
    an added point, and every redraw was then refused until 'clear'."""
    assert click(x, 0.0, [[1.0, 1.0]]) == (no_update, no_update)


B10_SETTINGS = [
    # reachable with the page's own controls: abs, width 8, depth 2, "resample" five times,
    # 50 points, the mu slider at 0.02 (?depth=2&width=8&activation=abs&weight_seed=5&...)
    PartitionParams(depth=2, width=8, activation="abs", weight_seed=5, n_points=50,
                     mu_t=0.02, layer=2),
    PartitionParams(depth=1, width=4, activation="relu", mode="random_bias", weight_seed=1,
                     mu_t=1e-9, layer=1),
]


@pytest.mark.parametrize("settings", B10_SETTINGS, ids=["ui-reachable", "tiny-mu"])
def test_b10_partition_breakdown_in_the_explorer(monkeypatch, settings):
    """B10: the exact partition broke down numerically (RuntimeError 'a face with fewer
    than 3 corners') and the explorer callback let it escape (a server error)."""
    monkeypatch.setenv("BNVIZ_DEVICE", "cpu")
    out = ce.update_views(es.control_values(settings), [], "space", False, False)
    assert out[5] is False or assert_clear(out[4])


@pytest.mark.parametrize("call", [
    lambda: ce.sync_ranges(TOO_BIG, 4, 1, 1, 1),
    lambda: ce.sync_ranges(4, 4, TOO_BIG, 1, 1),
    lambda: ce.resample_weights(1, TOO_BIG),
    lambda: ce.draw_another_batch(1, TOO_BIG),
    lambda: in_callback(ce.animate_mu, EIDS.ANIMATE_TIMER + ".n_intervals", 1, 1, TOO_BIG,
                        False),
    lambda: ce.update_views(VALID_CONTROLS, [[0.0, TOO_BIG]], "space", False, False),
], ids=["sync-ranges-depth", "sync-ranges-layer", "resample", "new-batch", "animate",
        "explorer-points"])
def test_b5_integer_beyond_float_range(call):
    """B5: float() of an integer beyond float range raised OverflowError, which these
    callbacks did not catch (JSON integers are parsed exactly: a request can send 10**400)."""
    call()


@pytest.mark.parametrize("call", [
    lambda: ce.update_views(VALID_CONTROLS, 5, "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [[[0], [1]]], "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [[0.5], [0.5]], "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [["0.5", "0.5"]], "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [], "space", False, False, ["fig1"]),
    lambda: click(0.5, 0.5, 5),
    lambda: upload([","], "points.csv", []),
    lambda: upload(data_url(b"1,2\n"), 5, []),
    lambda: in_callback(ce.animate_mu, EIDS.ANIMATE_TIMER + ".n_intervals", 1, 1, "abc",
                        False),
], ids=["explorer-points-int", "explorer-points-nested", "explorer-points-ragged",
        "explorer-points-text", "explorer-preset-list", "click-points-int", "upload-contents-list",
        "upload-filename-int", "animate-mu-text"])
def test_b6_wrong_type_in_client_state(call):
    """B6: a value of the wrong type, or a malformed key, in client-side state (a
    dcc.Store, an Upload, a multi Dropdown, a Slider) raised instead of being refused."""
    call()


LONG = "x" * 2000


@pytest.mark.parametrize("shown", [
    lambda: alert_of(page_layout(activation=LONG), EIDS.MESSAGE).children,
    lambda: ce.update_views({**VALID_CONTROLS, "batch_size": LONG}, [], "space", 0, 0)[4],
    lambda: upload(data_url(("h" * 2000 + "\n1,2\n").encode()), "p.csv", [])[1],
], ids=["explorer-url", "explorer-control", "csv-header"])
def test_b4_long_value_gives_a_short_message(shown):
    """B4: messages echoed the user's whole value (its repr, untruncated), so a long value
    made a message of any length (a 2000-character value gave a >2000-character alert)."""
    assert_clear(shown())
