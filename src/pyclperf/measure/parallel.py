"""Large host-side checks spread over the host's cores, a chunk of the array at a time.

A GPU's verification reads back hundreds of MiB per point, and the comparisons, reductions and
fills that follow run at one core's memory bandwidth in NumPy: on the guide's GPU sizes they,
not the device, took most of an experiment's seconds. NumPy releases the GIL inside its loops,
so the chunks of one array run on several threads at once, and each chunk's temporaries stay
in the caches instead of making array-sized float64 copies. Small arrays take the plain path.

The threads are a pool of the process's own, made on first use; a child forked from this
process (the tuner's workers) starts without it and makes its own.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

CHUNK = 1 << 20  # elements per chunk: a float64 temporary of 8 MiB stays in a core's caches
MAX_THREADS = 8  # past this the host's memory bandwidth, not its cores, is the limit

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def cores() -> int:
    """The host cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def threads() -> int:
    """How many threads the chunks run on: the cores this process may use, at most MAX_THREADS."""
    return max(1, min(MAX_THREADS, cores()))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=threads(), thread_name_prefix="pyclperf-check")
        return _pool


def _forget_pool() -> None:
    """In a forked child: the parent's threads are not there, so neither is its pool."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def chunks(n: int, chunk: int = CHUNK) -> list[slice]:
    """``range(n)`` cut into slices of ``chunk`` (the last shorter)."""
    return [slice(i, min(i + chunk, n)) for i in range(0, n, chunk)]


def map_chunks(fn: Callable[[slice], Any], n: int, chunk: int = CHUNK) -> list[Any]:
    """``fn(s)`` for each slice ``s`` of ``chunks(n, chunk)``, in order; on the pool's threads
    where there are at least two chunks and two threads, else in this thread.

    Where the guide runs lanes (device/turns.py), this work stays inside the lane's turn: run
    beside another lane's measurement, its threads took the cores that lane's own Python needed
    (on the H200 the turns were held longer in all once every lane's chunks ran at once)."""
    parts = chunks(n, chunk)
    if len(parts) < 2 or threads() < 2:
        return [fn(s) for s in parts]
    return list(_executor().map(fn, parts))


def copy_into(dst: Any, src: Any) -> None:
    """``dst[...] = src`` for two flat arrays of one size, a chunk at a time on the pool."""

    def part(s: slice) -> None:
        dst[s] = src[s]

    map_chunks(part, len(src), 8 * CHUNK)


__all__ = ["CHUNK", "chunks", "copy_into", "cores", "map_chunks", "threads"]
