"""The debate page (/papers): its callbacks directly, and in headless Chromium what a person
sees: the claims table with its verdicts, the weight plane, and W0 moved by a click."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextvars import copy_context
from pathlib import Path

import pytest
from dash import no_update
from dash._callback_context import context_value
from dash._utils import AttributeDict
from dash.testing.wait import until
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bnviz.web.callbacks.papers import ids
from bnviz.web.callbacks.papers.content import DJ_EXAMPLE

TIMEOUT = 60  # the claims are computed at the first request (a few seconds)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cp():
    from bnviz.web import app  # noqa: F401  (registers the callbacks)
    from bnviz.web.callbacks.papers import callbacks as papers

    return papers


def _in_callback(fn, prop_id: str, *args):
    def inner():
        context_value.set(AttributeDict(triggered_inputs=[{"prop_id": prop_id, "value": None}]))
        return fn(*args)
    return copy_context().run(inner)


def _text(component) -> str:
    return json.dumps(component.to_plotly_json(), default=lambda o: o.to_plotly_json(),
                      ensure_ascii=False)


def test_weight_plane_callback(cp):
    fig, numbers, message, shown = cp.update_weight_plane(DJ_EXAMPLE, 1, 3, "biased", False)
    assert (message, shown) == ("", False)
    names = [t.get("name") for t in fig["data"]]
    assert "W* (minimum of C)" in names and "BN minima (a ray)" in names
    text = _text(numbers)
    assert "(-0.33932, 0.11311)" in text and "4.2353" in text and "fails" in text
    fig, numbers, *_ = cp.update_weight_plane(DJ_EXAMPLE, 1, 3, "unbiased", True)
    assert "(-1.55150, 0.51717)" in _text(numbers)  # learnable gamma, beta: 72/37 at W*
    assert "BN minima (line: γ learnable)" in [t.get("name") for t in fig["data"]]
    # W0 on the far side of the origin: <W0, W*> <= 0, the lemma does not apply
    assert "does not apply" in _text(cp.update_weight_plane(DJ_EXAMPLE, -1, -3, "biased",
                                                            False)[1])


@pytest.mark.parametrize("rows, w01, w02, sigma, says", [
    ([], 1, 3, "biased", "at least 3 points"),
    (DJ_EXAMPLE[:2], 1, 3, "biased", "3 to 50 points"),
    ([{"x1": "a", "x2": 1, "y": 2}, *DJ_EXAMPLE], 1, 3, "biased", "point 1"),
    ([{"x1": None, "x2": 1, "y": 2}, *DJ_EXAMPLE], 1, 3, "biased", "point 1"),
    ([*DJ_EXAMPLE, {"x1": 1e400, "x2": 1, "y": 2}], 1, 3, "biased", "point 4"),
    (DJ_EXAMPLE * 20, 1, 3, "biased", "at most 50"),
    ([{"x1": k, "x2": 2 * k, "y": k} for k in (1, 2, 3)], 1, 3, "biased", "on a line"),
    (DJ_EXAMPLE, None, 3, "biased", "W0"),
    (DJ_EXAMPLE, 1, 1e9, "biased", "W0"),
    (DJ_EXAMPLE, 1, 3, "weird", "σ"),
    ("junk", 1, 3, "biased", "at least 3 points"),
])
def test_bad_input_keeps_the_picture(cp, rows, w01, w02, sigma, says):
    fig, numbers, message, shown = cp.update_weight_plane(rows, w01, w02, sigma, False)
    assert fig is no_update and numbers is no_update and shown is True
    assert says in message and "\n" not in message


def test_dragging_w0_and_the_points(cp):
    drag = {"shapes[0].x0": 1.9, "shapes[0].x1": 2.1, "shapes[0].y0": -0.6, "shapes[0].y1": -0.4}
    assert cp.dragged_shape(drag) == (0, 2.0, -0.5)
    assert cp.drag_w0(drag) == (2.0, -0.5)
    for junk in (None, {"xaxis.range[0]": 1}, {"shapes[x].x0": 1}, 5,
                 {"shapes[0].x0": 1, "shapes[0].x1": "a", "shapes[0].y0": 1,
                  "shapes[0].y1": 1}, {**drag, "shapes[0].x0": 1e9, "shapes[0].x1": 1e9}):
        assert cp.drag_w0(junk) == (no_update, no_update)
    moved = cp.drag_point({k.replace("[0]", "[2]"): v for k, v in drag.items()}, DJ_EXAMPLE)
    assert moved[2] == {"x1": 2.0, "x2": -0.5, "y": 13.0} and moved[:2] == DJ_EXAMPLE[:2]
    assert DJ_EXAMPLE[2] == {"x1": 2.0, "x2": 3.0, "y": 13.0}  # the input is not mutated
    assert cp.drag_point({k.replace("[0]", "[7]"): v for k, v in drag.items()},
                         DJ_EXAMPLE) is no_update
    fig = cp.draw_points(DJ_EXAMPLE)
    assert len(fig["layout"]["shapes"]) == 3 and fig["data"][0]["text"][2] == "y=13"
    assert cp.draw_points("junk") is no_update
    plane = cp.update_weight_plane(DJ_EXAMPLE, 1, 3, "biased", False)[0]
    w0 = plane["layout"]["shapes"][0]
    assert (w0["x0"] + w0["x1"]) / 2 == pytest.approx(1) and (w0["y0"] + w0["y1"]) / 2 == 3


def test_click_moves_w0_and_points_are_edited(cp):
    assert cp.move_w0({"points": [{"x": 2.123456, "y": -1.0}]}) == (2.1235, -1.0)
    for junk in (None, {}, {"points": []}, {"points": [{"x": "a", "y": 1}]}, 5):
        assert cp.move_w0(junk) == (no_update, no_update)
    added = _in_callback(cp.edit_points, f"{ids.DJ_ADD}.n_clicks", 1, None, DJ_EXAMPLE)
    assert len(added) == 4 and added[-1] == {"x1": 0.0, "x2": 0.0, "y": 0.0}
    reset = _in_callback(cp.edit_points, f"{ids.DJ_RESET}.n_clicks", 1, 1, added)
    assert reset == DJ_EXAMPLE
    assert _in_callback(cp.edit_points, f"{ids.DJ_ADD}.n_clicks", 1, None, DJ_EXAMPLE * 17) \
        is no_update


def test_claims_table_lists_every_claim_with_its_verdict(cp, tmp_home, monkeypatch):
    """The table is computed once per BNVIZ_HOME: a second request, and another web process
    (a subprocess here, whose own computation would fail), read the stored claims."""
    from bnviz.papers import claims
    from bnviz.papers.claims import claim_ids

    computed = []
    real = claims.all_claims
    monkeypatch.setattr(claims, "all_claims", lambda: computed.append(1) or real())
    table = cp.show_claims("all")
    text = _text(table)
    for cid in claim_ids():
        assert f'"claim-{cid}"' in text
    assert text.count("does not hold") == 4  # Theorem 4.1, Lemma 4.5, sigma_B and I2 as printed
    assert _text(cp.show_claims("again")) == text and computed == [1]
    other_process = (
        "from bnviz.papers import claims\n"
        "def fail():\n    raise SystemExit('computed the claims again')\n"
        "claims.all_claims = fail\n"
        "table = claims.shared_claims()\n"
        "print(len(table), sum(not c['holds'] for c in table))\n")
    out = subprocess.run([sys.executable, "-c", other_process], capture_output=True, text=True,
                         env=dict(os.environ, BNVIZ_HOME=str(tmp_home)), cwd=ROOT,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(len(claim_ids())), "4"]


def _wait_landscape(cp, key, timeout=120.0):
    import time

    deadline = time.monotonic() + timeout
    while True:
        value, status, result, poll_off = cp.poll_landscape(1, key)
        if result is not no_update or poll_off is True:
            return value, status, result
        assert time.monotonic() < deadline, status
        time.sleep(0.1)


def test_landscape_run_through_the_callbacks(cp, jobs_home):
    """A ``landscape-2d`` job on the real local worker, started, polled and shown."""
    from bnviz import jobs
    from bnviz.records.results import result_path
    from bnviz.web.callbacks.background import job_id_of

    value, poll_off, message, shown = cp.start_landscape_run(1, 2, 8, 30, 0.1, True)
    key = job_id_of(value)  # the store holds the id and the tab's key to cancel it
    assert poll_off is False and shown is False and len(key) == 12
    assert jobs.get_job(key).type == "landscape-2d"
    value, status, result = _wait_landscape(cp, key)
    assert (value, status, result) == (100, "done", key)
    landscape, ics, maps, message, shown = cp.show_landscape(result)
    assert shown is False
    names = {t.get("name") for t in landscape["data"]}
    assert {"with BN", "without BN"} <= names  # the beta-smoothness curves, one per arm
    assert len(ics["data"]) == 4 and ics["data"][0]["type"] == "bar"
    assert [t["type"] for t in maps["data"]] == ["heatmap", "scatter"] * 2
    # the same settings again: the stored run, at once
    assert job_id_of(cp.start_landscape_run(2, 2, 8, 30, 0.1, True)[0]) == key
    # a removed result is said, not raised
    result_path(key).unlink()
    assert cp.show_landscape(key)[3].startswith("the stored result is gone")
    for junk in (None, 5, "abc", ["x"], "0" * 24):
        assert cp.show_landscape(junk) == (no_update,) * 5
        assert cp.poll_landscape(1, junk)[3] is True


@pytest.mark.parametrize("args, says", [
    ((0, 8, 30, 0.1, False), "depth"), ((2, 100, 30, 0.1, False), "width"),
    ((2, 8, 0, 0.1, False), "steps"), ((2, 8, 30, "fast", False), "learning rate"),
    ((2, 8, 30, 50.0, False), "learning rate"), ((8, 64, 2000, 0.1, False), "over the cap"),
])
def test_landscape_bad_settings_are_refused(cp, tmp_home, args, says):
    key, poll_off, message, shown = cp.start_landscape_run(1, *args)
    assert key is no_update and shown is True and says in message


def test_luo_views(cp):
    stats, gap, dyn, numbers, message, shown = cp.update_luo("exponential", "16", 1.0, 0.25,
                                                              False)
    assert (message, shown) == ("", False)
    names = [t.get("name") for t in stats["data"]]
    assert "Gaussian model (corrected)" in names and "σ_B model as printed" in names
    assert gap["layout"]["title"]["text"].endswith("M = 16")
    assert dyn["layout"]["title"]["text"].endswith("< 3")  # eta_max = 2 (1 + 2 * 0.25)
    text = _text(numbers)
    assert "3/(4M) = 0.04688" in text and "γ0 = 0.6667" in text
    # the printed I2 changes the dynamics (not the statistics)
    other = cp.update_luo("exponential", "16", 1.0, 0.25, True)
    assert other[2]["data"][1]["y"] != dyn["data"][1]["y"] and other[0] == stats


def test_normalisation_comparison_callback(cp, tmp_home, monkeypatch):
    from bnviz.papers import luo

    calls = []
    real = luo.compare_normalisations
    monkeypatch.setattr(luo, "compare_normalisations", lambda batch_size: calls.append(
        batch_size) or real(batch_size=batch_size, n=64, steps=30, depth=2, width=6))
    fig, table, message, shown = cp.show_normalisations(1, "16")
    assert (message, shown) == ("", False) and calls == [16]
    assert [t["type"] for t in fig["data"]] == ["heatmap", "contour", "scatter"] * 3
    assert '"luo-gamma-pn_decay"' in _text(table)
    cp.show_normalisations(2, 16)
    assert calls == [16]  # cached
    out = cp.show_normalisations(1, "1000")
    assert out[:2] == (no_update, no_update) and out[3] is True and "batch size" in out[2]


@pytest.mark.parametrize("args, says", [
    (("cauchy", "16", 1, 0.2, False), "pre-activation"),
    (("gaussian", "512", 1, 0.2, False), "batch size"),
    (("gaussian", "16", 9, 0.2, False), "η"), (("gaussian", "16", 1, -1, False), "ζ"),
    (("gaussian", "16", "x", 0.2, False), "η"), ((None, None, None, None, None), "pre-act"),
])
def test_luo_bad_values(cp, args, says):
    out = cp.update_luo(*args)
    assert out[:4] == (no_update,) * 4 and out[5] is True and says in out[4]


def test_ergen_view(cp, tmp_home):
    whiten, units, numbers, message, shown = cp.update_ergen("moons", 20, 0.5)
    assert (message, shown) == ("", False)
    assert len(whiten["data"]) == 2
    names = [t.get("name") for t in units["data"]]
    assert "class 0: γ*, α*" in names and "class 1: units" in names
    text = _text(numbers)
    assert '"eg-rank"' in text and "classes with ‖y_j‖ > β: 2" in text
    assert cp.update_ergen("moons", "20", "0.5")[2] is not None  # text, as a URL holds it


@pytest.mark.parametrize("args, says", [
    (("star", 20, 0.5), "data set"), (("moons", 3, 0.5), "points"),
    (("moons", 20, 0), "β"), ((["moons"], 20, 0.5), "data set"), (("moons", 20, "x"), "β"),
])
def test_ergen_bad_values(cp, tmp_home, args, says):
    out = cp.update_ergen(*args)
    assert out[:3] == (no_update,) * 3 and out[4] is True and says in out[3]


def _read(dash_duo, css: str) -> str:
    """An element's text, read in one step in the page (a re-render between finding an
    element and reading it would make a WebDriver element stale)."""
    return dash_duo.driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';", css)


@pytest.fixture
def claims_ready(tmp_home):
    """The claims computed before the server starts, as a web process computes them in the
    background when it starts (bnviz.server.background): the page reads them from the
    shared cache (computing them in the page is test_claims_table_lists_every_claim...)."""
    from bnviz.papers.claims import shared_claims

    shared_claims()
    return tmp_home


@pytest.mark.browser
def test_papers_page_in_a_browser(dash_duo, claims_ready):
    from bnviz.web.app import app

    dash_duo.driver.set_window_size(1400, 1000)
    # the page typesets every claim's TeX once the table arrives: with the suite's other
    # worker starting a server stack beside it, the renderer answered no script for the
    # driver's default 30 s (two full runs); a person waits, so the test does too
    dash_duo.driver.set_script_timeout(120)
    dash_duo.start_server(app)
    dash_duo.driver.find_element(By.LINK_TEXT, "The debate (4 papers)").click()
    until(lambda: dash_duo.driver.current_url.endswith("/papers"), TIMEOUT,
          msg="the navbar link did not open /papers")
    # Bootstrap's smooth scrolling makes clicks below the fold land before the scroll ends
    dash_duo.driver.execute_script("document.documentElement.style.scrollBehavior = 'auto';")
    # the claims table: the Dannemann gradient row, and two claims that do not hold
    row = until(lambda: dash_duo.find_elements("#claim-dannemann-gradient"), TIMEOUT,
                msg="the claims table did not appear")[0]
    cells = row.find_element(By.XPATH, "..").find_elements(By.TAG_NAME, "td")
    assert cells[3].text == "[-0.34, 0.11]" and cells[4].text.startswith("[-0.33932, 0.11311")
    assert cells[5].text == "holds"
    verdicts = [e.text for e in dash_duo.find_elements(".claims-table td:last-child")]
    assert verdicts.count("does not hold") == 4 and len(verdicts) >= 12
    # the weight plane: the gradient at W* and the lemma's verdict at W0 = W* = (1, 3)
    until(lambda: _read(dash_duo, "#dj-gradient") == "(-0.33932, 0.11311)", TIMEOUT,
          msg="no gradient shown")
    assert _read(dash_duo, "#dj-lemma-lhs") == "4.2353"
    assert _read(dash_duo, "#dj-lemma-verdict") == "fails"
    # a click on the plane moves W0 (the lemma then holds or fails there: its text changes)
    graph = dash_duo.find_element(f"#{ids.DJ_GRAPH} .nsewdrag")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", graph)
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(dash_duo.driver).move_to_element(graph).move_by_offset(60, -40).click() \
        .perform()  # from the plot's centre (near w = 0) up and to the right
    until(lambda: dash_duo.find_element(f"#{ids.DJ_W01}").get_attribute("value") != "1",
          TIMEOUT, msg="the click did not move W0")
    w0 = (float(dash_duo.find_element(f"#{ids.DJ_W01}").get_attribute("value")),
          float(dash_duo.find_element(f"#{ids.DJ_W02}").get_attribute("value")))
    assert w0 != (1.0, 3.0)
    until(lambda: re.fullmatch(r"[\d.e+-]+", _read(dash_duo, "#dj-lemma-lhs"))
          and _read(dash_duo, "#dj-lemma-lhs") != "4.2353", TIMEOUT,
          msg="the lemma's left side did not follow W0")
    # drag the third data point: its row in the table follows, and so does W*
    w_star = _read(dash_duo, f"#{ids.DJ_NUMBERS} li")
    circle = dash_duo.find_elements(f"#{ids.DJ_DATA} .shapelayer path")[2]
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", circle)
    ActionChains(dash_duo.driver).drag_and_drop_by_offset(circle, 25, -20).perform()
    until(lambda: _read(dash_duo, f"#{ids.DJ_NUMBERS} li") != w_star, TIMEOUT,
          msg="dragging a data point did not change W*")
    # Luo et al.: the numbers under the three graphs follow the batch-size select
    until(lambda: "3/(4M) = 0.04688" in _read(dash_duo, f"#{ids.LUO_NUMBERS}"),
          TIMEOUT, msg="the Luo et al. numbers did not appear")
    from selenium.webdriver.support.select import Select

    select = dash_duo.find_element(f"#{ids.LUO_BATCH}")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", select)
    Select(select).select_by_value("64")
    until(lambda: "3/(4M) = 0.01172" in _read(dash_duo, f"#{ids.LUO_NUMBERS}"),
          TIMEOUT, msg="M = 64 was not computed")
    # Ergen et al.: the rank of the last hidden features equals the number of classes
    until(lambda: dash_duo.find_elements("#eg-rank")
          and _read(dash_duo, "#eg-rank") == "3", TIMEOUT,
          msg="the Ergen et al. view did not show rank 3 for three blobs")
    # Santurkar et al.: train both networks for a few steps; the three graphs appear
    steps = dash_duo.find_element(f"#{ids.SL_STEPS}")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", steps)
    steps.send_keys(Keys.CONTROL, "a")
    steps.send_keys(Keys.BACKSPACE)
    steps.send_keys("25", Keys.ENTER)
    train = dash_duo.find_element(f"#{ids.SL_TRAIN}")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", train)
    train.click()
    import time

    deadline = time.monotonic() + TIMEOUT
    while _read(dash_duo, f"#{ids.SL_STATUS}") != "done":
        assert time.monotonic() < deadline, (
            "the landscape run did not finish: status "
            f"{dash_duo.find_element(f'#{ids.SL_STATUS}').text!r}, message "
            f"{dash_duo.find_element(f'#{ids.SL_MESSAGE}').text!r}")
        time.sleep(0.1)
    n_traces = until(lambda: dash_duo.driver.execute_script(
        f"const g = document.querySelector('#{ids.SL_LANDSCAPE} .js-plotly-plot');"
        "return g && g.data && g.data.length;"), TIMEOUT, msg="no landscape figure")
    assert n_traces == 12  # 2 arms x (2 bands of 2 traces + beta + loss)
    steps_drawn = dash_duo.driver.execute_script(
        f"const g = document.querySelector('#{ids.SL_LANDSCAPE} .js-plotly-plot');"
        "return g.data.find(t => t.name === 'with BN').x.length;")
    assert steps_drawn == 25
    assert dash_duo.get_logs() == []


def test_the_page_text_keeps_no_ascii_math():
    """The debate page's prose: math is Markdown with TeX (balanced $, typeset by MathJax),
    the command is code, and no plain string keeps ASCII math or a literal backtick."""
    from dash import dcc
    from explorer_helpers import walk

    from bnviz.web.layouts.papers import layout

    tree = layout()
    markdown = [c for c in walk(tree) if isinstance(c, dcc.Markdown)]
    assert len(markdown) >= 6  # the five disagreements and Luo et al.'s explanation
    for m in markdown:
        assert m.mathjax is True and m.children.count("$") % 2 == 0, m.children
        assert "$" in m.children, m.children
    plain = [c for c in walk(tree)
             if isinstance(c, str) and c not in {m.children for m in markdown}]
    for text in plain:
        assert not re.search(r"`|sqrt\(|σ_P²|μ_B|E_B\[|\$", text), text
    for m in markdown:  # TeX's \sigma, not sigma
        text = m.children.replace("`solve_ivp`", "")
        assert not re.search(r"`|sqrt\(|(?<!\\)\b(?:sigma|mu|gamma|beta|l2)\b", text), text
    assert "python -m bnviz claims --json" in plain


@pytest.mark.browser
def test_the_math_is_typeset_under_the_policy(dash_duo, claims_ready):
    """MathJax (Dash's own copy, served from this origin) typesets every claim's statement,
    the disagreements and Luo et al.'s explanation under the content security policy: no
    "$" or backtick is left to read, no TeX error, no policy violation in the console."""
    from bnviz.web.app import app

    dash_duo.driver.set_window_size(1280, 720)
    dash_duo.start_server(app)
    dash_duo.driver.get(dash_duo.server_url + "/papers")
    until(lambda: len(dash_duo.find_elements(".claims-table tbody tr")) == 12, TIMEOUT,
          msg="the claims table did not appear")
    typeset = ("return [...document.querySelectorAll('.claims-table tbody tr')].map("
               "r => r.children[2].querySelectorAll('mjx-container').length)")
    until(lambda: all(n > 0 for n in dash_duo.driver.execute_script(typeset)), TIMEOUT,
          msg="MathJax did not typeset every claim's statement")
    until(lambda: dash_duo.driver.execute_script(
        "return [...document.querySelectorAll('.disagreement, #luo .explain')].every("
        "e => e.querySelector('mjx-container'))"), TIMEOUT,
          msg="MathJax did not typeset the disagreements and Luo et al.'s explanation")
    cells, errors, prose = dash_duo.driver.execute_script(
        "const t = document.querySelector('.claims-table');"
        "return [[...t.querySelectorAll('td')].map(c => c.innerText),"
        " document.querySelectorAll('[data-mjx-error], mjx-merror').length,"
        " [...document.querySelectorAll('.disagreement, #luo .explain, #claims > p')]"
        "  .map(e => e.innerText)];")
    assert len(cells) == 12 * 6 and errors == 0
    for text in cells + prose:
        assert "$" not in text and "`" not in text, text
    assert any("python -m bnviz claims --json" in text for text in prose)
    until(lambda: dash_duo.driver.execute_script(  # every view drawn: the whole page's log
        "return document.querySelectorAll('._dash-loading').length === 0 && "
        "document.querySelector('#eg-rank') !== null"), TIMEOUT,
          msg="the page's views were not all drawn")
    logs = dash_duo.get_logs()
    assert [e for e in logs if "Content Security Policy" in e.get("message", "")] == []
    assert logs == []
