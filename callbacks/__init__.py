"""The dashboard's callbacks: one package per page (``callbacks/<page>/``: its component ids,
its figures, its callbacks), and the pieces the pages share: :mod:`callbacks.parsing`
(control values), :mod:`callbacks.background` (a job started, polled and cancelled from a
page) and :mod:`callbacks.plotting` (figure pieces). Importing a page's ``callbacks`` module
registers its callbacks (app.py does); nothing else registers any."""
