"""Verification at device speed: kernels/verify.cl generates the input on the device and
compares the output there; the host reads back a few words. The NumPy twin of its generator
(random_words) is what the tests hold the device to. Experiments use it for large buffers and
keep the host compare, the reference, for small ones."""

from __future__ import annotations

from typing import Any

import numpy as np

from .checks import mismatch_report
from .poison import POISON_U32

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
FIRST_MISMATCHES = 8  # indices the device compare reports besides the count and the lowest


def random_words(seed: int, n: int, offset: int = 0) -> np.ndarray:
    """kernels/verify.cl's random_word(seed, i) for i = offset .. offset + n - 1, as uint32: the
    splitmix64 finaliser of seed + (i + 1) * 0x9E3779B97F4A7C15, high 32 bits (arithmetic
    modulo 2^64, as uint64 arrays wrap)."""
    i = np.arange(offset, offset + n, dtype=np.uint64)
    z = (i + np.uint64(1)) * _GOLDEN + np.uint64(seed)
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(32)).astype(np.uint32)


class DeviceCheck:
    """The generator and the compare of kernels/verify.cl, for one context."""

    def __init__(self, ctx: Any) -> None:
        program = ctx.program(file="verify.cl", defines={"FIRST": FIRST_MISMATCHES})
        self._fill = program.kernel("fill_random")
        self._compare = program.kernel("compare_copy")
        self._result = ctx.buffer(4 * (2 + FIRST_MISMATCHES))

    @staticmethod
    def _groups(n: int) -> int:
        return -(-n // 256) * 256

    def fill(self, buffer: Any, n: int, seed: int) -> None:
        """The first ``n`` uint32 words of ``buffer`` := random_words(seed, n)."""
        self._fill.set_args(buffer, np.uint64(seed), np.uint32(n))
        self._fill.run(self._groups(n), 256)

    def compare_copy(self, buffer: Any, n: int, seed: int, written: slice,
                     what: str = "checked elements") -> tuple[bool, str]:
        """Whether ``buffer``'s first ``n`` words hold random_words(seed) at the indices
        ``written`` selects and the poison everywhere else; like compare, the detail says how
        many differ and the first (with what it held and should have)."""
        start, stop, step = written.indices(n)
        init = np.zeros(2 + FIRST_MISMATCHES, np.uint32)
        init[1] = np.uint32(0xFFFFFFFF)
        self._result.write(init)
        self._compare.set_args(buffer, np.uint64(seed), np.uint32(n), np.uint32(start),
                               np.uint32(max(stop, start)), np.uint32(step), POISON_U32, self._result)
        self._compare.run(self._groups(n), 256)
        result = np.empty_like(init)
        self._result.read(result)
        count, first = int(result[0]), int(result[1])
        if count == 0:
            return True, ""
        got = np.empty(1, np.uint32)
        buffer.read(got, offset=4 * first)
        touched = start <= first < stop and (first - start) % step == 0
        want = random_words(seed, 1, first)[0] if touched else POISON_U32
        others = sorted(int(v) for v in result[2:2 + min(count, FIRST_MISMATCHES)])
        return False, mismatch_report(count, n, what, first, got[0], want,
                                      " (device-side compare)", f"; found at {others}")
