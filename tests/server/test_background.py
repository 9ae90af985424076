"""A web process's precompute thread (bnviz.server.background): the lecture tour's steps,
then the debate page's claims, so that neither a tour step nor /papers waits at its first
visit."""

from __future__ import annotations

import pytest

from bnviz.lecture import scenes
from bnviz.papers import claims
from bnviz.server.background import start_tour_precompute


def test_the_thread_computes_the_claims_even_after_a_failed_tour(tmp_home, monkeypatch):
    monkeypatch.setenv("BNVIZ_PRECOMPUTE_TOUR", "1")

    def broken_tour() -> None:
        raise RuntimeError("a step failed")

    monkeypatch.setattr(scenes, "precompute_tour", broken_tour)
    monkeypatch.setattr(claims, "all_claims", lambda: {"claims": [{"id": "stub"}]})
    reported: list[str] = []
    thread = start_tour_precompute(reported.append)
    assert thread is not None
    thread.join(60)
    assert not thread.is_alive()
    assert reported == ["precomputing the lecture tour failed"]

    def again() -> None:
        pytest.fail("the page computed the claims again")

    monkeypatch.setattr(claims, "all_claims", again)
    assert claims.shared_claims() == ({"id": "stub"},)  # what /papers reads: already there


def test_it_is_off_when_asked(monkeypatch):
    monkeypatch.setenv("BNVIZ_PRECOMPUTE_TOUR", "0")
    assert start_tour_precompute(lambda text: pytest.fail(text)) is None
