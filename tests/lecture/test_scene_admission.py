"""A lecture scene a slider asks for anew is heavy work of the web's admission (issue 42:
Figure 3's densities took 5-7 s, the training step's runs 6.5 s, Figure 9's numbers 3 s, with
no bound): with every heavy slot taken, a request for a new density scene gets the one-line
busy answer within the wait, and a light scene is still computed.

A scene already in the process's memory is no work and never waits (bnviz.service.cache.memoize:
a hit is served before admission): another test of the same process that computed Figure 3 at
depth 3 (tests/lecture/test_tour.py's test_depth_changes_the_density_layers) left it there, and
this test's request was then answered, not refused. The scenes' memory is emptied first."""

from __future__ import annotations

import fcntl
import os
import time

import pytest

from bnviz.lecture import scenes
from bnviz.params.cost import scene_seconds
from bnviz.service import admission
from bnviz.service.admission import ServerBusy


@pytest.fixture
def no_scene_in_memory():
    """The scenes this process computed before are forgotten (before and after), so that a
    scene asked for here is new, whatever ran before in the process."""
    for fn in (scenes._scene_data, scenes._figure9):
        fn.cache_clear()
    yield
    for fn in (scenes._scene_data, scenes._figure9):
        fn.cache_clear()


@pytest.fixture
def all_slots_taken(tmp_home, monkeypatch, no_scene_in_memory):
    monkeypatch.setenv("BNVIZ_HEAVY_SLOTS", "1")
    monkeypatch.setenv("BNVIZ_HEAVY_WAIT_SECONDS", "0.5")
    fd = os.open(admission.slot_directory() / "slot-0", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield
    os.close(fd)


def test_a_new_heavy_scene_waits_its_turn_and_a_light_one_does_not(all_slots_taken):
    from bnviz.web import app as dashboard

    settings, _ = scenes.step_settings(scenes.step_by_key("fig3"), None, None, None, 3)
    assert scene_seconds("density", settings) > 1 > scene_seconds("dannemann", settings)
    with dashboard.server.test_request_context("/_dash-update-component", method="POST"):
        t0 = time.monotonic()
        with pytest.raises(ServerBusy, match="try again"):
            scenes.compute_scene("fig3", depth=3)
        assert time.monotonic() - t0 < 5
        assert scenes.compute_scene("dannemann").data is not None
