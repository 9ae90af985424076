"""``bnviz serve``: the production stack on one machine, the same as the container runs.

Four processes under one small supervisor (this process):

* **gunicorn** (``gunicorn -c gunicorn.conf.py app:server``) on a unix socket in a private
  run directory: the dashboard, its workers warmed up before they accept a request; the
  dashboard's files are the checkout's in the current folder, else the installed wheel's
  (:mod:`bnviz.service.webapp`), so ``pip install 'bnviz[web]'`` serves from any folder;
* a second, small **gunicorn** for ``/healthz`` alone (:mod:`bnviz.server.health_app`, one
  worker, two threads), so that the health check never waits behind the dashboard's busy
  threads (with 20 clients on heavy views it did: 13 s median);
* the **job worker** (``python -m bnviz worker --idle-exit 0``: the local pool, or Celery with
  ``BNVIZ_BROKER_URL``), left out with ``--no-worker`` where the worker runs elsewhere
  (compose's ``worker`` service);
* **nginx** in front, on ``BNVIZ_HOST:BNVIZ_PORT``, opened only once gunicorn answers
  ``/healthz``. It buffers requests and responses, so a slow or malicious client holds an nginx
  connection, never one of gunicorn's few threads; it caps bodies and header/body time-outs and
  limits each client address (429). Its config is rendered from ``nginx.conf.template``.

Every path nginx writes (pid, temp dirs, cache) lies in the run directory, its errors go to
stderr, its access log through a pipe of the stack's own to stdout (an image's USER may not
reopen a runtime's stdout), so it runs unprivileged and as root alike. SIGTERM or SIGINT stops
the three gracefully (nginx QUIT, the gunicorns and the worker TERM) and exits 0. A child that
dies on its own is started again with backoff (:class:`~bnviz.service.restarts.RestartPolicy`);
one that keeps dying stops the others and exits 1. Nothing here imports torch: the supervisor
stays small.

``bnviz serve --no-nginx`` is what ``make run`` runs: gunicorn alone on
``BNVIZ_HOST:BNVIZ_PORT`` (this process becomes it), without nginx or a supervised worker (a
web process starts the local worker when a job is queued).
"""

from __future__ import annotations

import argparse
import ctypes
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bnviz.config import SETTINGS, SettingError, setting
from bnviz.extras import MissingExtra
from bnviz.jobs.local import MANAGED_ENV
from bnviz.service import nginx
from bnviz.service.nginx import AccessLogPipe, listen_address, private_socket_dir
from bnviz.service.restarts import RestartPolicy
from bnviz.service.webapp import WebFiles, find_web_files, gunicorn_argv, require_web_extra

__all__ = ["ServeError", "Stack", "become_subreaper", "find_nginx", "find_web",
           "run_serve"]

#: Where Debian's nginx lives when /usr/sbin is not on PATH (a plain user's shell).
DEBIAN_NGINX = "/usr/sbin/nginx"
#: Seconds gunicorn gets to boot its workers (imports, warm-up) before serve gives up.
READY_SECONDS = 180.0
#: Seconds each child gets to stop gracefully before it is killed.
STOP_SECONDS = {"nginx": 15.0, "gunicorn": 40.0, "health": 10.0, "worker": 15.0}


class ServeError(RuntimeError):
    """Why the stack cannot start: one line for the operator."""


def find_nginx() -> str:
    """The nginx executable: ``BNVIZ_NGINX`` when set, else ``nginx`` on PATH, else Debian's
    /usr/sbin/nginx."""
    named = os.environ.get("BNVIZ_NGINX", "").strip()
    if named:
        if os.path.isfile(named) and os.access(named, os.X_OK):
            return named
        raise ServeError(f"BNVIZ_NGINX={named!r} is not an executable file")
    found = shutil.which("nginx")
    if found is None and os.access(DEBIAN_NGINX, os.X_OK):
        found = DEBIAN_NGINX
    if found is None:
        raise ServeError("nginx not found: install it (Debian: apt-get install nginx) or set "
                         "BNVIZ_NGINX to its path")
    return found


def find_web() -> WebFiles:
    """The dashboard to serve, its packages installed (:mod:`bnviz.service.webapp`): the
    checkout in the current folder (the container's /app), else the checkout this bnviz
    package lives in (an editable install), else the installed wheel's files."""
    try:
        require_web_extra()
        return find_web_files()
    except (MissingExtra, FileNotFoundError) as exc:
        raise ServeError(str(exc)) from None


def _check_port_free(host: str, port: int) -> None:
    """Refuse early, in one line, a port another process holds (nginx would fail after
    gunicorn's slow start)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ServeError(f"cannot listen on {listen_address(host, port)}: "
                             f"{exc.strerror or exc}") from None


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def _answers(socket_path: Path) -> bool:
    """gunicorn answers /healthz on its socket (a worker has imported and warmed the app)."""
    conn = _UnixHTTPConnection(str(socket_path), timeout=5)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _say(text: str) -> None:
    print(f"bnviz serve: {text}", file=sys.stderr, flush=True)


class Stack:
    """nginx, gunicorn and the job worker, started in that order of readiness and stopped
    together (see the module docstring)."""

    def __init__(self, host: str, port: int, web: WebFiles, worker: bool = True):
        self.host, self.port, self.web, self.worker = host, port, web, worker
        self.nginx = find_nginx()
        self.children: dict[str, subprocess.Popen] = {}
        self.stopping = False
        self.run_dir = Path(tempfile.mkdtemp(prefix="bnviz-serve-"))
        # nginx's workers (nobody, under root) must reach the socket and the temp dirs
        os.chmod(self.run_dir, 0o755)
        self.socket_dir = private_socket_dir(self.run_dir)
        self.socket = self.socket_dir / "gunicorn.sock"
        self.health_socket = self.socket_dir / "health.sock"
        # one access log pipe for the stack's life (nginx restarted writes to it too)
        self.access_log = None if os.environ.get("BNVIZ_ACCESS_LOG") == "0" else AccessLogPipe()

    # -- starting -------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None,
               cwd: Path | None = None, pass_fds: tuple[int, ...] = ()) -> None:
        self.children[name] = subprocess.Popen(argv, cwd=cwd or self.web.app_dir, env=env,
                                               stdin=subprocess.DEVNULL, pass_fds=pass_fds,
                                               preexec_fn=_end_with_parent)

    def _start_gunicorn(self) -> None:
        # nginx writes the one access log (with the client's address, and the 413s and 429s
        # gunicorn never sees); gunicorn is reached only through nginx, so the app takes the
        # client's address from X-Forwarded-For (BNVIZ_BEHIND_PROXY, bnviz.service.clients)
        env = dict(os.environ, BNVIZ_BIND=f"unix:{self.socket}", BNVIZ_ACCESS_LOG="0",
                   BNVIZ_BEHIND_PROXY="1", **self._worker_env())
        self._spawn("gunicorn", gunicorn_argv(self.web), env)

    def _start_health(self) -> None:
        # run from the run directory, where gunicorn finds no gunicorn.conf.py of the app's
        env = dict(os.environ, BNVIZ_WEB_SOCKET=str(self.socket), **self._worker_env())
        self._spawn("health", [sys.executable, "-m", "gunicorn", "--bind",
                               f"unix:{self.health_socket}", "--workers", "1", "--threads", "2",
                               "--worker-class", "gthread", "--timeout", "30",
                               "--no-control-socket", "bnviz.server.health_app:app"],
                    env, cwd=self.run_dir)

    def _worker_env(self) -> dict[str, str]:
        """The web processes start no local worker of their own where this stack runs one
        (they would race its restart, and outlive the stack)."""
        return {MANAGED_ENV: "1"} if self.worker else {}

    def _start_worker(self) -> None:
        if not os.environ.get("BNVIZ_BROKER_URL", "").strip():
            from bnviz.jobs.local import local_worker_pid

            pid = local_worker_pid()
            if pid is not None:  # not ours: it would outlive this stack's stop
                raise ServeError(f"a local job worker this stack did not start runs for this "
                                 f"BNVIZ_HOME (pid {pid}): stop it first (kill {pid}), or "
                                 "serve with --no-worker")
        self._spawn("worker", [sys.executable, "-m", "bnviz", "worker", "--idle-exit", "0"])

    def _start_nginx(self) -> None:
        conf, log = self.run_dir / "nginx.conf", self.access_log
        fds = (log.fd,) if log else ()
        conf.write_text(nginx.render_nginx_conf(self.run_dir, self.socket, self.host, self.port,
                                                log.path if log else None, self.health_socket))
        argv = [self.nginx, "-e", "stderr", "-p", str(self.run_dir), "-c", str(conf)]
        test = subprocess.run([*argv, "-q", "-t"], capture_output=True, text=True, pass_fds=fds)
        if test.returncode != 0:
            raise ServeError("nginx refused its config: " +
                             " | ".join(test.stderr.strip().splitlines()[-2:]))
        self._spawn("nginx", argv, pass_fds=fds)

    def _reap(self) -> None:
        """Collect every ended child: ours (their exit codes) and, as a container's PID 1,
        the orphans the kernel hands to us (or they would stay zombies)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for proc in self.children.values():
                if proc.pid == pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)

    def _died(self) -> str | None:
        name = self._dead_child()
        return None if name is None else f"{name} exited with code " \
            f"{self.children[name].returncode}"

    def _dead_child(self) -> str | None:
        self._reap()
        return next((name for name, proc in self.children.items() if proc.poll() is not None),
                    None)

    def _restart(self, name: str) -> None:
        """Start the dead child ``name`` again (a gunicorn binds its socket anew)."""
        if name in ("gunicorn", "health"):
            (self.socket if name == "gunicorn" else self.health_socket).unlink(missing_ok=True)
        {"gunicorn": self._start_gunicorn, "health": self._start_health,
         "worker": self._start_worker, "nginx": self._start_nginx}[name]()

    def start(self) -> None:
        """Start the gunicorns and the worker, wait until both gunicorns answer, then open the
        public port (nginx). ServeError when something cannot start."""
        self._start_gunicorn()
        self._start_health()
        if self.worker:
            self._start_worker()
        deadline = time.monotonic() + READY_SECONDS
        while not all(path.exists() and _answers(path)
                      for path in (self.socket, self.health_socket)):
            died = self._died()
            if died or self.stopping:
                raise ServeError(died or "stopped while starting")
            if time.monotonic() > deadline:
                raise ServeError(f"gunicorn did not answer within {READY_SECONDS:.0f} s")
            time.sleep(0.2)
        self._start_nginx()
        while True:  # nginx is up once its port accepts
            try:
                socket.create_connection(("127.0.0.1" if self.host in ("0.0.0.0", "::", "")
                                          else self.host, self.port), timeout=1).close()
                break
            except OSError:
                died = self._died()
                if died or self.stopping:
                    raise ServeError(died or "stopped while starting") from None
                time.sleep(0.05)
        pids = ", ".join(f"{n} {p.pid}" for n, p in self.children.items())
        _say(f"serving http://{listen_address(self.host, self.port)} ({pids}; run directory "
             f"{self.run_dir})")

    # -- running and stopping ---------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stopping = True

    def serve(self) -> int:
        """Run until SIGTERM/SIGINT (exit 0) or until a child dies (exit 1)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        code, policy = 0, RestartPolicy()
        become_subreaper()
        try:
            self.start()
            while not self.stopping:
                name = self._dead_child()
                if name is not None:
                    died = f"{name} exited with code {self.children[name].returncode}"
                    wait = policy.delay(name, time.monotonic())
                    if wait is None:
                        _say(f"{died} {policy.limit} times within {policy.window:.0f} s: "
                             "stopping")
                        code = 1
                        break
                    _say(f"{died}: starting it again in {wait:g} s")
                    time.sleep(wait)
                    self._restart(name)
                    continue
                time.sleep(0.25)
        except ServeError as exc:
            if not self.stopping:  # a stop asked for while starting is a clean stop
                _say(str(exc))
                code = 1
        finally:
            self.stop()
        return code

    def stop(self) -> None:
        """nginx first (QUIT: it finishes the requests in flight, which still need gunicorn),
        then gunicorn and the worker (TERM: graceful); whatever outlives its grace is killed.
        The run directory is removed."""
        for names, sig in ((("nginx",), signal.SIGQUIT),
                           (("gunicorn", "health", "worker"), signal.SIGTERM)):
            running = [n for n in names if n in self.children]
            for name in running:
                _signal(self.children[name], sig)
            for name in running:
                proc = self.children[name]
                try:
                    proc.wait(STOP_SECONDS[name])
                except subprocess.TimeoutExpired:
                    _say(f"{name} did not stop within {STOP_SECONDS[name]:.0f} s: killed")
                    _signal(proc, signal.SIGKILL)
                    proc.wait()
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if self.children:
            _say("stopped (" + ", ".join(f"{n} {p.returncode}" for n, p in
                                         self.children.items()) + ")")


def _prctl():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # Linux's C library
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _end_with_parent() -> None:
    """In a child, before it runs: SIGTERM it when this supervisor dies, even by SIGKILL or
    the OOM killer, so that a dead supervisor never leaves nginx or gunicorn serving
    unsupervised (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux's
    PR_SET_CHILD_SUBREAPER): a job process whose worker was killed is handed to the stack,
    whose :meth:`Stack._reap` collects it when it ends, instead of staying a zombie under a
    PID 1 that reaps nothing. Returns whether it took effect."""
    return _PRCTL is not None and _PRCTL(36, 1, 0, 0, 0) == 0  # 36: PR_SET_CHILD_SUBREAPER


def _signal(proc: subprocess.Popen, sig: int) -> None:
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass


def _become_gunicorn(web: WebFiles, host: str, port: int) -> None:
    """``--no-nginx``: this process becomes the dashboard's gunicorn on host:port."""
    os.chdir(web.app_dir)
    argv = gunicorn_argv(web)
    os.execve(argv[0], argv, dict(os.environ, BNVIZ_BIND=listen_address(host, port)))


def run_serve(args: argparse.Namespace) -> int:
    """``bnviz serve``: exit 0 after a clean stop, 1 when a part failed, 2 when the stack
    cannot start (missing nginx or the web extra, a bad setting, a port in use): one line
    each."""
    host = os.environ.get("BNVIZ_HOST", "").strip() or "127.0.0.1"
    try:
        for s in SETTINGS.values():
            s.read()
        port = int(setting("BNVIZ_PORT"))
        web = find_web()
        _check_port_free(host, port)
        if args.no_nginx:
            _become_gunicorn(web, host, port)
        stack = Stack(host, port, web, worker=not args.no_worker)
    except (ServeError, SettingError) as exc:
        _say(str(exc))
        return 2
    return stack.serve()
