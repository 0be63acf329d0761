"""aat: C = AA^T, strided global reads vs a transposed local tile vs the tile padded to
TILE_DIM + 1 (Guide 3.2.2.3, Listings 3.10-3.11, Table 3.3; kernels/aat.cl)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..theory.bankmodel import WARP, conflict_degree
from ..measure.results import Results
from ._kit import FLOAT
from ._product import Product, Variant, fit_square
from .claims import Claim, Figure, ratio


# The variants' labels (the rows' ``variant``); the claim below names its rows through them.
SIMPLE, LOCAL_TILES, PADDED = "simple", "local tiles", "padded tile"


def padded_over_simple(results: Results) -> Figure:
    return ratio(results, "gbps", {"variant": PADDED}, {"variant": SIMPLE})


class AAT(Product):
    """C = A A^T with A of M x TILE_DIM (C is M x M, M = size)."""

    id = "aat"
    description = ("the Guide's three A·Aᵀ kernels (strided, local tile, padded tile), beside Table "
                   "3.3's ratios (`--size` is M)")
    order = 100
    title = "C = AA^T: strided reads, a transposed local tile, padding (Guide Table 3.3)"
    guide = "Guide 3.2.2.3, Listings 3.10-3.11, Table 3.3"
    claim = Claim(
        "a padded local tile makes C = AA^T far faster than strided global reads",
        "Guide Table 3.3 (GTX 280): simple 1.1 GB/s, padded tile 30.3 GB/s",
        "bandwidth of padded tile / simple", padded_over_simple, source_ratio=30.3 / 1.1)
    kernel_file = "aat.cl"
    variants = (
        Variant(SIMPLE, "aat_simple", source="Listing 3.10"),
        Variant(LOCAL_TILES, "aat_local", (("PAD", 0),), source="Listing 3.11"),
        Variant(PADDED, "aat_local", (("PAD", 1),), source="Listing 3.11, TILE_DIM+1"),
    )

    def default_size(self, info: _core.DeviceInfo) -> int:
        return fit_square(info, 8192, self.tile, 1) if info.is_gpu else 256

    def input_elements(self) -> list[int]:
        return [self.size * self.tile]

    def inner(self) -> int:
        return self.tile

    def operands(self, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = inputs[0].reshape(self.size, self.tile)
        return a, a.T

    def defines(self, v: Variant) -> dict[str, int]:
        return {"TILE_DIM": self.tile, "PAD": 0, **dict(v.defines)}

    def bytes_needed(self) -> int:
        """Table 3.3's count (see MatMul.bytes_needed): A read once, C written once,
        bytes = 4 (M TILE_DIM + M M); GFLOP/s counts 2 M M TILE_DIM flops."""
        m = self.size
        return FLOAT * (m * self.tile + m * m)

    def tile_write_conflicts(self, pad: int) -> int:
        """The bank model's conflict degree of the transposed tile write at_tile[tx][ty]: work-item
        (tx, ty) writes word tx * (TILE_DIM + PAD) + ty; warps are runs of 32 work-items in
        row-major (tx fastest) order. The worst warp of the work-group.

        The Guide's one word of padding was the cure for 16 banks per half-warp. With 32 banks
        per warp, a 16-wide tile padded to 17 keeps one 2-way pair (tx = 15 of one row meets
        tx = 0 of the next; 8-way unpadded), while a 32-wide tile goes from 32-way to none."""
        t = self.tile
        words = [(i % t) * (t + pad) + i // t for i in range(t * t)]
        return max(conflict_degree(words[w:w + WARP]) for w in range(0, t * t, WARP))

    def columns(self, v: Variant) -> dict[str, Any]:
        if v.kernel == "aat_local":
            return {"tile_write_conflict": self.tile_write_conflicts(dict(v.defines).get("PAD", 0))}
        return {}
