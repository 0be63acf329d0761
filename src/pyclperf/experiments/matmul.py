"""matmul: C = AB with a TILE_DIM-wide A through local memory (Guide 3.2.2.2, Listings
3.7-3.9, Table 3.2; kernels/matmul.cl). The inner dimension is one tile (TILE_DIM = 16), so every
work-item computes a dot product of length 16 and the kernels differ only in how the operands
reach it."""

from __future__ import annotations

import numpy as np

from .. import _core
from ..measure.results import Results
from ._kit import FLOAT
from ._product import Product, Variant, fit_square
from .claims import Claim, Figure, ratio


# The variants' labels (the rows' ``variant``); the claim below names its rows through them.
SIMPLE, LOCAL_A, LOCAL_AB = "simple", "local A", "local A+B"


def tiles_over_simple(results: Results) -> Figure:
    return ratio(results, "gbps", {"variant": LOCAL_AB}, {"variant": SIMPLE})

class MatMul(Product):
    """C = A B with A of M x TILE_DIM and B of TILE_DIM x N (here M = N = size)."""

    id = "matmul"
    description = ("the Guide's three A·B kernels, GB/s as Table 3.2 counts it and GFLOP/s, beside the "
                   "Guide's ratios (`--size` is M = N)")
    order = 90
    title = "C = AB through local memory (Guide Table 3.2)"
    guide = "Guide 3.2.2.2, Listings 3.7-3.9, Table 3.2"
    claim = Claim(
        "keeping tiles of A and B in local memory speeds up C = AB",
        "Guide Table 3.2 (GTX 280): simple 8.8 GB/s, A and B tiles 29.7 GB/s",
        "bandwidth of local A+B / simple", tiles_over_simple, source_ratio=29.7 / 8.8)
    kernel_file = "matmul.cl"
    variants = (
        Variant(SIMPLE, "ab_simple", source="Listing 3.7"),
        Variant(LOCAL_A, "ab_local_a", source="Listing 3.8"),
        Variant(LOCAL_AB, "ab_local_ab", source="Listing 3.9"),
    )

    def default_size(self, info: _core.DeviceInfo) -> int:
        # GPU: C is 256 MiB, far past the L2; the product takes well under a millisecond.
        return fit_square(info, 8192, self.tile, 1) if info.is_gpu else 256

    def input_elements(self) -> list[int]:
        return [self.size * self.tile, self.tile * self.size]

    def inner(self) -> int:
        return self.tile

    def operands(self, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return inputs[0].reshape(self.size, self.tile), inputs[1].reshape(self.tile, self.size)

    def defines(self, v: Variant) -> dict[str, int]:
        return {"TILE_DIM": self.tile, **dict(v.defines)}

    def bytes_needed(self) -> int:
        """The bytes of effective bandwidth, counted as the Guide's Table 3.2 counts them.

        Section 2.2.2 defines effective bandwidth as (bytes read + bytes written) / 1e9 / seconds
        and 3.2.2.2 presents the three kernels' figures as speed-ups of one computation (the gain
        comes from "avoiding redundant transfers", not from moving fewer bytes of the problem),
        so the bytes are the problem's, the same for every kernel: A (M x TILE_DIM) and
        B (TILE_DIM x N) read once, C (M x N) written once, 4 bytes each:

            bytes = 4 (M TILE_DIM + TILE_DIM N + M N),   GB/s = bytes / 1e9 / median seconds

        The redundant re-reads of A and B that the slower kernels make are exactly what the
        metric leaves out, so the ratio of two variants' GB/s is the ratio of their speeds.
        GFLOP/s counts 2 M N TILE_DIM flops.
        """
        m = n = self.size
        return FLOAT * (m * self.tile + self.tile * n + m * n)
