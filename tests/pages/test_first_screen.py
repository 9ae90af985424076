"""What a lecturer reaches without scrolling on a 1280x720 projector (issue 31): the
explorer's mu and sigma sliders, and the jobs page's submit button, each on the first screen
and not covered by anything else."""

from __future__ import annotations

import pytest
from dash.testing.wait import until
from lecture_windows import viewport

from bnviz.web.callbacks.explorer import ids as explorer_ids
from bnviz.web.callbacks.jobs import ids as jobs_ids

pytestmark = pytest.mark.browser

#: The element is inside the viewport, and the element at its centre is it or its child.
ON_FIRST_SCREEN = """
const el = document.getElementById(arguments[0]);
if (!el) return 'missing';
const r = el.getBoundingClientRect();
if (r.height === 0 || r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth)
    return 'outside: ' + [r.top, r.bottom, innerHeight].map(Math.round).join(',');
const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
return hit && (el === hit || el.contains(hit)) ? 'ok' : 'covered by ' + (hit && hit.outerHTML
    .slice(0, 60));
"""


def test_on_the_first_screen_at_1280x720(dash_duo):
    from bnviz.web.app import app

    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    for path, element in (("/", explorer_ids.MU), ("/", explorer_ids.SIGMA),
                          ("/jobs", jobs_ids.SUBMIT)):
        dash_duo.driver.get(dash_duo.server_url + path)
        dash_duo.wait_for_element(f"#{element}", timeout=20)
        until(lambda e=element: dash_duo.driver.execute_script(ON_FIRST_SCREEN, e) == "ok", 10,
              msg=f"{path} {element}: "
                  f"{dash_duo.driver.execute_script(ON_FIRST_SCREEN, element)}")
