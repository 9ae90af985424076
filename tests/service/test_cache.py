"""The web layer's caches: memory bounded by bytes, disk shared by processes."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import dataclass

import numpy as np
import torch

from bnviz.service import cache


@dataclass
class _Result:
    regions: np.ndarray
    names: list[str]


def test_nbytes_counts_buffers_once():
    a = np.zeros((1000, 100))  # 800 kB
    assert cache.nbytes(a) == a.nbytes
    # a view of a counts its header, not the buffer again; the same array twice counts once
    assert cache.nbytes([a, a, a[:10]]) < a.nbytes + 10_000
    assert cache.nbytes(torch.zeros(1000, dtype=torch.float64)) == 8000
    r = _Result(np.ones(500), ["x"] * 3)
    assert 4000 <= cache.nbytes(r) < 6000
    assert cache.nbytes({"k": np.ones(1000)}) >= 8000


def test_memory_cache_is_bounded_by_bytes_not_count():
    c = cache.memory_cache(max_bytes=1_000_000)
    for i in range(10):
        c[i] = np.zeros(50_000)  # 400 kB each: two fit
    assert len(c) == 2 and set(c) == {8, 9}
    assert c.currsize <= 1_000_000
    small = cache.memory_cache(max_bytes=1_000_000)
    for i in range(200):
        small[i] = np.zeros(100)  # 800 B each: all fit
    assert len(small) == 200


def test_memoize_computes_once_and_skips_values_larger_than_the_cache():
    calls = []

    @cache.memoize(max_bytes=100_000)
    def f(n):
        calls.append(n)
        return np.zeros(n)

    f(10), f(10)
    assert calls == [10]
    assert f.cache_info().hits == 1 and f.cache_info().misses == 1
    f(1_000_000), f(1_000_000)  # 8 MB: served, never kept
    assert calls == [10, 1_000_000, 1_000_000]
    assert f.cache_info().currsize <= 100_000
    f.cache_clear()
    f(10)
    assert calls[-1] == 10 and len(calls) == 4


def test_memoize_is_thread_safe():
    @cache.memoize(max_bytes=50_000)
    def f(n):
        return np.full(n % 50 + 1, n, dtype=float)

    errors = []

    def hammer(seed):
        try:
            for i in range(2000):
                v = f((seed * 7919 + i) % 400)
                assert v[0] == (seed * 7919 + i) % 400
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert f.cache_info().currsize <= 50_000


def test_memoize_computes_a_key_once_while_it_is_under_way():
    """A second thread asking for a result under way waits for it instead of computing it
    again (the lecture's prepared next step and the step the lecturer then asks for); when
    the first computation fails, the waiting thread computes it itself."""
    calls: list[int] = []
    started, release = threading.Event(), threading.Event()

    @cache.memoize(max_bytes=10_000)
    def slow(n):
        calls.append(n)
        started.set()
        assert release.wait(10)
        if n < 0 and len(calls) == 1:
            raise RuntimeError("the first computation fails")
        return np.arange(n if n > 0 else 3, dtype=float)

    for n, expected_calls in ((5, 1), (-1, 2)):
        calls.clear()
        started.clear()
        release.clear()
        results: dict[str, object] = {}

        def ask(who, n=n, results=results):
            try:
                results[who] = slow(n)
            except RuntimeError as exc:
                results[who] = exc

        first = threading.Thread(target=ask, args=("first",))
        first.start()
        assert started.wait(10)
        second = threading.Thread(target=ask, args=("second",))
        second.start()
        second.join(0.3)
        assert second.is_alive()  # it waits for the first, not computing beside it
        release.set()
        first.join(10)
        second.join(10)
        assert len(calls) == expected_calls, calls
        assert isinstance(results["second"], np.ndarray) and results["second"].size == abs(
            n if n > 0 else 3)
        if n < 0:
            assert isinstance(results["first"], RuntimeError)
    assert slow.cache_info().misses == 3 and slow.cache_info().hits == 1


_CHILD = """
import sys, time
from bnviz.service import cache

@cache.shared_memoize("test-slow")
def slow(x):
    with open(sys.argv[1], "a") as log:
        log.write("computed\\n")
    time.sleep(1.0)
    return x * 2

print(slow(21))
"""


def test_shared_memoize_computes_once_across_processes(tmp_home, tmp_path):
    log = tmp_path / "log"
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(log)], stdout=subprocess.PIPE,
                              text=True) for _ in range(3)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert outs == ["42"] * 3
    assert log.read_text().count("computed") == 1  # the others waited and read
    # and a later process reads it from disk without computing
    again = subprocess.run([sys.executable, "-c", _CHILD, str(log)], capture_output=True,
                           text=True, timeout=60)
    assert again.stdout.strip() == "42"
    assert log.read_text().count("computed") == 1


def test_shared_cache_lives_under_bnviz_home(tmp_home):
    c = cache.shared_cache()
    assert str(tmp_home) in c.directory
    c.set("k", np.arange(3))
    assert np.array_equal(cache.shared_cache().get("k"), np.arange(3))


def test_default_memoize_shares_one_budget_per_process(monkeypatch):
    """Every default memoize of a process shares one byte budget (BNVIZ_CACHE_MB), so a web
    worker's caches together stay under it; clearing one function leaves the others."""
    monkeypatch.setenv("BNVIZ_CACHE_MB", "1")  # 1 MiB for all
    monkeypatch.setattr(cache, "_process_cache", None)

    @cache.memoize()
    def a(i):
        return np.zeros(40_000)  # 320 kB

    @cache.memoize()
    def b(i):
        return np.zeros(40_000)

    for i in range(3):
        a(i), b(i)
    info = a.cache_info()
    assert info.maxsize == 2**20 and info.currsize <= 2**20
    assert b.cache_info().currsize == info.currsize  # one cache
    b(2)
    assert b.cache_info().hits == 1  # the newest is still there
    a.cache_clear()
    b(2)
    assert b.cache_info().hits == 2  # b's result survived a's clear
    a(2)
    assert a.cache_info().misses == 4  # a's was cleared
