"""The partition explorer page (home): its component ids (``ids``), figures (``figures``), the
page's state in its URL (``state``) and its callbacks (``callbacks``).

Importing the package registers nothing: app.py imports ``callbacks.explorer.callbacks`` to
register the page's callbacks, and the layout imports ``callbacks.explorer.ids`` alone.
"""
