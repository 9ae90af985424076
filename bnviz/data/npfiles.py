"""Reading a user's .npy and .npz files: numeric arrays only, in bnviz's words.

numpy's own messages name its internals and, for a file holding Python objects, suggest
loading it with ``allow_pickle=True``: an unsafe load bnviz never does and never suggests.
Every place that reads a user's NumPy file (networks, data, images, planes) reads it here.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

__all__ = ["NPY_MAGIC", "ZIP_MAGIC", "read_numpy"]

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def read_numpy(path: str | Path) -> np.ndarray | np.lib.npyio.NpzFile:
    """The array of an .npy, or the open archive of an .npz (close it, or use ``with``);
    ValueError naming the file, in one line, for anything else: missing, unreadable, empty,
    not a NumPy file, or holding Python objects."""
    path = Path(path)
    name = path.name
    try:
        with open(path, "rb") as f:
            magic = f.read(len(NPY_MAGIC))
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: a directory, not a file") from None
    except OSError as exc:
        raise ValueError(f"{name}: cannot read the file ({exc.strerror or exc})") from None
    if not magic:
        raise ValueError(f"{name}: the file is empty")
    if magic != NPY_MAGIC and magic[:4] != ZIP_MAGIC:
        raise ValueError(f"{name}: not a NumPy file (.npy or .npz: numpy.save or numpy.savez "
                         "writes one)")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, EOFError, OSError, zipfile.BadZipFile) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "pickle" in text.lower():
            raise ValueError(f"{name}: it holds Python objects, which bnviz never loads: "
                             "save numeric arrays") from None
        if isinstance(exc, EOFError | zipfile.BadZipFile):
            raise ValueError(f"{name}: the file is truncated or damaged") from None
        raise ValueError(f"{name}: not a readable NumPy file ({text[:80]})") from None
