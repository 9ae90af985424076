"""Point sets from files (``.npy``, ``.csv``) and uploads (CSV bytes), validated exactly as
in-memory arrays are (:func:`bnviz.data.datasets.check_points`): one-line messages naming the
file and the problem, and nothing is ever unpickled."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from bnviz.data.datasets import MAX_POINTS, Dataset, DatasetError, check_points
from bnviz.messages import brief

__all__ = ["load_points", "points_from_csv_bytes"]


def _parse_number(text: str, fname: str, line: int) -> float:
    try:
        return float(text)
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise DatasetError(f"{fname} line {line}: {brief(shown)} is not a number") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    fname = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{fname}: cannot read the file ({exc.strerror or exc})") from None
    return _parse_csv(raw, fname)


def _parse_csv(raw: bytes, fname: str) -> tuple[np.ndarray, np.ndarray | None]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DatasetError(f"{fname}: not a text CSV file (it is not valid UTF-8)") from None
    if "\x00" in text:
        raise DatasetError(f"{fname}: not a text CSV file (it contains NUL bytes)")

    rows: list[tuple[int, list[str]]] = []
    reader = csv.reader(text.splitlines())  # any line ending: \n, \r\n, or classic Mac \r
    try:
        for line_no, row in enumerate(reader, start=1):
            fields = [f.strip() for f in row]
            if not fields or all(f == "" for f in fields):
                continue  # blank line
            rows.append((line_no, fields))
    except csv.Error as exc:  # e.g. a field over csv's 128 kB limit
        raise DatasetError(f"{fname} line {reader.line_num}: not a CSV row ({exc})") from None
    if not rows:
        raise DatasetError(f"{fname}: the file is empty (no rows)")

    header: list[str] | None = None
    first_line, first = rows[0]
    if not any(_is_number(f) for f in first):
        header, rows = [f.lower() for f in first], rows[1:]
        if header not in (["x", "y"], ["x", "y", "label"]):
            raise DatasetError(
                f"{fname} line {first_line}: header must be 'x,y' or 'x,y,label', "
                f"got {brief(','.join(first))}"
            )
        if not rows:
            raise DatasetError(f"{fname}: the file has a header but no data rows")

    width = len(header) if header is not None else len(rows[0][1])
    if width not in (2, 3):
        raise DatasetError(
            f"{fname} line {rows[0][0]}: expected 2 columns (x, y) or 3 (x, y, label), got {width}"
        )
    if len(rows) > MAX_POINTS:
        raise DatasetError(f"{fname}: too many points ({len(rows):,}; at most {MAX_POINTS:,})")

    values = np.empty((len(rows), width), dtype=np.float64)
    for i, (line_no, fields) in enumerate(rows):
        if len(fields) != width:
            raise DatasetError(
                f"{fname} line {line_no}: expected {width} columns, got {len(fields)}"
            )
        for j, field in enumerate(fields):
            values[i, j] = _parse_number(field, fname, line_no)

    if width == 2:
        return values, None
    return values[:, :2], values[:, 2]


def _read_npy(path: Path) -> np.ndarray:
    from bnviz.data.npfiles import read_numpy

    fname = path.name
    try:
        arr = read_numpy(path)  # missing, empty, not NumPy, pickled: one line
    except ValueError as exc:
        raise DatasetError(str(exc)) from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise DatasetError(f"{fname}: expected a single .npy array, got an .npz archive")
    return arr


def points_from_csv_bytes(raw: bytes, name: str) -> Dataset:
    """Parse CSV bytes (an upload) exactly as :func:`load_points` parses a ``.csv`` file.

    Raises DatasetError with a one-line message naming ``name`` and the problem.
    """
    points, labels = _parse_csv(raw, name)
    pts, lab = check_points(points, labels, name)
    return Dataset(name=name, points=pts, labels=lab)


def load_points(path: str | Path) -> Dataset:
    """Read a 2D point set from a ``.npy`` or ``.csv`` file.

    - ``.npy``: one numeric array of shape (n, 2); loaded with ``allow_pickle=False`` (nothing is
      ever unpickled). All labels are 0.
    - ``.csv``: comma-separated columns ``x, y`` or ``x, y, label``; an optional first header row
      must be ``x,y`` or ``x,y,label`` (case-insensitive). Blank lines are ignored. Labels must be
      non-negative integers; without a label column all labels are 0.

    The data set's name is the file name. Points are validated as in :func:`as_dataset`.

    Raises:
        DatasetError: (a ``ValueError``) missing or unreadable file, unsupported suffix, empty
            file, wrong shape or column count, text that is not a number, non-finite values, bad
            labels. The one-line message names the file and the problem.
    """
    path = Path(path)
    fname = path.name
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise DatasetError(f"{fname}: the file {what}")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        if path.stat().st_size == 0:
            raise DatasetError(f"{fname}: the file is empty")
        points, labels = _read_npy(path), None
    elif suffix == ".csv":
        points, labels = _read_csv(path)
    else:
        raise DatasetError(
            f"{fname}: unsupported file type {brief(suffix or '(no suffix)')}; expected .npy "
            "or .csv"
        )
    pts, lab = check_points(points, labels, fname)
    return Dataset(name=fname, points=pts, labels=lab)
