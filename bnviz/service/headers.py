"""The browser security headers of every answer (issue 30), in one place.

The dashboard's own answers get them from the Flask app (:func:`security_headers`, added in
``app.py``): ``make run``'s gunicorn alone and the production stack behind nginx alike, as
nginx passes them through. nginx's own answers (its 413 and 429, a 502/504 while the app is
down) carry :data:`NGINX_ERROR_HEADERS` from ``nginx.conf.template``.

The content security policy allows what Dash needs and nothing else:

* scripts from this origin, and Dash's few inline scripts by their SHA-256 (``app.csp_hashes()``:
  the renderer's start and the clientside callbacks written inline), never any other inline
  or evaluated code;
* inline styles (``'unsafe-inline'`` for style only): React, Dash's components and Plotly set
  ``style`` attributes and inject ``<style>`` elements; styles cannot run code;
* images from this origin and ``data:``/``blob:`` (Plotly's and the lecture's QR code);
* no plugins, no framing by any origin (``frame-ancestors 'none'``, and ``X-Frame-Options``
  for older browsers), forms and ``<base>`` only to this origin.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["NGINX_ERROR_HEADERS", "content_security_policy", "security_headers"]

#: The headers that do not depend on the app.
FIXED_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

#: nginx's own answers are JSON or plain text: nothing to run at all.
NGINX_ERROR_HEADERS: dict[str, str] = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'", **FIXED_HEADERS}


def content_security_policy(script_hashes: Iterable[str]) -> str:
    """The dashboard's policy; ``script_hashes`` are Dash's quoted ``'sha256-...'`` sources."""
    return "; ".join([
        "default-src 'self'",
        " ".join(["script-src 'self'", *script_hashes]),
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ])


def security_headers(script_hashes: Iterable[str]) -> dict[str, str]:
    """Every header the dashboard's answers carry."""
    return {"Content-Security-Policy": content_security_policy(script_hashes),
            **FIXED_HEADERS}
