"""An image network's file, as a job keeps each arm's final network: weights and buffers (BN's
running statistics included) in safetensors (never pickle), with the arguments that rebuild
the architecture (:func:`bnviz.images.networks.build_model`) in the file's metadata.

Written here, by the training (:mod:`bnviz.images.training`); read by the slices
(:func:`bnviz.slices.torch_import.load_network`), which sit above the image experiments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = ["BUILD_KEYS", "save_network"]

#: The metadata that rebuilds a network (all strings in the safetensors header).
BUILD_KEYS = ("arch", "in_ch", "classes", "size", "mode", "affine", "width")


def save_network(model: nn.Module, path: Path, build: dict[str, Any]) -> None:
    """``model``'s weights and buffers (running statistics included) to ``path`` in
    safetensors, with the build arguments ``build`` (:data:`BUILD_KEYS`) as metadata;
    written to a temporary file and renamed, so a reader never sees half a file."""
    from safetensors.torch import save_file

    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()
               if v.dtype != torch.bool}
    meta = {k: json.dumps(build[k]) for k in BUILD_KEYS}
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    tmp.replace(path)
