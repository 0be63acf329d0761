"""offset: the Guide's offsetCopy, a copy misaligned by k floats (3.2.1.3, Listing 3.5,
Figure 3.7; kernels/copy.cl)."""

from __future__ import annotations

from .. import _core
from ..measure.results import Results
from ._copy import CopyPattern, fit_items
from .claims import Claim, Figure, ratio


def misaligned_over_aligned(results: Results) -> Figure:
    return ratio(results, "gbps", {"offset": 1}, {"offset": 0})


class OffsetCopy(CopyPattern):
    id = "offset"
    description = ("the Guide's offsetCopy: a copy misaligned by 0..32 floats (3.2.1.3; `--size` is "
                   "work-items)")
    order = 50
    title = "Misaligned copy (offsetCopy)"
    x = "offset"
    x_label = "offset (floats)"
    guide = "Guide 3.2.1.3, Listing 3.5, Figure 3.7"
    claim = Claim(
        "misaligned accesses cost bandwidth", "Guide Fig. 3.7 (8800 GTX): ~7 GB/s misaligned vs ~74 aligned",
        "bandwidth at offset 1 / offset 0", misaligned_over_aligned, direction=-1,
        source_ratio=7.0 / 74.0)
    kernel_name = "offset_copy"
    values = list(range(0, 33))

    def default_items(self, info: _core.DeviceInfo) -> int:
        # 256 MiB per buffer on a GPU: far past any cache. Small on a CPU (PoCL).
        return fit_items(info, 1 << 26 if info.is_gpu else 1 << 18, 1)

    def check_value(self, v: int) -> None:
        if v < 0:
            raise _core.InvalidArgumentError(f"offset must be >= 0, got {v}")
        if v > 1 << 20:
            raise _core.InvalidArgumentError(f"offset {v} is unreasonably large (max 1048576)")

    def indices(self, v: int) -> slice:
        return slice(v, v + self.items)
