"""Type that grows and reflows (issue 46, item 3): at the lecture's type sizes x1 and x1.75
(the + key's largest, for the back row), on every step of the tour, at 1280x720 and
1920x1080, no text of the page lies off the screen, is cut (an ellipsis, a line clamp, a box
that hides its overflow) or prints over another text (tests/lecture/overlap.js, the page's
texts: the dock's, the header's, the sliders' marks and the figure's SVG texts). Before, at
x1.75, steps 2, 3, 6 and 13 had 13-25 texts off screen, the title was cut and the idle
sliders' note printed over the mu slider's label.

One server and one headless Chromium for the module; the step is set in the page
(``bnvizLecture.go``) and the type size by its keys, never by reloading. The caption folds to
one line with ``c`` and shows in full again with ``c``. BNVIZ_SHOTS=folder keeps
screenshots."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import pytest
from dash.testing.application_runners import ThreadedRunner
from dash.testing.composite import DashComposite
from dash.testing.errors import TestingTimeoutError
from dash.testing.wait import until
from lecture_windows import counter, js, viewport
from selenium.webdriver.common.action_chains import ActionChains

from bnviz.lecture.tour import TOUR
from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids
from bnviz.web.layouts.lecture import TYPE_PX, TYPE_SCALES

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("lecture_home")]

TIMEOUT = 120  # a fresh home computes the papers' networks; a busy machine is slow
#: Seconds before a step the server refused as busy is asked again (it says 10 to 20).
RETRY_SECONDS = 15
OVERLAP_JS = (Path(__file__).parent / "overlap.js").read_text()
SIZES = [(1280, 720), (1920, 1080)]
#: The figure as drawn: the page's type size factor, the state it shows (assets/
#: lecture-figure.js puts both in the layout's meta) and the type size its figure was drawn
#: at (assets/lecture_type.js: smaller when the figure's texts did not fit at the page's).
DRAWN_JS = f"""
const g = document.querySelector('#{ids.GRAPH} .js-plotly-plot');
if (!g || !g.layout || !g.data || !g.data.length) {{ return null; }}
const meta = g.layout.meta || {{}};
const scale = meta.scale === undefined ? 1 : meta.scale;
return [scale, meta.state || '', meta.fit === undefined ? scale : meta.fit];"""


@pytest.fixture(scope="module")
def lecture_page(request, lecture_home, tmp_path_factory):
    """The app on a loopback server and one headless Chromium at /lecture, for the module;
    both stopped at the end."""
    with ThreadedRunner() as server, DashComposite(
            server=server, browser="chrome", headless=True,
            options=request.config.hook.pytest_setup_options(),
            download_path=str(tmp_path_factory.mktemp("download"))) as duo:
        duo.start_server(app)
        duo.wait_for_page(duo.server_url + "/lecture?step=1", timeout=TIMEOUT)
        until(lambda: counter(duo.driver).startswith("1 /"), TIMEOUT)
        yield duo


def _keys(driver, *keys: str) -> None:
    """Keys to the page, not to a slider that has the focus."""
    js(driver, "document.activeElement && document.activeElement.blur();")
    ActionChains(driver).send_keys(*keys).perform()


def _type_scale(driver) -> float:
    return js(driver, f"return parseFloat(document.getElementById('{ids.ROOT}').style"
                      ".fontSize || getComputedStyle(document.getElementById("
                      f"'{ids.ROOT}')).fontSize) / {TYPE_PX};")


def _set_type_scale(driver, scale: float) -> None:
    """The + and - keys, from the smallest size up to ``scale``."""
    _keys(driver, *"-" * len(TYPE_SCALES))
    _keys(driver, *"+" * TYPE_SCALES.index(scale))
    until(lambda: _type_scale(driver) == pytest.approx(scale), TIMEOUT)


def _report(driver) -> dict | None:
    """overlap.js on the figure and the page, once the figure is drawn."""
    if js(driver, DRAWN_JS) is None:
        return None
    return js(driver, OVERLAP_JS, ids.GRAPH, ids.ROOT)


def _message(driver) -> str:
    return js(driver, f"return document.getElementById('{ids.MESSAGE}').textContent;")


def _settled(driver, step: int, scale: float) -> dict:
    """The page's report once ``step`` is drawn at ``scale`` from the server's answer and the
    page stands still (three equal reports in a row, half a second apart). A server that
    refused the step as busy (its heavy views' admission: the dock says "try again") is
    asked again, as a lecturer would, with r."""
    seen: list = []
    asked = [time.monotonic()]

    def still() -> bool:
        drawn = js(driver, DRAWN_JS)
        # the URL is written with the server's answer (not the prepared next step's)
        url = js(driver, "return location.search;")
        if f"step={step}&" not in url + "&" and "try again" in _message(driver) and \
                time.monotonic() - asked[-1] > RETRY_SECONDS:
            _keys(driver, "r")
            asked.append(time.monotonic())
        if not (counter(driver).startswith(f"{step} /") and f"step={step}&" in url + "&"
                and drawn and drawn[0] == pytest.approx(scale)
                and f"step={step}&" in drawn[1] + "&"):
            seen.clear()
            return False
        seen.append(json.dumps(_report(driver), sort_keys=True))
        return len(seen) > 2 and seen[-1] == seen[-2] == seen[-3]

    try:
        until(still, TIMEOUT, poll=0.5)
    except TestingTimeoutError as exc:
        raise AssertionError(
            f"step {step} at x{scale} did not settle: counter {counter(driver)!r}, drawn "
            f"{js(driver, DRAWN_JS)}, URL {js(driver, 'return location.search;')!r}, "
            f"message {_message(driver)!r}, the last reports {seen[-2:]}") from exc
    return json.loads(seen[-1])


def _show(driver, step: int) -> None:
    """``step``, as a key would; from the step before, once that step has its next step
    prepared (as in a lecture: the key then draws it at once, and its server answer does not
    wait behind the preparation) or TIMEOUT seconds have gone by."""
    if counter(driver).startswith(f"{step} /"):
        return
    if counter(driver).startswith(f"{step - 1} /"):
        with contextlib.suppress(TestingTimeoutError):
            until(lambda: js(driver, "return window.bnvizLecture.prepared();") == step,
                  TIMEOUT, poll=0.5)
    js(driver, f"window.bnvizLecture.go({step});")


def _problems(report: dict) -> dict:
    page = report["page"]
    return {k: v for k, v in (("off screen", page["outside"]), ("cut", page["clipped"]),
                              ("overprinted", page["overlaps"]),
                              ("out of the figure", report["outside"])) if v}


@pytest.mark.parametrize("scale", [TYPE_SCALES[-1], 1], ids=["x1.75", "x1"])
@pytest.mark.parametrize("size", SIZES, ids=["1280x720", "1920x1080"])
def test_every_step_keeps_its_text_on_screen(lecture_page, size, scale):
    """Every step at ``scale``: no text off screen, cut or overprinted; the four sliders and
    the whole caption on screen. Every step's findings are gathered before the assert, so
    that a failure lists them all."""
    driver = lecture_page.driver
    viewport(driver, *size)
    _set_type_scale(driver, scale)
    shots = os.environ.get("BNVIZ_SHOTS")
    found, smaller = {}, {}
    for step in range(1, len(TOUR) + 1):
        _show(driver, step)
        report = _settled(driver, step, scale)
        problems = _problems(report)
        if problems:
            found[step] = problems
        fit = js(driver, DRAWN_JS)[2]
        if fit != scale:
            smaller[step] = fit
        if shots:
            driver.save_screenshot(os.path.join(
                shots, f"type-{size[0]}x{size[1]}-x{scale:g}-step{step}.png"))
    print(f"\n{size[0]}x{size[1]} x{scale:g}: " + ("nothing off screen, cut or overprinted"
          if not found else json.dumps(found, ensure_ascii=False)[:3000])
          + f"; figures drawn at a smaller type (step: size): {smaller or 'none'}")
    assert found == {}, f"{len(found)} steps break: {sorted(found)}"


#: The caption's height, the number of its lines (its line boxes), its text and the graph's
#: height.
CAPTION_JS = f"""
const c = document.getElementById('{ids.CAPTION}');
const range = document.createRange();
range.selectNodeContents(c);
const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
return {{lines: tops.size, height: c.getBoundingClientRect().height, text: c.textContent,
         graph: document.getElementById('{ids.GRAPH}').getBoundingClientRect().height}};"""


def test_c_folds_the_caption_to_one_line_and_back(lecture_page):
    """At x1.75 on a wide step (the dock under the figure), c folds the caption to one line
    and the figure takes the lines it gave back; c again shows it in full; the tour does not
    move, and the keys panel (?) lists c."""
    driver = lecture_page.driver
    viewport(driver, 1280, 720)
    _set_type_scale(driver, TYPE_SCALES[-1])
    step = next(s.number for s in TOUR if s.scene == "unit")  # two panels: the dock under
    _show(driver, step)
    _settled(driver, step, TYPE_SCALES[-1])
    full = js(driver, CAPTION_JS)
    assert full["lines"] > 1 and full["text"] == TOUR[step - 1].caption
    _keys(driver, "c")
    until(lambda: js(driver, CAPTION_JS)["lines"] == 1, TIMEOUT)
    until(lambda: js(driver, CAPTION_JS)["graph"] > full["graph"] + 30, TIMEOUT,
          msg="the figure did not take the caption's lines")
    assert js(driver, CAPTION_JS)["text"] == full["text"]  # folded, not rewritten
    assert counter(driver).startswith(f"{step} /")
    _keys(driver, "c")
    until(lambda: js(driver, CAPTION_JS)["lines"] == full["lines"], TIMEOUT)
    until(lambda: _report(driver)["page"]["clipped"] == [], TIMEOUT)
    _keys(driver, "?")
    until(lambda: "caption on one line" in js(
        driver, "const m = document.querySelector('.lecture-modal.show'); "
                "return m ? m.textContent : '';"), TIMEOUT)
    _keys(driver, "\ue00c")  # Escape
    until(lambda: not js(driver, "return !!document.querySelector('.modal.show');"), TIMEOUT)
