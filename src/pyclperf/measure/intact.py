"""Whether a launch left alone what it must not touch, checked at device speed: a checksum
(kernels/checksum.cl) of each guard zone and of each read-only input, before and after the
verified launch.

Guard zones are wide (up to 32 times the array, see arguments.guard_bytes_for), so a write far
past an array's end still lands in one and is measured; reading them back to the host after
every launch would cost more than the launch. A write that goes further still lands in whatever
the driver placed there, often another argument's buffer: an input declared ``const`` or
``__constant`` that changed across the launch names the argument that was hit. Only when a
checksum differs is anything read back, to say where.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..device.program import LocalMemory

# Work-groups of the checksum: enough to fill any device, few enough to sum on the host.
GROUPS = 256
# Per context: the kernel, its work-group size and the buffer of its per-group sums, made once
# (a checksum runs around every verified launch).
_kernels: "weakref.WeakKeyDictionary[Any, tuple[Any, int, Any]]" = weakref.WeakKeyDictionary()


def _kernel(ctx: Any) -> tuple[Any, int, Any]:
    found = _kernels.get(ctx)
    if found is None or found[2].released:
        kernel = ctx.program(file="checksum.cl").kernel("checksum_words")
        local = 1
        limit = min(256, int(kernel.limits().work_group_size),
                    int(ctx.info.max_work_group_size))
        while local * 2 <= limit:  # a power of two: the tree sum halves it
            local *= 2
        found = (kernel, local, ctx.buffer(8 * GROUPS))
        _kernels[ctx] = found
    return found


def checksum(ctx: Any, buffer: Any, nbytes: int, offset: int = 0) -> int:
    """The checksum of ``nbytes`` of ``buffer`` from byte ``offset`` (a multiple of 4), rounded
    up to whole words (the buffers pyclperf places are padded past their data, so the round-up
    stays inside)."""
    if offset % 4:
        raise ValueError(f"checksum offset {offset} is not a multiple of 4")
    kernel, local, partial = _kernel(ctx)
    words = -(-int(nbytes) // 4)
    kernel.set_args(buffer, np.uint64(offset // 4), np.uint64(words), partial,
                    LocalMemory(8 * local))
    kernel.run([GROUPS * local], [local])
    sums = np.empty(GROUPS, np.uint64)
    partial.read(sums)
    return int(sums.sum(dtype=np.uint64))


def changed_span(before: np.ndarray, after: np.ndarray) -> str:
    """Where two copies of an array differ, in words: the count and the first and last index."""
    a = before.reshape(-1).view(np.uint8).reshape(before.size, before.itemsize)
    b = after.reshape(-1).view(np.uint8).reshape(after.size, after.itemsize)
    where = np.flatnonzero(np.any(a != b, axis=1))
    if where.size == 0:
        return "no element differs now (it was changed and changed back)"
    return (f"{where.size} element(s) changed, from index {int(where[0])} to {int(where[-1])}")
