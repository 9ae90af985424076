"""Networks uploaded to the /slice page: an ONNX file, or a safetensors file of one of bnviz's
architectures.  Each is checked by loading it (nothing is kept when that fails: one line says
why), then kept content-addressed beside the other uploads, under their quota and retention
(:func:`bnviz.views.training_cache.evict_uploads`), as ``up-<hash>``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from bnviz.caps import ARCHS, SLICE_MAX_UPLOAD_BYTES
from bnviz.config import bnviz_home
from bnviz.service.disk import keep_checked, touch
from bnviz.slices.graph import SliceNet

__all__ = ["open_upload", "save_upload"]

_REFERENCE = re.compile(r"up-([0-9a-f]{24})")


def _folder() -> Path:
    return bnviz_home() / "uploads"


def _path(digest: str, arch: str | None) -> Path:
    return _folder() / (f"slice-{digest}.onnx" if arch is None else
                        f"slice-{digest}-{arch}.safetensors")


def save_upload(data: bytes, filename: str, arch: str | None = None) -> tuple[str, SliceNet]:
    """Keep an uploaded network: ``filename`` ending in .onnx, or .safetensors with ``arch``.
    Returns its reference and the network; ValueError (one line) for a file that does not
    fit, and then nothing is kept."""
    name = str(filename or "").lower()
    if len(data) > SLICE_MAX_UPLOAD_BYTES:
        raise ValueError(f"the file is over {SLICE_MAX_UPLOAD_BYTES // 2**20} MB")
    if name.endswith(".onnx"):
        arch = None
    elif name.endswith(".safetensors"):
        if arch not in ARCHS:
            raise ValueError(f"a .safetensors file needs its architecture: one of "
                             f"{', '.join(ARCHS)}")
    else:
        raise ValueError("upload an .onnx file, or a .safetensors file of a bnviz architecture")
    digest = hashlib.sha256(data).hexdigest()[:24]
    net = keep_checked(_path(digest, arch), data, lambda path: _open(path, arch))
    from bnviz.views.training_cache import evict_uploads

    evict_uploads()
    return f"up-{digest}", net


def _open(path: Path, arch: str | None) -> SliceNet:
    from bnviz.slices.sources import open_network

    if arch is None:
        return open_network(model=path)
    return open_network(weights=path, arch=arch)


def open_upload(reference: str) -> SliceNet:
    """The network kept as ``reference`` (ValueError when it is not one, or gone)."""
    found = _REFERENCE.fullmatch(str(reference))
    if found is None:
        raise ValueError("not an uploaded network")
    paths = sorted(_folder().glob(f"slice-{found[1]}*"))
    paths = [p for p in paths if p.suffix in (".onnx", ".safetensors")]
    if not paths:
        raise ValueError("this uploaded network is no longer on the server: upload it again")
    path = paths[0]
    touch(path)
    arch = None if path.suffix == ".onnx" else path.stem.rsplit("-", 1)[1]
    return _open(path, arch)
