"""Browser security headers (issue 30): a content security policy that lets every page of
the dashboard work and blocks injected script, no framing, nosniff and a referrer policy, on
the pages, the callbacks, the JSON routes and the request guard's refusals alike.

Every browser test of the suite runs under the same policy (they serve the same app) and
fails on a console error, so a page the policy broke would fail there too; here each page is
also opened once and checked for a policy violation by name."""

from __future__ import annotations

import pytest
from dash.testing.wait import until

from bnviz.service.headers import FIXED_HEADERS
from bnviz.web import app as dashboard

PAGES = ("/", "/jitter", "/density", "/jobs", "/slice", "/papers", "/papers/replication",
         "/lecture")


def _check(headers) -> None:
    csp = headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "'unsafe-eval'" not in csp
    for name, value in FIXED_HEADERS.items():
        assert headers[name] == value, name


@pytest.mark.parametrize("path", [*PAGES, "/_dash-layout", "/_dash-dependencies",
                                  "/api/jobs", "/healthz", "/assets/explorer.js"])
def test_every_answer_carries_the_headers(path):
    r = dashboard.server.test_client().get(path)
    assert r.status_code == 200
    _check(r.headers)
    script_src = next(d for d in r.headers["Content-Security-Policy"].split("; ")
                      if d.startswith("script-src"))
    assert "'unsafe-inline'" not in script_src  # inline script only by its hash


def test_refusals_carry_them_too():
    client = dashboard.server.test_client()
    r = client.post("/_dash-update-component", data=b"nope", content_type="application/json")
    assert r.status_code == 400  # the request guard, in front of Flask
    _check(r.headers)
    assert r.headers["Content-Security-Policy"].startswith("default-src 'none'")
    r = client.get("/api/jobs/" + "0" * 12)
    assert r.status_code == 404
    _check(r.headers)


@pytest.mark.browser
def test_every_page_works_under_the_policy_and_injected_script_does_not_run(dash_duo):
    dash_duo.driver.set_window_size(1280, 720)
    dash_duo.start_server(dashboard.app)
    for path in PAGES:
        dash_duo.driver.get(dash_duo.server_url + path)
        dash_duo.wait_for_element("#_pages_content > *", timeout=30)
        until(lambda: dash_duo.driver.execute_script(
            "return document.querySelectorAll('._dash-loading').length === 0"), 30)
        violations = [e for e in dash_duo.get_logs() or []
                      if "Content Security Policy" in e.get("message", "")]
        assert violations == [], (path, violations)
    ran = dash_duo.driver.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.__injected = 1';"
        "document.body.appendChild(s); return window.__injected === 1;")
    assert ran is False
    # Dash's renderer and Plotly ran under the policy: the lecture (the last page) drew its
    # figure, and the clientside callbacks (inline, allowed by hash) are registered
    until(lambda: dash_duo.driver.execute_script(
        "return document.querySelectorAll('.js-plotly-plot .main-svg').length > 0 && "
        "Object.keys((window.dash_clientside || {})._dashprivate_clientside_funcs || {})"
        ".length > 0"), 30)
