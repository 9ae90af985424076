"""The caches of the web layer: one in memory per process, bounded by bytes, and one on disk
shared by every process of a ``BNVIZ_HOME``.

* :func:`memory_cache` is a :class:`cachetools.LRUCache` whose size is the bytes its values
  hold (:func:`nbytes`), not their count: one explorer result at the caps holds ~60 MB, a
  default one ~100 kB, so a count bound either wastes the cache or lets a worker grow to
  gigabytes (32 entries at the caps were ~2 GB).
* :func:`shared_cache` is a :class:`diskcache.Cache` under ``$BNVIZ_HOME/cache`` (what Dash's
  own background callbacks use): results that take seconds (the claims table, the Ergen et al.
  training) are computed once per ``BNVIZ_HOME``, not once per web process.
  :func:`shared_memoize` wraps a function with it, and holds a lock across processes while
  computing, so that N workers asked at once compute once (the others wait and read; a web
  request waits no longer than for a heavy slot, then is told when to try again).

``BNVIZ_CACHE_MB`` bounds each process's memory cache, shared by every memoised function
(default 256) and ``BNVIZ_DISK_CACHE_MB``
the disk cache (default 1024); diskcache evicts the least recently stored entries past it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import threading
import time
from collections import namedtuple
from collections.abc import Callable
from typing import Any, TypeVar

import cachetools
import diskcache
import numpy as np

from bnviz.config import bnviz_home, setting

__all__ = ["CacheInfo", "memory_cache", "memoize", "nbytes", "shared_cache", "shared_memoize"]

F = TypeVar("F", bound=Callable[..., Any])


def _env_megabytes(name: str) -> int:
    return int(setting(name) * 2**20)


def nbytes(value: Any, _seen: set[int] | None = None) -> int:
    """Bytes a cached value holds: numpy arrays and torch tensors by their buffers, containers
    and dataclasses by their items, anything else by ``sys.getsizeof``. Each object is counted
    once (views of one array count their own header only)."""
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes if value.base is None else sys.getsizeof(value)
    if type(value).__module__.startswith("torch") and hasattr(value, "element_size"):
        return int(value.element_size() * value.nelement())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(nbytes(getattr(value, f.name), seen)
                                          for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(nbytes(k, seen) + nbytes(v, seen)
                                          for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return sys.getsizeof(value) + sum(nbytes(v, seen) for v in value)
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return sys.getsizeof(value) + nbytes(vars(value), seen)
    return sys.getsizeof(value)


def memory_cache(max_bytes: int | None = None) -> cachetools.LRUCache:
    """An LRU cache of this process bounded by the bytes of its values (``BNVIZ_CACHE_MB``
    when ``max_bytes`` is None). A value larger than the bound is not kept."""
    size = _env_megabytes("BNVIZ_CACHE_MB") if max_bytes is None else int(max_bytes)
    return cachetools.LRUCache(maxsize=size, getsizeof=nbytes)


_process_cache: cachetools.LRUCache | None = None
_process_lock = threading.Lock()


def _process() -> tuple[cachetools.LRUCache, threading.Lock]:
    """The one memory cache of this process that every default :func:`memoize` shares, so
    ``BNVIZ_CACHE_MB`` bounds a web worker's cached results together, not per function."""
    global _process_cache
    with _process_lock:
        if _process_cache is None:
            _process_cache = memory_cache()
        return _process_cache, _process_lock


def _computed(fn: Callable, cost: Callable[..., float] | None, args: tuple, kwargs: dict
              ) -> Any:
    """``fn(*args, **kwargs)``, under the web's admission control when ``cost`` estimates its
    seconds (:func:`bnviz.service.admission.admitted`: a heavy one waits for its turn)."""
    if cost is None:
        return fn(*args, **kwargs)
    from bnviz.service.admission import admitted

    with admitted(cost(*args, **kwargs)):
        return fn(*args, **kwargs)


@dataclasses.dataclass
class _Running:
    """A memoised computation under way: the threads that want the same result wait for it."""

    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    ok: bool = False
    value: Any = None


def memoize(max_bytes: int | None = None, cost: Callable[..., float] | None = None
            ) -> Callable[[F], F]:
    """Decorator: memoise a function of hashable arguments, thread-safe (web workers run
    several threads). By default its results go to the process's one byte-bounded cache
    (``BNVIZ_CACHE_MB`` for all memoised functions together; least recently used first out);
    ``max_bytes`` gives the function a cache of its own instead. ``fn.cache_info()`` and
    ``fn.cache_clear()`` work as functools.lru_cache's do (currsize and maxsize in bytes, of
    the cache it uses; clear removes only this function's results). ``cost``: a function of
    the same arguments estimating the seconds a computation takes (:mod:`bnviz.params.cost`);
    a cache miss then runs under the web's admission control, a hit never waits. One key is
    computed once at a time: a caller that finds it under way in another thread waits for
    that result (and computes it itself only if that one failed)."""

    def wrap(fn: F) -> F:
        if max_bytes is None:
            cache, lock = _process()
        else:
            cache, lock = memory_cache(max_bytes), threading.Lock()
        name = f"{fn.__module__}.{fn.__qualname__}"
        stats = {"hits": 0, "misses": 0}

        running: dict[tuple, _Running] = {}  # the computations under way, by key

        @functools.wraps(fn)
        def cached(*args: Any, **kwargs: Any) -> Any:
            key = (name, cachetools.keys.hashkey(*args, **kwargs))
            while True:
                with lock:
                    try:
                        value = cache[key]
                        stats["hits"] += 1
                        return value
                    except KeyError:
                        pass
                    under_way = running.get(key)
                    if under_way is None:
                        stats["misses"] += 1
                        mine = running[key] = _Running()
                        break
                # the same computation is under way in another thread (a page's step the
                # lecture prepared ahead): its result, not a second computation queued behind
                under_way.done.wait()
                if under_way.ok:
                    with lock:
                        stats["hits"] += 1
                    return under_way.value
                # it failed (a refusal of work prepared ahead, say): compute it here
            try:
                mine.value = _computed(fn, cost, args, kwargs)
                mine.ok = True
            finally:
                with lock:
                    del running[key]
                    if mine.ok:
                        try:
                            cache[key] = mine.value
                        except ValueError:  # larger than the whole cache: serve it, keep none
                            pass
                mine.done.set()
            return mine.value

        def cache_clear() -> None:
            with lock:
                for key in [k for k in cache if k[0] == name]:
                    del cache[key]

        cached.cache_clear = cache_clear  # type: ignore[attr-defined]
        cached.cache_info = lambda: CacheInfo(  # type: ignore[attr-defined]
            stats["hits"], stats["misses"], cache.maxsize, cache.currsize)
        return cached  # type: ignore[return-value]

    return wrap


CacheInfo = namedtuple("CacheInfo", "hits misses maxsize currsize")

_shared: dict[str, diskcache.Cache] = {}
_shared_lock = threading.Lock()


def shared_cache() -> diskcache.Cache:
    """The disk cache of this ``BNVIZ_HOME`` (one per process and home; safe across threads
    and processes: diskcache uses SQLite transactions)."""
    directory = str(bnviz_home() / "cache")
    with _shared_lock:
        cache = _shared.get(directory)
        if cache is None:
            cache = diskcache.Cache(directory, size_limit=_env_megabytes(
                "BNVIZ_DISK_CACHE_MB"), eviction_policy="least-recently-stored")
            _shared[directory] = cache
        return cache


def shared_memoize(name: str, expire: float | None = None,
                   cost: Callable[..., float] | None = None) -> Callable[[F], F]:
    """Decorator: memoise a function of hashable, picklable arguments in :func:`shared_cache`
    under ``name`` (bump it when the function's results change meaning). One caller computes
    a key (holding its lock in the cache, across processes); the others asking for it meanwhile
    wait and then read the stored value: computed once per ``BNVIZ_HOME``. ``cost``: as
    :func:`memoize`'s; a web request waits for another's computation as long as for a heavy
    slot, no longer (:func:`_lock_or_value`)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def cached(*args: Any, **kwargs: Any) -> Any:
            cache = shared_cache()
            key = (name, args, tuple(sorted(kwargs.items())))
            value = cache.get(key, default=_MISSING)
            if value is not _MISSING:
                return value
            lock = ("lock", key)
            value = _lock_or_value(cache, key, lock, cost, args, kwargs)
            if value is not _MISSING:
                return value
            try:
                value = cache.get(key, default=_MISSING)
                if value is _MISSING:
                    value = _computed(fn, cost, args, kwargs)
                    cache.set(key, value, expire=expire)
                return value
            finally:
                cache.delete(lock, retry=True)

        return cached  # type: ignore[return-value]

    return wrap


#: How long a computing caller's lock lives at most (a process killed while computing).
LOCK_SECONDS = 600
#: How often a caller waiting for another's computation looks again (seconds).
WAIT_POLL_SECONDS = 0.05


def _lock_or_value(cache: diskcache.Cache, key: tuple, lock: tuple,
                   cost: Callable[..., float] | None, args: tuple, kwargs: dict) -> Any:
    """Take ``lock`` (then the caller computes: returns _MISSING), or the value another caller
    stored meanwhile. A web request waits at most ``BNVIZ_HEAVY_WAIT_SECONDS``, as for a heavy
    slot, then is answered :class:`~bnviz.service.admission.ServerBusy` with the computation's
    estimated seconds as its retry time: three callers of a 15 s computation kept three of a
    worker's few threads for its whole length (issue 42), and past a proxy's timeout they got
    504s. Outside a request (a web process's precompute thread, the command line) it waits."""
    from bnviz.config import setting
    from bnviz.service.admission import RETRY_SECONDS, ServerBusy
    from bnviz.service.clients import request_client

    in_request = request_client() is not None
    deadline = time.monotonic() + setting("BNVIZ_HEAVY_WAIT_SECONDS")
    while not cache.add(lock, None, expire=LOCK_SECONDS, retry=True):
        value = cache.get(key, default=_MISSING)
        if value is not _MISSING:
            return value
        if in_request and time.monotonic() >= deadline:
            seconds = cost(*args, **kwargs) if cost is not None else float("inf")
            retry = math.ceil(seconds) if seconds < 60 else 2 * RETRY_SECONDS
            retry = max(retry, RETRY_SECONDS)
            raise ServerBusy("the server is computing this for another request: try again "
                             f"in {retry} s", retry)
        time.sleep(WAIT_POLL_SECONDS)
    return _MISSING


_MISSING = object()
