"""Component ids of the replication page."""

SUMMARY = "replication-summary"
SMART_INIT = "replication-smart-init"
SMART_INIT_TEXT = "replication-smart-init-text"
SMART_INIT_GRAPH = "replication-smart-init-graph"
SMART_INIT_BY_LR = "replication-smart-init-by-lr"
SMART_INIT_PAIRED = "replication-smart-init-paired"  # paired differences per epoch
SLICE = "replication-slice"
SLICE_GRAPH = "replication-slice-graph"
TABLE = "replication-table"


def row(entry_id: str) -> str:
    """The id of an entry's row (links: /papers/replication#entry-ID)."""
    return f"entry-{entry_id}"
