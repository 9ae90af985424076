"""Browser tests of the partition explorer page (dash_duo, headless Chromium).

They drive the real page the way a lecturer does: keyboard on the sliders, preset buttons,
a shared link, a click in the plot, projector mode, a bad value and a bad upload; and they
read plotly's state (``gd.data``, ``gd.layout``) back from the page.  Every test ends with
no error in the browser console.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from dash.testing.wait import until
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bnviz.views.explorer import PRESETS
from bnviz.web.app import app
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer.state import query_string

pytestmark = pytest.mark.browser

TIMEOUT = 45  # seconds: the first figure of a fresh server includes the torch warm-up, on a
#             machine running the suite on every core (make test: pytest-xdist)
TITLE = re.compile(r"layer (\d+): (\d+) regions")


# ---- helpers ----------------------------------------------------------------------------

def _js(dash_duo, script: str, *args):
    return dash_duo.driver.execute_script(script, *args)


def _gd(graph_id: str) -> str:
    """JS expression of the plotly graph div inside a dcc.Graph."""
    return f"document.querySelector('#{graph_id} .js-plotly-plot')"


def _title(dash_duo, graph_id: str = ids.GRAPH_SPACE) -> str | None:
    return _js(dash_duo, f"const g = {_gd(graph_id)}; "
                         "return g && g.layout && g.layout.title ? g.layout.title.text : null;")


def _facets(dash_duo) -> str | None:
    """The plotted lines of the space graph (their typed-array payloads), as one string."""
    return _js(dash_duo, f"const g = {_gd(ids.GRAPH_SPACE)}; if (!g || !g.data) return null; "
                         "return JSON.stringify(g.data.filter(t => t.mode === 'lines')"
                         ".map(t => [t.name, t.x, t.y]));")


def _trace_types(dash_duo, graph_id: str) -> list[str]:
    return _js(dash_duo, f"const g = {_gd(graph_id)}; "
                         "return g && g.data ? g.data.map(t => t.type || 'scatter') : [];")


def _slider_thumb(dash_duo, slider_id: str):
    return dash_duo.find_element(f"#{slider_id} [role=slider]")


def _slider_value(dash_duo, slider_id: str) -> float:
    return float(_slider_thumb(dash_duo, slider_id).get_attribute("aria-valuenow"))


def _thumb_max(dash_duo, slider_id: str) -> float:
    return float(_slider_thumb(dash_duo, slider_id).get_attribute("aria-valuemax"))


def _n_points(dash_duo) -> int | None:
    m = re.search(r"(\d+) points, batch of", dash_duo.find_element(f"#{ids.SUMMARY}").text)
    return int(m.group(1)) if m else None


def _wait_title(dash_duo, changed_from: str | None = None) -> str:
    """Wait for the space graph's title ("layer l: N regions"), or for it to change."""
    def ready():
        t = _title(dash_duo)
        return t if t and TITLE.fullmatch(t) and t != changed_from else None
    return until(ready, TIMEOUT, msg=f"space graph title did not appear/change from "
                                     f"{changed_from!r}")


def _type(dash_duo, css: str, text: str) -> None:
    """Replace an input's text and commit it with Enter (the inputs are debounced)."""
    el = dash_duo.find_element(css)
    el.send_keys(Keys.CONTROL, "a")
    el.send_keys(Keys.BACKSPACE)
    el.send_keys(text, Keys.ENTER)


def _button(dash_duo, text: str):
    return dash_duo.driver.find_element(By.XPATH, f"//button[normalize-space()='{text}']")


def _active_tab(dash_duo) -> str:
    return dash_duo.find_element(f"#{ids.VIEW} .nav-link.active").text.strip()


def _instant_scroll(dash_duo) -> None:
    """Bootstrap 5 sets ``scroll-behavior: smooth`` on :root; WebDriver scrolls an element
    into view and clicks at once, before a smooth scroll has arrived, so a click below the
    fold is "intercepted".  Scroll instantly in the tests."""
    _js(dash_duo, "document.documentElement.style.scrollBehavior = 'auto';")


def _open(dash_duo) -> str:
    """Start the app, give it a desktop-sized window and wait for the first picture."""
    dash_duo.driver.set_window_size(1400, 1000)
    dash_duo.start_server(app)
    _instant_scroll(dash_duo)
    return _wait_title(dash_duo)


def _no_console_errors(dash_duo) -> None:
    assert dash_duo.get_logs() == []


# ---- tests -------------------------------------------------------------------------------

def test_page_loads_with_default_picture(dash_duo):
    title = _open(dash_duo)
    assert TITLE.fullmatch(title).group(1) == "4"
    assert int(TITLE.fullmatch(title).group(2)) > 0
    rows = dash_duo.find_elements(f"#{ids.SUMMARY} tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == ["1", "2", "3", "4"]
    # the regions of the last layer in the table are the ones in the title
    assert rows[-1].find_elements(By.TAG_NAME, "td")[1].text == TITLE.fullmatch(title).group(2)
    assert _n_points(dash_duo) == 100
    assert _slider_value(dash_duo, ids.MU) == 1.0
    assert not dash_duo.find_elements(f"#{ids.MESSAGE}.show")  # no warning open
    _no_console_errors(dash_duo)


def test_mu_slider_keyboard_changes_the_picture(dash_duo):
    title = _open(dash_duo)
    facets = _facets(dash_duo)
    thumb = _slider_thumb(dash_duo, ids.MU)
    for _ in range(5):
        thumb.send_keys(Keys.ARROW_LEFT)
    until(lambda: _slider_value(dash_duo, ids.MU) == pytest.approx(0.95), TIMEOUT,
          msg="arrow keys did not move the mu slider")
    until(lambda: _facets(dash_duo) != facets, TIMEOUT,
          msg="the facets did not move after the mu slider moved")
    facets = _facets(dash_duo)
    title = _title(dash_duo)
    thumb.send_keys(Keys.HOME)
    until(lambda: _slider_value(dash_duo, ids.MU) == 0.0, TIMEOUT, msg="Home did not reach 0")
    until(lambda: _facets(dash_duo) != facets, TIMEOUT, msg="mu = 0 did not redraw")
    # mu = 0 (no centering) is a different partition from BN's: another region count
    _wait_title(dash_duo, changed_from=title)
    assert "mu_t=0" in _js(dash_duo, "return window.location.search")
    _no_console_errors(dash_duo)


def test_presets_reproduce_figure_settings(dash_duo):
    _open(dash_duo)
    _button(dash_duo, "Figure 2a").click()
    until(lambda: _slider_value(dash_duo, ids.DEPTH) == 2, TIMEOUT, msg="depth did not go to 2")
    assert dash_duo.find_element(f"#{ids.DEPTH} input[type=number]").get_attribute(
        "value") == "2"
    assert dash_duo.find_element(f"#{ids.WIDTH}").get_attribute("value") == "8"
    until(lambda: _active_tab(dash_duo) == "One unit (Fig. 2a)", TIMEOUT,
          msg="the preset did not open the unit tab")
    until(lambda: "histogram" in _trace_types(dash_duo, ids.GRAPH_UNIT), TIMEOUT,
          msg="the unit graph shows no histogram")
    unit_title = _js(dash_duo, f"return {_gd(ids.GRAPH_UNIT)}.layout.title.text")
    assert unit_title.startswith("unit 1 of layer 2")
    assert dash_duo.find_element(f"#{ids.SCOPE} input[value=unit]").is_selected()
    assert "Unit k of layer 2" in dash_duo.find_element(f"#{ids.CAPTION}").text
    assert "Changed since" not in dash_duo.find_element(f"#{ids.CAPTION}").text
    # moving away from the figure: the caption says what no longer matches it
    _type(dash_duo, f"#{ids.WIDTH}", "9")
    until(lambda: "Changed since: width (the Figure 2a button" in
          dash_duo.find_element(f"#{ids.CAPTION}").text, TIMEOUT,
          msg="the caption did not follow the changed width")

    _button(dash_duo, "Figure 9").click()
    until(lambda: _active_tab(dash_duo).startswith("Input space"), TIMEOUT,
          msg="Figure 9 did not open the input-space tab")
    # a trained network's layers 1 and 4 side by side, a colour bar each naming its layer
    until(lambda: _js(dash_duo, f"const g = {_gd(ids.GRAPH_SPACE)}; return !!(g && g.data && "
                                "g.data.filter(t => t.marker && t.marker.showscale).length "
                                "== 2);"),
          TIMEOUT, msg="Figure 9 shows no two TLS colour bars")
    bars = _js(dash_duo, f"return {_gd(ids.GRAPH_SPACE)}.data.filter(t => t.marker && "
                         "t.marker.showscale).map(t => t.marker.colorbar.title.text);")
    assert ["layer 1" in bars[0], "layer 4" in bars[1]] == [True, True], bars
    assert dash_duo.find_element(f"#{ids.TLS}").is_selected()
    assert dash_duo.find_element(f"#{ids.WIDTH}").get_attribute("value") == "6"
    assert dash_duo.find_element(f"#{ids.WEIGHTS}").get_attribute("value") == "trained"
    assert _title(dash_duo).startswith("Figure 9")
    _no_console_errors(dash_duo)


def test_shared_url_restores_the_state(dash_duo):
    title = _open(dash_duo)
    _type(dash_duo, f"#{ids.WIDTH}", "5")
    title = _wait_title(dash_duo, changed_from=title)
    thumb = _slider_thumb(dash_duo, ids.MU)
    thumb.send_keys(Keys.HOME)
    for _ in range(5):
        thumb.send_keys(Keys.PAGE_UP)  # ten steps of 0.01 each
    until(lambda: _slider_value(dash_duo, ids.MU) == pytest.approx(0.5), TIMEOUT,
          msg="Home + 5 x PageUp did not put the mu slider at 0.5")

    def url_has_state():
        q = parse_qs(urlsplit(dash_duo.driver.current_url).query)
        return q.get("width") == ["5"] and q.get("mu_t") == ["0.5"]
    until(url_has_state, TIMEOUT, msg="the URL did not record width=5 and mu_t=0.5")
    title = _wait_title(dash_duo)
    until(lambda: _title(dash_duo) == title and url_has_state(), TIMEOUT)
    url = dash_duo.driver.current_url
    assert "width=5" in _js(dash_duo, "return window.location.search")

    dash_duo.driver.get("about:blank")
    dash_duo.driver.get(url)
    _instant_scroll(dash_duo)
    restored = _wait_title(dash_duo)
    assert restored == title
    assert dash_duo.find_element(f"#{ids.WIDTH}").get_attribute("value") == "5"
    assert _slider_value(dash_duo, ids.MU) == 0.5
    assert urlsplit(dash_duo.driver.current_url).query == urlsplit(url).query
    _no_console_errors(dash_duo)


def _added_points(dash_duo) -> list[tuple[float, float]]:
    query = parse_qs(urlsplit(_js(dash_duo, "return window.location.href")).query)
    return [tuple(float(v) for v in p.split(",")) for p in query.get("pts", [""])[0].split(";")
            if p]


def _data_at(dash_duo, dx: float, dy: float) -> tuple[float, float]:
    """The data coordinates of the pixel (dx, dy) from the plot area's centre."""
    return tuple(_js(dash_duo, f"""const g = {_gd(ids.GRAPH_SPACE)}, fl = g._fullLayout;
        const xa = fl.xaxis, ya = fl.yaxis;
        return [xa.p2d(xa._length / 2 + arguments[0]), ya.p2d(ya._length / 2 + arguments[1])];
        """, dx, dy))


def test_click_on_plot_adds_a_point_at_the_cursor(dash_duo):
    """A click adds a point where the mouse is: not the nearest data point's copy, not the
    region fill's pixel centre."""
    _open(dash_duo)
    assert _n_points(dash_duo) == 100
    drag = dash_duo.find_element(f"#{ids.GRAPH_SPACE} .nsewdrag")
    # the plot area's centre is the drag layer's centre (plotly draws it over the axes)
    ActionChains(dash_duo.driver).move_to_element(drag).move_by_offset(-40, 30).pause(
        0.2).click().perform()
    until(lambda: _n_points(dash_duo) == 101, TIMEOUT, msg="the click added no data point")
    assert "1 added points" in dash_duo.find_element(f"#{ids.UPLOAD_STATUS}").text
    until(lambda: len(_added_points(dash_duo)) == 1, TIMEOUT)
    (x, y), = _added_points(dash_duo)
    ex, ey = _data_at(dash_duo, -40, 30)
    # within one pixel (WebDriver moves to whole pixels; the region fill's pixels are 3)
    px_size = _js(dash_duo, f"const xa = {_gd(ids.GRAPH_SPACE)}._fullLayout.xaxis; "
                            "return (xa.range[1] - xa.range[0]) / xa._length;")
    assert abs(x - ex) <= px_size and abs(y - ey) <= px_size, ((x, y), (ex, ey))
    # 6 px to the right of a data point: the point goes under the mouse, not on the data point
    px, py, dx, dy = _js(dash_duo, f"""const g = {_gd(ids.GRAPH_SPACE)}, fl = g._fullLayout;
        const t = g._fullData.find(t => t.name === 'data'), xa = fl.xaxis, ya = fl.yaxis;
        const x = t.x[0], y = t.y[0];
        return [x, y, xa.d2p(x) - xa._length / 2, ya.d2p(y) - ya._length / 2];""")
    ActionChains(dash_duo.driver).move_to_element(drag).move_by_offset(
        round(dx) + 6, round(dy)).pause(0.2).click().perform()
    until(lambda: len(_added_points(dash_duo)) == 2, TIMEOUT)
    x, y = _added_points(dash_duo)[1]
    ex, ey = _data_at(dash_duo, round(dx) + 6, round(dy))
    assert abs(x - ex) <= px_size and abs(y - ey) <= px_size, ((x, y), (ex, ey))
    assert abs(x - px) >= 4 * px_size
    _no_console_errors(dash_duo)


def test_projector_mode(dash_duo):
    _open(dash_duo)
    root = dash_duo.find_element(f"#{ids.ROOT}")
    assert "projector" not in (root.get_attribute("class") or "").split()
    font = _js(dash_duo, f"return {_gd(ids.GRAPH_SPACE)}.layout.font.size")
    # the switch's label covers the (visually restyled) checkbox: click the label, as a user does
    dash_duo.find_element(f"label[for={ids.PROJECTOR}]").click()
    until(lambda: "projector" in (root.get_attribute("class") or "").split(), TIMEOUT,
          msg="#explorer-root did not get the class 'projector'")
    until(lambda: _js(dash_duo, f"return {_gd(ids.GRAPH_SPACE)}.layout.font.size") > font,
          TIMEOUT, msg="the figure did not switch to projector fonts")
    until(lambda: "projector=1" in _js(dash_duo, "return window.location.search"), TIMEOUT)
    _no_console_errors(dash_duo)


def _opacity(dash_duo) -> float:
    """The input-space graph's opacity as drawn."""
    return float(_js(dash_duo, "return getComputedStyle(document.querySelector("
                     f"'#{ids.GRAPH_SPACE} .js-plotly-plot')).opacity"))


@pytest.mark.parametrize(("css", "bad", "words"), [
    (f"#{ids.WIDTH}", "0", "width"),
    (f"#{ids.BATCH_SIZE}", "abc", "batch size"),
])
def test_bad_value_warns_and_keeps_the_picture(dash_duo, css, bad, words):
    title = _open(dash_duo)
    facets = _facets(dash_duo)
    search = _js(dash_duo, "return window.location.search")
    _type(dash_duo, css, bad)
    alert = until(lambda: dash_duo.find_elements(f"#{ids.MESSAGE}.show"), TIMEOUT,
                  msg="no warning for a bad value")[0]
    until(lambda: words in alert.text, TIMEOUT)
    assert _title(dash_duo) == title
    assert _facets(dash_duo) == facets
    assert _js(dash_duo, "return window.location.search") == search
    # the kept picture is marked stale: dimmed, and labelled as not this setting
    until(lambda: _opacity(dash_duo) < 0.5, TIMEOUT, msg="the old picture is not dimmed")
    label = _js(dash_duo, "return getComputedStyle(document.querySelector("
                f"'#{ids.VIEWS_BOX} .tab-content'), '::before').content")
    assert "not this setting" in label
    # a good value closes the warning again and shows the new picture plainly
    _type(dash_duo, css, "8" if css == f"#{ids.WIDTH}" else "all")
    until(lambda: not dash_duo.find_elements(f"#{ids.MESSAGE}.show"), TIMEOUT,
          msg="the warning stayed after a good value")
    until(lambda: _opacity(dash_duo) == 1.0, TIMEOUT, msg="the new picture is still dimmed")
    _no_console_errors(dash_duo)


def test_bad_upload_shows_an_error(dash_duo, tmp_path):
    _open(dash_duo)
    bad = tmp_path / "bad.csv"
    bad.write_text("this is,not\na csv,of numbers\n")
    upload = dash_duo.find_element(f"#{ids.UPLOAD} input[type=file]")
    upload.send_keys(str(bad))
    status = f"#{ids.UPLOAD_STATUS} .text-danger"
    until(lambda: dash_duo.find_elements(status), TIMEOUT, msg="no upload error shown")
    assert "bad.csv" in dash_duo.find_element(status).text
    assert _n_points(dash_duo) == 100

    good = tmp_path / "good.csv"
    good.write_text("x,y\n0.1,0.2\n-0.5,0.3\n1.0,-1.0\n")
    try:
        upload.send_keys(str(good))
    except WebDriverException:  # the input was re-rendered
        dash_duo.find_element(f"#{ids.UPLOAD} input[type=file]").send_keys(str(good))
    until(lambda: _n_points(dash_duo) == 103, TIMEOUT, msg="a good CSV added no points")
    assert "added 3 points from good.csv" in dash_duo.find_element(f"#{ids.UPLOAD_STATUS}").text
    _no_console_errors(dash_duo)


# ---- regressions: the layer slider follows the depth; a preset link keeps its caption ----

def test_depth_decrease_keeps_layer_slider_in_range(dash_duo):
    _open(dash_duo)
    assert _slider_value(dash_duo, ids.LAYER) == 4
    thumb = _slider_thumb(dash_duo, ids.DEPTH)
    thumb.send_keys(Keys.ARROW_LEFT)
    thumb.send_keys(Keys.ARROW_LEFT)
    until(lambda: _slider_value(dash_duo, ids.DEPTH) == 2, TIMEOUT)
    # the picture ends up highlighting layer 2 (it may pass through depth 3 on the way) ...
    until(lambda: (TITLE.fullmatch(_title(dash_duo) or "") or [None, None])[1] == "2",
          TIMEOUT, msg="the title never reached layer 2")
    until(lambda: _thumb_max(dash_duo, ids.LAYER) == 2, TIMEOUT)
    _no_console_errors(dash_duo)
    # ... and so should the control that chooses it (it still says 4)
    assert _slider_value(dash_duo, ids.LAYER) == 2


def test_shared_url_of_a_preset_keeps_its_caption(dash_duo):
    _open(dash_duo)
    _button(dash_duo, "Figure 2a").click()
    until(lambda: "depth=2" in _js(dash_duo, "return window.location.search"), TIMEOUT)
    caption = dash_duo.find_element(f"#{ids.CAPTION}").text
    assert "Unit k of layer 2" in caption
    url = dash_duo.driver.current_url
    dash_duo.driver.get(url)
    until(lambda: "histogram" in _trace_types(dash_duo, ids.GRAPH_UNIT), TIMEOUT)
    assert _active_tab(dash_duo) == "One unit (Fig. 2a)"
    _no_console_errors(dash_duo)
    assert dash_duo.find_element(f"#{ids.CAPTION}").text == caption


OVERLAP_JS = (Path(__file__).parents[1] / "lecture" / "overlap.js").read_text()
VIEW_GRAPHS = {"space": ids.GRAPH_SPACE, "layers": ids.GRAPH_LAYERS, "unit": ids.GRAPH_UNIT}


@pytest.mark.parametrize("projector", [False, True], ids=["screen", "projector"])
def test_presets_print_no_text_over_text_at_1280x720(dash_duo, projector):
    """Every preset's figure at a projector's 1280x720, in both modes: no tick label, title,
    legend entry or annotation over another, none outside the graph (the issue found Figure
    1's row labels overprinted and Figure 2a unreadable there)."""
    dash_duo.driver.set_window_size(1280, 720)
    dash_duo.start_server(app)
    for key, preset in PRESETS.items():
        query = query_string(preset.settings, preset.view, preset.tls, projector, [], key)
        dash_duo.wait_for_page(dash_duo.server_url + "/?" + query, timeout=TIMEOUT)
        graph = VIEW_GRAPHS[preset.view]
        until(lambda g=graph: _js(dash_duo, f"const d = {_gd(g)}; return !!(d && d._fullLayout"
                                            " && d.data && d.data.length);"), TIMEOUT)
        texts = until(lambda g=graph: _js(dash_duo, OVERLAP_JS, g), TIMEOUT)
        assert texts["texts"] > 0
        assert texts["overlaps"] == [], f"{key}: {texts['overlaps'][:5]}"
        assert texts["outside"] == [], f"{key}: {texts['outside'][:5]}"
        if projector:  # the projector's type is at least 18 px, as in the lecture view
            assert texts["small"] == [], f"{key}: {texts['small'][:5]}"
    _no_console_errors(dash_duo)
