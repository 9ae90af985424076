"""The jitter page (BN paper Figures 6 and 7): its component ids (``ids``), figures
(``figures``) and callbacks (``callbacks``).

Importing the package registers nothing: app.py imports ``callbacks.jitter.callbacks`` to
register the page's callbacks, and the layout imports ``callbacks.jitter.ids`` alone.
"""
