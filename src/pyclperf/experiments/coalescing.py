"""offset and stride: the Guide's offsetCopy and strideCopy (3.2.1.3, 3.2.1.4; Figures 3.7, 3.9)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..checks import POISON_U32, compare, poison_device
from .base import Experiment

FLOAT = 4  # bytes

# Output elements past the copied span that must still hold the poison after a run: catches a
# kernel writing beyond its range without reading back a whole multi-GiB buffer.
GUARD_ELEMENTS = 4096


class _CopyPattern(Experiment):
    """One float per work-item, at an index that depends on the swept parameter."""

    kernel_name = ""
    values: list[int] = []

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = 256,
                 values: list[int] | None = None) -> None:
        if values is not None:
            if len(values) == 0:
                raise _core.InvalidArgumentError(f"{self.id}: no values to sweep")
            self.values = [int(v) for v in values]
        super().__init__(ctx, items, local_size)  # default_items may look at self.values
        for v in self.values:
            self.check_value(v)
        self.capacity = self.elements_needed(max(self.values))
        nbytes = self.capacity * FLOAT
        info = ctx.info
        if nbytes > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} items at {self.x} {max(self.values)} need a "
                f"{nbytes}-byte buffer, over the device's largest allocation of "
                f"{info.max_alloc_bytes} bytes; use a smaller size"
            )
        self.kernel = ctx.program(file="copy.cl").kernel(self.kernel_name)
        self.src = ctx.buffer(nbytes)
        self.dst = ctx.buffer(nbytes)
        self.rng = np.random.default_rng()

    def check_value(self, v: int) -> None:
        raise NotImplementedError

    def indices(self, v: int) -> slice:
        """The elements point v reads and writes."""
        raise NotImplementedError

    def elements_needed(self, v: int) -> int:
        s = self.indices(v)
        return s.start + (self.items - 1) * (s.step or 1) + 1

    def points(self) -> list[dict[str, Any]]:
        return [{self.x: v} for v in self.values]

    def bytes_moved(self, point: dict[str, Any]) -> int:
        return 2 * self.items * FLOAT

    def _bind(self, v: int) -> None:
        self.kernel.set_args(self.dst, self.src, np.int32(v))

    def verify(self, point: dict[str, Any]) -> tuple[bool, str]:
        v = point[self.x]
        span = min(self.capacity, self.elements_needed(v) + GUARD_ELEMENTS)
        # Fresh random bits (any float, NaNs included): a copy must reproduce them exactly.
        data = self.rng.integers(0, 2**32, size=span, dtype=np.uint32)
        self.src.write(data)
        poison_device(self.dst)
        self._bind(v)
        self.kernel.run(self.items, self.local_size)
        out = np.empty(span, dtype=np.uint32)
        self.dst.read(out)
        expected = np.full(span, POISON_U32, dtype=np.uint32)
        touched = self.indices(v)
        expected[touched] = data[touched]
        return compare(out, expected, "checked elements")

    def time(self, point: dict[str, Any], warmup: int, repeats: int, method: str) -> np.ndarray:
        self._bind(point[self.x])
        return self.kernel.time(self.items, self.local_size, warmup=warmup, repeats=repeats,
                                method=method)


def _fit(info: _core.DeviceInfo, want: int, elements_per_item: int, multiple: int = 1024) -> int:
    """``want`` items, shrunk until each of two buffers fits a quarter of the device's memory."""
    limit = min(info.max_alloc_bytes, info.global_mem_bytes // 4)
    items = want
    while items > multiple and items * elements_per_item * FLOAT > limit:
        items //= 2
    return items


class OffsetCopy(_CopyPattern):
    id = "offset"
    title = "Misaligned copy (offsetCopy)"
    x = "offset"
    x_label = "offset (floats)"
    guide = "Guide 3.2.1.3, Listing 3.5, Figure 3.7"
    kernel_name = "offset_copy"
    values = list(range(0, 33))

    def default_items(self, info: _core.DeviceInfo) -> int:
        # 256 MiB per buffer on a GPU: far past any cache. Small on a CPU (PoCL).
        return _fit(info, 1 << 26 if info.is_gpu else 1 << 18, 1)

    def check_value(self, v: int) -> None:
        if v < 0:
            raise _core.InvalidArgumentError(f"offset must be >= 0, got {v}")
        if v > 1 << 20:
            raise _core.InvalidArgumentError(f"offset {v} is unreasonably large (max 1048576)")

    def indices(self, v: int) -> slice:
        return slice(v, v + self.items)


class StrideCopy(_CopyPattern):
    id = "stride"
    title = "Strided copy (strideCopy)"
    x = "stride"
    x_label = "stride (floats)"
    guide = "Guide 3.2.1.4, Listing 3.6, Figure 3.9; Slides saxpy_with_stride"
    kernel_name = "stride_copy"
    values = list(range(1, 33)) + [48, 64]

    def default_items(self, info: _core.DeviceInfo) -> int:
        return _fit(info, 1 << 22 if info.is_gpu else 1 << 15, max(self.values))

    def check_value(self, v: int) -> None:
        if v < 1:
            raise _core.InvalidArgumentError(f"stride must be >= 1, got {v}")
        if self.items * v >= 2**31:
            raise _core.InvalidArgumentError(
                f"stride {v} x {self.items} items overflows the kernel's int index range")

    def indices(self, v: int) -> slice:
        return slice(0, (self.items - 1) * v + 1, v)
