"""What ``/healthz`` reports: the server is up, its version, its torch device, and whether the
job backend (the store, and the broker when one is configured) can be reached."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlparse

from bnviz import __version__

__all__ = ["health"]


def _broker_reachable(url: str, timeout: float = 1.0) -> bool:
    """A TCP connect to the broker's host and port (no Celery round trip: /healthz must be
    fast and cheap, it is polled by Docker every 30 s)."""
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "localhost", parsed.port or 6379),
                                      timeout=timeout):
            return True
    except OSError:
        return False


def health() -> dict[str, Any]:
    from bnviz.device import pick_device
    from bnviz.jobs import backend
    from bnviz.jobs.celery_app import broker_url
    from bnviz.jobs.store import StoreError, open_store, store_url

    try:
        device = str(pick_device())
    except ValueError as exc:
        device = f"error: {exc}"
    jobs: dict[str, Any] = {"backend": backend()}
    try:
        store = open_store()
        jobs["store"] = store_url().split("@")[-1] if "redis" in store_url() else "sqlite"
        jobs["store_reachable"] = store.ping()
    except StoreError:
        jobs["store_reachable"] = False
    url = broker_url()
    if url:
        jobs["broker_reachable"] = _broker_reachable(url)
    reachable = jobs["store_reachable"] and jobs.get("broker_reachable", True)
    jobs["reachable"] = reachable
    return {"status": "ok" if reachable and not device.startswith("error") else "degraded",
            "version": __version__, "device": device, "jobs": jobs}
