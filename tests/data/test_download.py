"""bnviz.data.download against a loopback HTTP mirror: archives are checked (md5), unpacked
inside the data directory only, and failures are one DataError line."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import tarfile
import threading
from pathlib import Path

import pytest
from imagefiles import write_cifar10, write_svhn

from bnviz.data import download as dl
from bnviz.data.download import download
from bnviz.data.imagedata import DataError, check_available, load_image_data

CIFAR10_FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def http_dir(tmp_path, monkeypatch):
    """Serves a fresh folder over HTTP on 127.0.0.1; yields (folder, base url)."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}/mirror"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _cifar10_members(tmp_path: Path) -> dict[str, bytes]:
    folder = write_cifar10(tmp_path / "src", n_per_batch=4)
    return {f"cifar-10-batches-py/{f}": (folder / f).read_bytes() for f in CIFAR10_FILES}


def _serve(served: Path, archive: bytes, monkeypatch, md5: str | None = None) -> None:
    (served / "mirror").mkdir(exist_ok=True)
    (served / "mirror" / "cifar-10-python.tar.gz").write_bytes(archive)
    url, _, target = dl.DOWNLOADS["cifar10"]
    monkeypatch.setitem(dl.DOWNLOADS, "cifar10",
                        (url, md5 or hashlib.md5(archive).hexdigest(), target))


def test_download_extracts_into_the_data_dir(data_root, tmp_path, http_dir, monkeypatch):
    served, base = http_dir
    _serve(served, _tar_gz(_cifar10_members(tmp_path)), monkeypatch)
    with pytest.raises(DataError):
        check_available("cifar10")
    out = download("cifar10", base_url=base + "/")
    assert out == data_root / "cifar-10-batches-py"
    assert sorted(p.name for p in out.iterdir()) == sorted(CIFAR10_FILES)
    assert [p.name for p in data_root.iterdir()] == ["cifar-10-batches-py"]  # no temp left
    assert check_available("cifar10") == "cifar10"
    data = load_image_data("cifar10")
    assert data.x_train.shape == (20, 3, 32, 32) and data.x_test.shape == (4, 3, 32, 32)


def test_download_creates_a_missing_data_dir(tmp_home, tmp_path, http_dir, monkeypatch):
    served, base = http_dir
    monkeypatch.setenv("BNVIZ_DATA", str(tmp_path / "new" / "data"))
    _serve(served, _tar_gz(_cifar10_members(tmp_path)), monkeypatch)
    assert download("cifar10", base_url=base) == tmp_path / "new" / "data" / "cifar-10-batches-py"
    assert load_image_data("cifar10").num_classes == 10


def test_download_with_wrong_md5_is_refused(data_root, tmp_path, http_dir, monkeypatch):
    served, base = http_dir
    _serve(served, _tar_gz(_cifar10_members(tmp_path)), monkeypatch, md5="0" * 32)
    with pytest.raises(DataError, match="checksum mismatch"):
        download("cifar10", base_url=base)
    assert not (data_root / "cifar-10-batches-py").exists()
    assert list(data_root.iterdir()) == []  # the fetched archive is not kept either


def test_download_never_writes_outside_the_data_dir(data_root, tmp_path, http_dir,
                                                    monkeypatch):
    served, base = http_dir
    escapes = ["../escaped.txt", "cifar-10-batches-py/../../escaped2.txt",
               "../../escaped3.txt"]
    members = {"cifar-10-batches-py/readme.txt": b"ok"}
    members.update({name: b"owned" for name in escapes})
    _serve(served, _tar_gz(members), monkeypatch)
    with pytest.raises(DataError, match="download of cifar10"):
        download("cifar10", base_url=base)
    for up in (data_root.parent, data_root.parent.parent):
        assert not any(up.glob("escaped*"))
    assert not any(p.name.startswith("escaped") for p in tmp_path.rglob("*"))


def test_download_absolute_member_stays_inside(data_root, tmp_path, http_dir, monkeypatch):
    served, base = http_dir
    target = tmp_path / "abs-escape.txt"
    _serve(served, _tar_gz({str(target): b"owned", "cifar-10-batches-py/x": b"ok"}),
           monkeypatch)
    try:
        download("cifar10", base_url=base)
    except DataError:
        pass  # refusing the archive is fine too
    assert not target.exists()


def test_download_errors(data_root, http_dir, monkeypatch):
    served, base = http_dir
    with pytest.raises(DataError, match="nothing to download"):
        download("folder:x")
    monkeypatch.setitem(dl.DOWNLOADS, "cifar10", (*dl.DOWNLOADS["cifar10"][:1],
                                                         "", "cifar-10-batches-py"))
    with pytest.raises(DataError, match="download of cifar10 from .*failed"):
        download("cifar10", base_url=base)  # 404: nothing served
    (served / "mirror").mkdir()
    (served / "mirror" / "cifar-10-python.tar.gz").write_bytes(b"not a tar archive at all")
    with pytest.raises(DataError, match="failed"):
        download("cifar10", base_url=base)


def test_download_svhn_files(data_root, tmp_path, http_dir, monkeypatch):
    served, base = http_dir
    src = write_svhn(tmp_path / "src", n_train=5, n_test=3)
    (served / "svhn").mkdir()
    sums = {}
    for name in ("train_32x32.mat", "test_32x32.mat"):
        raw = (src / name).read_bytes()
        (served / "svhn" / name).write_bytes(raw)
        sums[name] = hashlib.md5(raw).hexdigest()
    monkeypatch.setattr(dl, "_SVHN_FILES", sums)
    assert download("svhn", base_url=base.rsplit("/", 1)[0] + "/svhn/") == data_root / "svhn"
    data = load_image_data("svhn")
    assert len(data.y_train) == 5 and len(data.y_test) == 3
