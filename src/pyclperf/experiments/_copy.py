"""What offset and stride share: one float per work-item copied at an index the swept parameter
sets (kernels/copy.cl), verified with a guard band of poison past the copied span."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, CopyCheck, positive, whole_groups
from .base import Check, Experiment, Launch

# Output elements past the copied span that must still hold the poison after a run: catches a
# kernel writing beyond its range without reading back a whole multi-GiB buffer.
GUARD_ELEMENTS = 4096


class CopyPattern(Experiment):
    """One float per work-item, at an index that depends on the swept parameter."""

    kernel_name = ""
    values: list[int] = []

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 values: list[int] | None = None) -> None:
        super().__init__(ctx)
        if values is not None:
            if len(values) == 0:
                raise _core.InvalidArgumentError(f"{self.id}: no values to sweep")
            self.values = [int(v) for v in values]
        self.local_size = positive(self.id, "work-group size", local_size)
        self.items = whole_groups(self.id, items if items is not None else self.default_items(ctx.info),
                                  self.local_size)
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
        self.copy_check = CopyCheck(ctx, self.rng)

    def default_items(self, info: _core.DeviceInfo) -> int:
        raise NotImplementedError

    def check_value(self, v: int) -> None:
        raise NotImplementedError

    def indices(self, v: int) -> slice:
        """The elements point v reads and writes."""
        raise NotImplementedError

    def elements_needed(self, v: int) -> int:
        s = self.indices(v)
        return s.start + (self.items - 1) * (s.step or 1) + 1

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size}

    def finish(self, results: Any) -> None:
        from ..theory.models import copy_conclusion

        results.meta["conclusion"] = copy_conclusion(results, 0 if self.x == "offset" else 1)

    def points(self) -> list[dict[str, Any]]:
        return [{self.x: v} for v in self.values]

    def launch(self, point: dict[str, Any]) -> Launch:
        self.kernel.set_args(self.dst, self.src, np.int32(point[self.x]))
        return Launch.one(self.kernel, self.items, self.local_size, 2 * self.items * FLOAT,
                          columns={"items": self.items, "local_size": self.local_size})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        v = point[self.x]
        span = min(self.capacity, self.elements_needed(v) + GUARD_ELEMENTS)
        # Fresh random bits (any float, NaNs included): a copy must reproduce them exactly.
        return Check(*self.copy_check(self.src, self.dst, launch.run, span, self.indices(v),
                                      "checked elements"))


def fit_items(info: _core.DeviceInfo, want: int, elements_per_item: int, multiple: int = 1024) -> int:
    """``want`` items, shrunk until each of two buffers fits a quarter of the device's memory."""
    limit = min(info.max_alloc_bytes, info.global_mem_bytes // 4)
    items = want
    while items > multiple and items * elements_per_item * FLOAT > limit:
        items //= 2
    return items
