"""MP4 movies (``bnviz train --movie run.mp4``): H.264 written by ffmpeg, with no heavy import
here, so that the command line can check for ffmpeg before it loads torch or matplotlib.

The ffmpeg is the one the ``video`` extra's imageio-ffmpeg wheel ships (built with libx264),
else the PATH's; without either an MP4 is refused with :data:`NO_FFMPEG`, one line naming the
pip command (a GIF needs neither)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from bnviz.extras import MissingExtra, pip_command

__all__ = ["NO_FFMPEG", "encode_mp4", "ffmpeg"]

#: Why there is no MP4, in one line.
NO_FFMPEG = (f"an MP4 needs ffmpeg: {pip_command('video')} (or put ffmpeg on the PATH), or "
             "write a .gif")


def ffmpeg() -> str | None:
    """The ffmpeg to write an MP4 with: the one the imageio-ffmpeg wheel ships (the ``video``
    extra), else the PATH's; None without either."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):  # no wheel, or one without a binary for here
        return shutil.which("ffmpeg")


def encode_mp4(pngs: list[bytes], fps: int, path: Path) -> None:
    """PNG pictures as an H.264 MP4 (yuv420p, even sizes: what slides and browsers play).
    MissingExtra (:data:`NO_FFMPEG`) when there is no ffmpeg; OSError (one line) when it
    fails (say, one without libx264)."""
    exe = ffmpeg()
    if exe is None:
        raise MissingExtra(NO_FFMPEG, name="imageio_ffmpeg")
    run = subprocess.run([exe, "-y", "-loglevel", "error", "-f", "image2pipe", "-framerate",
                          str(fps), "-i", "-", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2",
                          "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path)],
                         input=b"".join(pngs), capture_output=True, timeout=600, check=False)
    if run.returncode != 0:
        raise OSError(f"ffmpeg failed: {run.stderr.decode(errors='replace').strip()[:200]}")
