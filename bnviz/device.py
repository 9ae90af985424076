"""The one place that decides where torch computations run.

Every torch path in bnviz takes its device from :func:`pick_device`, so a deployment can
force the CPU (or one GPU) with ``BNVIZ_DEVICE`` and tests can run every path on the CPU.
:func:`device_name` makes the same choice as a string without importing torch where it can
(no GPU driver on the machine, or the CPU asked for): the CPU geometry of ``bnviz partition``
never waits the 1-3 s that ``import torch`` takes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["device_name", "gpu_driver_present", "pick_device"]

#: Files one of which exists wherever torch could see a GPU: NVIDIA's driver, ROCm's kernel
#: driver (torch's "cuda" on AMD), WSL's GPU paravirtualisation.
GPU_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd",
                    "/dev/dxg")


def gpu_driver_present() -> bool:
    """Whether this machine has a GPU driver torch could use (without importing torch)."""
    return any(Path(f).exists() for f in GPU_DRIVER_FILES)


def device_name(override: str | None = None) -> str:
    """:func:`pick_device`'s choice as a string ("cpu", "cuda", "cuda:1"); torch is imported
    only where a GPU is possible or asked for.  Raises ValueError as pick_device does."""
    name = override if override is not None else os.environ.get("BNVIZ_DEVICE", "").strip()
    if name == "cpu" or (not name and not gpu_driver_present()):
        return "cpu"
    return str(pick_device(override))


def pick_device(override: str | None = None) -> torch.device:
    """Return cuda when available, else cpu; ``override`` or ``BNVIZ_DEVICE`` wins.

    Raises ValueError for a device string torch does not understand, or for cuda asked on a
    machine without it (a clear message rather than a crash deep inside a kernel).
    """
    import torch

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
