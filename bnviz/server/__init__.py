"""The running server, at the top of bnviz beneath the command line: the HTTP API
(:mod:`~bnviz.server.api`), health (:mod:`~bnviz.server.health`,
:mod:`~bnviz.server.health_app`), the production stack (:mod:`~bnviz.server.stack`: nginx,
gunicorn, the job worker) and a web process's precompute thread (:mod:`~bnviz.server.
background`: the lecture tour, the debate page's claims).

It reaches the job system, the lecture and the papers' claims, and everything below them;
the shared pieces every request uses (the cache, admission, the disk check, the request
guard) are :mod:`bnviz.service`, below the views.
"""
