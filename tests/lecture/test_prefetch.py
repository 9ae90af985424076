"""The next step prepared in the browser (callbacks/lecture/prefetch.py, issue 31): what the
prefetch sends for step s + 1 is what ``show`` draws when s + 1 is chosen (figure, title,
counter, caption, readout, note, the dock's place), for every step, both themes and the
split; so a step key may show it before the server's answer without showing anything else.
The browser side is in test_lecture_browser.py (the step drawn while its answer is held)."""

from __future__ import annotations

import json
from contextvars import copy_context

import plotly.utils
import pytest
from dash import no_update
from dash._callback_context import context_value
from dash._utils import AttributeDict

from bnviz.lecture.tour import SLIDERS, TOUR
from bnviz.web.callbacks.lecture import callbacks as cl
from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.prefetch import prefetch_next

NO_SLIDERS = {name: None for name in SLIDERS}


def _show_chosen(step: int, theme: str, split: bool, drawn_state: str | None = None):
    def inner():
        context_value.set(AttributeDict(triggered_inputs=[{"prop_id": f"{ids.STEP}.data",
                                                           "value": None}]))
        return cl.show(step, None, NO_SLIDERS, theme, split, None, None, drawn_state)
    return copy_context().run(inner)


def _json(value) -> str:
    return json.dumps(value, cls=plotly.utils.PlotlyJSONEncoder, sort_keys=True)


@pytest.mark.parametrize("theme,split", [("light", False), ("dark", False), ("light", True)],
                         ids=["light", "dark", "split"])
@pytest.mark.parametrize("step", range(len(TOUR)), ids=lambda s: f"after-{s}")
def test_the_prefetch_is_what_show_draws_next(step, theme, split):
    key = f"{step}|{theme}|{int(split)}"
    pf = prefetch_next(key, None)
    out = _show_chosen(step + 1, theme, split)
    assert pf["from"] == key and pf["step"] == step + 1
    assert _json(pf["figure"]) == _json(out[0])
    assert (pf["title"], pf["counter"], pf["caption"], pf["note"], pf["readout"],
            pf["main"]) == (out[1], out[2], out[3], out[4], out[12], out[13])
    # the state the figure names is the state the URL gets: the browser draws it once
    assert pf["figure"]["layout"]["meta"]["state"] == out[5]
    assert pf["figure"]["layout"]["meta"]["ghost"] is False


@pytest.mark.parametrize("key", [None, 3, "", f"{len(TOUR)}|light|0", "2|blue|0", "2|light",
                                 "x|light|0", "²|light|0", "9999|light|0", "2|light|0|1"])
def test_nothing_after_the_last_step_or_for_a_crafted_key(key):
    assert prefetch_next(key, None) is no_update


@pytest.mark.parametrize("step", [2, 6, 13], ids=["cor2", "fig9", "fig7"])
def test_a_step_drawn_from_the_prefetch_is_not_sent_again(step):
    pf = prefetch_next(f"{step - 1}|light|0", None)
    out = _show_chosen(step, "light", False, pf["figure"]["layout"]["meta"]["state"])
    # no figure, readout or dock's place: the browser shows the prefetch's; the rest comes
    assert out[0] is no_update and out[12] is no_update and out[13] is no_update
    assert out[2] == pf["counter"] and out[5] == pf["figure"]["layout"]["meta"]["state"]
    assert out[16] is None  # the mark is used once
    # another state drawn (a slider moved since, a stale mark): the figure is sent
    other = _show_chosen(step, "light", False, "step=1")
    assert _json(other[0]) == _json(pf["figure"]) and other[16] is None
