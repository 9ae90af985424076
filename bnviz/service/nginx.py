"""nginx's part of ``bnviz serve`` (:mod:`bnviz.server.stack`): its config, rendered from
``nginx.conf.template`` with the settings, the user its workers run as, and the private
directory of the unix sockets it reaches gunicorn by, each socket published there
(:func:`publish_socket`) only once its gunicorn answers."""

from __future__ import annotations

import grp
import os
import pwd
import re
import resource
import sys
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from bnviz.config import setting
from bnviz.service.headers import NGINX_ERROR_HEADERS

__all__ = ["listen_address", "nginx_worker_ids", "private_socket_dir", "publish_socket",
           "render_nginx_conf"]


def listen_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def nginx_worker_ids() -> tuple[int, int]:
    """(uid, gid) nginx's workers run as: this process's, or nobody's under root
    (:func:`_user_line`)."""
    if os.geteuid() == 0:
        try:
            nobody = pwd.getpwnam("nobody")
            return nobody.pw_uid, nobody.pw_gid
        except KeyError:
            pass
    return os.geteuid(), os.getegid()


def private_socket_dir(run_dir: Path) -> Path:
    """The directory of the stack's unix sockets, so that no other local user can reach
    gunicorn past nginx (its rate limits, body caps and X-Forwarded-For, which the app trusts
    only behind this hop): this user's, 0700 where nginx's workers run as this user; under
    root, whose nginx workers are nobody, 0710 with their group (they may pass, not list or
    change it). gunicorn, started by the same user, creates its sockets there."""
    path = run_dir / "sockets"
    path.mkdir(mode=0o700)
    uid, gid = nginx_worker_ids()
    if uid != os.geteuid():
        os.chown(path, -1, gid)
        os.chmod(path, 0o710)
    else:
        os.chmod(path, 0o700)  # whatever the umask
    return path


def publish_socket(booting: Path, published: Path) -> None:
    """Put the socket a gunicorn bound at ``booting`` where nginx looks for it, ``published``
    (a hard link: gunicorn unlinks its own path when it stops), once it answers: 0600 where
    nginx's workers are this user, else 0660 with their group. Until then nginx finds no
    socket there, which it takes as an error and passes the request to the other gunicorn
    (``proxy_next_upstream``), instead of queueing it behind a worker still booting."""
    uid, gid = nginx_worker_ids()
    if uid != os.geteuid():
        os.chown(booting, -1, gid)
        os.chmod(booting, 0o660)
    else:
        os.chmod(booting, 0o600)
    published.unlink(missing_ok=True)
    os.link(booting, published)


def _user_line() -> str:
    """As root, nginx's workers drop to nobody (nginx makes its temp dirs theirs)."""
    if os.geteuid() != 0:
        return ""
    try:
        nobody = pwd.getpwnam("nobody")
        return f"user nobody {grp.getgrgid(nobody.pw_gid).gr_name};"
    except KeyError:
        return "user root root;"  # a system without nobody: nothing to drop to


class AccessLogPipe:
    """Where nginx writes its access log: a pipe of this process's own, copied to its stdout.

    nginx opens a log by path. ``/dev/stdout`` reopens the process's stdout, which a user
    other than its creator may not do: a container runtime's pipe, or a file of root's, as
    the image's USER, failed with "open() /dev/stdout (13: Permission denied)" and nginx
    exited (issue 33's image test). A pipe made here belongs to this process's user, so nginx
    (started with ``pass_fds=(fd,)``) opens ``/dev/fd/<fd>``; a thread copies it to stdout."""

    def __init__(self) -> None:
        read_end, self.fd = os.pipe()
        threading.Thread(target=self._copy, args=(read_end,), name="nginx-access-log",
                         daemon=True).start()

    @property
    def path(self) -> str:
        return f"/dev/fd/{self.fd}"

    @staticmethod
    def _copy(read_end: int) -> None:
        out = sys.stdout.buffer
        while chunk := os.read(read_end, 65536):
            try:
                out.write(chunk)
                out.flush()
            except (OSError, ValueError):  # stdout closed: the log is dropped, nginx goes on
                pass


def render_nginx_conf(run_dir: Path, sockets: Path | Sequence[Path], host: str, port: int,
                      access_log: str | None = None, health_socket: Path | None = None) -> str:
    """nginx's config for this stack: the packaged template with its @NAME@ filled in from
    the arguments and the settings (rate limits, time-outs). ``sockets``: the dashboard's
    gunicorns, one upstream (a request one cannot take goes to the next). ``access_log``: the
    path nginx writes its access log to (an :class:`AccessLogPipe`'s), None for none.
    ``/healthz`` goes to ``health_socket`` (default: the first dashboard socket)."""
    sockets = [sockets] if isinstance(sockets, Path) else list(sockets)
    # a server that failed is tried again after 2 s (a restarted gunicorn is published only
    # once it answers); the one retry goes to the other
    servers = "\n        ".join(f"server unix:{path} max_fails=1 fail_timeout=2s;"
                                for path in sockets)
    template = resources.files("bnviz.service").joinpath("nginx.conf.template").read_text()
    rate = int(setting("BNVIZ_RATE_PER_ADDRESS"))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nofile = min(hard if hard != resource.RLIM_INFINITY else 65536, 65536)
    values = {
        "RUN": str(run_dir), "APP_SERVERS": servers, "LISTEN": listen_address(host, port),
        "HEALTH_SOCKET": str(health_socket or sockets[0]),
        "USER": _user_line(),
        "ACCESS_LOG": access_log or "off",
        "NOFILE": str(nofile), "CONNECTIONS": str(max(256, min(8192, nofile // 2))),
        "RATE": str(rate), "BURST": str(2 * rate),
        "JOBS_RATE": str(int(setting("BNVIZ_JOBS_RATE_PER_ADDRESS"))), "JOBS_BURST": "5",
        "CONNECTIONS_PER_ADDRESS": str(int(setting("BNVIZ_CONNECTIONS_PER_ADDRESS"))),
        "READ_TIMEOUT": str(int(setting("BNVIZ_WEB_TIMEOUT")) + 10),
        # nginx's own answers: the browser headers of bnviz.service.headers (the app's own
        # answers carry the dashboard's and pass through)
        "SECURITY_HEADERS": " ".join(f"add_header {name} \"{value}\" always;"
                                     for name, value in NGINX_ERROR_HEADERS.items()),
    }
    return re.sub(r"@([A-Z_]+)@", lambda m: values[m.group(1)], template)
