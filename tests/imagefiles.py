"""Small image data sets in their real file formats, written by the tests (never downloaded):
CIFAR-10/100 python pickle batches, SVHN's MATLAB files, and an ImageNet-layout folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bnviz.data.imagedata import cifar_batch_bytes

#: The image folder write_folder writes by default (an imagenette layout).
FOLDER = "imagenette-mini"


def _images(rng: np.random.Generator, n: int, classes: int, size: int = 32):
    """Images whose class shows in their mean colour (so a network can learn something)."""
    y = rng.integers(0, classes, n)
    base = (y[:, None, None, None] * (200 // max(classes - 1, 1))).astype(np.int64)
    x = np.clip(base + rng.integers(0, 56, (n, 3, size, size)), 0, 255).astype(np.uint8)
    return x, y


def write_cifar10(root: Path, n_per_batch: int = 20, seed: int = 0) -> Path:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        x, y = _images(rng, n_per_batch, 10)
        (folder / name).write_bytes(cifar_batch_bytes(x, y))
    return folder


def write_cifar100(root: Path, n_train: int = 60, n_test: int = 20, seed: int = 1) -> Path:
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, n in (("train", n_train), ("test", n_test)):
        x, y = _images(rng, n, 100)
        (folder / name).write_bytes(cifar_batch_bytes(x, y, "fine_labels"))
    return folder


def write_svhn(root: Path, n_train: int = 60, n_test: int = 20, seed: int = 2) -> Path:
    from scipy.io import savemat

    folder = root / "svhn"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name, n in (("train_32x32.mat", n_train), ("test_32x32.mat", n_test)):
        x, y = _images(rng, n, 10)
        labels = np.where(y == 0, 10, y).reshape(-1, 1).astype(np.uint8)  # SVHN: 10 means 0
        savemat(folder / name, {"X": x.transpose(2, 3, 1, 0), "y": labels})
    return folder


def write_folder(root: Path, name: str = FOLDER, classes: tuple[str, ...] =
                 ("n01440764", "n02102040", "n02979186"), per_class: int = 6,
                 size: int = 40, seed: int = 3) -> Path:
    from PIL import Image

    rng = np.random.default_rng(seed)
    for split, n in (("train", per_class), ("val", max(2, per_class // 2))):
        for i, c in enumerate(classes):
            d = root / name / split / c
            d.mkdir(parents=True, exist_ok=True)
            for j in range(n):
                pixels = np.clip(i * 90 + rng.integers(0, 60, (size, size + 8, 3)), 0, 255)
                ext = ".JPEG" if j % 2 else ".png"
                Image.fromarray(pixels.astype(np.uint8)).save(d / f"{c}_{j}{ext}")
    return root / name


def write_all(root: Path) -> None:
    write_cifar10(root)
    write_cifar100(root)
    write_svhn(root)
    write_folder(root)


def digits_sizes() -> tuple[int, int]:
    """Training and test sizes of bnviz's digits split (1/4 of each class is for testing),
    from scikit-learn's data directly."""
    from sklearn.datasets import load_digits

    y = load_digits().target
    n_test = sum(int((y == c).sum()) // 4 for c in np.unique(y))
    return len(y) - n_test, n_test
