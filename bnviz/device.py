"""The one place that decides where torch computations run.

Every torch path in bnviz takes its device from :func:`pick_device`, so a deployment can
force the CPU (or one GPU) with ``BNVIZ_DEVICE`` and tests can run every path on the CPU.
"""

from __future__ import annotations

import os

import torch

__all__ = ["pick_device"]


def pick_device(override: str | None = None) -> torch.device:
    """Return cuda when available, else cpu; ``override`` or ``BNVIZ_DEVICE`` wins.

    Raises ValueError for a device string torch does not understand, or for cuda asked on a
    machine without it (a clear message rather than a crash deep inside a kernel).
    """
    name = override if override is not None else os.environ.get("BNVIZ_DEVICE", "").strip()
    if not name:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:  # torch raises RuntimeError for unknown device strings
        raise ValueError(f"unknown device {name!r} (BNVIZ_DEVICE): {exc}") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device {name!r}: bnviz runs on cpu or cuda[:N]")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but CUDA is not available here")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"device {name!r}: this machine has {torch.cuda.device_count()} GPU(s)")
    return device
