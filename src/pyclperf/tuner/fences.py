"""Fenced arguments on devices whose memory is the host's, and what a fault in a fence means.

On a CPU device (PoCL, say) a kernel's buffers are the process's own memory, so a write far
past an array's end, beyond its guard zone (arguments.guard_bytes_for), lands in whatever else
the process has mapped there, unseen. In a worker process each array argument's buffer is
therefore host memory of its own (_core.FencedBuffer: CL_MEM_USE_HOST_PTR over an anonymous
mapping) between two reservations of FENCE_BYTES of inaccessible address space, which cost no
memory. A kernel that reaches into a fence faults; the worker's fault record
(_core.record_faults) writes the address to a file the supervisor reads once the worker is dead,
where ``explain`` turns it into the argument and the element that was hit.

The record file holds, besides the fault line, one ``placed`` line per fenced buffer the worker
allocated for the current job (the worker writes it when it allocates, and empties the file when
a new job arrives), since the addresses are the dead process's alone.
"""

from __future__ import annotations

import ctypes
import mmap
from typing import Any

import numpy as np

from .. import _core

# Inaccessible address space on either side of each fenced buffer: any index a kernel computes
# as a 32-bit int (below 2**31 elements) into elements of up to 8 bytes stays inside it.
FENCE_BYTES = 16 << 30
# Tried in turn when the address space is limited (ulimit -v); below the last, no fence.
_FALLBACK_FENCES = (FENCE_BYTES, 1 << 30, 64 << 20)


def works_in_host_memory(ctx: Any) -> bool:
    """Whether a stray write of the device's kernels lands in this process's memory, and
    host memory handed to the driver is what its kernels use: CPU devices whose driver keeps a
    CL_MEM_USE_HOST_PTR buffer in the caller's memory, checked once here (a driver that copies
    it elsewhere would leave the fences unused)."""
    if "CPU" not in str(ctx.info.type):
        return False
    page = mmap.PAGESIZE
    try:
        probe = _core.FencedBuffer(ctx, page, page)
    except Exception:  # noqa: BLE001 - no fences then; the guard zones still work
        return False
    try:
        probe.fill(np.array([0x3C, 0xC3, 0x5A, 0xA5], np.uint8))
        seen = ctypes.string_at(probe.address, 8)
        return seen == bytes([0x3C, 0xC3, 0x5A, 0xA5]) * 2
    finally:
        probe.release()


def allocate(ctx: Any, nbytes: int) -> Any:
    """A fenced buffer of ``nbytes``, with the widest fence the address space allows; a plain
    buffer when none fits."""
    for fence in _FALLBACK_FENCES:
        try:
            return _core.FencedBuffer(ctx, nbytes, fence)
        except _core.ClError:
            continue
    return _core.Buffer(ctx, nbytes)


def placement_line(index: int, name: str, buffer: Any, array: np.ndarray) -> str:
    """The record of one fenced buffer: its argument, where it lies and what it holds."""
    return (f"placed {index} {buffer.address:#x} {buffer.nbytes} {buffer.fence} "
            f"{array.nbytes} {array.itemsize} {name}\n")


_ACCESS = {"w": "wrote", "r": "read", "?": "accessed"}


def explain(record: str) -> str:
    """What the fault in ``record`` (the text of a fault record file) hit: the argument and how
    far past (or before) its array; empty when there is no fault or it lies in no fence."""
    placed: list[tuple[int, int, int, int, int, int, str]] = []
    fault = None
    for line in record.splitlines():
        parts = line.split(" ", 7)
        if parts[0] == "placed" and len(parts) == 8:
            index, address, size, fence, nbytes, item = (int(p, 0) for p in parts[1:7])
            placed.append((index, address, size, fence, nbytes, item, parts[7]))
        elif parts[0] == "fault" and len(parts) >= 3:
            fault = (int(parts[2], 16), _ACCESS.get(parts[3] if len(parts) > 3 else "?",
                                                    "accessed"))
    if fault is None:
        return ""
    where, verb = fault
    for index, address, size, fence, nbytes, item, name in reversed(placed):  # newest first
        mapped_end = address + -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
        if not (address - fence <= where < address or mapped_end <= where < mapped_end + fence):
            continue
        n = nbytes // item
        element = (where - address) // item
        if where < address:
            extent = (f"{-element} element{'s' if element != -1 else ''} before its start "
                      f"({address - where} bytes before the array)")
        else:
            extent = (f"{element - n + 1} elements past the end ({where - address - nbytes} "
                      "bytes past the array, beyond its guard zone)")
        return (f"argument {index} ('{name}'): the kernel {verb} element {element} of its "
                f"{n}-element array, {extent}: the access faulted in the inaccessible memory "
                "fenced off around the array, which ended its worker process")
    return ""
