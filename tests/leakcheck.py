"""Leak check: many create/release cycles of every core object, resident memory before and after.

Run with `make leakcheck` (or `python tests/leakcheck.py [CYCLES]`). Prints the growth and
exits non-zero when resident memory grew by more than the tolerance after a warm-up phase that
lets allocators, the OpenCL runtime and PoCL's caches reach their steady state.
"""

from __future__ import annotations

import ctypes
import gc
import sys

import numpy as np

import pyclperf

TOLERANCE_MIB = 16.0  # drift allowed over the measured cycles (allocator and runtime noise)

SRC = "__kernel void k(__global float* y, const float a) { y[get_global_id(0)] = a; }"


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def heap_mib() -> float:
    """Bytes the process holds allocated right now, in MiB: freed memory does not count.

    Resident memory is the wrong measure under AddressSanitizer (`make sanitize`): its
    quarantine keeps every freed block resident for a while, so 2000 refused allocations whose
    messages were all freed still grow RSS by about 7 MiB. ASan's own count of live bytes, or
    glibc's mallinfo2 without it, sees a leak and nothing else. RSS is the fallback elsewhere."""
    libc = ctypes.CDLL(None)
    asan = getattr(libc, "__sanitizer_get_current_allocated_bytes", None)
    if asan is not None:
        asan.restype = ctypes.c_size_t
        return asan() / 2**20
    mallinfo2 = getattr(libc, "mallinfo2", None)
    if mallinfo2 is not None:
        mallinfo2.restype = _MallInfo2
        info = mallinfo2()
        return (info.uordblks + info.hblkhd) / 2**20
    return rss_mib()


def cycle(ctx: pyclperf.Context, i: int, program: pyclperf.Program) -> None:
    buf = ctx.buffer(64 << 10)
    buf.write(np.full(16 << 10, i, np.float32))
    buf.release()
    pinned, view = ctx.pinned(16 << 10, np.float32)  # a view that lives past the buffer's name
    view[:8] = i
    del pinned
    dropped = pyclperf.PinnedBuffer(ctx, 4096)  # a view created and dropped first
    dropped.array(np.uint8)
    dropped.release()
    kernel = program.kernel("k")
    out = ctx.buffer(256 * 4)
    kernel.set_args(out, float(i))
    kernel.run(256, 64)
    del view, kernel, out
    if ctx.info.image_support:  # images and samplers: created, written, read back, released
        img = ctx.to_image(np.full((16, 16), i, np.float32))
        back = np.empty((16, 16), np.float32)
        img.read(back)
        img.release()
        ctx.sampler(filter="linear")
    if i % 100 == 0:  # a fresh program (and its kernels) every 100 cycles: builds are slow on PoCL
        ctx.program(SRC + f"\n// {i}", cache=False).kernel("k")


def main(cycles: int) -> int:
    ctx = pyclperf.Context()
    program = ctx.program(SRC)
    for i in range(cycles // 10):  # warm-up
        cycle(ctx, i, program)
    gc.collect()
    before = rss_mib()
    for i in range(cycles):
        cycle(ctx, i, program)
    gc.collect()
    after = rss_mib()
    growth = after - before
    print(f"{cycles} cycles on {ctx.info.name}: RSS {before:.1f} -> {after:.1f} MiB "
          f"(growth {growth:+.1f} MiB, tolerance {TOLERANCE_MIB} MiB)")
    return 0 if growth <= TOLERANCE_MIB else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
