"""surface: stores through ``write_imagef`` into an image against plain global stores, and the
rule that an image written by one launch reads back in the next (Quasar 9.6, Guide 3.2.4;
kernels/surface.cl).

Variants, over a width x height grid of floats (each work-item reads x, writes 2 x + 1):

* ``global``: a float buffer, row-major;
* ``image``: a CL_R float image through ``write_imagef``;
* ``image, next launch``: ``image`` and then a second launch that copies the image into a buffer
  with ``read_imagef`` (both launches' times count): the written texels must be there.

Where the device has no image support the image points are ``skipped`` with the reason. The
image is CL_R / CL_FLOAT: the core makes no CL_HALF_FLOAT images yet.

Verification: fresh random floats in (drawn once a run), the output (buffer or image) poisoned, every texel against
NumPy's 2 x + 1 within 1 ulp (2 x is exact, so a multiply-add or a fused one rounds once). Bandwidth counts 8 bytes per texel per launch (read and write).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import FLT_MIN, POISON_U32, compare_ulp, poison_device, ulp32
from ..device.turns import host_only, host_work
from ..measure.parallel import map_chunks
from ..measure.results import OK, Results
from ..measure.staging import read_back, write_from
from ._kit import (FLOAT, by_variant, check_image_side, conclude_variants,
                   image_bytes, no_images_reason, pick)
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, ratio

# The labels the claim below names its rows by (the rows' ``variant``).
GLOBAL, IMAGE, IMAGE_NEXT = "global", "image", "image, next launch"
VARIANTS = (GLOBAL, IMAGE, IMAGE_NEXT)
TILE = (16, 16)


def within_one_ulp(want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 bounds (lo, hi) such that a float32 g passes compare_ulp(g, want, 1) exactly when
    lo <= g <= hi: computed once, they make each check two float32 comparisons. A chunk at a
    time on the host's cores (a GPU-sized grid's bounds took seconds on one)."""
    lo, hi = np.empty(want.shape, np.float32), np.empty(want.shape, np.float32)
    flat_want, flat_lo, flat_hi = want.reshape(-1), lo.reshape(-1), hi.reshape(-1)

    def part(s: slice) -> None:
        flat_lo[s], flat_hi[s] = _one_ulp_bounds(flat_want[s])

    map_chunks(part, flat_want.size)
    return lo, hi


def inside(got: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether every element of ``got`` lies in [lo, hi] (NaN never does), a chunk at a time."""
    g, a, b = got.reshape(-1), lo.reshape(-1), hi.reshape(-1)

    def part(s: slice) -> bool:
        with np.errstate(invalid="ignore"):  # an unwritten texel is the poison, a signalling NaN
            return bool(((g[s] >= a[s]) & (g[s] <= b[s])).all())

    return all(map_chunks(part, g.size))


def _one_ulp_bounds(want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ulp = ulp32(want)
    tiny = np.abs(want) < FLT_MIN  # compare_ulp lets a result below the normal range flush to 0
    lo64, hi64 = want - ulp, want + ulp
    lo64[tiny] = np.minimum(lo64[tiny], np.nextafter(-FLT_MIN, 0))
    hi64[tiny] = np.maximum(hi64[tiny], np.nextafter(FLT_MIN, 0))
    lo, hi = lo64.astype(np.float32), hi64.astype(np.float32)
    # Round inwards: the float32 values inside [lo64, hi64] are those inside [lo, hi].
    lo[lo < lo64] = np.nextafter(lo[lo < lo64], np.float32(np.inf))
    hi[hi > hi64] = np.nextafter(hi[hi > hi64], np.float32(-np.inf))
    return lo, hi


def image_over_global(results: Results) -> Figure:
    return ratio(results, "gbps", {"variant": IMAGE}, {"variant": GLOBAL})


class Surface(Experiment):
    id = "surface"
    description = ("stores through `write_imagef` into an image vs global stores, and an image "
                   "written by one launch read back in the next (Quasar 9.6; `--size` is the side)")
    order = 170
    title = "Image writes (surfaces) vs global stores"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.6 (surface writes), Guide 3.2.4 (image writes seen from the next launch)"
    claim = Claim(
        "kernels may write results through an image as well as through global stores",
        "Quasar 9.6 (in words: surface writes as an alternative)",
        "bandwidth of image writes / global stores, about 1", image_over_global, direction=0)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg, local_size_arg = "side", None, None

    def __init__(self, ctx: Any, side: int | None = None, variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.side = int(side) if side is not None else (8192 if info.is_gpu else 512)
        if self.side <= 0 or self.side % TILE[0]:
            raise _core.InvalidArgumentError(f"{self.id}: side {self.side} must be a positive multiple of {TILE[0]}")
        self.variants = pick(self.id, VARIANTS, variants, "variants")
        check_image_side(info, self.side, self.side, self.id)
        nbytes = image_bytes(info, self.side, self.side)
        self.program = ctx.program(file="surface.cl")
        self.src, self.dst = ctx.buffer(nbytes), ctx.buffer(nbytes)
        self.img = ctx.image(self.side, self.side) if info.image_support else None
        self.rng = np.random.default_rng()
        # The input, its float32 acceptance bounds and a poisoned host image, once a run: the
        # kernels only read the input, and the bounds of a GPU-sized grid take seconds.
        self._input: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._poisoned: np.ndarray | None = None

    @host_work
    def input(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(x, want, lo, hi): fresh random floats, 2 x + 1 in float64 and its 1-ulp bounds."""
        if self._input is None:
            x = self.rng.standard_normal((self.side, self.side), dtype=np.float32)
            want = x.astype(np.float64) * 2.0 + 1.0
            self._input = (x, want, *within_one_ulp(want))
        return self._input

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "side": self.side, "texels": self.side * self.side}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v} for v in self.variants]

    def skip(self, point: dict[str, Any]) -> str | None:
        return no_images_reason(self.ctx) if point["variant"] != GLOBAL and self.img is None else None

    def launch(self, point: dict[str, Any]) -> Launch:
        w = np.int32(self.side)
        g = (self.side, self.side)
        n = self.side * self.side
        if point["variant"] == GLOBAL:
            steps = [(self.program.kernel("store_global").set_args(self.src, w, self.dst), g, TILE)]
        else:
            steps = [(self.program.kernel("store_image").set_args(self.src, w, self.img), g, TILE)]
            if point["variant"] == IMAGE_NEXT:
                steps.append((self.program.kernel("load_image").set_args(self.img, w, self.dst), g, TILE))
        return Launch(steps, 2 * FLOAT * n * len(steps), columns={"launches": len(steps), "texels": n},
                      rates={"gtexels_per_s": n})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        x, want, lo, hi = self.input()
        write_from(self.src, x)
        poison_device(self.dst)
        if self.img is not None:
            if self._poisoned is None:
                self._poisoned = np.full((self.side, self.side), POISON_U32, np.uint32).view(np.float32)
            self.img.write(self._poisoned)
        launch.run()
        if point["variant"] == IMAGE:
            got = np.empty_like(x)
            self.img.read(got)
        else:
            got = read_back(self.dst, x.dtype, shape=x.shape)
        with host_only():
            if inside(got, lo, hi):
                return Check(True, "")
            with np.errstate(invalid="ignore"):  # an unwritten texel is the poison, a signalling NaN
                return Check(*compare_ulp(got, want, 1.0, "texels"))  # the full account of a failure

    def finish(self, results: Any) -> None:
        rows, ok = by_variant(results)
        base = rows.get(GLOBAL)
        parts = [f"{r['variant']} {r['gbps']:.1f} GB/s{noise_note(r)}"
                 + (f" ({r['gbps'] / base['gbps']:.2f}x global)" if base and base.get("status") == OK
                    and r is not base else "") for r in ok]
        nxt = rows.get(IMAGE_NEXT)
        if nxt is not None and nxt.get("status") == OK:
            parts.append("the texels one launch wrote were all there for the next")
        conclude_variants(results, parts, (
            "Quasar 9.6: kernels can write images as well as read them; Guide 3.2.4: a read is "
            "sure to see an image write only from a later launch (within the same launch it is "
            "undefined)."))

    summary_columns = ["variant", "status", "launches", "median_ns", "spread_pct", "gbps",
                      "gtexels_per_s", "error"]
