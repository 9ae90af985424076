"""The debate page (the four papers that qualify the BN paper): its component ids (``ids``),
figures (``figures``) and callbacks (``callbacks``).

Importing the package registers nothing: app.py imports ``callbacks.papers.callbacks`` to
register the page's callbacks, and the layout imports ``callbacks.papers.ids`` alone.
"""
