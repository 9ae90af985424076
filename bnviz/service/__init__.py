"""What a server's requests share, below the views: the one byte-bounded cache
(:mod:`~bnviz.service.cache`) and its admission (:mod:`~bnviz.service.admission`,
:mod:`~bnviz.service.clients`), the free-disk check (:mod:`~bnviz.service.disk`), the request
guard (:mod:`~bnviz.service.guard`, :mod:`~bnviz.service.headers`), the kernels' loader
(:mod:`~bnviz.service.kernel_loading`) and the pieces the stack is made of (nginx's
configuration, gunicorn's command, the restart policy). The running server itself is
:mod:`bnviz.server`.
"""
