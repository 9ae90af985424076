"""Opt-in downloads of the standard image data sets into the data directory
(``bnviz data download NAME``, on a machine with internet): archives checked against their md5
and unpacked with tarfile's ``data`` filter, so no path escapes the data directory."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from bnviz.data.imagedata import DOWNLOADS, DataError, data_dir
from bnviz.messages import brief

__all__ = ["DOWNLOADS", "download"]

_SVHN_FILES = {"train_32x32.mat": "e26dedcc434d2e4c54c9b2d4a06d8373",
               "test_32x32.mat": "eb5a983be6a315427106f1b164d9cef3"}


def _fetch(url: str, md5: str, dest: Path) -> None:
    digest = hashlib.md5()
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if md5 and digest.hexdigest() != md5:
        raise DataError(f"{url}: checksum mismatch (got md5 {digest.hexdigest()})")


def _safe_extract(archive: Path, target: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")  # refuses absolute paths, '..' and devices


def download(name: str, base_url: str | None = None) -> Path:
    """Fetch a standard data set into the data directory (opt-in, needs internet).

    ``base_url`` replaces the host part (a local mirror). Archives are checked against their
    md5 and unpacked with tarfile's ``data`` filter (no path escapes the data directory).
    """
    if name not in DOWNLOADS:
        raise DataError(f"nothing to download for {brief(name)}: one of {', '.join(DOWNLOADS)}")
    url, md5, target = DOWNLOADS[name]
    root = data_dir()
    root.mkdir(parents=True, exist_ok=True)
    if base_url:
        url = base_url.rstrip("/") + "/" + url.rsplit("/", 1)[1] if url[-1] != "/" else base_url
    try:
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            if name == "svhn":
                (root / target).mkdir(exist_ok=True)
                for file, file_md5 in _SVHN_FILES.items():
                    _fetch(url.rstrip("/") + "/" + file, file_md5, Path(tmp) / file)
                    shutil.move(Path(tmp) / file, root / target / file)
            else:
                archive = Path(tmp) / "archive.tar.gz"
                _fetch(url, md5, archive)
                _safe_extract(archive, root)
    except (OSError, tarfile.TarError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"download of {name} from {url} failed: {exc}") from None
    return root / target
