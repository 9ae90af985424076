"""What a server's requests and its job processes share, below the views: the one
byte-bounded cache (:mod:`~bnviz.service.cache`) and its admission
(:mod:`~bnviz.service.admission`, :mod:`~bnviz.service.clients`), the free-disk check
(:mod:`~bnviz.service.disk`), the request guard (:mod:`~bnviz.service.guard`,
:mod:`~bnviz.service.headers`), handing a heavy request's memory back
(:mod:`~bnviz.service.memory`), the kernels' loader (:mod:`~bnviz.service.kernel_loading`, a
web process's and a job's), and the pieces the stack is made of (:mod:`~bnviz.service.nginx`:
nginx's configuration; :mod:`~bnviz.service.webapp`: gunicorn's command and the dashboard's
files; :mod:`~bnviz.service.restarts`: the restart policy). The running server itself is
:mod:`bnviz.server`.
"""
