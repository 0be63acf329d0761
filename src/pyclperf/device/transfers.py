"""Timed transfers from Python (Guide 3.1): host <-> device and device -> device.

The timing loops run in C++ (pyclperf._core); these functions fill in defaults and say what
the arguments mean. Host memory is a C-contiguous NumPy array (pageable) or a PinnedBuffer
(pinned: its mapped host memory is the source or destination)::

    dev = ctx.buffer(1 << 26)
    pinned = pyclperf.PinnedBuffer(ctx, 1 << 26)
    ns = pyclperf.time_transfer("h2d", dev, pinned)      # per-repeat times in ns
"""

from __future__ import annotations

from typing import Union

import numpy as np

from .. import _core

DIRECTIONS = ("h2d", "d2h")
ACCESS = ("direct", "mapped")

HostMemory = Union[np.ndarray, _core.PinnedBuffer]


def host_nbytes(host: HostMemory) -> int:
    """Bytes of host memory in a NumPy array or a PinnedBuffer."""
    if not isinstance(host, (np.ndarray, _core.PinnedBuffer)):
        raise _core.InvalidArgumentError(
            f"host memory must be a NumPy array (pageable) or a PinnedBuffer, got {type(host).__name__}")
    return int(host.nbytes)


def _size(nbytes: int | None, *limits: int) -> int:
    n = min(limits) if nbytes is None else int(nbytes)
    if n < 0:
        raise _core.InvalidArgumentError(f"transfer size must be positive, got {n} bytes")
    return n


def time_transfer(
    direction: str,
    device: _core.Buffer,
    host: HostMemory,
    nbytes: int | None = None,
    *,
    access: str = "direct",
    pieces: int = 1,
    method: str = "events",
    warmup: int = 3,
    repeats: int = 20,
) -> np.ndarray:
    """Per-repeat times (ns) of moving ``nbytes`` between ``device`` and ``host``.

    ``direction`` is "h2d" or "d2h"; ``access`` "direct" (enqueueWrite/ReadBuffer) or "mapped"
    (map the device buffer, memcpy, unmap); ``pieces`` > 1 splits each transfer into that many
    equal back-to-back transfers, timed as one batch; ``method`` "events" (first command's start
    to last command's end) or "host" (a steady clock around enqueue and finish). ``nbytes``
    defaults to the smaller of the two sides.
    """
    n = _size(nbytes, device.nbytes, host_nbytes(host))
    return _core.time_transfer(direction, device, host, n, access, int(pieces), method,
                               int(warmup), int(repeats))


def time_copy(
    src: _core.Buffer,
    dst: _core.Buffer,
    nbytes: int | None = None,
    *,
    method: str = "events",
    warmup: int = 3,
    repeats: int = 20,
) -> np.ndarray:
    """Per-repeat times (ns) of enqueueCopyBuffer of ``nbytes`` from ``src`` to ``dst``
    (default: the smaller buffer). Its effective bandwidth counts 2 x nbytes (read + write)."""
    n = _size(nbytes, src.nbytes, dst.nbytes)
    return _core.time_copy(src, dst, n, method, int(warmup), int(repeats))
