"""bnviz.data.pointfiles: point sets from .npy and .csv files, validated as arrays are, never
unpickled."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from bnviz.data.datasets import Dataset, make_dataset
from bnviz.data.pointfiles import load_points


@pytest.fixture
def sample() -> Dataset:
    return make_dataset("blobs", n=37, seed=9)


def test_npy_round_trip(tmp_path, sample):
    path = tmp_path / "pts.npy"
    np.save(path, sample.points)
    loaded = load_points(path)
    assert loaded.name == "pts.npy"
    np.testing.assert_array_equal(loaded.points, sample.points)
    np.testing.assert_array_equal(loaded.labels, np.zeros(sample.n, dtype=np.int64))
    assert loaded.points.dtype == np.float64 and loaded.labels.dtype == np.int64


def test_npy_float32_and_int_accepted(tmp_path):
    for dtype in (np.float32, np.int32):
        path = tmp_path / f"p_{np.dtype(dtype).name}.npy"
        np.save(path, np.array([[1, 2], [3, 4]], dtype=dtype))
        np.testing.assert_array_equal(load_points(str(path)).points, [[1.0, 2.0], [3.0, 4.0]])


def _write_csv(path, points, labels=None, header=False):
    lines = []
    if header:
        lines.append("x,y,label" if labels is not None else "x,y")
    for i, (x, y) in enumerate(points):
        row = f"{float(x)!r},{float(y)!r}"
        if labels is not None:
            row += f",{int(labels[i])}"
        lines.append(row)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("header", [False, True])
@pytest.mark.parametrize("with_labels", [False, True])
def test_csv_round_trip(tmp_path, sample, header, with_labels):
    path = tmp_path / "pts.csv"
    labels = sample.labels if with_labels else None
    _write_csv(path, sample.points, labels, header=header)
    loaded = load_points(path)
    np.testing.assert_array_equal(loaded.points, sample.points)  # repr round-trips floats
    expected = sample.labels if with_labels else np.zeros(sample.n, dtype=np.int64)
    np.testing.assert_array_equal(loaded.labels, expected)


def test_csv_tolerates_spaces_blank_lines_bom_and_header_case(tmp_path):
    path = tmp_path / "pts.csv"
    path.write_bytes("\ufeffX, Y, Label\n\n 1.5 , -2 , 1\n0,0,0\n\n".encode())
    d = load_points(path)
    np.testing.assert_array_equal(d.points, [[1.5, -2.0], [0.0, 0.0]])
    np.testing.assert_array_equal(d.labels, [1, 0])


def test_csv_integer_valued_float_labels(tmp_path):
    path = tmp_path / "pts.csv"
    path.write_text("1,2,1.0\n3,4,2\n")
    np.testing.assert_array_equal(load_points(path).labels, [1, 2])


@pytest.mark.parametrize(
    ("filename", "content", "problem"),
    [
        ("empty.csv", "", "empty"),
        ("blank.csv", "\n\n  \n", "empty"),
        ("header_only.csv", "x,y\n", "no data rows"),
        ("one_col.csv", "1\n2\n", "expected 2 columns"),
        ("four_col.csv", "1,2,3,4\n", "expected 2 columns"),
        ("ragged.csv", "1,2\n3,4,5\n", "expected 2 columns, got 3"),
        ("text.csv", "1,2\nhello,4\n", "'hello' is not a number"),
        ("nan.csv", "1,2\nnan,4\n", "non-finite"),
        ("inf.csv", "x,y\n1,inf\n", "non-finite"),
        ("bad_header.csv", "a,b\n1,2\n", "header must be"),
        ("frac_label.csv", "1,2,0.5\n", "whole numbers"),
        ("neg_label.csv", "1,2,-1\n", "non-negative"),
        ("nan_label.csv", "1,2,nan\n", "labels contain non-finite"),
        ("points.txt", "1,2\n", "unsupported file type"),
    ],
)
def test_bad_csv_files(tmp_path, filename, content, problem):
    path = tmp_path / filename
    path.write_text(content)
    with pytest.raises(ValueError) as info:
        load_points(path)
    message = str(info.value)
    assert problem in message
    assert filename in message
    assert "\n" not in message


def test_binary_garbage_csv(tmp_path):
    path = tmp_path / "garbage.csv"
    path.write_bytes(b"\xff\xfe\x00\x01\x02")
    with pytest.raises(ValueError, match=r"garbage\.csv: not a text CSV"):
        load_points(path)


@pytest.mark.parametrize(
    ("filename", "array", "problem"),
    [
        ("wrong_cols.npy", np.zeros((5, 3)), "shape (n, 2), got shape (5, 3)"),
        ("flat.npy", np.zeros(4), "shape (n, 2), got shape (4,)"),
        ("cube.npy", np.zeros((2, 2, 2)), "shape (n, 2), got shape (2, 2, 2)"),
        ("zero_rows.npy", np.zeros((0, 2)), "no points"),
        ("nan.npy", np.array([[0.0, 1.0], [np.nan, 2.0]]), "non-finite"),
        ("inf.npy", np.array([[np.inf, 1.0]]), "non-finite"),
        ("strings.npy", np.array([["a", "b"]]), "real numbers"),
        ("complex.npy", np.zeros((3, 2), dtype=complex), "real numbers"),
    ],
)
def test_bad_npy_arrays(tmp_path, filename, array, problem):
    path = tmp_path / filename
    np.save(path, array)
    with pytest.raises(ValueError) as info:
        load_points(path)
    message = str(info.value)
    assert problem in message
    assert filename in message
    assert "\n" not in message


class _Boom:
    def __reduce__(self):  # unpickling this would raise; load_points must never get there
        return (_explode, ())


def _explode():
    raise AssertionError("load_points unpickled a file")


def test_npy_with_objects_is_never_unpickled(tmp_path):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([_Boom(), _Boom()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"objects\.npy: .*never loads"):
        load_points(path)


def test_raw_pickle_named_npy_rejected(tmp_path):
    path = tmp_path / "sneaky.npy"
    path.write_bytes(pickle.dumps(_Boom()))
    with pytest.raises(ValueError, match=r"sneaky\.npy"):
        load_points(path)


@pytest.mark.parametrize(
    ("filename", "content", "problem"),
    [
        ("empty.npy", b"", "empty"),
        ("truncated.npy", b"\x93NUMPY\x01\x00", ""),
        ("notnumpy.npy", b"hello world, not an array", "not a NumPy file"),
    ],
)
def test_bad_npy_bytes(tmp_path, filename, content, problem):
    path = tmp_path / filename
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        load_points(path)
    message = str(info.value)
    assert filename in message
    assert "\n" not in message
    if problem:
        assert problem in message


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.csv: the file does not exist"):
        load_points(tmp_path / "nope.csv")
    (tmp_path / "dir.npy").mkdir()
    with pytest.raises(ValueError, match=r"dir\.npy: the file is not a file"):
        load_points(tmp_path / "dir.npy")
