"""The JSON answers of bnviz's own HTTP routes (the jobs API, the lecture's sync and the hall),
made in one place so that every refusal reads alike: ``{"error": one line}`` with its status
and headers, never an HTML page or a traceback."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify

from bnviz.messages import Refused, one_line

__all__ = ["json_answer", "refusal"]


def json_answer(status: int, body: dict[str, Any], headers: dict[str, str] | None = None,
                *, no_store: bool = False) -> Response:
    """``body`` as JSON with ``status``; ``no_store`` for answers that change by the second
    (a lecture's state, a hall's taps): no cache in between may keep them."""
    response = jsonify(body)
    response.status_code = status
    response.headers.update(headers or {})
    if no_store:
        response.headers["Cache-Control"] = "no-store"
    return response


def refusal(exc: Refused, *, no_store: bool = False) -> Response:
    """A refused request's answer: its status, headers and one line (at most 300 characters)."""
    return json_answer(exc.status, {"error": one_line(exc) or "error"}, exc.headers,
                       no_store=no_store)
