"""Browser test of the jitter page (Figure 6; dash_duo, headless Chromium).

It drives the page as a lecturer does: open /jitter from the navbar, move the batch-size slider
with the keyboard, train for a few steps and watch the progress bar, and reads plotly's state
(``gd.layout``) and the numbers back from the page.  It ends with no error in the console.
"""

from __future__ import annotations

import re

import pytest
from dash.testing.wait import until
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bnviz.web.callbacks.jitter import ids

pytestmark = pytest.mark.browser

TIMEOUT = 30  # seconds: the first figure of a fresh server includes the torch warm-up
AREA = re.compile(r"\d\.\d{4}")


def _js(dash_duo, script: str, *args):
    return dash_duo.driver.execute_script(script, *args)


def _title(dash_duo) -> str | None:
    return _js(dash_duo, f"const g = document.querySelector('#{ids.GRAPH} .js-plotly-plot'); "
                         "return g && g.layout && g.layout.title ? g.layout.title.text : null;")


def _wait_title(dash_duo, expected: str) -> str:
    return until(lambda: _title(dash_duo) == expected and _title(dash_duo), TIMEOUT,
                 msg=f"the Figure 6 title did not become {expected!r} "
                     f"(it is {_title(dash_duo)!r})")


def _area(dash_duo) -> str | None:
    found = dash_duo.find_elements("#jitter-area")
    text = found[0].text if found else ""
    return text if AREA.fullmatch(text) else None


def _progress(dash_duo) -> tuple[str | None, str]:
    """(aria-valuenow, label text) of the progress bar."""
    bar = dash_duo.find_element(f"#{ids.PROGRESS} .progress-bar, #{ids.PROGRESS}.progress-bar")
    return bar.get_attribute("aria-valuenow"), bar.text.strip()


def _type(dash_duo, css: str, text: str) -> None:
    """Replace an input's text and commit it with Enter (the inputs are debounced)."""
    el = dash_duo.find_element(css)
    el.send_keys(Keys.CONTROL, "a")
    el.send_keys(Keys.BACKSPACE)
    el.send_keys(text, Keys.ENTER)


def test_jitter_page(dash_duo, jobs_home):
    # a fresh BNVIZ_HOME: its job store, and a local worker of its own for the training job
    from bnviz.web.app import app

    dash_duo.driver.set_window_size(1400, 1000)
    dash_duo.start_server(app)
    # Bootstrap's smooth scrolling makes clicks below the fold land before the scroll ends
    _js(dash_duo, "document.documentElement.style.scrollBehavior = 'auto';")
    dash_duo.driver.find_element(By.LINK_TEXT, "Jitter (Fig. 6, 7)").click()
    until(lambda: dash_duo.driver.current_url.endswith("/jitter"), TIMEOUT,
          msg="the navbar link did not open /jitter")
    _js(dash_duo, "document.documentElement.style.scrollBehavior = 'auto';")

    # ---- the default picture: |B| = 16, K = 16, at initialisation --------------------------
    _wait_title(dash_duo, "|B| = 16, 16 mini-batches, at initialisation")
    area16 = until(lambda: _area(dash_duo), TIMEOUT, msg="no disagreement area shown")
    n_lines = _js(dash_duo, f"return document.querySelector('#{ids.GRAPH} .js-plotly-plot')"
                            ".data.filter(t => t.mode === 'lines').length")
    assert n_lines == 2  # the K realisations (one trace) and the test-time boundary
    assert dash_duo.find_element(f"#{ids.STATUS}").text == "at initialisation"
    assert not dash_duo.find_elements(f"#{ids.MESSAGE}.show")

    # ---- the batch-size slider (log2 scale) with the keyboard: 16 -> 32 --------------------
    thumb = dash_duo.find_element(f"#{ids.BATCH} [role=slider]")
    assert thumb.get_attribute("aria-valuenow") == "4"
    thumb.send_keys(Keys.ARROW_RIGHT)
    until(lambda: thumb.get_attribute("aria-valuenow") == "5", TIMEOUT,
          msg="ArrowRight did not move the batch-size slider")
    _wait_title(dash_duo, "|B| = 32, 16 mini-batches, at initialisation")
    area32 = until(lambda: _area(dash_duo) != area16 and _area(dash_duo), TIMEOUT,
                   msg="the disagreement area did not change with the batch size")
    assert float(area32) < float(area16)  # a bigger batch jitters less (fixed seeds)

    # ---- train for a few steps: progress to 100 %, then the picture after training ---------
    _type(dash_duo, f"#{ids.TRAIN_STEPS}", "150")
    until(lambda: dash_duo.find_element(f"#{ids.TRAIN_STEPS}").get_attribute("value") == "150",
          TIMEOUT)
    dash_duo.find_element(f"#{ids.TRAIN}").click()
    until(lambda: _progress(dash_duo) == ("100", "100%"), TIMEOUT,
          msg=f"the progress bar did not reach 100% (it shows {_progress(dash_duo)})")
    status = until(lambda: dash_duo.find_element(f"#{ids.STATUS}").text.startswith("trained")
                   and dash_duo.find_element(f"#{ids.STATUS}").text, TIMEOUT,
                   msg="no 'trained' status")
    assert re.fullmatch(r"trained, training accuracy \d+\.\d%", status), status
    _wait_title(dash_duo, "|B| = 32, 16 mini-batches, after training")
    until(lambda: _area(dash_duo) is not None, TIMEOUT)
    # the network is the training job's result file under BNVIZ_HOME
    cached = list((jobs_home / "results").glob("*"))
    assert len(cached) == 1 and not cached[0].name.endswith(".tmp.npz")

    # ---- back to initialisation ---------------------------------------------------------
    dash_duo.find_element(f"#{ids.UNTRAIN}").click()
    _wait_title(dash_duo, "|B| = 32, 16 mini-batches, at initialisation")
    until(lambda: _area(dash_duo) == area32, TIMEOUT,
          msg="back at initialisation, the area is not the one before training")
    assert dash_duo.get_logs() == []
