"""The engine's caps on what one request may cost, so one user cannot stall the server (or a
laptop).  They are defined with every other bound in :mod:`bnviz.caps`; requests are
checked against them from an estimate before any work (:mod:`bnviz.params`), and the engine
checks them again while it cuts (the final guard).
"""

from __future__ import annotations

from bnviz.caps import MAX_DEPTH, MAX_EXTENT, MAX_REGIONS, MAX_WIDTH

__all__ = ["MAX_DEPTH", "MAX_EXTENT", "MAX_REGIONS", "MAX_WIDTH", "PartitionTooLarge"]


class PartitionTooLarge(ValueError):
    """The partition would exceed the region cap; the message says what to lower."""
