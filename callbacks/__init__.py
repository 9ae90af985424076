"""Callbacks: parse control values, call bnviz, build figures (registered on import)."""
