"""What math, intops and buildopts share: throughput experiments, not bandwidth ones.

Every work-item reads one value, runs a loop of ``iters`` operations (a ``-D ITERS`` define)
and writes one value that depends on every operation, so arithmetic, not memory, sets the time.
The metric is operations per second:

    gops = items * iters * ops_per_iter / median seconds / 1e9

where an "operation" is one evaluation of the thing under test (one math function call, one
division or shift, one multiply...); what else each loop iteration executes is the same in every
variant of an experiment and is stated in its kernel file. The rows also carry the bytes the
kernel reads and writes (``gbps``), which stay far below any memory ceiling; they have no
``fraction_of_peak``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, positive, round_trip, whole_groups
from .base import Experiment, Launch

EPS = 2.0**-23  # float ULP at 1.0: ulp(v) <= EPS * |v| for every normal float v
HALF_EPS = 2.0**-24  # largest relative rounding error of one correctly rounded float operation
# Loop kernels run on every work-item; their NumPy reference is costly (ITERS steps per item, in
# Python-driven array operations), so at most this many randomly chosen work-items are compared
# with it. Every output is still checked for having been written (float outputs: finite, since the
# poison is a NaN; integer outputs: any that equals the poison word joins the compared sample),
# and the one-evaluation kernels of `math` and the float-literal loops compare every element.
SAMPLE = 16384


def fmt(value: float) -> str:
    return f"{value:.3g}"


class Throughput(Experiment):
    """Shared by the three experiments: work-items, loop length, one float/uint in and out per
    work-item, and the row's timing and Gop/s columns."""

    x = "variant"
    x_label = "variant"
    plot = {"kind": "bars", "label": "variant", "value": "gops",
            "xlabel": "operations per second (Gop/s, median)"}
    size_arg, values_arg = "items", None
    # GPU defaults: 8192 work-items per compute unit (four full SMs' worth of resident threads on
    # an H100/H200) x 1024 operations each, so the cheapest loop still runs ~0.1 ms on such a
    # GPU and launch overhead and timer noise stay near 1% (at 4096 x 256 it ran 11 us, 9% spread).
    items_per_cu = 8192
    cpu_items = 4096
    gpu_iters, cpu_iters = 1024, 32

    def __init__(self, ctx: Any, items: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 iters: int | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.local_size = positive(self.id, "work-group size", local_size)
        if items is None:
            want = info.compute_units * self.items_per_cu if info.is_gpu else self.cpu_items
            items = max(self.local_size, want // self.local_size * self.local_size)
        self.items = whole_groups(self.id, items, self.local_size)
        if self.items * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} work-items need {self.items * FLOAT}-byte buffers, over "
                f"the device's largest allocation of {info.max_alloc_bytes} bytes")
        self.iters = int(iters) if iters is not None else (
            self.gpu_iters if info.is_gpu else self.cpu_iters)
        if not 1 <= self.iters <= 1 << 16:
            raise _core.InvalidArgumentError(
                f"{self.id}: iters must be in 1..65536 (operations per work-item), got {self.iters}")
        self.src = ctx.buffer(self.items * FLOAT)  # one float or uint per work-item
        self.dst = ctx.buffer(self.items * FLOAT)
        self.rng = np.random.default_rng()

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None  # instruction throughput: no memory ceiling applies

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "local_size": self.local_size,
                "iters": self.iters, "metric": "gops = items x iters x ops_per_iter / median s / 1e9"}

    def throughput(self, kernel: Any, ops_per_iter: int) -> Launch:
        """A loop kernel's launch: one float or uint in and out per work-item (the bytes), and
        items x iters x ops_per_iter operations (gops)."""
        return Launch.one(kernel, self.items, self.local_size, 2 * FLOAT * self.items,
                          ops=self.items * self.iters * ops_per_iter,
                          columns={"items": self.items, "local_size": self.local_size,
                                   "iters": self.iters, "ops_per_iter": ops_per_iter})

    def _launch(self, kernel: Any, data: np.ndarray, dtype: Any) -> np.ndarray:
        """One verifying launch of ``kernel``: ``data`` in, output poisoned first, result back."""
        return round_trip(self.src, self.dst, data, lambda: kernel.run(self.items, self.local_size),
                          dtype, self.items)

    def _sample(self, also: np.ndarray | None = None) -> np.ndarray:
        """The work-items whose result is compared with NumPy's: all of them when there are at
        most SAMPLE, else SAMPLE chosen at random plus the indices in ``also``."""
        if self.items <= SAMPLE:
            return np.arange(self.items)
        chosen = self.rng.choice(self.items, SAMPLE, replace=False)
        return np.union1d(chosen, also) if also is not None else np.sort(chosen)

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["variant", "status", "median_ns", "spread_pct", "gops", *cls.summary_extra]
        return df[[c for c in cols if c in df]]

    summary_extra: tuple[str, ...] = ()
