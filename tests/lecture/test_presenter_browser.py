"""The presenter view (/lecture/presenter, issue 31) with the projector in a second window of
the same browser (dash_duo, headless Chromium): a PageDown, a slider move and `t` made in the
presenter change the projector; the presenter shows the notes and the next step."""

from __future__ import annotations

import pytest
from dash.testing.wait import until
from lecture_windows import counter as _counter
from lecture_windows import js as _js
from lecture_windows import root_class as _root_class
from lecture_windows import slider_value as _slider_value
from lecture_windows import viewport
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from bnviz.lecture.notes import NOTES
from bnviz.lecture.tour import TOUR
from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids

pytestmark = pytest.mark.browser

TIMEOUT = 30


def _prompt(driver):
    """The page's open prompt, or None while there is none yet."""
    try:
        return driver.switch_to.alert
    except NoAlertPresentException:
        return None


def test_the_projector_window_follows_the_presenter(dash_duo):
    dash_duo.start_server(app)
    driver = dash_duo.driver
    driver.set_window_size(1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=1", timeout=TIMEOUT)
    until(lambda: _counter(driver).startswith("1 /"), TIMEOUT)
    projector = driver.current_window_handle
    driver.switch_to.new_window("window")
    presenter = driver.current_window_handle
    driver.get(dash_duo.server_url + "/lecture/presenter?step=1")
    until(lambda: _counter(driver).startswith("1 /"), TIMEOUT)

    # the presenter shows the step's notes, the next step and the timer
    until(lambda: NOTES[TOUR[0].key].say[:40] in dash_duo.find_element(f"#{ids.NOTES}").text,
          TIMEOUT)
    assert dash_duo.find_element(f"#{ids.NEXT_TITLE}").text == f"next: 2. {TOUR[1].title}"
    until(lambda: _js(driver, f"const g = document.querySelector('#{ids.NEXT_GRAPH} "
                              ".js-plotly-plot'); return !!(g && g.data && g.data.length);"),
          TIMEOUT)
    until(lambda: "planned" in dash_duo.find_element(f"#{ids.CLOCK}").text, 5)
    current = dash_duo.find_element(f"#{ids.STEP_LIST} li.current").text
    assert current == TOUR[0].title

    # PageDown in the presenter: the projector shows step 2
    ActionChains(driver).send_keys(Keys.PAGE_DOWN).perform()
    until(lambda: _counter(driver).startswith("2 /"), TIMEOUT)
    until(lambda: NOTES[TOUR[1].key].say[:40] in dash_duo.find_element(f"#{ids.NOTES}").text,
          TIMEOUT)
    driver.switch_to.window(projector)
    until(lambda: _counter(driver).startswith("2 /"), TIMEOUT,
          msg="the projector did not follow the presenter's PageDown")
    assert not _js(driver, f"return !!document.getElementById('{ids.PRESENTER}');")
    assert _js(driver, f"return !!document.getElementById('{ids.NOTES}');") is False
    mu_before = _slider_value(driver, ids.MU)

    # a slider moved in the presenter (keys on its handle): the projector's moves with it
    driver.switch_to.window(presenter)
    assert _slider_value(driver, ids.MU) == mu_before
    _js(driver, f"document.querySelector('#{ids.MU} [role=slider]').focus();")
    ActionChains(driver).send_keys(Keys.ARROW_RIGHT * 5).perform()
    until(lambda: _slider_value(driver, ids.MU) != mu_before, TIMEOUT)
    moved = _slider_value(driver, ids.MU)
    assert _counter(driver).startswith("2 /")  # the arrows moved the slider, not the tour
    driver.switch_to.window(projector)
    until(lambda: _slider_value(driver, ids.MU) == pytest.approx(moved), TIMEOUT,
          msg="the projector's mu slider did not follow")

    # t in the presenter: the projector's theme changes
    theme = _root_class(driver)
    driver.switch_to.window(presenter)
    dash_duo.find_element(f"#{ids.CLOCK}").click()  # the page, not a slider, has the keys
    ActionChains(driver).send_keys("t").perform()
    until(lambda: "lecture-dark" in _root_class(driver), TIMEOUT)
    driver.switch_to.window(projector)
    until(lambda: _root_class(driver) != theme and "lecture-dark" in _root_class(driver),
          TIMEOUT, msg="the projector's theme did not follow")
    assert _counter(driver).startswith("2 /")  # and it stayed on its step

    # n in the presenter names the state (step 2, mu moved, dark): the projector's list has
    # it; PageDown twice, then the snapshot's link in the presenter's list opens that state
    # in both windows
    driver.switch_to.window(presenter)
    ActionChains(driver).send_keys("n").perform()
    until(lambda: _prompt(driver), TIMEOUT, msg="n did not ask for a name")
    driver.switch_to.alert.send_keys("mu moved")
    driver.switch_to.alert.accept()
    link = dash_duo.wait_for_element(f"#{ids.PRESENTER_SNAPSHOTS} a.{ids.SNAPSHOT_LINK}",
                                     TIMEOUT)
    assert link.text == "mu moved"
    ActionChains(driver).send_keys(Keys.PAGE_DOWN, Keys.PAGE_DOWN).perform()
    until(lambda: _counter(driver).startswith("4 /"), TIMEOUT)
    driver.switch_to.window(projector)
    until(lambda: _counter(driver).startswith("4 /"), TIMEOUT)
    until(lambda: "mu+moved" in _js(driver, "return location.search;"), TIMEOUT,
          msg="the projector's link did not get the presenter's snapshot")
    driver.switch_to.window(presenter)
    dash_duo.find_element(f"#{ids.PRESENTER_SNAPSHOTS} a.{ids.SNAPSHOT_LINK}").click()
    until(lambda: _counter(driver).startswith("2 /"), TIMEOUT)
    driver.switch_to.window(projector)
    until(lambda: _counter(driver).startswith("2 /") and _slider_value(driver, ids.MU)
          == pytest.approx(moved) and "lecture-dark" in _root_class(driver), TIMEOUT,
          msg="the projector did not open the presenter's snapshot")


#: Each subplot's plot area in a graph, px²: its clip rectangle (drawn for a static plot,
#: the next step's, too).
AXES_AREA_JS = """
let area = 0;
for (const r of document.querySelectorAll(
        '#' + arguments[0] + ' .js-plotly-plot clipPath.plotclip > rect')) {
    area += (parseFloat(r.getAttribute('width')) || 0) *
            (parseFloat(r.getAttribute('height')) || 0);
}
return area;"""
#: The step list's current step: its type size, and whether all of it is in the list's box
#: and on the screen (no scrolling needed to see it).
CURRENT_STEP_JS = f"""
const li = document.querySelector('#{ids.STEP_LIST} li.current');
if (!li) {{ return null; }}
const list = li.parentElement.getBoundingClientRect(), r = li.getBoundingClientRect();
return {{font: parseFloat(getComputedStyle(li).fontSize), text: li.textContent,
         visible: r.height > 0 && r.top >= list.top - 0.5 && r.bottom <= list.bottom + 0.5 &&
                  r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 &&
                  r.right <= innerWidth + 0.5}};"""


def _settled(driver, step: int) -> tuple[float, float, dict]:
    """The current step's and the next step's axes areas and the current step in the list,
    once ``step`` is listed as current and both graphs are drawn at their final size (three
    equal readings in a row)."""
    seen: list = []
    until(lambda: seen.append((_js(driver, AXES_AREA_JS, ids.GRAPH),
                               _js(driver, AXES_AREA_JS, ids.NEXT_GRAPH),
                               _js(driver, CURRENT_STEP_JS)))
          or (len(seen) > 2 and seen[-1] == seen[-2] == seen[-3] and seen[-1][0] > 0
              and seen[-1][2] and seen[-1][2]["text"] == TOUR[step - 1].title
              and seen[-1][2]["visible"]), TIMEOUT, poll=0.5,
          msg=f"the presenter did not settle: {seen[-3:]}")
    return seen[-1]


def test_the_presenter_shows_the_step_largest(dash_duo):
    """Issue 46: at 1440x900 the step shown covers at least 25% of the screen (its axes;
    before, 6.8% on step 1) and more than the next step's preview; the step list shows the
    current step, at 16 px or more, without scrolling (before, steps 12-17 were hidden in a
    14-px list). BNVIZ_SHOTS=folder keeps screenshots (1440x900 and 1280x720)."""
    import os

    shots = os.environ.get("BNVIZ_SHOTS")
    dash_duo.start_server(app)
    driver = dash_duo.driver
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture/presenter?step=1", timeout=TIMEOUT)
    for width, height in ((1440, 900), (1280, 720)):
        viewport(driver, width, height)
        for step in (1, 14, 17):
            if _counter(driver).split(" ")[0] != str(step):
                _js(driver, f"window.bnvizLecture.go({step});")
            until(lambda s=step: _counter(driver).startswith(f"{s} /") and f"step={s}" in
                  _js(driver, "return location.search;"), TIMEOUT)
            shown, preview, current = _settled(driver, step)
            share = shown / (width * height)
            print(f"{width}x{height} step {step}: axes {share:.1%} of the screen, the next "
                  f"step's {preview / (width * height):.1%}; current {current}")
            if width == 1440:
                assert share >= 0.25, f"step {step}: the step shown covers {share:.1%}"
            assert shown > preview, f"step {step}: the next step is larger than the step shown"
            assert current["visible"] and current["font"] >= 16, current
            assert current["text"] == TOUR[step - 1].title
            if shots:
                driver.save_screenshot(os.path.join(shots, f"presenter-{width}x{height}-"
                                                           f"step{step}.png"))
