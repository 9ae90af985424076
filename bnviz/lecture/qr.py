"""The QR code of a lecture state's URL, made on the server (segno: pure Python, offline), so
that students open the same step and sliders on their laptops without typing a link."""

from __future__ import annotations

import base64
import io

import segno

__all__ = ["MAX_URL_LENGTH", "qr_data_url", "qr_png"]

#: Longer URLs are refused: a QR code that size is unreadable from a hall's seats.
MAX_URL_LENGTH = 600


def qr_png(url: str, scale: int = 6) -> bytes:
    """The QR code of ``url`` as PNG bytes (error correction level M, black on white, the
    4-module quiet zone readers need); ValueError for a URL that is empty or longer than
    :data:`MAX_URL_LENGTH`."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise ValueError(f"a link of 1 to {MAX_URL_LENGTH} characters is needed for a QR code")
    buf = io.BytesIO()
    segno.make(url, error="m", micro=False).save(buf, kind="png", scale=scale, border=4)
    return buf.getvalue()


def qr_data_url(url: str) -> str:
    """:func:`qr_png` as a ``data:`` URL for an ``<img>``."""
    return "data:image/png;base64," + base64.b64encode(qr_png(url)).decode()
