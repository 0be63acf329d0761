"""The device-side checksums (measure/intact.py) cost one kernel each and nothing more: the
buffer of per-group sums is made once per context, and a const input's baseline is taken once
per upload, not before every verified launch; both still see every change."""

from __future__ import annotations

import numpy as np

from pyclperf.measure import intact, residency
from pyclperf.tuner.arguments import Arguments

CONST_COPY = """
__kernel void copy(__global float* dst, __global const float* src) {
    const int i = get_global_id(0);
    dst[i] = src[i];
}"""

SCRIBBLE = """
__kernel void copy(__global float* dst, __global const float* src) {
    const int i = get_global_id(0);
    dst[i] = src[i];
    ((__global float*)src)[i] = 0.0f;   // casts away const
}"""


def expected_checksum(words: np.ndarray) -> int:
    """kernels/checksum.cl's sum, computed on the host."""
    i = np.arange(words.size, dtype=np.uint64)
    w = words.astype(np.uint64) + np.uint64(1)
    with np.errstate(over="ignore"):
        return int((w * (np.uint64(2) * i * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1))).sum(
            dtype=np.uint64))


def test_checksums_allocate_nothing_after_the_first_and_stay_right(ctx, rng, monkeypatch):
    made = []
    real = type(ctx).buffer

    def counting(self, nbytes):
        made.append(nbytes)
        return real(self, nbytes)

    flush = residency.cache_flush(ctx)
    flush()
    # The first checksum on this context makes its buffer of per-group sums (one, of 8 bytes a
    # group); whether an earlier test in this process took one already depends on the order
    # the tests ran in, so it is taken here, and counted: at most that one buffer.
    first = ctx.to_device(np.arange(7, dtype=np.uint32))
    monkeypatch.setattr(type(ctx), "buffer", counting)
    assert intact.checksum(ctx, first, 28) == expected_checksum(np.arange(7, dtype=np.uint32))
    assert made in ([], [8 * intact.GROUPS]), made
    first.release()
    made.clear()
    for _ in range(5):
        flush()
    for n in (1, 1000, 4096):
        words = rng.integers(0, 2**32, n, dtype=np.uint32)
        buf = ctx.to_device(words)
        assert intact.checksum(ctx, buf, words.nbytes) == expected_checksum(words)
        buf.release()
    assert made == []


def _bound(ctx, source, x):
    kernel = ctx.program(source=source).kernel("copy")
    args = Arguments(ctx)
    args.bind(kernel, [np.empty_like(x), x], x.size)
    return kernel, args


def test_a_const_inputs_baseline_is_taken_once_per_upload(ctx, rng, monkeypatch):
    x = rng.standard_normal(1024).astype(np.float32)
    kernel, args = _bound(ctx, CONST_COPY, x)
    taken = []
    real = intact.checksum

    def counting(c, buffer, nbytes, offset=0):
        taken.append(nbytes)
        return real(c, buffer, nbytes, offset)

    monkeypatch.setattr(intact, "checksum", counting)
    first = args.sealed(skip=())
    assert list(first) == [1] and taken == [x.nbytes]
    for _ in range(3):
        kernel.run([x.size])
        assert args.sealed(skip=()) == first
        assert args.breached(first) == ""
    assert taken == [x.nbytes] * 4  # the baseline once, then one check after each launch
    args.upload(1)
    args.sealed(skip=())
    assert taken[-1] == x.nbytes and len(taken) == 5  # a new upload: a new baseline
    args.release()


def test_a_kept_baseline_still_catches_a_kernel_that_writes_a_const_input(ctx, rng):
    x = rng.standard_normal(1024).astype(np.float32)
    kernel, args = _bound(ctx, SCRIBBLE, x)
    args.sealed(skip=())  # the baseline, taken before any launch and kept
    kernel.run([x.size])
    found = args.breached(args.sealed(skip=()))
    assert "argument 1 ('src'), an input declared const, was changed" in found, found
    assert "1024 element(s) changed" in found
    # Changed: uploaded again before the next launch, and a new baseline taken then.
    assert args.placed[1].seal is None and args.placed[1].dirty
    args.release()
