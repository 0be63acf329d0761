"""Large transfers between NumPy and a GPU through pinned host memory.

A verified point reads its outputs back, hundreds of MiB at the guide's GPU sizes, and many
points upload fresh inputs. From ordinary (pageable) NumPy memory a GPU's driver copies through
a pinned area of its own, and a freshly allocated array adds a page fault per page on first
touch: on the H200 reading 256 MiB back into a new ``np.empty`` array took 102 ms, into pinned
memory 5 ms (the transfer experiment: pageable 11-13 GB/s, pinned 52-54 GB/s). In the guide's
lanes that time is the device's turn, which bounds the run.

So a device buffer moved in bulk gets pinned host *mirrors* of its own, kept while the buffer
lives: one it is read into, one it is written from (apart, so that a read's result survives a
later write of the same buffer). A mirror covers the buffer's bytes
up to the end of the largest transfer so far, rounded up to a power of two, not the whole
buffer: a copy sweep allocates for its largest stride and checks a few MiB of it. And a mirror
is made at a buffer's second transfer on that side, not its first: pinning memory is slow (on
the H200 106 ms for 256 MiB, 650 ms for a GiB, where the read from it then takes 5 and 20 ms),
so only a buffer moved again and again (every point of a sweep) earns one; a buffer moved once
goes the plain way.

- ``read_back(buffer, dtype)`` fills the read mirror and returns a view of it: valid until the
  next ``read_back`` of that buffer, so a caller that keeps results across reads copies them.
- ``write_from(buffer, array)`` copies the array into the write mirror outside the device's
  turn (device/turns.py's host_only: host work) and sends it from there.

Where staging does not pay, both are the plain transfer: on a CPU device (PoCL: host memory is
the device's memory already), below ``STAGE_MIN`` bytes, for an array in the other byte order
or not contiguous, or where the driver refuses the pinned allocation (the mirror is then not
tried again for that buffer).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from .. import _core
from ..device.turns import host_only

STAGE_MIN = 1 << 20  # bytes: below a MiB the pinned copy saves less than the allocation costs

_mirrors: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def staged(buffer: Any, nbytes: int, stage: bool | None = None) -> bool:
    """Whether a transfer of ``nbytes`` with ``buffer`` goes through its mirror: ``stage`` where
    given (True forces it on any device, as the tests do), else on a GPU for a MiB or more."""
    if stage is not None:
        return bool(stage)
    if nbytes < STAGE_MIN:
        return False
    info = getattr(getattr(buffer, "context", None), "info", None)
    return bool(getattr(info, "is_gpu", False))


def _mirror(buffer: Any, side: str, end: int) -> np.ndarray | None:
    """``buffer``'s pinned mirror for ``side`` ("read" or "write") as bytes, covering at least
    its first ``end`` bytes (grown, never shrunk); None for the side's first transfer, and for
    every one after the driver refused a mirror (never asked again for this buffer and side).
    A view handed out earlier keeps its own mirror."""
    with _lock:
        kept = _mirrors.setdefault(buffer, {})
        mirror = kept.get(side)
        if mirror is False:
            return None
        if mirror is not None and mirror.size >= end:
            return mirror
        if mirror is None and not kept.pop(f"{side} seen", False):
            kept[f"{side} seen"] = True  # the first transfer goes plain
            return None
        size = min(buffer.nbytes, 1 << max(0, end - 1).bit_length())
        try:
            kept[side] = buffer.context.pinned(size, np.uint8)[1]
        except (_core.ClError, MemoryError):
            kept[side] = False
            return None
        return kept[side]


def _plain(array: np.ndarray) -> bool:
    """Whether ``array``'s bytes are what the device holds: C-contiguous, the host's byte order."""
    return bool(array.flags.c_contiguous and array.dtype.isnative)


def read_back(buffer: Any, dtype: Any, count: int | None = None, offset: int = 0,
              stage: bool | None = None, *, shape: Any = None) -> np.ndarray:
    """``count`` elements of ``dtype`` (the rest of the buffer where None) from byte ``offset``
    of ``buffer``, as a 1-D array, or as an array of ``shape`` (its elements, instead of
    ``count``): a view of the buffer's pinned read mirror where the transfer is staged (valid
    until the buffer is read back again), a new array otherwise."""
    dt = np.dtype(dtype)
    if shape is not None:
        if count is not None:
            raise _core.InvalidArgumentError("read_back takes a count or a shape, not both")
        count = int(np.prod(shape, dtype=np.int64))
    if count is None:
        count = (buffer.nbytes - offset) // dt.itemsize
    nbytes = int(count) * dt.itemsize
    if offset < 0 or count < 0 or offset + nbytes > buffer.nbytes:
        raise _core.InvalidArgumentError(
            f"read_back of {count} x {dt} at byte {offset} passes the end of a {buffer.nbytes}-byte "
            "buffer")
    mirror = (_mirror(buffer, "read", offset + nbytes) if staged(buffer, nbytes, stage) and dt.isnative
              else None)
    if mirror is None:
        out = np.empty(int(count), dt)
        buffer.read(out, offset)
        return out if shape is None else out.reshape(shape)
    view = mirror[offset: offset + nbytes].view(dt)
    buffer.read(view, offset)
    return view if shape is None else view.reshape(shape)


def write_from(buffer: Any, array: Any, offset: int = 0, stage: bool | None = None) -> None:
    """``buffer``'s bytes from ``offset`` := ``array``'s: through the write mirror where the
    transfer is staged (the copy into it made as host work, off the device's turn)."""
    a = np.asarray(array)
    # The plain call, as the caller would have made it: which also names a misfit in its error.
    plain = (lambda: buffer.write(np.ascontiguousarray(a), offset)) if offset else \
        (lambda: buffer.write(np.ascontiguousarray(a)))
    if not (staged(buffer, a.nbytes, stage) and _plain(a)) or offset < 0 \
            or offset + a.nbytes > buffer.nbytes:
        plain()
        return
    mirror = _mirror(buffer, "write", offset + a.nbytes)
    if mirror is None:  # the first transfer, or the driver refused the pinned memory
        plain()
        return
    view = mirror[offset: offset + a.nbytes]
    with host_only():
        np.copyto(view, a.reshape(-1).view(np.uint8))
    buffer.write(view, offset)


__all__ = ["STAGE_MIN", "read_back", "staged", "write_from"]
