"""stride: the Guide's strideCopy, a copy with a stride of s floats (3.2.1.4, Listing 3.6,
Figure 3.9; Slides saxpy_with_stride; kernels/copy.cl)."""

from __future__ import annotations

from .. import _core
from ..measure.results import Results
from ._copy import CopyPattern, fit_items
from .claims import Claim, Figure, NotMeasured, ratio, rows_for


WIDEST_STRIDE = 32  # Figure 3.9's range


def strided_over_unit(results: Results) -> Figure:
    """Bandwidth at the largest verified stride up to 32 over stride 1."""
    far = max((r["stride"] for r in rows_for(results) if r.get("stride") is not None
               and r["stride"] <= WIDEST_STRIDE), default=None)
    if far is None:
        raise NotMeasured(f"no verified stride up to {WIDEST_STRIDE}")
    return ratio(results, "gbps", {"stride": far}, {"stride": 1})


class StrideCopy(CopyPattern):
    id = "stride"
    description = ("the Guide's strideCopy: a copy with stride 1..64 floats (3.2.1.4; `--size` is work-"
                   "items)")
    order = 60
    title = "Strided copy (strideCopy)"
    x = "stride"
    x_label = "stride (floats)"
    guide = "Guide 3.2.1.4, Listing 3.6, Figure 3.9; Slides saxpy_with_stride"
    claim = Claim(
        "bandwidth falls as the stride grows", "Guide Fig. 3.9 (in words and a plot)",
        "bandwidth at the largest stride <= 32 / stride 1", strided_over_unit, direction=-1)
    kernel_name = "stride_copy"
    values = list(range(1, 33)) + [48, 64]

    def default_items(self, info: _core.DeviceInfo) -> int:
        return fit_items(info, 1 << 22 if info.is_gpu else 1 << 15, max(self.values))

    def check_value(self, v: int) -> None:
        if v < 1:
            raise _core.InvalidArgumentError(f"stride must be >= 1, got {v}")
        if self.items * v >= 2**31:
            raise _core.InvalidArgumentError(
                f"stride {v} x {self.items} items overflows the kernel's int index range")

    def indices(self, v: int) -> slice:
        return slice(0, (self.items - 1) * v + 1, v)
