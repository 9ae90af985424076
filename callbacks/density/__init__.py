"""The density page (BN paper Figure 3): its component ids (``ids``), figures (``figures``)
and callbacks (``callbacks``).

Importing the package registers nothing: app.py imports ``callbacks.density.callbacks`` to
register the page's callbacks, and the layout imports ``callbacks.density.ids`` alone.
"""
