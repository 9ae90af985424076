"""The hall answers on the projector (issue 46, item 6; assets/hall.js), in headless Chromium
at 1280x720: on Corollary 2's step, `a` opens its question (the Ask note, the QR code of the
phones' page, and the loopback warning beside it: the test server is on loopback); taps
posted through the API show as a density trace over the lecture graph; `p` draws the answer
over them and plays the step (μ sweeps to BN's), the taps staying drawn through the redraws;
`a` again closes the question, its taps deleted, and so does the next step."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import numpy as np
import pytest
from dash.testing.wait import until
from lecture_windows import counter, js, slider_value
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from bnviz.lecture.hall import HallStore, answer_point, hall_id
from bnviz.lecture.notes import NOTES
from bnviz.lecture.tour import step_by_key
from bnviz.server import hall as hall_server
from bnviz.server.hall import API
from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids

pytestmark = pytest.mark.browser

#: Seconds to wait for a page, a step or a poll on a loaded 2-core machine (none asserted).
TIMEOUT = 40
COR2 = step_by_key("cor2").number
#: The traces hall.js draws over the graph: name -> [x, y] (null when absent).
TRACES = f"""
const gd = document.querySelector('#{ids.GRAPH} .js-plotly-plot');
const out = {{}};
for (const t of (gd && gd.data) || []) {{
    if (t.name === 'hall taps' || t.name === 'hall answer') {{
        out[t.name] = [Array.from(t.x), Array.from(t.y), t.type];
    }}
}}
return out;"""


def keys(driver, *pressed) -> None:
    js(driver, "document.activeElement && document.activeElement.blur();")
    ActionChains(driver).send_keys(*pressed).perform()


def open_projector(driver, url: str) -> None:
    """Open the projector at Corollary 2's step and wait for its graph's axes to be drawn
    (the ranges the hall's question is asked on)."""
    driver.get(url)
    until(lambda: counter(driver).startswith(f"{COR2} /"), TIMEOUT)
    until(lambda: js(driver, f"const gd = document.querySelector('#{ids.GRAPH} "
                             ".js-plotly-plot'); return !!(gd && gd.layout && gd.layout.xaxis && "
                             "gd.layout.xaxis.range);"), TIMEOUT)


def post_taps(base: str, hall: str, points: list[tuple[float, float]]) -> list[int]:
    """Each point from a phone of its own (the phone page's cookie, then the tap)."""
    host, port = urlsplit(base).hostname, urlsplit(base).port
    statuses = []
    for x, y in points:
        conn = http.client.HTTPConnection(host, port, timeout=30)
        conn.request("GET", f"/hall/{hall}")
        answer = conn.getresponse()
        answer.read()
        cookie = answer.getheader("Set-Cookie").split(";")[0]
        conn.request("POST", f"{API}/phone/{hall}/taps", json.dumps({"x": x, "y": y}),
                     {"Content-Type": "application/json", "Cookie": cookie})
        response = conn.getresponse()
        response.read()
        statuses.append(response.status)
        conn.close()
    return statuses


def test_a_asks_the_hall_the_taps_show_as_a_density_and_p_reveals_the_answer(
        dash_duo, tmp_path, monkeypatch):
    monkeypatch.setattr(hall_server, "STORE", HallStore(tmp_path / "hall.sqlite3"))
    dash_duo.start_server(app)
    driver = dash_duo.driver
    driver.set_window_size(1280, 720)
    open_projector(driver, dash_duo.server_url + f"/lecture?step={COR2}")
    assert js(driver, "return document.getElementById('hall-overlay');") is None

    keys(driver, "a")
    until(lambda: js(driver, "const i = document.getElementById('hall-qr'); "
                             "return !!(i && i.src.startsWith('data:image/png'));"), TIMEOUT,
          msg="`a` did not show the question's QR code")
    overlay = js(driver, """
        const box = document.getElementById('hall-overlay').getBoundingClientRect();
        const w = document.getElementById('hall-warning');
        return {ask: document.getElementById('hall-ask').textContent,
                link: document.getElementById('hall-link').textContent,
                warning: w.hidden ? null : w.textContent,
                inside: box.left >= 0 && box.top >= 0 && box.right <= innerWidth &&
                        box.bottom <= innerHeight};""")
    assert overlay["ask"] == NOTES["cor2"].ask
    assert urlsplit(dash_duo.server_url).hostname in overlay["warning"]
    assert "phones cannot" in overlay["warning"]
    assert overlay["inside"], "the question's overlay runs off the 1280x720 screen"
    hall = overlay["link"].rsplit("/", 1)[1]  # the phones' id of the session (the store's)
    session = js(driver, "return sessionStorage.getItem('bnviz-hall-session');")
    assert overlay["link"] == f"{dash_duo.server_url}/hall/{hall_id(session)}"

    points = [(1.0 + 0.05 * i, 1.0 - 0.04 * i) for i in range(9)] + [(-0.5, 0.2)]
    assert post_taps(dash_duo.server_url, hall, points) == [200] * 10
    until(lambda: len(js(driver, TRACES).get("hall taps", [[]])[0]) == 10, TIMEOUT,
          msg="the projector's graph did not show the ten taps")
    drawn = js(driver, TRACES)["hall taps"]
    assert drawn[2] == "histogram2d"
    assert np.allclose(sorted(zip(drawn[0], drawn[1], strict=True)), sorted(points))
    assert until(lambda: "10 answers" in js(
        driver, "return document.getElementById('hall-count').textContent;"), TIMEOUT)

    mu_before = slider_value(driver, ids.MU)
    keys(driver, "p")
    until(lambda: "hall answer" in js(driver, TRACES), TIMEOUT, msg="`p` drew no answer")
    assert js(driver, TRACES)["hall answer"][:2] == [[answer_point("cor2")[0]],
                                                     [answer_point("cor2")[1]]]
    # `p` also played the step: μ sweeps from 0 towards BN's, and the taps stay drawn
    until(lambda: (slider_value(driver, ids.MU) or 0) > (mu_before or 0), TIMEOUT,
          msg="`p` did not play the step over the taps")
    until(lambda: slider_value(driver, ids.MU) == 1.0, TIMEOUT)
    until(lambda: {"hall taps", "hall answer"} <= set(js(driver, TRACES)), TIMEOUT,
          msg="a redraw of the step dropped the hall's traces")

    keys(driver, "a")
    until(lambda: js(driver, TRACES) == {}, TIMEOUT, msg="`a` again left the taps drawn")
    assert js(driver, "return document.getElementById('hall-overlay');") is None
    until(lambda: hall_server.STORE.state(hall) == {"question": None, "count": 0}, TIMEOUT)

    # the question is its step's: the next step closes it
    keys(driver, "a")
    until(lambda: js(driver, "return !!document.getElementById('hall-overlay');"), TIMEOUT)
    until(lambda: hall_server.STORE.state(hall)["question"] is not None, TIMEOUT)
    keys(driver, Keys.PAGE_DOWN)
    until(lambda: counter(driver).startswith(f"{COR2 + 1} /"), TIMEOUT)
    until(lambda: js(driver, "return document.getElementById('hall-overlay');") is None,
          TIMEOUT, msg="another step left the question open")
    until(lambda: hall_server.STORE.state(hall)["question"] is None, TIMEOUT)


def test_a_phone_taps_its_answer_on_the_steps_axes_and_may_change_it(dash_duo, tmp_path,
                                                                     monkeypatch):
    """The phones' page (/hall/<session>, assets/hall-phone.js) at a phone's 390x844: it
    shows the open question's axes; a tap there is sent in the figure's data coordinates, a
    later one replaces it."""
    store = HallStore(tmp_path / "hall.sqlite3", tap_gap=0.0)
    monkeypatch.setattr(hall_server, "STORE", store)
    session = hall_id("hallphonepage00000001")  # the phones' id of a session
    store.open(session, COR2, (-2.0, 2.0, -1.0, 3.0))
    dash_duo.start_server(app)
    driver = dash_duo.driver
    driver.set_window_size(390, 844)
    driver.get(dash_duo.server_url + f"/hall/{session}")
    until(lambda: js(driver, "return document.getElementById('hall-phone-title')"
                             ".textContent;") == NOTES["cor2"].ask, TIMEOUT)
    assert js(driver, "return document.querySelectorAll('#hall-phone-axes line').length;") > 4

    def tap_at(fx: float, fy: float) -> None:
        """A tap at a fraction of the plot's frame (0, 0: its lower left corner)."""
        box = js(driver, "const r = document.querySelector('#hall-phone-axes rect')"
                         ".getBoundingClientRect(); return [r.left, r.top, r.width, r.height];")
        js(driver, """
            const [x, y] = arguments;
            const e = new PointerEvent('pointerdown', {clientX: x, clientY: y, bubbles: true});
            document.getElementById('hall-phone-axes').dispatchEvent(e);""",
           box[0] + fx * box[2], box[1] + (1 - fy) * box[3])

    tap_at(0.75, 0.25)  # x = -2 + 0.75 * 4 = 1, y = -1 + 0.25 * 4 = 0
    until(lambda: store.state(session)["count"] == 1, TIMEOUT)
    tapped = store.state(session)
    assert (tapped["x"][0], tapped["y"][0]) == pytest.approx((1.0, 0.0), abs=0.05)
    until(lambda: "Your answer" in js(
        driver, "return document.getElementById('hall-phone-status').textContent;"), TIMEOUT)
    tap_at(0.25, 0.5)  # changed: x = -1, y = 1
    until(lambda: store.state(session)["x"][0] == pytest.approx(-1.0, abs=0.05), TIMEOUT)
    assert store.state(session)["count"] == 1
    assert store.state(session)["y"][0] == pytest.approx(1.0, abs=0.05)


def _asked_line(driver) -> bool:
    return js(driver, f"const l = document.getElementById('{ids.ASKED}'); "
                      "return !!l && !l.hidden;")


def test_the_presenter_asks_reveals_and_closes_the_hall_s_question_on_the_projector(
        dash_duo, tmp_path, monkeypatch):
    """The lecturer at the laptop: `a` in the presenter opens the question on the projector
    (which alone knows its graph's axes), `p` there reveals its answer, `a` again closes it;
    the projector's own `a` shows in the presenter's line. One browser, two windows."""
    monkeypatch.setattr(hall_server, "STORE", HallStore(tmp_path / "hall.sqlite3"))
    dash_duo.start_server(app)
    driver = dash_duo.driver
    driver.set_window_size(1280, 720)
    driver.get(dash_duo.server_url + f"/lecture/presenter?step={COR2}")
    until(lambda: counter(driver).startswith(f"{COR2} /"), TIMEOUT)
    until(lambda: "session=" in driver.current_url, TIMEOUT)
    presenter = driver.current_window_handle
    session = driver.current_url.split("session=")[1].split("&")[0]
    driver.switch_to.new_window("window")
    driver.set_window_size(1280, 720)
    open_projector(driver, dash_duo.server_url + f"/lecture?step={COR2}&session={session}")
    projector = driver.current_window_handle
    hall = hall_id(session)
    assert hall_server.STORE.state(hall)["question"] is None

    driver.switch_to.window(presenter)
    assert not _asked_line(driver)
    keys(driver, "a")
    assert _asked_line(driver)
    driver.switch_to.window(projector)
    until(lambda: js(driver, "return !!document.getElementById('hall-overlay');"), TIMEOUT,
          msg="the presenter's `a` did not open the question on the projector")
    until(lambda: hall_server.STORE.state(hall)["question"] is not None, TIMEOUT)
    assert hall_server.STORE.state(hall)["question"]["step"] == COR2
    assert post_taps(dash_duo.server_url, hall, [(1.0, 1.0), (0.5, -0.2)]) == [200, 200]
    until(lambda: len(js(driver, TRACES).get("hall taps", [[]])[0]) == 2, TIMEOUT)

    driver.switch_to.window(presenter)
    keys(driver, "p")
    driver.switch_to.window(projector)
    until(lambda: "hall answer" in js(driver, TRACES), TIMEOUT,
          msg="the presenter's `p` did not reveal the answer on the projector")
    assert hall_server.STORE.state(hall)["question"]["revealed"]

    driver.switch_to.window(presenter)
    keys(driver, "a")
    assert not _asked_line(driver)
    driver.switch_to.window(projector)
    until(lambda: js(driver, "return document.getElementById('hall-overlay');") is None,
          TIMEOUT, msg="the presenter's second `a` left the question open on the projector")
    until(lambda: hall_server.STORE.state(hall) == {"question": None, "count": 0}, TIMEOUT)

    # the projector's own `a`, and the next step from the presenter: its line follows both
    keys(driver, "a")
    until(lambda: hall_server.STORE.state(hall)["question"] is not None, TIMEOUT)
    driver.switch_to.window(presenter)
    until(lambda: _asked_line(driver), TIMEOUT,
          msg="the presenter's line did not show the question the projector opened")
    keys(driver, Keys.PAGE_DOWN)
    until(lambda: not _asked_line(driver), TIMEOUT)
    until(lambda: hall_server.STORE.state(hall)["question"] is None, TIMEOUT,
          msg="the presenter's next step left the projector's question open")
