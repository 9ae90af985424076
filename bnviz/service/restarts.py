"""When the stack (:mod:`bnviz.server.stack`) restarts a child that died, and when it gives
up: exponential backoff per child, and a restart loop is a failure.

A child that dies is started again after 0.5 s, then 1, 2, 4 and 8 s while it keeps dying
within ``window`` seconds of its last start; a child that dies ``limit`` times within the
window is broken (a bad setting, a full disk, a port taken), and the stack stops rather than
spin. A child that ran longer than the window starts over at 0.5 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RestartPolicy"]


@dataclass
class RestartPolicy:
    """Per child name, the times it was restarted (see the module docstring)."""

    limit: int = 5
    window: float = 60.0
    first_delay: float = 0.5
    max_delay: float = 8.0
    _restarts: dict[str, list[float]] = field(default_factory=dict)

    def delay(self, name: str, now: float) -> float | None:
        """Seconds to wait before starting ``name`` again, having died at ``now``; None when
        it died ``limit`` times within the window (stop the stack)."""
        recent = [t for t in self._restarts.get(name, []) if now - t < self.window]
        if len(recent) >= self.limit:
            return None
        self._restarts[name] = [*recent, now]
        return min(self.first_delay * 2 ** len(recent), self.max_delay)
