"""A slice job's tile worker that dies the first time it has cut a given tile (SIGKILL, as the
kernel's OOM killer kills): what tests/slices/test_tiled_job.py does to the tile pool.  A
module of its own, on the tests' path: the pool's worker processes import it by name."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any


def die_once(marker: str, victim: int, keep: Callable[[int, Any], Any], index: int,
             tile: Any) -> Any:
    """``keep(index, tile)``, but the first time tile ``victim`` comes (no file ``marker``
    yet), the process kills itself instead, before anything of the tile is kept."""
    if index == victim:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    return keep(index, tile)
