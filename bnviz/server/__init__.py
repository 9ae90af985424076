"""The running server, at the top of bnviz beneath the command line: the HTTP API
(:mod:`~bnviz.server.api`), health (:mod:`~bnviz.server.health`,
:mod:`~bnviz.server.health_app`), the production stack (:mod:`~bnviz.server.stack`: nginx,
gunicorn, the job worker) and a web process's background threads
(:mod:`~bnviz.server.background`).

It reaches the job system and the lecture; the shared pieces every request uses (the cache,
admission, the disk check, the request guard) are :mod:`bnviz.service`, below the views.
"""
