"""Run a built image as a container runtime would, without one (issue 33).

On machines with no Docker daemon, and where ``podman run`` cannot start a container (crun and
cgroups in hybrid mode), an image is still run faithfully from its root: ``podman create`` and
``podman mount`` give the container's root file system (its own writable layer, which ``podman
diff`` reads afterwards), /dev and /proc are mounted into it, and the image's command runs
there with ``chroot``, as the image's USER, with its ENV and WORKDIR. The network is the
host's: the test binds the server to loopback on a port of its own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

#: The container tool that built the image (make image: Docker's images are not run here).
TOOL = shutil.which("podman") or shutil.which("buildah")


def _run(*argv: str, check: bool = True) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {proc.stderr.strip()[-1000:]}")
    return proc.stdout.strip()


@dataclass
class ImageRoot:
    """A created container of the image, its root mounted on the host."""

    image: str
    container: str
    root: Path
    config: dict  # the image's Config: User, Env, WorkingDir, Cmd, Healthcheck, Volumes

    @property
    def user(self) -> tuple[int, int, str]:
        """(uid, gid, home) of the image's USER, read from the image's /etc/passwd."""
        name = self.config.get("User") or "root"
        for line in (self.root / "etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == name or fields[2] == name:
                return int(fields[2]), int(fields[3]), fields[5]
        raise LookupError(f"user {name!r} is not in the image's /etc/passwd")

    def env(self, **extra: str) -> dict[str, str]:
        """The image's ENV (and HOME, as a runtime sets it), then ``extra``."""
        env = dict(item.split("=", 1) for item in self.config.get("Env") or [])
        env.setdefault("HOME", self.user[2])
        return env | extra

    def argv(self, command: list[str], **extra_env: str) -> list[str]:
        """``command`` run in the root, as the image's USER, in its WORKDIR, with its ENV."""
        uid, gid, _ = self.user
        workdir = self.config.get("WorkingDir") or "/"
        return ["chroot", f"--userspec={uid}:{gid}", "--groups=", str(self.root),
                "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in self.env(**extra_env).items()),
                "/bin/sh", "-c", 'cd "$0" && exec "$@"', workdir, *command]

    @property
    def healthcheck(self) -> list[str]:
        """The HEALTHCHECK's command (exec form: CMD, or CMD-SHELL through sh -c)."""
        test = (self.config.get("Healthcheck") or {}).get("Test") or []
        if test[:1] == ["CMD"]:
            return test[1:]
        if test[:1] == ["CMD-SHELL"]:
            return ["/bin/sh", "-c", test[1]]
        raise LookupError(f"the image has no HEALTHCHECK command: {test}")

    def _diff(self) -> dict:
        out = _run(TOOL, "diff", "--format", "json", self.container)
        return json.loads(out) if out else {}

    def changed(self) -> list[str]:
        """The paths the container changed or added in its root (``podman diff``)."""
        data = self._diff()
        return sorted({*data.get("changed", []), *data.get("added", [])})

    def added(self) -> set[str]:
        """The paths the container added to its root."""
        return set(self._diff().get("added", []))


def start_piped(argv: list[str], log: Path) -> subprocess.Popen:
    """Start ``argv`` in a session of its own with its output on a pipe, as a container
    runtime gives it (nginx, as a user, reopens /dev/stdout: a pipe it may, a root-owned file
    it may not); a thread copies the pipe into ``log``."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)

    def copy() -> None:
        with open(log, "ab", buffering=0) as out:
            for chunk in iter(lambda: proc.stdout.read1(65536), b""):
                out.write(chunk)

    threading.Thread(target=copy, daemon=True).start()
    return proc


def image_config(image: str) -> dict:
    """The image's Config, with its HEALTHCHECK where the tool keeps it beside (podman)."""
    data = json.loads(_run(TOOL, "image", "inspect", image))[0]
    config = dict(data["Config"])
    config.setdefault("Healthcheck", data.get("Healthcheck") or data.get("HealthCheck"))
    return config


def image_size(image: str) -> int:
    return int(json.loads(_run(TOOL, "image", "inspect", image))[0]["Size"])


def mount_image(image: str) -> ImageRoot:
    """Create a container of ``image`` and mount its root, /dev and /proc."""
    container = _run(TOOL, "create", image)
    try:
        root = Path(_run(TOOL, "mount", container))
        _run("mount", "--rbind", "/dev", str(root / "dev"))
        _run("mount", "-t", "proc", "proc", str(root / "proc"))
    except Exception:
        _run(TOOL, "rm", "-f", container, check=False)
        raise
    return ImageRoot(image, container, root, image_config(image))


def unmount_image(img: ImageRoot) -> None:
    """Unmount /proc and /dev, the root, and remove the container."""
    _run("umount", str(img.root / "proc"), check=False)
    _run("umount", "-R", str(img.root / "dev"), check=False)
    _run(TOOL, "umount", img.container, check=False)
    _run(TOOL, "rm", "-f", img.container, check=False)
