"""Device memory for a CPU device's working-set sweeps, on 2 MiB pages where Linux gives them.

A CPU device's memory is the host's, mapped in 4 KiB pages unless a program asks for more.
Past a few MiB a random walk then misses the TLB on almost every load, and under a hypervisor
each miss walks two page tables: the dependent-load latency climbs steadily with the set (a
2-core virtual machine measured 28 ns at 4 MiB, 300 ns at 256 MiB) and no cache level shows as
a plateau. Asked for transparent huge pages (``madvise(MADV_HUGEPAGE)``, honoured where
``/sys/kernel/mm/transparent_hugepage/enabled`` is ``always`` or ``madvise``), the same walk
shows the last cache at 85-90 ns and DRAM at 145-170 ns.

So the sweeps use host memory of their own (a FencedBuffer: CL_MEM_USE_HOST_PTR over an mmap),
advised before its first touch; where that fails (no Linux, no huge pages) the memory is an
ordinary buffer and the curves are what they are. Never for a GPU: its memory is not the host's.

The sets begin at the buffer's first 2 MiB boundary (``offset``), one huge page more being
allocated for it: Linux maps only whole, aligned 2 MiB stretches on huge pages, and the mapping
begins a few KiB below a boundary. Sets read from the buffer's own start straddled 4 KiB pages
and a huge page, and on a 2-core AMD EPYC guest one unit's L1-sized reads then ran at 90-150 GB/s
(190 from the boundary) and its L1-sized chase at 2.7 ns (1.7), for buffers of 64 MiB and more.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

GUARD = 4096  # bytes of fence on either side (the FencedBuffer's own guard, a page)
HUGE = 2 << 20  # an x86-64 huge page


def advise_huge(address: int, nbytes: int) -> bool:
    """Ask Linux for huge pages over [address, address + nbytes); whether it agreed."""
    flag = getattr(mmap, "MADV_HUGEPAGE", None)
    if flag is None or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(nbytes), ctypes.c_int(flag)) == 0
    except (OSError, AttributeError):
        return False


def sweep_buffer(ctx: Any, nbytes: int) -> tuple[Any, bool, int]:
    """(buffer, whether it was advised onto huge pages, offset): ``nbytes`` from byte ``offset``
    of the buffer are the sweep's, on huge pages from their first byte where Linux gives them
    (module docstring). A CPU device's is host memory of its own, advised before anything
    touches it; otherwise an ordinary buffer of ``nbytes``, offset 0."""
    if ctx.info.is_gpu or not sys.platform.startswith("linux"):
        return ctx.buffer(nbytes), False, 0
    from .. import _core

    try:
        buf = _core.FencedBuffer(ctx, int(nbytes) + HUGE, GUARD)
    except (_core.ClError, _core.InvalidArgumentError, MemoryError):
        return ctx.buffer(nbytes), False, 0
    address = int(buf.address)
    advised = advise_huge(address, int(nbytes) + HUGE)
    return buf, advised, (-address) % HUGE if advised else 0


__all__ = ["HUGE", "advise_huge", "sweep_buffer"]
