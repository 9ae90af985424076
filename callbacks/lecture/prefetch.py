"""The next step, prepared in the browser before the click (issue 31: on a busy laptop the
step's wait was the server's answer and the redraw; a lecturer dwells on a step for minutes).

When the page settles on a step (its step, theme and split: ``ids.PREFETCH_KEY``, derived in
the browser from the page's query), the server draws the next step at its own settings, as
:func:`callbacks.lecture.callbacks.show` will draw it, into ``ids.PREFETCH``. A step key
(assets/lecture.js; assets/lecture-figure.js keeps the step prepared) then shows that
figure, title, caption and readout at once and asks the server for the step as before; the
server's figure names the same state (its ``meta.state``), so the browser does not draw it
twice.
"""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, State, callback, clientside_callback, no_update

from bnviz.core.limits import PartitionTooLarge
from bnviz.lecture.scenes import compute_scene
from bnviz.lecture.tour import TOUR
from bnviz.params import InputError
from bnviz.service.admission import ahead_of_time
from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.callbacks import MAIN, MAIN_WIDE, counter, drawn, step_note
from bnviz.web.callbacks.lecture.figures import is_wide, readout
from bnviz.web.callbacks.lecture.state import THEMES, lecture_query, step_for

__all__ = ["prefetch_next"]


def _parse_key(key: object) -> tuple[int, str, bool] | None:
    """``"step|theme|split"`` (assets/lecture-figure.js, ``prefetchKey``) or None."""
    if not isinstance(key, str) or key.count("|") != 2:
        return None
    step, theme, split = key.split("|")
    if not (step.isascii() and step.isdigit() and len(step) <= 3) or theme not in THEMES:
        return None
    return int(step), theme, split == "1"


@callback(Output(ids.PREFETCH, "data"), Input(ids.PREFETCH_KEY, "data"),
          State(ids.BASE, "data"), prevent_initial_call=True)
def prefetch_next(key, base):
    """The step after the one shown, drawn as ``show`` draws a chosen step (its own
    sliders), with the key it was made for; nothing after the last step, and nothing (no
    error on the page) when the next step cannot be drawn now (the server is busy: work
    prepared ahead takes a heavy slot only when one is free, so it never makes a step the
    lecturer asks for wait in the queue, and that step, asked while this one computes,
    shares its result: bnviz.service.cache.memoize)."""
    parsed = _parse_key(key)
    if parsed is None or parsed[0] >= len(TOUR):
        return no_update
    step, theme, split = parsed[0] + 1, parsed[1], parsed[2]
    base = base if isinstance(base, dict) else None
    try:
        step_def = step_for(step, base, split)
        with ahead_of_time():  # never queued ahead of a step the lecturer asks for
            scene = compute_scene(step_def)
    except (InputError, PartitionTooLarge, ValueError):
        return no_update
    query = lecture_query(step, step_def, scene.settings, theme, base,
                          split and step_def.scene == "split")
    figure, title = drawn(scene, step, theme, query)
    return {"from": key, "step": step, "figure": figure, "title": step_def.title,
            "counter": counter(step), "caption": step_def.caption,
            "note": step_note(scene, step_def),
            "readout": readout(scene, title), "main": MAIN_WIDE if is_wide(figure) else MAIN}


clientside_callback(ClientsideFunction("lecture", "prefetchKey"),
                    Output(ids.PREFETCH_KEY, "data"), Input(ids.QUERY, "data"),
                    State(ids.PREFETCH_KEY, "data"))
clientside_callback(ClientsideFunction("lecture", "keepPrefetch"),
                    Output(ids.PREFETCH_SINK, "children"), Input(ids.PREFETCH, "data"))
