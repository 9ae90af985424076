"""``bnviz serve``: the production stack on one machine, the same as the container runs.

Its processes under one small supervisor (this process):

* the dashboard's **gunicorn** (``gunicorn -c gunicorn.conf.py bnviz.web.app:server``), twice where
  ``BNVIZ_WEB_WORKERS`` is 2 or more, each with half of the workers, on unix sockets in a
  private run directory, one nginx upstream: when one dies (even ``kill -9`` of its master)
  nginx passes its requests to the other at once while it is started again (a gunicorn's
  boot is many seconds: 36 under load, all 502s with one gunicorn). A socket is published
  where nginx looks (:func:`~bnviz.service.nginx.publish_socket`) only once its gunicorn
  answers, so no request waits behind a worker still booting. The dashboard's files are the
  checkout's in the current folder, else the installed wheel's (:mod:`bnviz.service.webapp`);
* a small **gunicorn** for ``/healthz`` alone (:mod:`bnviz.server.health_app`, one worker,
  two threads), so that the health check never waits behind the dashboard's busy threads
  (with 20 clients on heavy views it did: 13 s median);
* the **job worker** (``python -m bnviz worker --idle-exit 0``: the local pool, or Celery with
  ``BNVIZ_BROKER_URL``), left out with ``--no-worker`` where the worker runs elsewhere
  (compose's ``worker`` service);
* **nginx** in front, on ``BNVIZ_HOST:BNVIZ_PORT``, opened only once the gunicorns answer
  ``/healthz``. It buffers requests and responses, so a slow or malicious client holds an nginx
  connection, never one of gunicorn's few threads; it caps bodies and header/body time-outs and
  limits each client address (429). Its config is rendered from ``nginx.conf.template``.

Every path nginx writes (pid, temp dirs, cache) lies in the run directory, its errors go to
stderr, its access log through a pipe of the stack's own to stdout (an image's USER may not
reopen a runtime's stdout), so it runs unprivileged and as root alike. What the stack's
processes create is the service's: umask 077 (files 0600, folders 0700, ``BNVIZ_HOME`` made
0700), the sockets 0600, or 0660 with the group of nginx's workers where they are another
user (root's nginx runs them as nobody). SIGTERM or SIGINT stops them all gracefully (nginx
QUIT, the gunicorns and the worker TERM) and exits 0. A child that dies on its own is started
again with backoff (:class:`~bnviz.service.restarts.RestartPolicy`); one that keeps dying
stops the others and exits 1. Each child ends with this process, even when it is killed
(:mod:`bnviz.server.children`). Nothing here imports torch: the supervisor stays small.

Why our own supervisor, not supervisord or honcho: ARCHITECTURE.md, the stack.

``bnviz serve --no-nginx`` is what ``make run`` runs: gunicorn alone on
``BNVIZ_HOST:BNVIZ_PORT`` (this process becomes it), without nginx or a supervised worker (a
web process starts the local worker when a job is queued).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bnviz.config import PRIVATE_UMASK, SETTINGS, SettingError, private_home, setting
from bnviz.extras import MissingExtra
from bnviz.jobs.local import MANAGED_ENV
from bnviz.server.children import answers, become_subreaper, end_with_parent, reap, send
from bnviz.service import nginx
from bnviz.service.nginx import AccessLogPipe, listen_address, private_socket_dir
from bnviz.service.restarts import RestartPolicy
from bnviz.service.webapp import WebFiles, find_web_files, gunicorn_argv, require_web_extra

__all__ = ["ServeError", "Stack", "become_subreaper", "find_nginx", "find_web",
           "run_serve", "web_shares"]

#: Where Debian's nginx lives when /usr/sbin is not on PATH (a plain user's shell).
DEBIAN_NGINX = "/usr/sbin/nginx"
#: Seconds a gunicorn gets to boot its workers (imports, warm-up) before it is given up on.
READY_SECONDS = 180.0
#: Seconds each kind of child gets to stop gracefully before it is killed.
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
    """The dashboard to serve (:mod:`bnviz.service.webapp`), its packages installed."""
    try:
        require_web_extra()
        return find_web_files()
    except (MissingExtra, FileNotFoundError) as exc:
        raise ServeError(str(exc)) from None


def web_shares(workers: int) -> list[int]:
    """``BNVIZ_WEB_WORKERS`` split between the dashboard's gunicorns: two halves where there
    are 2 or more (the same workers and memory as one gunicorn, and one to take the other's
    requests when it dies), else one gunicorn with the one worker."""
    return [workers] if workers < 2 else [workers - workers // 2, workers // 2]


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


def _say(text: str) -> None:
    print(f"bnviz serve: {text}", file=sys.stderr, flush=True)


def _kind(name: str) -> str:
    """A child's kind: "gunicorn" for "gunicorn-2"."""
    return name.split("-", 1)[0]


class Stack:
    """nginx, the gunicorns and the job worker, started in that order of readiness and stopped
    together (see the module docstring)."""

    def __init__(self, host: str, port: int, web: WebFiles, worker: bool = True):
        self.host, self.port, self.web, self.worker = host, port, web, worker
        self.nginx = find_nginx()
        self.children: dict[str, subprocess.Popen] = {}
        self.stopping = self.serving = False
        self.run_dir = Path(tempfile.mkdtemp(prefix="bnviz-serve-"))
        # nginx's workers (nobody, under root) pass through it to the sockets and temp dirs
        os.chmod(self.run_dir, 0o700 if nginx.nginx_worker_ids()[0] == os.geteuid()
                 else 0o711)
        self.socket_dir = private_socket_dir(self.run_dir)
        shares = web_shares(int(setting("BNVIZ_WEB_WORKERS")))
        self.shares = {f"gunicorn-{i + 1}": n for i, n in enumerate(shares)}
        # where nginx finds each gunicorn: published once it answers (_publish_ready)
        self.sockets = {name: self.socket_dir / f"{name}.sock" for name in [*self.shares,
                                                                            "health"]}
        self.booting: dict[str, float] = {}  # a gunicorn not yet published: its deadline
        self.due: dict[str, float] = {}  # a dead child: when it starts again
        # one access log pipe for the stack's life (nginx restarted writes to it too)
        self.access_log = None if os.environ.get("BNVIZ_ACCESS_LOG") == "0" else AccessLogPipe()

    # -- starting -------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None,
               cwd: Path | None = None, pass_fds: tuple[int, ...] = ()) -> None:
        self.children[name] = subprocess.Popen(argv, cwd=cwd or self.web.app_dir, env=env,
                                               stdin=subprocess.DEVNULL, pass_fds=pass_fds,
                                               preexec_fn=end_with_parent)

    def _bound(self, name: str) -> Path:
        """Where gunicorn ``name`` binds its socket (published elsewhere once it answers)."""
        return self.socket_dir / f"{name}.boot.sock"

    def _start_gunicorn(self, name: str) -> None:
        # nginx writes the one access log (with the client's address, and the 413s and 429s
        # gunicorn never sees); gunicorn is reached only through nginx, so the app takes the
        # client's address from X-Forwarded-For (BNVIZ_BEHIND_PROXY, bnviz.service.clients)
        env = dict(os.environ, BNVIZ_BIND=f"unix:{self._bound(name)}", BNVIZ_ACCESS_LOG="0",
                   BNVIZ_BEHIND_PROXY="1", BNVIZ_WEB_WORKERS=str(self.shares[name]),
                   **self._worker_env())
        self._spawn(name, gunicorn_argv(self.web), env)

    def _start_health(self) -> None:
        # run from the run directory, where gunicorn finds no gunicorn.conf.py of the app's
        web = os.pathsep.join(str(self.sockets[name]) for name in self.shares)
        env = dict(os.environ, BNVIZ_WEB_SOCKET=web, **self._worker_env())
        self._spawn("health", [sys.executable, "-m", "gunicorn", "--bind",
                               f"unix:{self._bound('health')}", "--umask", "0o177",
                               "--workers", "1", "--threads", "2",
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
        conf.write_text(nginx.render_nginx_conf(
            self.run_dir, [self.sockets[name] for name in self.shares], self.host, self.port,
            log.path if log else None, self.sockets["health"]))
        argv = [self.nginx, "-e", "stderr", "-p", str(self.run_dir), "-c", str(conf)]
        test = subprocess.run([*argv, "-q", "-t"], capture_output=True, text=True, pass_fds=fds)
        if test.returncode != 0:
            raise ServeError("nginx refused its config: " +
                             " | ".join(test.stderr.strip().splitlines()[-2:]))
        self._spawn("nginx", argv, pass_fds=fds)

    def _start(self, name: str) -> None:
        """Start child ``name``; a gunicorn's socket is published once it answers."""
        if name in self.sockets:
            self._bound(name).unlink(missing_ok=True)  # a killed gunicorn's
            self.booting[name] = time.monotonic() + READY_SECONDS
        if name in self.shares:
            self._start_gunicorn(name)
        else:
            {"health": self._start_health, "worker": self._start_worker,
             "nginx": self._start_nginx}[name]()

    def _publish_ready(self) -> None:
        """Publish the socket of each booting gunicorn that answers now; one that has not
        answered within READY_SECONDS is killed (and started again as any dead child)."""
        for name, deadline in list(self.booting.items()):
            proc = self.children[name]
            if proc.poll() is not None:
                continue
            if self._bound(name).exists() and answers(self._bound(name)):
                nginx.publish_socket(self._bound(name), self.sockets[name])
                del self.booting[name]
                if self.serving:
                    took = time.monotonic() - (deadline - READY_SECONDS)
                    _say(f"{name} answers again (pid {proc.pid}, {took:.1f} s after its start)")
            elif time.monotonic() > deadline and self.serving:
                _say(f"{name} did not answer within {READY_SECONDS:.0f} s: killed")
                send(proc, signal.SIGKILL)

    def _died(self) -> str | None:
        reap(self.children.values())
        name = next((name for name, proc in self.children.items()
                     if proc.poll() is not None), None)
        return None if name is None else f"{name} exited with code " \
            f"{self.children[name].returncode}"

    def start(self) -> None:
        """Start the gunicorns and the worker, wait until the gunicorns answer, then open the
        public port (nginx). ServeError when something cannot start."""
        for name in [*self.shares, "health", *(["worker"] if self.worker else [])]:
            self._start(name)
        deadline = time.monotonic() + READY_SECONDS
        while self.booting:
            died = self._died()
            if died or self.stopping:
                raise ServeError(died or "stopped while starting")
            if time.monotonic() > deadline:
                raise ServeError(f"gunicorn did not answer within {READY_SECONDS:.0f} s")
            self._publish_ready()
            time.sleep(0.2)
        self._start("nginx")
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
        self.serving = True
        pids = ", ".join(f"{n} {p.pid}" for n, p in self.children.items())
        _say(f"serving http://{listen_address(self.host, self.port)} ({pids}; run directory "
             f"{self.run_dir})")

    # -- running and stopping ---------------------------------------------------------------

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.stopping = True

    def _on_death(self, name: str, policy: RestartPolicy) -> bool:
        """Child ``name`` died: its socket is withdrawn at once (nginx passes its requests to
        the other gunicorn) and its start again scheduled with backoff. False when it keeps
        dying: the stack stops."""
        if name in self.sockets:
            self.sockets[name].unlink(missing_ok=True)
            self.booting.pop(name, None)
        died = f"{name} exited with code {self.children[name].returncode}"
        wait = policy.delay(name, time.monotonic())
        if wait is None:
            _say(f"{died} {policy.limit} times within {policy.window:.0f} s: stopping")
            return False
        _say(f"{died}: starting it again in {wait:g} s")
        self.due[name] = time.monotonic() + wait
        return True

    def _tick(self, policy: RestartPolicy) -> bool:
        """One round of supervision: deaths, starts due, gunicorns ready. False: stop."""
        reap(self.children.values())
        for name, proc in list(self.children.items()):
            if proc.poll() is not None and name not in self.due and \
                    not self._on_death(name, policy):
                return False
        for name, when in list(self.due.items()):
            if time.monotonic() >= when:
                del self.due[name]
                self._start(name)
        self._publish_ready()
        return True

    def serve(self) -> int:
        """Run until SIGTERM/SIGINT (exit 0) or until a child keeps dying (exit 1)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        code, policy = 0, RestartPolicy()
        become_subreaper()
        try:
            self.start()
            while not self.stopping:
                if not self._tick(policy):
                    code = 1
                    break
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
        then the gunicorns and the worker (TERM: graceful); whatever outlives its grace is
        killed. The run directory is removed."""
        for kinds, sig in ((("nginx",), signal.SIGQUIT),
                           (("gunicorn", "health", "worker"), signal.SIGTERM)):
            running = [n for n in self.children if _kind(n) in kinds]
            for name in running:
                send(self.children[name], sig)
            for name in running:
                proc, grace = self.children[name], STOP_SECONDS[_kind(name)]
                try:
                    proc.wait(grace)
                except subprocess.TimeoutExpired:
                    _say(f"{name} did not stop within {grace:.0f} s: killed")
                    send(proc, signal.SIGKILL)
                    proc.wait()
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if self.children:
            _say("stopped (" + ", ".join(f"{n} {p.returncode}" for n, p in
                                         self.children.items()) + ")")


def _become_gunicorn(web: WebFiles, host: str, port: int) -> None:
    """``--no-nginx``: this process becomes the dashboard's gunicorn on host:port."""
    os.chdir(web.app_dir)
    argv = gunicorn_argv(web)
    os.execve(argv[0], argv, dict(os.environ, BNVIZ_BIND=listen_address(host, port)))


def run_serve(args: argparse.Namespace) -> int:
    """``bnviz serve``: exit 0 after a clean stop, 1 when a part failed, 2 when the stack
    cannot start (missing nginx or the web extra, a bad setting, a port in use, a
    BNVIZ_HOME it cannot make): one line each."""
    os.umask(PRIVATE_UMASK)  # before anything is created; every child inherits it
    host = os.environ.get("BNVIZ_HOST", "").strip() or "127.0.0.1"
    try:
        for s in SETTINGS.values():
            s.read()
        port = int(setting("BNVIZ_PORT"))
        web = find_web()
        _check_port_free(host, port)
        try:
            private_home()
        except OSError as exc:
            raise ServeError(f"cannot make BNVIZ_HOME: {exc}") from None
        if args.no_nginx:
            _become_gunicorn(web, host, port)
        stack = Stack(host, port, web, worker=not args.no_worker)
    except (ServeError, SettingError) as exc:
        _say(str(exc))
        return 2
    return stack.serve()
