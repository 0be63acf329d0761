"""On a device that works in host memory (a CPU device), a supervised kernel's arrays lie between
inaccessible fences (tuner/fences.py): a write beyond every guard zone faults, and the row says
which argument it hit and where, instead of the write landing unseen in the worker's memory.
The sweep over ever further writes past an array's end is in test_supervised.py."""

from __future__ import annotations

import ctypes
import mmap
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pyclperf import KernelRunError, _core, run_kernel, tune
from pyclperf.tuner import fences
from pyclperf.tuner.options import from_flat

FAST = dict(min_time=0.0, min_repeats=2, max_repeats=2, warmup=0, progress=False)
N = 65536

OVERRUN = """
__kernel void over(__global float* out, __global const float* a) {
    const int i = get_global_id(0);
    out[i + OFF] = a[i];
}"""


@pytest.fixture
def fenced(ctx):
    """Only where the worker fences its arrays: a CPU device whose driver works in the memory
    handed to it."""
    if not fences.works_in_host_memory(ctx):
        pytest.skip("this device's kernels do not work in the process's own memory")
    return ctx


def test_a_write_far_before_the_start_names_the_argument(fenced, rng):
    a = rng.standard_normal(N).astype(np.float32)
    res = tune(
        OVERRUN,
        "over",
        N,
        [np.empty_like(a), a],
        {"block_size_x": [64], "OFF": [-(10**8)]},
        **from_flat(dict(ctx=fenced, verify=lambda c, outputs: True, **FAST)),
    )
    row = res.rows[0]
    assert row["status"] == "out of bounds", row
    assert "argument 0 ('out'): the kernel wrote element -" in row["error"], row
    assert "elements before its start" in row["error"], row


def test_run_kernel_raises_out_of_bounds_for_a_write_far_past_the_end(fenced, rng):
    a = rng.standard_normal(N).astype(np.float32)
    with pytest.raises(KernelRunError) as far:
        run_kernel(OVERRUN, "over", N, [np.empty_like(a), a], {"block_size_x": 64, "OFF": 10**8},
                   ctx=fenced)
    assert far.value.status == "out of bounds", far.value
    assert "argument 0 ('out')" in str(far.value)
    out = run_kernel(OVERRUN, "over", N, [np.empty_like(a), a], {"block_size_x": 64, "OFF": 0},
                     ctx=fenced)
    assert np.array_equal(out[0], a)


# --- the buffer and the fault record, directly ----------------------------------------------
def test_a_fenced_buffer_is_the_memory_the_kernel_writes(fenced, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    buf = _core.FencedBuffer(fenced, x.nbytes, 1 << 30)
    assert buf.address % mmap.PAGESIZE == 0 and buf.fence == 1 << 30
    kernel = fenced.program(source="""
        __kernel void twice(__global float* y) { y[get_global_id(0)] *= 2.0f; }""").kernel("twice")
    buf.write(x)
    kernel.set_args(buf)
    kernel.run([x.size])
    seen = np.frombuffer(ctypes.string_at(buf.address, x.nbytes), np.float32)
    assert np.array_equal(seen, 2 * x)
    back = np.full_like(x, np.nan)
    buf.read(back)
    assert np.array_equal(back, 2 * x)
    buf.release()
    with pytest.raises(_core.ReleasedError):
        buf.read(back)


_TOUCH_FENCE = textwrap.dedent("""
    import ctypes, mmap, sys
    from pyclperf import _core
    from pyclperf.device.context import Context
    ctx = Context()
    buf = _core.FencedBuffer(ctx, 1000, 1 << 20)
    _core.record_faults(int(sys.argv[1]))
    print(hex(buf.address), flush=True)
    where = buf.address + mmap.PAGESIZE + 12345  # past the page that holds the 1000 bytes
    if sys.argv[2] == "w":
        ctypes.memset(where, 1, 1)
    else:
        ctypes.string_at(where, 1)
""")


@pytest.mark.parametrize("access", ("w", "r"))
def test_a_touch_of_the_fence_ends_the_process_and_leaves_its_address(fenced, tmp_path, access):
    record = tmp_path / "faults"
    with open(record, "wb") as f:
        done = subprocess.run([sys.executable, "-c", _TOUCH_FENCE, str(f.fileno()), access],
                              pass_fds=(f.fileno(),), capture_output=True, text=True, timeout=120)
    # The fault record hands the fault back to the handler that was there before it: none (the
    # process ends by SIGSEGV), or under `make sanitize` AddressSanitizer's, which reports the
    # SEGV and aborts. Either way the process ends at the fence, and the record is written first.
    if done.returncode == -6 and "AddressSanitizer: SEGV on unknown address" in done.stderr:
        assert os.environ.get("PYCLPERF_SANITIZED") == "1", done.stderr
    else:
        assert done.returncode == -11, done.stderr
    address = int(done.stdout.strip(), 16)
    assert record.read_text() == f"fault 11 {address + mmap.PAGESIZE + 12345:#x} {access}\n"


def test_explain_maps_a_fault_to_the_argument_and_element():
    base = 0x7F0000000000
    placed = (f"placed 0 {base:#x} 8192 {1 << 30} 4000 4 out\n"
              f"placed 1 {base + (4 << 30):#x} 4096 {1 << 30} 400 8 a\n")
    past = explain_at(placed, base + 8192 + 40, "w")
    assert past.startswith("argument 0 ('out'): the kernel wrote element 2058 of its "
                           "1000-element array, 1059 elements past the end (4232 bytes "), past
    before = explain_at(placed, base + (4 << 30) - 16, "r")
    assert before.startswith("argument 1 ('a'): the kernel read element -2 of its 50-element "
                             "array, 2 elements before its start (16 bytes before"), before
    assert explain_at(placed, base + (2 << 30), "w") == ""  # in no fence
    assert fences.explain(placed) == ""  # no fault


def explain_at(placed: str, address: int, access: str) -> str:
    return fences.explain(placed + f"fault 11 {address:#x} {access}\n")
