"""Component trees of the dashboard's pages (no logic: callbacks/ wires them)."""
