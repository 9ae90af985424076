"""The partition explorer page (home): its component ids (``ids``), figures (``figures``), the
page's state in its URL (``state``) and its callbacks (``callbacks``); the live training tab's
callbacks and figures (``training``, ``training_figures``).

Importing the package registers nothing: app.py imports ``callbacks.explorer.callbacks`` and
``callbacks.explorer.training`` to register the page's callbacks, and the layout imports
``callbacks.explorer.ids`` alone.
"""
