"""gunicorn settings for bnviz: ``gunicorn -c gunicorn.conf.py bnviz.web.app:server``, what
``make run`` runs on its own and ``bnviz serve`` (the container's command) runs behind nginx
on a unix socket. Every value can be overridden from the environment (listed in docs/settings.md).

Sizing: the callbacks are CPU-bound torch work of ~10-300 ms, each on one torch thread
(``BNVIZ_TORCH_THREADS``), so requests run in parallel across processes (one per core by
default, at least 2) and a few threads each keep a slow request from blocking fast ones.
Long work never runs in a request: training, density, landscape and image jobs run on the
job worker (bnviz.jobs), so a 60 s timeout only catches a hung worker, and a restarted web
worker loses no job.
"""

import os
import signal

from bnviz.config import PRIVATE_UMASK, exit_on_bad_settings, setting

exit_on_bad_settings()  # a bad setting stops the server here, in one line, before any worker
# What the workers write under BNVIZ_HOME (results, uploads, caches) is the service's: 0600
# files, 0700 folders; a worker inherits the master's umask. (bnviz serve sets it too.)
os.umask(PRIVATE_UMASK)

# The app is imported once, here in the master, before it listens (preload_app), and every
# worker is forked from it ready: a worker answers as soon as it is forked, not after 4-9 s of
# importing torch, Dash and the pages and warming them up (issue 43: the first 200 came
# 5.5-9.5 s after "Listening at"; bench/startstop.py), a worker that dies is replaced as fast,
# and the workers share the master's pages (copy-on-write) instead of each importing its own.
# The master never serves a request. What it must not start before the fork, it holds until
# each worker is forked (bnviz.server.background, post_worker_init below): the threads that
# app.py's import starts (the exact engine's kernels, the lecture tour's precompute), torch's
# intra-op pool (it imports the app with one torch thread: a child forked after that pool
# ran hangs), /healthz's helper pool. torch asks NVML, not the CUDA runtime, whether a GPU is
# there (torch's fork-safe check): the runtime's answer in the master would leave every
# forked worker a CUDA that cannot be initialised.
# `kill -HUP` then reloads the configuration, not the code: restart the server for new code.
preload_app = True
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

from bnviz.server import background  # noqa: E402

background.hold_until_fork()

# The first torch.func call or optimiser imports torch._dynamo (~800 modules, 2-3 s): here,
# in the master, once for every worker (app.warm_up makes the first torch.func call).
import torch._dynamo  # noqa: E402, F401

# The exact engine's compiled kernels are loaded by each worker in a background thread
# (app.warm_up, bnviz.core.kernels): the first time on a machine they compile (25 s to minutes),
# and no page waits for that; the engine cuts with its vectorised path meanwhile.

bind = os.environ.get("BNVIZ_BIND", "0.0.0.0:8050")
# a unix socket (bnviz serve's) is bound 0600, not gunicorn's default 0777; the stack gives
# it nginx's group where nginx's workers are another user (bnviz.service.nginx)
umask = 0o177
workers = int(setting("BNVIZ_WEB_WORKERS"))
threads = int(setting("BNVIZ_WEB_THREADS"))
worker_class = "gthread"
timeout = int(setting("BNVIZ_WEB_TIMEOUT"))
graceful_timeout = 30
keepalive = 5
# X-Forwarded-* headers are trusted from a local proxy only (bnviz serve's nginx reaches
# gunicorn over a unix socket, which gunicorn trusts anyway): another machine's client of
# `make run` on 0.0.0.0 cannot claim another scheme.
forwarded_allow_ips = "127.0.0.1,::1"
# a lecture hall's browsers poll every second or so; keep connections and the backlog ample
backlog = 512
accesslog = "-" if os.environ.get("BNVIZ_ACCESS_LOG", "1") == "1" else None
errorlog = "-"
loglevel = os.environ.get("BNVIZ_LOG_LEVEL", "info")
# gunicorn 27's control socket defaults to one path per user ($HOME/.gunicorn/gunicorn.ctl),
# which a second server of the same user would take over; nothing here uses it.
control_socket_disable = True
# Dash debug mode stays off in production: app.py never enables it, and Flask's is off.
raw_env = ["FLASK_DEBUG=0"]


def worker_exit(server, worker):  # noqa: ARG001 - gunicorn's hook signature
    """A worker leaving while one of bnviz's background threads is still computing (the
    lecture tour's precompute, the kernels' compile) leaves at once. Left to the interpreter's
    finalisation, such a thread still inside torch's C++ code aborted the worker ("terminate
    called without an active exception", SIGABRT: two stops in three, issue 43); what it was
    filling is a cache, written atomically, so nothing is lost but that unfinished entry."""
    import sys
    import threading

    busy = [t.name for t in threading.enumerate()
            if t.is_alive() and t.name in ("bnviz-tour", "bnviz-kernels")]
    if busy:
        worker.log.info("worker %s leaves with %s still running", worker.pid, ", ".join(busy))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


#: The signals that stop a worker. Blocked in the master around each worker's fork, and in
#: the worker until its own handlers are in place (post_worker_init): a worker forked from the
#: preloaded app answers within milliseconds, so a stop sent as the first answer comes (a
#: terminal's Ctrl-C, a test's SIGTERM to the group, the master's SIGTERM to a worker it just
#: forked) often reached a worker that still had the master's handlers, which queued it where
#: no one looks: the worker served on, and the stop waited the 30 s graceful_timeout for it.
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGQUIT}
os.register_at_fork(after_in_parent=lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK,
                                                                   STOP_SIGNALS))


def pre_fork(server, worker):  # noqa: ARG001 - gunicorn's hook signature
    """Before each fork of a worker: the stop signals blocked until the worker's handlers are
    in place (STOP_SIGNALS; the master unblocks them as soon as the fork returns), and what
    the master has built (the app, torch, Dash) moved to the collector's permanent
    generation, so that a worker's collections never write to the pages it shares with the
    master and its siblings (each write copies a page)."""
    import gc

    gc.freeze()
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def post_worker_init(worker):
    """In each forked worker, its handlers in place: a stop that came meanwhile is delivered
    now, and unless it came, what the master held until the fork starts (torch's threads,
    the background threads the app's import asked for: bnviz.server.background.start_held)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if worker.alive:
        background.start_held()
