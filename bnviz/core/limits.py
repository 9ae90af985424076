"""Caps on what one request may cost, so one user cannot stall the server (or a laptop).

The exact partition grows with width and depth (up to ~width^(2*depth) regions in theory,
far fewer in practice); these caps bound the network size and the regions computed.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "MAX_EXTENT", "MAX_REGIONS", "MAX_WIDTH", "PartitionTooLarge"]

MAX_DEPTH = 16
#: Largest half-width of the input box (float64 geometry stays meaningful well inside this).
MAX_EXTENT = 1e6
MAX_WIDTH = 256
#: Regions of one layer's partition above which the computation stops with a clear message.
MAX_REGIONS = 2_000_000


class PartitionTooLarge(ValueError):
    """The partition would exceed the region cap; the message says what to lower."""
