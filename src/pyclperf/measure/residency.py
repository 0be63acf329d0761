"""Where a tuned kernel's data lived while it was timed, and under which conditions.

A working set that fits in the cache is timed from the cache when launches repeat: its figure
is the cache's, not DRAM's. Each row records the working set (the bytes of the array arguments)
beside the device's cache (and, as ``cache_resident`` with a ``residency`` note, whether it fits
what caches may hold: plausible.cache_allowance, since drivers under-report their L2), the compulsory traffic (each read-only input read once, each other
array written once, an in/out argument twice) and the bandwidth that implies, and with
``cold=True`` the last-level cache is flushed before every timed launch, outside the timed
events, by a kernel reading a buffer much larger than any cache. The GPU's clocks, power
and throttling while the timed launches run come from measure.conditions where NVML knows the
device.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from .plausible import cache_allowance
from .conditions import Conditions

# The flush buffer: at least this large (NVIDIA's OpenCL reports a 4 MiB "global memory cache"
# on GPUs whose L2 holds 50-60 MB, so the reported size alone is not enough), and 4x the cache
# the device reports where that is larger; never more than an eighth of the device's memory.
FLUSH_MIN_BYTES = 256 << 20
_PATTERN = np.array([0x3C, 0x5A, 0x96, 0xC3], dtype=np.uint8)

_flushers: "weakref.WeakKeyDictionary[Any, tuple[Any, Any, int, Any]]" = weakref.WeakKeyDictionary()
_conditions: "weakref.WeakKeyDictionary[Any, Conditions | None]" = weakref.WeakKeyDictionary()


def flush_bytes(info: Any) -> int:
    want = max(FLUSH_MIN_BYTES, 4 * int(info.global_mem_cache_bytes))
    cap = min(int(info.max_alloc_bytes), int(info.global_mem_bytes) // 8)
    return max(1 << 20, min(want, cap)) // 128 * 128


# Work-groups of the flush: each reads a contiguous stretch of the buffer.
FLUSH_GROUPS = 256


def _flusher(ctx: Any) -> tuple[Any, Any, int, Any]:
    """The context's flush buffer (filled once), the flush kernel bound to it, and its
    work-group size: made on first use, one per context."""
    found = _flushers.get(ctx)
    if found is not None and not found[0].released:
        return found
    from ..device.program import LocalMemory

    buffer = ctx.buffer(flush_bytes(ctx.info))
    buffer.fill(_PATTERN)
    kernel = ctx.program(file="flush.cl").kernel("flush_read")
    limit = min(256, int(kernel.limits().work_group_size), int(ctx.info.max_work_group_size))
    local = 1
    while local * 2 <= limit:  # a power of two: the fold halves it
        local *= 2
    n4 = buffer.nbytes // 16
    folds = ctx.buffer(4 * FLUSH_GROUPS)
    kernel.set_args(buffer, np.uint64(n4), np.uint64(-(-n4 // FLUSH_GROUPS)), folds,
                    LocalMemory(4 * local))
    found = (buffer, kernel, local, folds)
    _flushers[ctx] = found
    return found


def cache_flush(ctx: Any) -> Callable[[], None]:
    """A call that evicts the device's caches: a kernel reading a flush buffer (one per
    context) whole (kernels/flush.cl). A read, not a fill: a fill leaves the cache full of dirty
    lines that the next kernel must first write back, so the figure after it would be slower
    than memory's. Nothing is read back: the launch alone does the work."""
    _, kernel, local, _ = _flusher(ctx)

    def flush() -> None:
        kernel.run([FLUSH_GROUPS * local], [local])
    return flush


def read_through(ctx: Any) -> tuple[int, int]:
    """One flush, and what it read, to check it: (the XOR of every 32-bit word the flush
    kernel folded, the XOR of the flush buffer's words as the host computes it)."""
    buffer, kernel, local, folds = _flusher(ctx)
    kernel.run([FLUSH_GROUPS * local], [local])
    got = np.empty(FLUSH_GROUPS, np.uint32)
    folds.read(got)
    words = np.empty(buffer.nbytes // 4, np.uint32)
    buffer.read(words)
    return int(np.bitwise_xor.reduce(got)), int(np.bitwise_xor.reduce(words))


def conditions_of(ctx: Any) -> Conditions | None:
    """The NVML readings of ctx's GPU (None where NVML does not know it), one per context."""
    if ctx not in _conditions:
        _conditions[ctx] = Conditions.for_device(ctx.info)
    return _conditions[ctx]


def sweep_begins(ctx: Any) -> None:
    """A sweep on ctx begins: its NVML readings start afresh (Conditions.new_sweep)."""
    watch = conditions_of(ctx)
    if watch is not None:
        watch.new_sweep()


def chained(*steps: Callable[[], None] | None) -> Callable[[], None] | None:
    """One reset step doing each of ``steps`` in order (None when there is none)."""
    todo = [s for s in steps if s is not None]
    if not todo:
        return None
    if len(todo) == 1:
        return todo[0]

    def run() -> None:
        for step in todo:
            step()

    return run


def residency_columns(arguments: Any, info: Any, inout: list[int], seconds: float,
                      cold: bool) -> dict[str, Any]:
    """The row's working set, cache, compulsory traffic and the bandwidth it implies."""
    working = 0
    compulsory = 0
    for index, placed in arguments.placed.items():
        working += placed.nbytes
        compulsory += placed.nbytes * (2 if index in inout else 1)
    allowance = cache_allowance(info)
    resident = working <= allowance and not cold
    out = {
        "working_set_bytes": working,
        "cache_bytes": int(info.global_mem_cache_bytes),
        "cache_resident": bool(resident),
        "cold": bool(cold),
        "compulsory_bytes": compulsory,
        "compulsory_gbps": compulsory / seconds / 1e9 if seconds > 0 else None,
    }
    if resident:
        out["residency"] = (f"timed warm: the {working}-byte working set fits what the caches in "
                            f"front of memory may hold ({allowance} bytes), so the figure may be "
                            "the cache's; cold=True times it from memory")
    return out
