"""Tests of bnviz.data.imagedata: every data set loads from small files in its real format (written
here or by tests/imagefiles.py, never downloaded), missing and malformed data give a DataError
that tells the user where bnviz looked and how to get the data, tampered pickles cannot run
code, folder names cannot leave the data directory, and download() checks and unpacks an
archive served from a local HTTP server (no internet)."""

from __future__ import annotations

import os
import pickle
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from imagefiles import write_cifar10, write_cifar100, write_folder, write_svhn
from PIL import Image

from bnviz.data import imagedata
from bnviz.data.imagedata import (
    DataError,
    ImageData,
    check_available,
    data_dir,
    load_image_data,
    parse_dataset_name,
)

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck")
CIFAR10_FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
FOLDER_CLASSES = ("n01440764", "n02102040", "n02979186")


def _random_images(rng: np.random.Generator, n: int) -> np.ndarray:
    """Arbitrary uint8 (n, 3, 32, 32) images: no symmetry, so any mix-up of axes shows."""
    return rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)


def _write_pickle(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj, protocol=2))


def _cifar_dict(x: np.ndarray, labels, label_key: bytes = b"labels") -> dict:
    """A batch as the CIFAR python pickles hold it (bytes keys, flat row-major rows)."""
    return {b"batch_label": b"testing batch", label_key: [int(v) for v in labels],
            b"data": x.reshape(len(x), -1), b"filenames": [b"f.png"] * len(x)}


def _write_svhn_mat(path: Path, x: np.ndarray, digits: np.ndarray) -> None:
    """SVHN's MATLAB layout: X is (32, 32, 3, N) = (row, column, channel, image), y is (N, 1)
    with 10 for the digit 0."""
    from scipy.io import savemat

    path.parent.mkdir(parents=True, exist_ok=True)
    labels = np.where(digits == 0, 10, digits).reshape(-1, 1).astype(np.uint8)
    savemat(path, {"X": np.ascontiguousarray(x.transpose(2, 3, 1, 0)), "y": labels})


def _assert_images(data: ImageData, shape: tuple[int, int, int], n_train: int, n_test: int,
                   classes: tuple[str, ...]) -> None:
    assert data.x_train.dtype == np.uint8 and data.x_test.dtype == np.uint8
    assert data.y_train.dtype == np.int64 and data.y_test.dtype == np.int64
    assert data.x_train.shape == (n_train, *shape)
    assert data.x_test.shape == (n_test, *shape)
    assert data.y_train.shape == (n_train,) and data.y_test.shape == (n_test,)
    assert data.shape == shape
    assert data.classes == classes and data.num_classes == len(classes)
    for y in (data.y_train, data.y_test):
        assert y.min() >= 0 and y.max() < len(classes)


# --------------------------------------------------------------------------- names, data dir


def test_data_dir_defaults_to_home_and_follows_bnviz_data(tmp_home, tmp_path, monkeypatch):
    monkeypatch.delenv("BNVIZ_DATA", raising=False)
    assert data_dir() == tmp_home / "data"
    monkeypatch.setenv("BNVIZ_DATA", str(tmp_path / "elsewhere"))
    assert data_dir() == tmp_path / "elsewhere"


@pytest.mark.parametrize("name, expected", [
    ("digits", "digits"), ("CIFAR10", "cifar10"), (" cifar100 ", "cifar100"), ("svhn", "svhn"),
    ("folder:imagenette2-160", "folder:imagenette2-160"), ("Folder:my_set.v2", "folder:my_set.v2"),
])
def test_parse_dataset_name_accepts(name, expected):
    assert parse_dataset_name(name) == expected


@pytest.mark.parametrize("name", [
    "folder:", "folder:a/b", "folder:../x", "folder:..", "folder:.", "folder:/etc",
    "folder:/tmp/data", "folder:a\\b", "folder:.hidden", "folder:a b", "folder:x/../../y",
    "folder:" + "a" * 101, "mnist", "", "cifar10/..", "/etc/passwd", None, 3, b"digits",
])
def test_parse_dataset_name_refuses_paths_and_unknown_names(name):
    with pytest.raises(DataError):
        parse_dataset_name(name)


@pytest.mark.parametrize("name", ["folder:../outside", "folder:/abs", "folder:a/b", "folder:"])
def test_load_and_check_refuse_path_like_folder_names(data_root, name):
    (data_root.parent / "outside" / "train" / "a").mkdir(parents=True)
    with pytest.raises(DataError, match="no paths"):
        load_image_data(name)
    with pytest.raises(DataError, match="no paths"):
        check_available(name)


# --------------------------------------------------------------------------- digits


def test_digits_stratified_quarter_split():
    from sklearn.datasets import load_digits

    data = load_image_data("digits")
    bunch = load_digits()
    n = len(bunch.target)
    _assert_images(data, (1, 8, 8), len(data.y_train), len(data.y_test),
                   tuple(str(c) for c in range(10)))
    assert data.scale == 16.0 and data.num_classes == 10
    assert int(data.x_train.max()) == 16 and int(data.x_train.min()) == 0
    assert len(data.y_train) + len(data.y_test) == n
    for c in range(10):  # 1/4 of every class (rounded down) is held out
        total = int((bunch.target == c).sum())
        assert int((data.y_test == c).sum()) == total // 4
        assert int((data.y_train == c).sum()) == total - total // 4
    # train and test partition the data set: together they are exactly the 1797 (image, label)
    # rows, each once (disjoint and complete)
    def rows(x: np.ndarray, y: np.ndarray) -> list[bytes]:
        table = np.concatenate([x.reshape(len(x), -1), y[:, None]], 1).astype(np.uint8)
        return sorted(map(bytes, table))

    original = rows(bunch.images.astype(np.uint8), bunch.target)
    assert rows(np.concatenate([data.x_train, data.x_test]),
                np.concatenate([data.y_train, data.y_test])) == original
    # the split is fixed (seed 0): loading again gives the same arrays
    again = load_image_data("digits")
    np.testing.assert_array_equal(again.x_test, data.x_test)
    np.testing.assert_array_equal(again.y_train, data.y_train)


def test_digits_max_train_keeps_a_fixed_subset():
    full = load_image_data("digits")
    sub = load_image_data("digits", max_train=100)
    assert len(sub.y_train) == 100 and sub.x_train.shape == (100, 1, 8, 8)
    np.testing.assert_array_equal(sub.x_test, full.x_test)  # the test set is untouched
    pairs = {(bytes(x), int(y)) for x, y in zip(full.x_train, full.y_train, strict=True)}
    assert all((bytes(x), int(y)) in pairs for x, y in zip(sub.x_train, sub.y_train,
                                                             strict=True))
    assert len(np.unique(sub.y_train)) == 10  # a shuffle, not the first 100 images
    again = load_image_data("digits", max_train=100)
    np.testing.assert_array_equal(again.x_train, sub.x_train)
    # max_train at or above the size keeps everything
    assert len(load_image_data("digits", max_train=10**6).y_train) == len(full.y_train)


# --------------------------------------------------------------------------- CIFAR, SVHN


def test_cifar10_from_imagefiles(data_root):
    write_cifar10(data_root, n_per_batch=20)
    data = load_image_data("cifar10")
    _assert_images(data, (3, 32, 32), 100, 20, CIFAR10_CLASSES)
    assert data.name == "cifar10" and data.scale == 255.0
    # imagefiles' images show their class in the mean colour: the labels belong to the images
    means = data.x_train.reshape(100, -1).mean(1)
    assert np.all(np.diff([means[data.y_train == c].mean() for c in np.unique(data.y_train)])
                  > 0)


def test_cifar10_pixels_and_labels_round_trip(data_root):
    rng = np.random.default_rng(5)
    folder = data_root / "cifar-10-batches-py"
    xs, ys = [], []
    for name, n in zip(CIFAR10_FILES, (7, 5, 6, 4, 3, 9), strict=True):
        x, y = _random_images(rng, n), rng.integers(0, 10, n)
        _write_pickle(folder / name, _cifar_dict(x, y))
        xs.append(x)
        ys.append(y)
    data = load_image_data("cifar10")
    np.testing.assert_array_equal(data.x_train, np.concatenate(xs[:5]))
    np.testing.assert_array_equal(data.y_train, np.concatenate(ys[:5]))
    np.testing.assert_array_equal(data.x_test, xs[5])
    np.testing.assert_array_equal(data.y_test, ys[5])


def test_cifar_batch_bytes_is_the_standard_format(tmp_path):
    rng = np.random.default_rng(6)
    x, y = _random_images(rng, 4), [3, 1, 4, 1]
    batch = pickle.loads(imagedata.cifar_batch_bytes(x, y), encoding="bytes")
    assert batch[b"labels"] == y
    assert batch[b"data"].dtype == np.uint8 and batch[b"data"].shape == (4, 3072)
    # rows are channel-major: the first 1024 values are the red plane, row by row
    np.testing.assert_array_equal(batch[b"data"][2, :1024].reshape(32, 32), x[2, 0])
    np.testing.assert_array_equal(batch[b"data"][2, 2048:].reshape(32, 32), x[2, 2])


def test_cifar_pickle_with_legacy_numpy_module_path_loads(data_root):
    """The published CIFAR pickles were written by numpy 1 (numpy.core.multiarray)."""
    rng = np.random.default_rng(7)
    folder = data_root / "cifar-10-batches-py"
    xs = []
    for name in CIFAR10_FILES:
        x = _random_images(rng, 2)
        raw = pickle.dumps(_cifar_dict(x, [1, 2]), protocol=2)
        raw = raw.replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes(raw)
        xs.append(x)
    data = load_image_data("cifar10")
    np.testing.assert_array_equal(data.x_test, xs[5])


def test_cifar100_fine_labels(data_root):
    write_cifar100(data_root, n_train=60, n_test=20)
    data = load_image_data("cifar100")
    _assert_images(data, (3, 32, 32), 60, 20, tuple(str(c) for c in range(100)))
    rng = np.random.default_rng(8)
    folder = data_root / "cifar-100-python"
    x_tr, x_te = _random_images(rng, 12), _random_images(rng, 5)
    fine_tr, fine_te = rng.integers(0, 100, 12), rng.integers(0, 100, 5)
    fine_tr[:2] = (0, 99)
    for name, x, fine in (("train", x_tr, fine_tr), ("test", x_te, fine_te)):
        batch = _cifar_dict(x, fine, b"fine_labels")
        batch[b"coarse_labels"] = [int(v) // 5 for v in fine]  # the superclass: not used
        _write_pickle(folder / name, batch)
    data = load_image_data("cifar100")
    np.testing.assert_array_equal(data.x_train, x_tr)
    np.testing.assert_array_equal(data.x_test, x_te)
    np.testing.assert_array_equal(data.y_train, fine_tr)
    np.testing.assert_array_equal(data.y_test, fine_te)


def test_svhn_from_imagefiles(data_root):
    write_svhn(data_root, n_train=60, n_test=20)
    data = load_image_data("svhn")
    _assert_images(data, (3, 32, 32), 60, 20, tuple(str(c) for c in range(10)))
    assert 0 in data.y_train and 10 not in data.y_train


def test_svhn_pixels_round_trip_and_label_10_is_digit_0(data_root):
    rng = np.random.default_rng(9)
    x_tr, x_te = _random_images(rng, 11), _random_images(rng, 4)
    y_tr = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0])
    y_te = np.array([0, 0, 9, 5])
    _write_svhn_mat(data_root / "svhn" / "train_32x32.mat", x_tr, y_tr)
    _write_svhn_mat(data_root / "svhn" / "test_32x32.mat", x_te, y_te)
    data = load_image_data("svhn")
    np.testing.assert_array_equal(data.x_train, x_tr)
    np.testing.assert_array_equal(data.x_test, x_te)
    np.testing.assert_array_equal(data.y_train, y_tr)
    np.testing.assert_array_equal(data.y_test, y_te)
    assert data.x_train.flags.c_contiguous


def test_max_train_on_cifar_keeps_rows_of_the_training_set(data_root):
    write_cifar10(data_root, n_per_batch=20)
    full = load_image_data("cifar10")
    sub = load_image_data("cifar10", max_train=13)
    assert sub.x_train.shape == (13, 3, 32, 32) and sub.y_train.shape == (13,)
    index = {bytes(x): i for i, x in enumerate(full.x_train)}
    picked = [index[bytes(x)] for x in sub.x_train]
    assert picked == sorted(picked) and len(set(picked)) == 13  # a subset, in file order
    assert picked != list(range(13))  # the first 13 of a fixed shuffle, not of the files
    np.testing.assert_array_equal(sub.y_train, full.y_train[picked])
    np.testing.assert_array_equal(sub.x_test, full.x_test)


# --------------------------------------------------------------------------- image folders


def test_image_folder_loads_resized_with_class_names(data_root):
    write_folder(data_root, "mini", FOLDER_CLASSES, per_class=6, size=40)
    # a constant-colour image resizes to exactly that colour; JPEG is nearly exact
    Image.new("RGB", (50, 30), (10, 200, 30)).save(
        data_root / "mini" / "train" / FOLDER_CLASSES[1] / "zz_const.png")
    Image.new("RGB", (50, 30), (220, 20, 120)).save(
        data_root / "mini" / "val" / FOLDER_CLASSES[2] / "zz_const.JPEG")
    (data_root / "mini" / "train" / FOLDER_CLASSES[0] / "notes.txt").write_text("not an image")
    (data_root / "mini" / "val" / "extra_class").mkdir()  # not a training class: ignored
    Image.new("RGB", (9, 9)).save(data_root / "mini" / "val" / "extra_class" / "a.png")
    for size in (16, 24):
        data = load_image_data("folder:mini", image_size=size)
        assert data.name == "folder:mini" and data.scale == 255.0
        _assert_images(data, (3, size, size), 3 * 6 + 1, 3 * 3 + 1, FOLDER_CLASSES)
        assert np.bincount(data.y_train).tolist() == [6, 7, 6]
        assert np.bincount(data.y_test).tolist() == [3, 3, 4]
        const = np.array([10, 200, 30], np.uint8)[:, None, None]
        hits = [i for i, x in enumerate(data.x_train) if np.array_equal(x, np.broadcast_to(
            const, x.shape))]
        assert len(hits) == 1 and data.y_train[hits[0]] == 1
        jpeg = data.x_test[data.y_test == 2][-1].astype(int)  # sorted last: zz_const.JPEG
        assert np.abs(jpeg - np.array([220, 20, 120])[:, None, None]).max() <= 4
        # imagefiles' class i has pixels i*90 + [0, 60) (its files sort as png, JPEG, png,
        # ...): resizing keeps a png's values in that range, JPEG keeps the mean colour
        for i in range(3):
            x = data.x_train[data.y_train == i][:6].astype(int)
            assert x[0::2].min() >= i * 90 and x[0::2].max() <= i * 90 + 59
            assert np.all(np.abs(x.mean((1, 2, 3)) - (i * 90 + 29.5)) < 6)


def test_image_folder_reads_both_jpeg_and_png(data_root):
    write_folder(data_root, "mini", FOLDER_CLASSES, per_class=4, size=20)
    files = [p.name for p in (data_root / "mini" / "train" / FOLDER_CLASSES[0]).iterdir()]
    assert {Path(f).suffix for f in files} == {".JPEG", ".png"}
    data = load_image_data("folder:mini", image_size=8)
    assert len(data.y_train) == 12 and len(data.y_test) == 6


def test_image_folder_test_split_name_and_max_train(data_root):
    base = write_folder(data_root, "mini", FOLDER_CLASSES, per_class=6, size=20)
    (base / "val").rename(base / "test")
    data = load_image_data("folder:mini", image_size=8, max_train=5)
    assert data.x_train.shape == (5, 3, 8, 8) and len(data.y_test) == 9
    assert check_available("folder:mini") == "folder:mini"


def test_image_folder_only_train_is_refused(data_root):
    base = write_folder(data_root, "mini", FOLDER_CLASSES, per_class=2, size=20)
    for split in (base / "val").iterdir():
        for f in split.iterdir():
            f.unlink()
        split.rmdir()
    (base / "val").rmdir()
    for call in (lambda: load_image_data("folder:mini"), lambda: check_available("folder:mini")):
        with pytest.raises(DataError) as err:
            call()
        msg = str(err.value)
        assert str(base / "val") in msg and "BNVIZ_DATA" in msg
        assert "python -m bnviz data download imagenette" in msg


def test_image_folder_needs_two_classes(data_root):
    write_folder(data_root, "one", ("only",), per_class=2, size=20)
    with pytest.raises(DataError, match="at least 2 class"):
        load_image_data("folder:one")


@pytest.mark.parametrize("size", [7, 513, 0])
def test_image_folder_size_out_of_range(data_root, size):
    write_folder(data_root, "mini", FOLDER_CLASSES, per_class=2, size=20)
    with pytest.raises(DataError, match="image_size"):
        load_image_data("folder:mini", image_size=size)


def test_symlinked_folder_pointing_outside_is_refused(data_root, tmp_path):
    outside = tmp_path / "outside"
    write_folder(outside, "secret", FOLDER_CLASSES, per_class=2, size=20)
    (data_root / "evil").symlink_to(outside / "secret", target_is_directory=True)
    with pytest.raises(DataError, match="outside the data directory"):
        load_image_data("folder:evil", image_size=8)
    # the same folder really inside the data directory loads
    write_folder(data_root, "fine", FOLDER_CLASSES, per_class=2, size=20)
    assert len(load_image_data("folder:fine", image_size=8).y_train) == 6


def test_data_dir_that_is_itself_a_symlink_still_works(data_root, tmp_path, monkeypatch):
    write_folder(data_root, "mini", FOLDER_CLASSES, per_class=2, size=20)
    link = tmp_path / "data-link"
    link.symlink_to(data_root, target_is_directory=True)
    monkeypatch.setenv("BNVIZ_DATA", str(link))
    assert len(load_image_data("folder:mini", image_size=8).y_test) == 6


# --------------------------------------------------------------------------- missing data


@pytest.mark.parametrize("name, folder", [("cifar10", "cifar-10-batches-py"),
                                          ("cifar100", "cifar-100-python"), ("svhn", "svhn")])
def test_missing_standard_dataset_says_where_and_how(data_root, name, folder):
    for call in (lambda: load_image_data(name), lambda: check_available(name)):
        with pytest.raises(DataError) as err:
            call()
        msg = str(err.value)
        assert str(data_root / folder) in msg
        assert f"BNVIZ_DATA={data_root}" in msg
        assert f"python -m bnviz data download {name}" in msg


def test_missing_image_folder_says_where_and_how(data_root):
    for call in (lambda: load_image_data("folder:nope"), lambda: check_available("folder:nope")):
        with pytest.raises(DataError) as err:
            call()
        msg = str(err.value)
        assert str(data_root / "nope" / "train") in msg and f"BNVIZ_DATA={data_root}" in msg
        assert "python -m bnviz data download imagenette" in msg


def test_partially_present_cifar10_is_missing(data_root):
    write_cifar10(data_root, n_per_batch=2)
    (data_root / "cifar-10-batches-py" / "data_batch_5").unlink()
    with pytest.raises(DataError, match="data_batch_1..5 and test_batch"):
        check_available("cifar10")
    with pytest.raises(DataError, match="download cifar10"):
        load_image_data("cifar10")


def test_check_available_reads_no_files(data_root, monkeypatch):
    """check_available only looks at names: unreadable garbage passes it (a load would fail),
    and it never opens a file."""
    for folder, files in (("cifar-10-batches-py", CIFAR10_FILES),
                          ("cifar-100-python", ["train", "test"]),
                          ("svhn", ["train_32x32.mat", "test_32x32.mat"])):
        for f in files:
            (data_root / folder).mkdir(exist_ok=True)
            (data_root / folder / f).write_bytes(b"garbage, not data " * 40)
    (data_root / "imgs" / "train").mkdir(parents=True)
    (data_root / "imgs" / "val").mkdir()

    def no_open(*args, **kwargs):
        raise AssertionError(f"check_available opened {args[0]!r}")

    with monkeypatch.context() as m:
        m.setattr("builtins.open", no_open)
        m.setattr(Path, "open", no_open)
        for name in ("digits", "cifar10", "CIFAR100", "svhn", "folder:imgs"):
            assert check_available(name) == parse_dataset_name(name)
    for name in ("cifar10", "cifar100", "svhn"):
        with pytest.raises(DataError, match="not"):
            load_image_data(name)


# --------------------------------------------------------------------------- tampered pickles


class _RunsCommand:
    """Unpickling this calls os.system (a shell command that creates a marker file)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


class _RunsPython:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


class _Harmless:
    """Any class other than numpy's array machinery is refused, harmful or not."""

    def __init__(self, marker: Path):
        self.marker = str(marker)


@pytest.mark.parametrize("evil", [_RunsCommand, _RunsPython, _Harmless])
@pytest.mark.parametrize("where", ["top", "data", "labels"])
def test_tampered_cifar_pickle_is_refused_and_not_run(data_root, tmp_path, evil, where):
    marker = tmp_path / "pwned"
    write_cifar10(data_root, n_per_batch=2)
    x = np.zeros((2, 3072), np.uint8)
    payload = {"top": evil(marker),
               "data": {b"data": evil(marker), b"labels": [0, 1]},
               "labels": {b"data": x, b"labels": [0, evil(marker)]}}[where]
    _write_pickle(data_root / "cifar-10-batches-py" / "data_batch_3", payload)
    with pytest.raises(DataError, match="refused to load"):
        load_image_data("cifar10")
    assert not marker.exists()


def test_tampered_cifar100_pickle_is_refused_and_not_run(data_root, tmp_path):
    marker = tmp_path / "pwned"
    write_cifar100(data_root, n_train=4, n_test=2)
    _write_pickle(data_root / "cifar-100-python" / "test", _RunsCommand(marker))
    with pytest.raises(DataError, match="refused"):
        load_image_data("cifar100")
    assert not marker.exists()


# --------------------------------------------------------------------------- malformed files


def _cifar_case(data_root: Path, case: str) -> None:
    write_cifar10(data_root, n_per_batch=3)
    path = data_root / "cifar-10-batches-py" / "data_batch_2"
    good = path.read_bytes()
    x = np.zeros((3, 3072), np.uint8)
    contents = {
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "not a pickle": b"\x00\xffthis is not a pickle" * 10,
        "a list": [1, 2, 3],
        "no labels": {b"data": x},
        "no data": {b"labels": [0, 1, 2]},
        "data 1-d": {b"data": np.zeros(3072, np.uint8), b"labels": [0]},
        "wrong row size": {b"data": np.zeros((3, 1024), np.uint8), b"labels": [0, 1, 2]},
        "label count": {b"data": x, b"labels": [0, 1]},
        "label 10": {b"data": x, b"labels": [0, 1, 10]},
        "label -1": {b"data": x, b"labels": [0, -1, 2]},
        "labels text": {b"data": x, b"labels": [b"cat", b"dog", b"cat"]},
        "data None": {b"data": None, b"labels": [0, 1, 2]},
    }[case]
    if isinstance(contents, bytes):
        path.write_bytes(contents)
    else:
        _write_pickle(path, contents)


@pytest.mark.parametrize("case", ["truncated", "empty", "not a pickle", "a list", "no labels",
                                  "no data", "data 1-d", "wrong row size", "label count",
                                  "label 10", "label -1", "labels text", "data None"])
def test_malformed_cifar_gives_data_error(data_root, case):
    _cifar_case(data_root, case)
    with pytest.raises(DataError):
        load_image_data("cifar10")


def test_cifar100_label_out_of_range(data_root):
    write_cifar100(data_root, n_train=4, n_test=2)
    _write_pickle(data_root / "cifar-100-python" / "test",
                  _cifar_dict(np.zeros((2, 3, 32, 32), np.uint8), [3, 100], b"fine_labels"))
    with pytest.raises(DataError, match=r"labels outside 0\.\.99"):
        load_image_data("cifar100")


def test_cifar_with_too_few_images(data_root):
    folder = data_root / "cifar-100-python"
    _write_pickle(folder / "train", _cifar_dict(np.zeros((1, 3, 32, 32), np.uint8), [1],
                                                b"fine_labels"))
    _write_pickle(folder / "test", _cifar_dict(np.zeros((1, 3, 32, 32), np.uint8), [1],
                                               b"fine_labels"))
    with pytest.raises(DataError, match="at least 2 training"):
        load_image_data("cifar100")


def test_cifar_pixels_over_255_give_data_error(data_root):
    write_cifar10(data_root, n_per_batch=2)
    _write_pickle(data_root / "cifar-10-batches-py" / "test_batch",
                  {b"data": [[300] * 3072] * 2, b"labels": [0, 1]})
    with pytest.raises(DataError):
        load_image_data("cifar10")


def test_cifar_huge_label_gives_data_error(data_root):
    write_cifar10(data_root, n_per_batch=2)
    _write_pickle(data_root / "cifar-10-batches-py" / "test_batch",
                  {b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 2**70]})
    with pytest.raises(DataError):
        load_image_data("cifar10")


def test_cifar_scalar_labels_give_data_error(data_root):
    write_cifar10(data_root, n_per_batch=2)
    _write_pickle(data_root / "cifar-10-batches-py" / "test_batch",
                  {b"data": np.zeros((2, 3072), np.uint8), b"labels": 5})
    with pytest.raises(DataError):
        load_image_data("cifar10")


def test_cifar_2d_labels_give_data_error(data_root):
    write_cifar10(data_root, n_per_batch=2)
    _write_pickle(data_root / "cifar-10-batches-py" / "data_batch_1",
                  {b"data": np.zeros((2, 3072), np.uint8), b"labels": [[0], [1]]})
    with pytest.raises(DataError):
        load_image_data("cifar10")


def test_cifar_int_pixels_out_of_range_are_refused(data_root):
    write_cifar10(data_root, n_per_batch=2)
    _write_pickle(data_root / "cifar-10-batches-py" / "test_batch",
                  {b"data": np.full((2, 3072), 300, np.int64), b"labels": [0, 1]})
    with pytest.raises(DataError):
        load_image_data("cifar10")


def _svhn_case(data_root: Path, case: str) -> None:
    from scipy.io import savemat

    write_svhn(data_root, n_train=4, n_test=3)
    path = data_root / "svhn" / "test_32x32.mat"
    good = path.read_bytes()
    x = np.zeros((32, 32, 3, 2), np.uint8)
    if case == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif case == "not a mat file":
        path.write_bytes(b"hello, this is text and not MATLAB" * 20)
    else:
        savemat(path, {
            "X 3-d": {"X": np.zeros((32, 32, 3), np.uint8), "y": np.ones((1, 1))},
            "X NCHW": {"X": np.zeros((2, 3, 32, 32), np.uint8), "y": np.ones((2, 1))},
            "label count": {"X": x, "y": np.array([[1], [2], [3]])},
            "label 0": {"X": x, "y": np.array([[0], [1]])},
            "label 11": {"X": x, "y": np.array([[11], [1]])},
            "no X": {"y": np.array([[1], [2]])},
            "no y": {"X": x},
        }[case])


@pytest.mark.parametrize("case", ["truncated", "not a mat file", "X 3-d", "X NCHW",
                                  "label count", "label 0", "label 11", "no X", "no y"])
def test_malformed_svhn_gives_data_error(data_root, case):
    _svhn_case(data_root, case)
    with pytest.raises(DataError):
        load_image_data("svhn")


def test_empty_svhn_file_gives_data_error(data_root):
    write_svhn(data_root, n_train=4, n_test=3)
    (data_root / "svhn" / "train_32x32.mat").write_bytes(b"")
    with pytest.raises(DataError):
        load_image_data("svhn")


def test_svhn_cell_labels_give_data_error(data_root):
    from scipy.io import savemat

    write_svhn(data_root, n_train=4, n_test=3)
    savemat(data_root / "svhn" / "test_32x32.mat",
            {"X": np.zeros((32, 32, 3, 2), np.uint8), "y": np.array([[1], [2]], dtype=object)})
    with pytest.raises(DataError):
        load_image_data("svhn")


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG signature and IHDR that claim a size, and no pixel data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                               0, 0, 0)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("case", ["text", "empty", "truncated", "no pixel data"])
def test_non_image_with_image_extension_gives_data_error(data_root, case):
    base = write_folder(data_root, "mini", FOLDER_CLASSES, per_class=2, size=20)
    png = sorted((base / "val" / FOLDER_CLASSES[1]).glob("*.png"))[0]
    good = png.read_bytes()
    png.write_bytes({"text": b"this is not an image\n" * 5, "empty": b"",
                     "truncated": good[: len(good) // 2],
                     "no pixel data": _png_header_only(40, 40)}[case])
    with pytest.raises(DataError, match="not a readable image") as err:
        load_image_data("folder:mini", image_size=8)
    assert str(png) in str(err.value)


def test_decompression_bomb_image_gives_data_error(data_root):
    base = write_folder(data_root, "mini", FOLDER_CLASSES, per_class=2, size=20)
    (base / "train" / FOLDER_CLASSES[0] / "bomb.png").write_bytes(_png_header_only(20000, 20000))
    with pytest.raises(DataError):
        load_image_data("folder:mini", image_size=8)
