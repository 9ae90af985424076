"""Image data sets for the background experiments (BN paper Figures 4, 5, 10, Table 1, sec. 5).

Every data set is read from its standard file format with numpy, scipy and Pillow (no
torchvision):

* ``digits``: scikit-learn's bundled 8x8 digit images (1797 of them; always available). A
  fixed stratified split (seed 0) keeps 1/4 of each class for testing.
* ``glyphs``: 36 classes of characters (digits and capitals) in colour at 32x32, made here
  from matplotlib's fonts, the test set in fonts the training set never uses (always
  available; :mod:`bnviz.data.glyphs` says why it is the hard offline task).
* ``cifar10``: ``$BNVIZ_DATA/cifar-10-batches-py/data_batch_1..5`` and ``test_batch`` (the
  "CIFAR-10 python version" pickles).
* ``cifar100``: ``$BNVIZ_DATA/cifar-100-python/train`` and ``test`` (fine labels).
* ``svhn``: ``$BNVIZ_DATA/svhn/train_32x32.mat`` and ``test_32x32.mat`` (the cropped-digits
  MATLAB files; label 10 means the digit 0).
* ``folder:NAME``: an image folder ``$BNVIZ_DATA/NAME`` in the ImageNet/imagenette layout,
  ``train/<class>/*`` and ``val/<class>/*`` (``test/`` is accepted for ``val/``), read with
  Pillow and resized to a square ``image_size``.

The CIFAR pickles are the only pickles bnviz ever reads, only from the configured data
directory (``BNVIZ_DATA``, default ``$BNVIZ_HOME/data``), and through an unpickler that refuses
every class but the few numpy needs to rebuild an array: a tampered file cannot run code. A
user never gives a path: a data set is a name, and a folder name is one path component inside
the data directory.

Downloads are opt-in (``bnviz data download NAME``, for machines with internet): see
:mod:`bnviz.data.download`.
"""

from __future__ import annotations

import io
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bnviz.caps import MAX_FOLDER_IMAGES
from bnviz.config import bnviz_home
from bnviz.messages import brief

__all__ = ["DOWNLOADS", "IMAGE_EXTENSIONS", "STANDARD_DATASETS", "DataError", "ImageData",
           "check_available", "cifar_batch_bytes", "count_folder_images", "data_dir",
           "load_image_data", "parse_dataset_name"]

STANDARD_DATASETS: tuple[str, ...] = ("digits", "glyphs", "cifar10", "cifar100", "svhn")
IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif",
                              ".tiff", ".ppm"})
_FOLDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class DataError(ValueError):
    """A data set that is missing, malformed or not allowed: a message for the user."""


@dataclass(frozen=True)
class ImageData:
    """Images as uint8 (N, C, H, W) arrays with int64 labels; ``classes`` names them."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: tuple[str, ...]
    scale: float = 255.0  # the value of a white pixel (16 for digits)

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(s) for s in self.x_train.shape[1:])  # type: ignore[return-value]

    @property
    def num_classes(self) -> int:
        return len(self.classes)


#: name -> (url, md5 of the archive or file, what it unpacks to inside the data directory).
DOWNLOADS: dict[str, tuple[str, str, str]] = {
    "cifar10": ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                "c58f30108f718f92721af3b95e74349a", "cifar-10-batches-py"),
    "cifar100": ("https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                 "eb9058c3a382ffc7106e4002c42a8d85", "cifar-100-python"),
    "svhn": ("http://ufldl.stanford.edu/housenumbers/", "", "svhn"),
    "imagenette": ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-160.tgz",
                   "e793b78cc4c9e9a4ccc0c1155377a412", "imagenette2-160"),
}


def data_dir() -> Path:
    """``BNVIZ_DATA``, or ``$BNVIZ_HOME/data``."""
    env = os.environ.get("BNVIZ_DATA", "").strip()
    return Path(env) if env else bnviz_home() / "data"


def parse_dataset_name(name: object) -> str:
    """Check a data set name (``digits``, ``glyphs``, ``cifar10``, ``cifar100``, ``svhn`` or
    ``folder:NAME``); returns it normalised. A folder name is one plain path component."""
    if not isinstance(name, str):
        raise DataError("dataset must be a name")
    text = name.strip()
    if text.lower() in STANDARD_DATASETS:
        return text.lower()
    if text.lower().startswith("folder:"):
        folder = text[len("folder:"):]
        if not _FOLDER_NAME.match(folder) or folder in (".", ".."):
            raise DataError(f"folder:{folder!s} is not a folder name inside the data directory "
                            "(letters, digits, '.', '_', '-'; no paths)")
        return f"folder:{folder}"
    raise DataError(f"unknown dataset {brief(text)}: use one of {', '.join(STANDARD_DATASETS)} or "
                    "folder:NAME (an image folder in the data directory)")


_REQUIRED = {"cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)]
                         + ["test_batch"], "data_batch_1..5 and test_batch"),
             "cifar100": ("cifar-100-python", ["train", "test"], "train and test"),
             "svhn": ("svhn", ["train_32x32.mat", "test_32x32.mat"],
                      "train_32x32.mat and test_32x32.mat")}
_TITLES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "svhn": "SVHN"}


def check_available(name: str) -> str:
    """Raise DataError (where it looked, how to get it) unless the data set's files are in
    place; cheap (nothing is read), so a job with missing data is refused when submitted."""
    name = parse_dataset_name(name)
    root = data_dir()
    if name in _REQUIRED:
        folder, files, text = _REQUIRED[name]
        if not all((root / folder / f).is_file() for f in files):
            raise _missing(_TITLES[name], root / folder, text, name, DOWNLOADS[name][0])
    elif name.startswith("folder:"):
        base = root / name.split(":", 1)[1]
        if base.exists() and not base.resolve().is_relative_to(root.resolve()):
            raise DataError(f"{name} is outside the data directory")
        if not (base / "train").is_dir() or not any((base / s).is_dir() for s in ("val", "test")):
            raise _folder_missing(name.split(":", 1)[1], root)
    return name


def load_image_data(name: str, image_size: int = 64, max_train: int = 0) -> ImageData:
    """Load a data set by name (see the module docstring). ``max_train`` > 0 keeps the first
    ``max_train`` training images of a fixed shuffle (seed 0); ``image_size`` applies to image
    folders only. Raises DataError with where it looked and how to get the data."""
    name = parse_dataset_name(name)
    if name == "digits":
        data = _digits()
    elif name == "glyphs":
        data = _glyphs()
    elif name == "cifar10":
        data = _cifar10(data_dir())
    elif name == "cifar100":
        data = _cifar100(data_dir())
    elif name == "svhn":
        data = _svhn(data_dir())
    else:
        data = _folder(data_dir(), name.split(":", 1)[1], image_size)
    if max_train and max_train < len(data.y_train):
        keep = np.sort(np.random.default_rng(0).permutation(len(data.y_train))[:max_train])
        data = ImageData(data.name, data.x_train[keep], data.y_train[keep], data.x_test,
                         data.y_test, data.classes, data.scale)
    return data


# --------------------------------------------------------------------------- digits


def _digits() -> ImageData:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = bunch.images.astype(np.uint8)[:, None]  # (1797, 1, 8, 8), values 0..16
    y = bunch.target.astype(np.int64)
    rng = np.random.default_rng(0)
    test = np.zeros(len(y), bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        test[rng.permutation(idx)[: len(idx) // 4]] = True
    return ImageData("digits", x[~test], y[~test], x[test], y[test],
                     tuple(str(c) for c in range(10)), scale=16.0)


def _glyphs() -> ImageData:
    from bnviz.data.glyphs import GLYPH_CLASSES, glyph_arrays

    x_train, y_train, x_test, y_test = glyph_arrays()
    return ImageData("glyphs", x_train, y_train, x_test, y_test, GLYPH_CLASSES)


# --------------------------------------------------------------------------- CIFAR


class _ArrayOnlyUnpickler(pickle.Unpickler):
    """Rebuilds dicts, lists, strings, numbers and numpy arrays; refuses every other class,
    so a tampered pickle in the data directory cannot run code."""

    ALLOWED = frozenset({("numpy.core.multiarray", "_reconstruct"),
                         ("numpy._core.multiarray", "_reconstruct"),
                         ("numpy", "ndarray"), ("numpy", "dtype"),
                         ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
                         ("builtins", "bytes"), ("_codecs", "encode")})

    def find_class(self, module: str, name: str):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused to load {module}.{name}")


def _read_cifar_pickle(path: Path, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as f:
            batch = _ArrayOnlyUnpickler(f, encoding="bytes").load()
        raw = np.asarray(batch[b"data"])
        labels = np.asarray(batch[label_key])
        if raw.dtype != np.uint8:
            if raw.dtype.kind not in "iu" or (raw.size and (raw.min() < 0 or raw.max() > 255)):
                raise ValueError(f"pixels must be integers 0..255, got {raw.dtype}")
        if labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be integers, got {labels.dtype}")
        data, labels = raw.astype(np.uint8), labels.astype(np.int64)
    except Exception as exc:  # a malformed file in any way (numpy raises many kinds)
        raise DataError(f"{path}: not a CIFAR python batch ({type(exc).__name__}: {exc})") \
            from None
    if data.ndim != 2 or data.shape[1] != 3072 or labels.ndim != 1 or len(labels) != len(data):
        raise DataError(f"{path}: expected 'data' of shape (N, 3072) and N labels, got "
                        f"{data.shape} and {labels.shape}")
    return data.reshape(-1, 3, 32, 32), labels


def _missing(what: str, where: Path, files: str, name: str, url: str) -> DataError:
    return DataError(
        f"{what} not found: looked for {files} in {where} (BNVIZ_DATA={data_dir()}). Get it "
        f"with `python -m bnviz data download {name}` on a machine with internet, or put the "
        f"files from {url} there.")


def _cifar10(root: Path) -> ImageData:
    check_available("cifar10")
    folder = root / "cifar-10-batches-py"
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    parts = [_read_cifar_pickle(folder / n, b"labels") for n in names]
    x_train = np.concatenate([p[0] for p in parts[:5]])
    y_train = np.concatenate([p[1] for p in parts[:5]])
    classes = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
               "ship", "truck")
    return _checked(ImageData("cifar10", x_train, y_train, *parts[5], classes))


def _cifar100(root: Path) -> ImageData:
    check_available("cifar100")
    folder = root / "cifar-100-python"
    x_train, y_train = _read_cifar_pickle(folder / "train", b"fine_labels")
    x_test, y_test = _read_cifar_pickle(folder / "test", b"fine_labels")
    return _checked(ImageData("cifar100", x_train, y_train, x_test, y_test,
                              tuple(str(c) for c in range(100))))


# --------------------------------------------------------------------------- SVHN


def _read_svhn(path: Path) -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import loadmat

    try:
        mat = loadmat(path, variable_names=["X", "y"])
        x, y = np.asarray(mat["X"]), np.asarray(mat["y"]).reshape(-1)
        if x.dtype != np.uint8 or y.dtype.kind not in "iuf":
            raise ValueError(f"X must be uint8 and y numbers, got {x.dtype} and {y.dtype}")
        y = y.astype(np.int64)
    except Exception as exc:  # scipy raises many kinds for a malformed .mat
        raise DataError(f"{path}: not an SVHN .mat file ({type(exc).__name__}: {exc})") \
            from None
    if x.ndim != 4 or x.shape[:3] != (32, 32, 3) or x.shape[3] != len(y):
        raise DataError(f"{path}: expected X of shape (32, 32, 3, N) and N labels, got "
                        f"{x.shape} and {y.shape}")
    if len(y) and (y.min() < 1 or y.max() > 10):
        raise DataError(f"{path}: SVHN labels must be 1..10, got {y.min()}..{y.max()}")
    return np.ascontiguousarray(x.transpose(3, 2, 0, 1)), y % 10


def _svhn(root: Path) -> ImageData:
    check_available("svhn")
    folder = root / "svhn"
    x_train, y_train = _read_svhn(folder / "train_32x32.mat")
    x_test, y_test = _read_svhn(folder / "test_32x32.mat")
    return _checked(ImageData("svhn", x_train, y_train, x_test, y_test,
                              tuple(str(c) for c in range(10))))


# --------------------------------------------------------------------------- image folders


def _folder_files(split_dir: Path, classes: tuple[str, ...]) -> list[tuple[Path, int]]:
    """(image file, class index) of one split of an image folder, in a fixed order."""
    return [(path, i) for i, c in enumerate(classes) if (split_dir / c).is_dir()
            for path in sorted((split_dir / c).iterdir())
            if path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file()]


def _folder_layout(root: Path, folder: str) -> tuple[Path, Path, tuple[str, ...]]:
    """(train split, test split, class names) of an image folder (DataError if it is not
    one)."""
    base = (root / folder)
    if not base.resolve().is_relative_to(root.resolve()):
        raise DataError(f"folder:{folder} is outside the data directory")
    train = base / "train"
    test = next((base / s for s in ("val", "test") if (base / s).is_dir()), None)
    if not train.is_dir() or test is None:
        raise _folder_missing(folder, root)
    classes = tuple(sorted(p.name for p in train.iterdir() if p.is_dir()))
    if len(classes) < 2:
        raise DataError(f"{train}: need at least 2 class subfolders, found {len(classes)}")
    return train, test, classes


def count_folder_images(name: str) -> tuple[int, int, int]:
    """(training images, test images, classes) of an image folder ``folder:NAME``, from its
    file names only (nothing is decoded): what a job's cost estimate needs before it runs."""
    train, test, classes = _folder_layout(data_dir(), parse_dataset_name(name).split(":", 1)[1])
    return len(_folder_files(train, classes)), len(_folder_files(test, classes)), len(classes)


def _folder_split(split_dir: Path, classes: tuple[str, ...], size: int):
    from PIL import Image, UnidentifiedImageError

    files = _folder_files(split_dir, classes)
    if len(files) > MAX_FOLDER_IMAGES:
        raise DataError(f"{split_dir}: {len(files)} images is over the cap of "
                        f"{MAX_FOLDER_IMAGES} (use a smaller folder)")
    x = np.empty((len(files), 3, size, size), np.uint8)
    for j, (path, _) in enumerate(files):  # decoding is per file; Pillow does the work
        try:
            with Image.open(path) as img:
                img = img.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
                x[j] = np.asarray(img).transpose(2, 0, 1)
        except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError) as exc:
            raise DataError(f"{path}: not a readable image ({exc})") from None
    return x, np.array([i for _, i in files], np.int64)


def _folder(root: Path, folder: str, size: int) -> ImageData:
    if not 8 <= size <= 512:
        raise DataError(f"image_size must be from 8 to 512, got {size}")
    train, test, classes = _folder_layout(root, folder)
    x_train, y_train = _folder_split(train, classes, size)
    x_test, y_test = _folder_split(test, classes, size)
    return _checked(ImageData(f"folder:{folder}", x_train, y_train, x_test, y_test, classes))


def _folder_missing(folder: str, root: Path) -> DataError:
    return DataError(
        f"image folder {brief(folder)} not found: looked for {root / folder / 'train'} and "
        f"{root / folder / 'val'} (one subfolder per class in each) in BNVIZ_DATA={root}. "
        f"imagenette (ImageNet layout) is at {DOWNLOADS['imagenette'][0]}; `python -m bnviz "
        "data download imagenette` fetches it on a machine with internet.")


def _checked(data: ImageData) -> ImageData:
    if len(data.y_train) < 2 or len(data.y_test) < 1:
        raise DataError(f"{data.name}: need at least 2 training and 1 test image, got "
                        f"{len(data.y_train)} and {len(data.y_test)}")
    for y in (data.y_train, data.y_test):
        if y.min() < 0 or y.max() >= data.num_classes:
            raise DataError(f"{data.name}: labels outside 0..{data.num_classes - 1}")
    return data


def cifar_batch_bytes(images: np.ndarray, labels: np.ndarray, label_key: str = "labels") -> bytes:
    """A CIFAR python batch (the standard pickle format) for the given uint8 (N, 3, 32, 32)
    images: used to write small files in the real format for tests and demos."""
    batch = {b"batch_label": b"bnviz", label_key.encode(): [int(v) for v in labels],
             b"data": np.ascontiguousarray(images, np.uint8).reshape(len(images), -1),
             b"filenames": [f"{i}.png".encode() for i in range(len(images))]}
    buf = io.BytesIO()
    pickle.dump(batch, buf, protocol=2)
    return buf.getvalue()
