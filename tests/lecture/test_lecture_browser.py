"""The lecture view in the browser, as a lecturer uses it (dash_duo, headless Chromium): a
clicker's keys through every step at 1280x720 and 1920x1080, with no scrolling, the plot
taking at least 40 % of the screen, the four sliders on screen, no type under 18 px and no
plot text over another; the URL holds the step; the QR code reads back as the page's link;
the play button, blank, full screen, reset and the theme; the Lecture link of the explorer.

How long each step took to appear is printed (``-s`` shows it), not asserted."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
import zxingcpp
from dash.testing.wait import until
from lecture_windows import viewport
from PIL import Image
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from bnviz.lecture.tour import TOUR, step_by_key
from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids

pytestmark = pytest.mark.browser

TIMEOUT = 30  # the first step of a fresh server computes the papers' trained networks
OVERLAP_JS = (Path(__file__).parent / "overlap.js").read_text()
#: Every visible text element's font size in px (elements with their own text).
FONT_SIZES_JS = """
const out = [];
const walker = document.createTreeWalker(document.getElementById(arguments[0]),
                                         NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || !el || el.closest("svg")) continue;
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    if (r.width < 1 || r.height < 1 || s.visibility === "hidden" || el.closest("[hidden]"))
        continue;
    out.push([node.textContent.trim().slice(0, 30), parseFloat(s.fontSize)]);
}
return out;"""


#: The share of the screen the figure's axes (each subplot's plot area, inside the plot's box)
#: cover: what a hall sees of the data, not the white around it.
AXES_SHARE_JS = """
const vw = innerWidth, vh = innerHeight;
const box = document.getElementById('lecture-plot').getBoundingClientRect();
let area = 0;
for (const el of document.querySelectorAll('#lecture-graph .nsewdrag')) {
    const r = el.getBoundingClientRect();
    area += Math.max(0, Math.min(r.right, vw, box.right) - Math.max(r.left, 0, box.left)) *
            Math.max(0, Math.min(r.bottom, vh, box.bottom) - Math.max(r.top, 0, box.top));
}
return area / (vw * vh);"""


def _settled_share(dash_duo) -> float:
    """AXES_SHARE_JS once the graph has its final size (three equal readings in a row)."""
    seen: list[float] = []
    until(lambda: seen.append(_js(dash_duo, AXES_SHARE_JS)) or (
        len(seen) > 2 and seen[-1] == seen[-2] == seen[-3]), TIMEOUT)
    return seen[-1]


def _js(dash_duo, script: str, *args):
    return dash_duo.driver.execute_script(script, *args)


def _press(dash_duo, *keys) -> None:
    ActionChains(dash_duo.driver).send_keys(*keys).perform()


def _step_shown(dash_duo) -> int | None:
    """The step in the URL, once the server's answer for it is drawn (the URL is written
    with the figure's answer)."""
    search = _js(dash_duo, "return location.search;")
    for part in search.lstrip("?").split("&"):
        if part.startswith("step="):
            return int(part[5:])
    return None


def _wait_step(dash_duo, step: int) -> float:
    """Wait until ``step`` is shown and its figure drawn; the seconds it took."""
    t0 = time.perf_counter()
    until(lambda: _step_shown(dash_duo) == step and dash_duo.find_element(
        f"#{ids.COUNTER}").text.startswith(f"{step} /"), TIMEOUT,
        msg=f"step {step} did not appear")
    until(lambda: _js(dash_duo, "const g = document.querySelector('#lecture-graph "
                                ".js-plotly-plot'); return !!(g && g._fullLayout && "
                                "g.data && g.data.length);"), TIMEOUT)
    return time.perf_counter() - t0


def _layout_report(dash_duo) -> dict:
    return _js(dash_duo, """
        const vw = innerWidth, vh = innerHeight;
        const g = document.getElementById('lecture-graph').getBoundingClientRect();
        const inside = id => { const r = document.getElementById(id + '-box')
                                                 .getBoundingClientRect();
                               return r.top >= 0 && r.left >= 0 && r.bottom <= vh &&
                                      r.right <= vw && r.height > 0; };
        return {scroll: [document.documentElement.scrollWidth,
                         document.documentElement.scrollHeight, vw, vh],
                plot_share: Math.max(0, Math.min(g.right, vw) - Math.max(g.left, 0)) *
                            Math.max(0, Math.min(g.bottom, vh) - Math.max(g.top, 0)) / (vw * vh),
                sliders: ['lecture-mu', 'lecture-sigma', 'lecture-batch', 'lecture-depth']
                         .map(inside),
                caption_visible: (() => { const r = document.getElementById('lecture-caption')
                                                    .getBoundingClientRect();
                                          return r.bottom <= vh && r.height > 0; })()};""")


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)], ids=["1280x720", "1920x1080"])
def test_every_step_fits_a_projector(dash_duo, size):
    """PageDown through the whole tour; every step fits the screen with nothing to scroll,
    nothing overprinted and no small type."""
    dash_duo.start_server(app)
    viewport(dash_duo.driver, *size)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=1", timeout=TIMEOUT)
    seconds = [_wait_step(dash_duo, 1)]
    shares = []
    for step in range(1, len(TOUR) + 1):
        if step > 1:
            _press(dash_duo, Keys.PAGE_DOWN)
            seconds.append(_wait_step(dash_duo, step))
        assert dash_duo.find_element(f"#{ids.TITLE}").text == TOUR[step - 1].title
        assert dash_duo.find_element(f"#{ids.CAPTION}").text == TOUR[step - 1].caption
        layout = _layout_report(dash_duo)
        sw, sh, vw, vh = layout["scroll"]
        assert sw <= vw and sh <= vh, f"step {step}: the page scrolls ({layout['scroll']})"
        assert layout["plot_share"] >= 0.40, f"step {step}: plot {layout['plot_share']:.2f}"
        assert all(layout["sliders"]), f"step {step}: a slider is off screen"
        assert layout["caption_visible"]
        texts = until(lambda: _js(dash_duo, OVERLAP_JS, ids.GRAPH), TIMEOUT)
        assert texts["texts"] > 0
        assert texts["overlaps"] == [], f"step {step}: {texts['overlaps'][:5]}"
        assert texts["outside"] == [], f"step {step}: {texts['outside'][:5]}"
        shares.append(_settled_share(dash_duo))
        if size == (1280, 720):  # the requirement is at the projector's size
            assert texts["small"] == [], f"step {step}: {texts['small'][:5]}"
            small = [t for t in _js(dash_duo, FONT_SIZES_JS, ids.ROOT) if t[1] < 18]
            assert small == [], f"step {step}: type under 18 px: {small[:5]}"
    print(f"\n{size[0]}x{size[1]}: steps appeared in (ms) "
          + ", ".join(f"{1000 * s:.0f}" for s in seconds)
          + "; axes cover " + ", ".join(f"{s:.0%}" for s in shares))
    # issue 31: the subplots' axes cover >= 45% of the screen (median over the tour) and
    # >= 30% at every step (before: 33%, min 15% at 1280x720)
    shares.sort()
    assert shares[len(shares) // 2] >= 0.45 and shares[0] >= 0.30, shares
    assert dash_duo.get_logs() == []


def test_clicker_keys_move_the_tour(dash_duo):
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=5", timeout=TIMEOUT)
    _wait_step(dash_duo, 5)
    n = len(TOUR)
    for keys, expected in (((Keys.PAGE_DOWN,), 6), ((Keys.ARROW_RIGHT,), 7), ((" ",), 8),
                           ((Keys.PAGE_UP,), 7), ((Keys.ARROW_LEFT,), 6), ((Keys.END,), n),
                           ((Keys.PAGE_DOWN,), n), ((Keys.HOME,), 1), ((Keys.PAGE_UP,), 1),
                           (("1", "2"), 12), (("3",), 3), (("1",), 1),
                           ((Keys.PAGE_DOWN, Keys.PAGE_DOWN), 3)):  # two quick presses
        _press(dash_duo, *keys)
        _wait_step(dash_duo, expected)
    # the buttons do what the keys do
    dash_duo.find_element(f"#{ids.NEXT}").click()
    _wait_step(dash_duo, 4)
    dash_duo.find_element(f"#{ids.PREV}").click()
    _wait_step(dash_duo, 3)
    _press(dash_duo, Keys.HOME)
    _wait_step(dash_duo, 1)
    # ? lists every key and every step
    _press(dash_duo, "?")
    until(lambda: len(dash_duo.find_elements(".lecture-modal.show .lecture-steps li")) == n,
          TIMEOUT)
    until(lambda: "PageDown" in dash_duo.find_element(".lecture-modal.show").text, TIMEOUT)
    _press(dash_duo, Keys.ESCAPE)
    until(lambda: not dash_duo.find_elements(".lecture-modal.show"), TIMEOUT)
    # b blanks the screen; any key brings it back without moving the tour
    _press(dash_duo, "b")
    until(lambda: _js(dash_duo, f"return !document.getElementById('{ids.BLANK}').hidden;"),
          TIMEOUT)
    _press(dash_duo, Keys.PAGE_DOWN)
    until(lambda: _js(dash_duo, f"return document.getElementById('{ids.BLANK}').hidden;"),
          TIMEOUT)
    assert _step_shown(dash_duo) == 1
    # f: full screen and back
    _press(dash_duo, "f")
    until(lambda: _js(dash_duo, "return !!document.fullscreenElement;"), TIMEOUT)
    _press(dash_duo, "f")
    until(lambda: _js(dash_duo, "return !document.fullscreenElement;"), TIMEOUT)
    # t: the dark theme, in the page and in the figure
    _press(dash_duo, "t")
    until(lambda: "lecture-dark" in dash_duo.find_element(f"#{ids.ROOT}").get_attribute(
        "class"), TIMEOUT)
    until(lambda: _js(dash_duo, "const g = document.querySelector('#lecture-graph "
                                ".js-plotly-plot'); return g.layout.paper_bgcolor;")
          == "#111111", TIMEOUT)
    until(lambda: "theme=dark" in _js(dash_duo, "return location.search;"), TIMEOUT)
    assert dash_duo.get_logs() == []


def _open_step_2(dash_duo) -> None:
    """A fresh server, the viewport 1280x720, the tour at step 2 (mu animated from 0)."""
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=2", timeout=TIMEOUT)
    _wait_step(dash_duo, 2)


def _mu(dash_duo) -> float:
    """The lecture's mu slider as its handle reports it."""
    return float(dash_duo.find_element(f"#{ids.MU} [role=slider]").get_attribute(
        "aria-valuenow"))


def test_play_animates_and_r_resets(dash_duo):
    """Step 2's play button sweeps mu from 0 to the BN mean, redrawing as it goes; r puts
    the step's own mu back."""
    _open_step_2(dash_duo)

    def mu() -> float:
        return _mu(dash_duo)

    def lines() -> list[str]:
        return _js(dash_duo, "const g = document.querySelector('#lecture-graph "
                             ".js-plotly-plot'); return g.data.filter(t => t.mode === 'lines' "
                             "&& t.meta !== 'ghost').map(t => JSON.stringify(t.x));")

    def ghosts() -> list:
        return _js(dash_duo, "const g = document.querySelector('#lecture-graph "
                             ".js-plotly-plot'); return g.data.filter(t => t.meta === 'ghost')"
                             ".map(t => JSON.stringify(t.x));")

    assert mu() == 0.0
    before = lines()
    assert ghosts() == []
    _press(dash_duo, "p")
    until(lambda: 0.3 < mu() < 1.0, TIMEOUT, msg="the animation did not start")
    until(lambda: mu() == 1.0, TIMEOUT, msg="the animation did not reach the BN mean")
    until(lambda: "mu_t=1" in _js(dash_duo, "return location.search;"), TIMEOUT)
    assert lines() != before  # the lines moved with mu
    # the ghost under them is the partition from before mu moved (mu = 0)
    assert ghosts() and all(g in before for g in ghosts())
    _press(dash_duo, "r")
    until(lambda: mu() == 0.0, TIMEOUT, msg="r did not reset the step")
    until(lambda: lines() == before, TIMEOUT)
    assert ghosts() == []  # a new state of the step: no ghost
    assert dash_duo.get_logs() == []


def test_url_and_qr_code_open_the_same_state(dash_duo):
    """A moved slider goes into the URL; the QR code (made on the server) reads back as that
    URL; opening it shows the same step and slider."""
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    fig3 = step_by_key("fig3").number
    dash_duo.wait_for_page(dash_duo.server_url + f"/lecture?step={fig3}", timeout=TIMEOUT)
    _wait_step(dash_duo, fig3)
    thumb = dash_duo.find_element(f"#{ids.DEPTH} [role=slider]")
    assert thumb.get_attribute("aria-valuenow") == "6"
    track = dash_duo.find_element(f"#{ids.DEPTH} .dash-slider-track")
    # drag the depth slider's thumb past the left end of its track: depth 1
    ActionChains(dash_duo.driver).click_and_hold(thumb).move_by_offset(
        -track.size["width"], 0).release().perform()
    until(lambda: "depth=1" in _js(dash_duo, "return location.search;"), TIMEOUT)
    url = _js(dash_duo, "return location.href;")
    _press(dash_duo, "q")
    until(lambda: (dash_duo.find_element(f"#{ids.QR}").get_attribute("src") or "")
          .startswith("data:image/png;base64,"), TIMEOUT)
    src = dash_duo.find_element(f"#{ids.QR}").get_attribute("src")
    import base64

    decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(base64.b64decode(
        src.split(",", 1)[1]))))
    assert [d.text for d in decoded] == [url]
    dash_duo.wait_for_page(url, timeout=TIMEOUT)
    _wait_step(dash_duo, fig3)
    assert dash_duo.find_element(f"#{ids.DEPTH} [role=slider]").get_attribute(
        "aria-valuenow") == "1"
    assert dash_duo.get_logs() == []


def test_lecture_link_opens_the_explorers_state(dash_duo):
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/?depth=3&width=5&mu_t=0.5",
                           timeout=TIMEOUT)
    # the page is loaded before Dash has rendered its layout (the navbar with the link):
    # wait for the link itself (a full run found it missing once, under load)
    dash_duo.wait_for_element("#lecture-open", timeout=TIMEOUT).click()
    until(lambda: _js(dash_duo, "return location.pathname;") == "/lecture", TIMEOUT)
    until(lambda: dash_duo.find_element(f"#{ids.COUNTER}").text == "explorer", TIMEOUT)
    for slider, value in ((ids.DEPTH, "3"), (ids.MU, "0.5")):
        until(lambda s=slider, v=value: dash_duo.find_element(f"#{s} [role=slider]").get_attribute(
            "aria-valuenow") == v, TIMEOUT)
    assert "width=5" in _js(dash_duo, "return location.search;")
    # the navbar is not on the lecture view; its own link goes back
    assert not any(e.is_displayed() for e in dash_duo.find_elements(".navbar"))
    _press(dash_duo, Keys.PAGE_DOWN)
    _wait_step(dash_duo, 1)
    assert dash_duo.get_logs() == []


def test_click_inspects_and_s_splits(dash_duo):
    """A click on the partition shows its region code, the nearest folded hyperplane and eq.
    11 with the numbers; s shows the same weights without and with BN side by side."""
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=5", timeout=TIMEOUT)
    _wait_step(dash_duo, 5)
    drag = dash_duo.find_element("#lecture-graph .nsewdrag")
    ActionChains(dash_duo.driver).move_to_element(drag).move_by_offset(30, -20).pause(
        0.2).click().perform()
    until(lambda: "eq. 11" in dash_duo.find_element(f"#{ids.INFO}").text, TIMEOUT)
    text = dash_duo.find_element(f"#{ids.INFO}").text
    assert "region code" in text and "nearest folded hyperplane: layer" in text
    codes = [c.text for c in dash_duo.find_elements(f"#{ids.INFO} code")]
    assert len(codes) == 2 and all(set(c) <= {"0", "1"} and len(c) == 8 for c in codes)
    # the plot marks the point and the nearest folded hyperplane the dock names
    marks_js = ("const g = document.querySelector('#lecture-graph .js-plotly-plot'); "
                "return g.data.filter(t => t.meta === 'mark').map(t => [t.name, t.xaxis]);")
    marks = until(lambda: _js(dash_duo, marks_js), TIMEOUT)
    name = marks[0][0]  # "F2,3 (nearest)"
    j, k = name[1:].split(" ")[0].split(",")
    assert f"nearest folded hyperplane: layer {j}, unit {k}" in text
    assert marks[1] == ["clicked point", "x"]
    layout = _layout_report(dash_duo)
    assert layout["scroll"][1] <= layout["scroll"][3] and all(layout["sliders"])
    _press(dash_duo, "s")
    until(lambda: "split=1" in _js(dash_duo, "return location.search;"), TIMEOUT)
    until(lambda: _js(dash_duo, "const g = document.querySelector('#lecture-graph "
                                ".js-plotly-plot'); return !!g._fullLayout.xaxis2;"), TIMEOUT)
    assert dash_duo.find_element(f"#{ids.INFO}").text == ""  # it described the old picture
    texts = _js(dash_duo, OVERLAP_JS, ids.GRAPH)
    assert texts["overlaps"] == [] and texts["small"] == []
    # the split stays on through the tour's input-space steps (7 is a split of its own, 8
    # the training step's two panels;
    # Figure 9's colours, step 6, have none)
    _press(dash_duo, Keys.PAGE_DOWN)
    _wait_step(dash_duo, 6)
    assert dash_duo.find_element(f"#{ids.SPLIT_BUTTON}").get_attribute("disabled") == "true"
    _press(dash_duo, Keys.PAGE_DOWN)
    _wait_step(dash_duo, 7)
    _press(dash_duo, Keys.PAGE_DOWN)
    _wait_step(dash_duo, 8)  # the training step: two panels of its own, no split
    assert step_by_key("train").number == 8
    assert dash_duo.find_element(f"#{ids.SPLIT_BUTTON}").get_attribute("disabled") == "true"
    _press(dash_duo, Keys.PAGE_DOWN)
    _wait_step(dash_duo, 9)  # a mini-batch: an input-space step again, split
    assert dash_duo.find_element(f"#{ids.SPLIT_BUTTON}").get_attribute("disabled") is None
    assert "split=1" in _js(dash_duo, "return location.search;")
    _press(dash_duo, Keys.PAGE_DOWN)
    _wait_step(dash_duo, 10)
    assert dash_duo.find_element(f"#{ids.SPLIT_BUTTON}").get_attribute("disabled") == "true"
    assert dash_duo.get_logs() == []


def test_p_pauses_and_plays_on_and_brackets_set_the_speed(dash_duo):
    """issue 31: `p` in the middle of a sweep pauses it (mu stays), `p` again plays on from
    there (not from 0); `]` and `[` set the speed, which the play button shows."""
    _open_step_2(dash_duo)

    def mu() -> float:
        return _mu(dash_duo)

    _press(dash_duo, "[")
    _press(dash_duo, "[")  # x1/4: a 10 s sweep, time enough to pause it
    assert dash_duo.find_element(f"#{ids.PLAY}").text == "play ×0.25"
    _press(dash_duo, "p")
    until(lambda: 0.1 < mu() < 0.9, TIMEOUT, msg="the animation did not start")
    _press(dash_duo, "p")
    paused = mu()
    time.sleep(1.0)
    assert mu() == paused and paused < 1.0, "p did not pause the sweep"
    _press(dash_duo, "]")
    _press(dash_duo, "]")
    _press(dash_duo, "]")
    _press(dash_duo, "]")  # x4
    assert dash_duo.find_element(f"#{ids.PLAY}").text == "play ×4"
    _press(dash_duo, "p")
    until(lambda: mu() != paused, TIMEOUT, msg="p did not play on")
    assert mu() > paused  # on from where it paused, not from 0
    until(lambda: mu() == 1.0, TIMEOUT, msg="the sweep did not reach its end")
    assert dash_duo.get_logs() == []


def test_plus_and_minus_set_the_type_size(dash_duo):
    """issue 31: + makes the dock's type and the figure's fonts larger, for a big hall; -
    brings them back, never under the projector's 18 px; a new step keeps the size."""
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=2", timeout=TIMEOUT)
    _wait_step(dash_duo, 2)
    font = ("const g = document.querySelector('#lecture-graph .js-plotly-plot'); "
            "return [g.layout.font.size, parseFloat(getComputedStyle(document.getElementById("
            f"'{ids.CAPTION}')).fontSize)];")
    assert _js(dash_duo, font) == [18, 18]
    _press(dash_duo, "+")
    _press(dash_duo, "+")
    until(lambda: _js(dash_duo, font) == [round(18 * 1.3), pytest.approx(18 * 1.3, abs=0.1)],
          TIMEOUT)
    _press(dash_duo, Keys.PAGE_DOWN)
    _wait_step(dash_duo, 3)
    until(lambda: _js(dash_duo, font)[0] == round(18 * 1.3), TIMEOUT)
    for _ in range(4):
        _press(dash_duo, "-")
    until(lambda: _js(dash_duo, font) == [18, 18], TIMEOUT)
    assert dash_duo.get_logs() == []


def test_the_training_step_plays_its_frames_in_the_browser(dash_duo):
    """Issue 19's tour step: `p` plays the recorded frames (plotly.js, no request a frame)
    from step 0 to the run's last step, both panels moving; `p` again pauses, and plays on
    from there; once all were shown it plays them from the start; a new step stops it."""
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    number = step_by_key("train").number
    dash_duo.wait_for_page(dash_duo.server_url + f"/lecture?step={number}", timeout=TIMEOUT)
    _wait_step(dash_duo, number)
    graph = "document.querySelector('#lecture-graph .js-plotly-plot')"

    def shown() -> int:  # the step under the legend: "step N of 300"
        return int(_js(dash_duo, f"return {graph}.layout.annotations.slice(-1)[0].text;")
                   .split()[1])

    assert shown() == 0
    first = _js(dash_duo, f"return {graph}.layout.annotations[0].text;")
    requests = _js(dash_duo, "return performance.getEntriesByType('resource').length;")
    _press(dash_duo, "p")
    until(lambda: shown() >= 50, TIMEOUT)
    _press(dash_duo, "p")  # pause
    time.sleep(0.5)
    paused = shown()
    time.sleep(0.8)
    assert shown() == paused < 300
    _press(dash_duo, "p")  # on from there
    until(lambda: shown() == 300, TIMEOUT)
    assert _js(dash_duo, f"return {graph}.layout.annotations[0].text;") != first
    new = _js(dash_duo, "return performance.getEntriesByType('resource').slice(arguments[0])"
                        ".filter(e => e.name.includes('_dash-update-component')).length;",
              requests)
    assert new == 0  # no request a frame
    _press(dash_duo, "p")  # all shown: from the start again
    until(lambda: 0 < shown() < 300, TIMEOUT)
    _press(dash_duo, Keys.PAGE_DOWN)  # a new step stops the frames
    _wait_step(dash_duo, number + 1)
    time.sleep(1.0)
    texts = _js(dash_duo, f"return ({graph}.layout.annotations || []).map(a => a.text);")
    assert not any(str(t).startswith("step ") for t in texts)
    assert dash_duo.find_element(f"#{ids.TITLE}").text == TOUR[number].title
    assert dash_duo.get_logs() == []
