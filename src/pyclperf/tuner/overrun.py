"""How much room an array's buffer leaves past its end, and how far a write into that room
went, both in memory bounded by the array rather than by the launch.

A kernel without a bounds check writes one element per launched work-item, so a launch far
larger than its array (10^8 work-items over 4096 elements) writes far past the end. Where the
arguments are fenced (a worker process on a device that works in host memory, fences.py), the
room past the end is bounded by the array (``fenced_room``): a write beyond it faults in the
fence, which names the argument, instead of costing host memory in proportion to the launch.
Elsewhere (a GPU, whose device memory is no host memory; a caller's own process) the room
covers the launch, so the write stays inside a buffer of ours.

Either way the room is read back to say how far the write went, in chunks of CHUNK_BYTES
(``scan``): the host holds a few chunks at a time, never a copy of the whole room.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

# Where arguments are fenced, the room past an array's end that covers the launch is at most
# the array's own size again, and at least FENCED_ROOM_MIN (so a launch rounded up to whole
# work-groups, or a few rows of tiles past a small array, is still measured to the element).
FENCED_ROOM_MIN = 16 << 20
# How much of the room is read back and compared at once.
CHUNK_BYTES = 4 << 20


def fenced_room(array_bytes: int, launch_bytes: int) -> int:
    """Bytes past an array's end that a fenced buffer covers for the launch (before its guard
    zone): what the launch may write, up to the bound that keeps it proportional to the array."""
    return max(0, min(int(launch_bytes) - int(array_bytes),
                      max(FENCED_ROOM_MIN, int(array_bytes))))


@dataclass
class Overrun:
    """The elements past an array's end that changed: the first and last (counted from the
    end, 0 being the first element past it), how many, and whether the change reached the
    last element of the room (the write may have gone further)."""

    first: int
    last: int
    count: int
    reaches_end: bool


def scan(read: Callable[[np.ndarray, int], None], size: int, item: int,
         pattern: np.ndarray) -> Overrun | None:
    """Compare ``size`` bytes past an array's end with the guard ``pattern`` (4 bytes, tiled
    from the end), ``read(out, offset)`` filling ``out`` from that many bytes past the end;
    None where none changed. Elements are ``item`` bytes; a partial last element counts as one.
    Memory: a few chunks of CHUNK_BYTES, whatever ``size``."""
    step = max(1, CHUNK_BYTES // (4 * item)) * 4 * item  # whole elements and whole patterns
    expected = np.tile(np.asarray(pattern, np.uint8), step // pattern.size)
    got = np.empty(step, np.uint8)
    words = f"u{item}" if item in (1, 2, 4, 8) else None
    first = last = -1
    count = 0
    for start in range(0, size, step):
        n = min(step, size - start)
        chunk = got[:n]
        read(chunk, start)
        if np.array_equal(chunk, expected[:n]):
            continue
        whole = -(-n // item) * item
        if whole != n:  # the room ends inside an element: pad both sides alike
            chunk = np.concatenate([chunk, np.zeros(whole - n, np.uint8)])
            want = np.concatenate([expected[:n], np.zeros(whole - n, np.uint8)])
        else:
            want = expected[:n]
        if words is not None:
            changed = chunk.view(words) != want.view(words)
        else:
            changed = (chunk != want).reshape(-1, item).any(axis=1)
        base = start // item
        if first < 0:
            first = base + int(np.argmax(changed))
        last = base + changed.size - 1 - int(np.argmax(changed[::-1]))
        count += int(np.count_nonzero(changed))
    if count == 0:
        return None
    return Overrun(first, last, count, (last + 1) * item > size - item)
