"""The five papers bnviz shows, by the key the claim checks and the replication report use,
in the order the pages list them (no torch here: ``bnviz replicate`` reads it at once)."""

from __future__ import annotations

__all__ = ["PAPERS"]

PAPERS: dict[str, str] = {
    "bn": "Batch normalization explained (the BN paper; anonymous review copy)",
    "dannemann": "Dannemann & Junike, Batch normalization does not improve initialization",
    "santurkar": "Santurkar et al., How does batch normalization help optimization?",
    "luo": "Luo et al., Towards understanding regularization in batch normalization",
    "ergen": "Ergen et al., Demystifying batch normalization in ReLU networks",
}
