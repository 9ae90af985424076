"""Who a request comes from, and whether it may change jobs.

* A client is named by :func:`client_id`, a short hash of its address: the job store counts a
  client's queued and running jobs (``BNVIZ_JOBS_PER_CLIENT``) without ever holding an IP
  address. The address is the request's ``remote_addr``: the peer's own address, or, behind
  the nginx stack (``BNVIZ_BEHIND_PROXY=1``, :func:`trust_proxy`), the one nginx puts in
  ``X-Forwarded-For``. Without a proxy that header is ignored: any client could write it and
  take a fresh allowance with every request.
* Submitting and cancelling jobs (the HTTP API, the jobs page, every page's background run)
  need ``BNVIZ_JOBS_TOKEN`` when it is set (:func:`token_ok`); reading stays open. The token
  is read from the environment at every check, so a test or a restart with another token
  needs no other change. Without a token, a page's background run can be cancelled only by
  the browser tab that started it: the start hands the tab a :func:`cancel_key` (an HMAC of
  the job's id with this installation's secret, ``$BNVIZ_HOME/secret``, made once, 0600),
  which a tab that did not start the job cannot make.

Flask is imported only by :func:`request_client` and :func:`trust_proxy` (the web server's
side); nothing here imports Dash.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable

__all__ = ["TOKEN_ENV", "behind_proxy", "cancel_key", "cancel_key_ok", "client_id",
           "jobs_token", "request_client", "token_ok", "trust_proxy"]

#: The environment variable holding the jobs token (not a numeric setting of bnviz.config).
TOKEN_ENV = "BNVIZ_JOBS_TOKEN"
PROXY_ENV = "BNVIZ_BEHIND_PROXY"


def client_id(remote_addr: str | None) -> str:
    """A short, stable name of a client address (16 hex digits of its sha256): equal for the
    same address, and the store never holds the address itself. An unknown address (no
    peer, e.g. a test request) is one client too."""
    text = (remote_addr or "").strip().lower() or "unknown"
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def request_client() -> str | None:
    """The client of the Flask request being answered, None outside a request (a callback
    called directly by a test, the command line): no per-client limit applies then."""
    from flask import has_request_context, request

    if not has_request_context():
        return None
    return client_id(request.remote_addr)


def jobs_token() -> str | None:
    """``BNVIZ_JOBS_TOKEN`` (surrounding blanks dropped), or None when unset or blank."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    return token or None


def token_ok(given: object) -> bool:
    """Whether ``given`` (what a request or the page's field holds) is the jobs token; always
    True when no token is set. Compared in constant time (hmac.compare_digest), so that the
    answer's timing does not tell how much of a guess was right."""
    token = jobs_token()
    if token is None:
        return True
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"),
                               token.encode("utf-8", "replace"))


def _secret() -> bytes:
    """This installation's random secret (32 bytes in ``$BNVIZ_HOME/secret``, 0600), made by
    the first process that needs it; every web process and restart shares it."""
    from bnviz.config import bnviz_home

    path = bnviz_home() / "secret"
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"secret.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(os.urandom(32).hex())
    try:
        os.link(tmp, path)  # the first writer wins; the others read its secret
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return bytes.fromhex(path.read_text().strip())


def cancel_key(job_id: str) -> str:
    """What a tab must show to cancel the job it started (no token set): 24 hex digits."""
    return hmac.new(_secret(), job_id.encode("utf-8", "replace"), hashlib.sha256
                    ).hexdigest()[:24]


def cancel_key_ok(job_id: str, key: object) -> bool:
    """Whether ``key`` is :func:`cancel_key` of ``job_id`` (constant-time compare)."""
    return isinstance(key, str) and hmac.compare_digest(key.encode("utf-8", "replace"),
                                                        cancel_key(job_id).encode())


def behind_proxy() -> bool:
    """``BNVIZ_BEHIND_PROXY=1``: the server is reached only through the nginx stack."""
    return os.environ.get(PROXY_ENV, "").strip() == "1"


def trust_proxy(wsgi_app: Callable) -> Callable:
    """``wsgi_app`` behind werkzeug's ProxyFix (one proxy: the client address from
    ``X-Forwarded-For``, the scheme from ``X-Forwarded-Proto``) when :func:`behind_proxy`,
    else unchanged. ProxyFix only rewrites the address and scheme of the environ, so it may
    sit inside or outside the request guard (bnviz.service.guard); app.py keeps the guard
    outermost."""
    if not behind_proxy():
        return wsgi_app
    from werkzeug.middleware.proxy_fix import ProxyFix

    return ProxyFix(wsgi_app, x_for=1, x_proto=1)
