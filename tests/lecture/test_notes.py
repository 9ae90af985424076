"""The presenter's notes (bnviz.lecture.notes) and panel (callbacks.lecture.presenter): one
set of notes per tour step, numbers only where the step shows them, the next step drawn."""

from __future__ import annotations

import re

import pytest
from dash import no_update

from bnviz.lecture.notes import NOTES, notes_for, planned_minutes
from bnviz.lecture.tour import TOUR
from bnviz.web.callbacks.lecture.presenter import presenter_panel


def test_every_step_has_notes_and_nothing_else_does():
    assert set(NOTES) == {s.key for s in TOUR}
    for step in TOUR:
        n = notes_for(step.key)
        assert n.say and n.point and n.ask.endswith("?") and 0 < n.minutes <= 10
    assert notes_for("explorer") is None


@pytest.mark.parametrize("step", TOUR, ids=lambda s: s.key)
def test_a_note_quotes_only_numbers_the_step_shows(step):
    """A decimal in the notes is one the step's caption or title prints (the notes are read
    aloud while the hall looks at the screen)."""
    n = NOTES[step.key]
    shown = step.caption + step.title
    for number in re.findall(r"\d+\.\d+", n.say + n.point + n.ask):
        assert number in shown, (step.key, number)


def test_planned_minutes_add_up():
    assert planned_minutes(0) == 0
    assert planned_minutes(len(TOUR)) == pytest.approx(sum(n.minutes for n in NOTES.values()))
    assert planned_minutes(2) == NOTES[TOUR[0].key].minutes + NOTES[TOUR[1].key].minutes


def test_the_panel_shows_the_notes_the_next_step_and_the_list(lecture_home):
    notes, title, figure, steps = presenter_panel(1, "light", None)
    text = str(notes)
    assert NOTES[TOUR[0].key].say in text and NOTES[TOUR[0].key].ask in text
    assert title == f"next: 2. {TOUR[1].title}"
    assert figure["data"], "the next step's picture"
    assert [li.className for li in steps].count("current") == 1
    assert steps[0].className == "current"
    last = presenter_panel(len(TOUR), "dark", None)
    assert last[1] == "next: the end of the tour" and last[2] == {}
    for bad in ("x", -1, len(TOUR) + 1, True):  # only a crafted request sends one
        assert presenter_panel(bad, "light", None) == (no_update,) * 4
