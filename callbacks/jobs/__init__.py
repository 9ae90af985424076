"""The background-jobs page (the image experiments): its component ids (``ids``), figures
(``figures``) and callbacks (``callbacks``).

Importing the package registers nothing: app.py imports ``callbacks.jobs.callbacks`` to
register the page's callbacks, and the layout imports ``callbacks.jobs.ids`` alone.
"""
