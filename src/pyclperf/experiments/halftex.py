"""halftex: the same 2-D gather from global floats, a CL_FLOAT image and a CL_HALF_FLOAT image
(Quasar 9.4; kernels/halftex.cl): bandwidth, and the error the storage format leaves against the
float64 input.

Every output texel is the input texel at (x + dx, y + dy), clamped at the edges: a resampling by a
whole-texel shift, so no interpolation error hides the format's own. Bandwidth counts the bytes
read (4 per texel, 2 for half) and the float written.

Verification on fresh random input drawn once a run (uniform on [-range, range], range 1000 by
default, inside half's 65504; every variant reads the same texels), the output poisoned: the float variants must reproduce the shifted input exactly;
the half variant must equal the float16 rounding of it exactly (what the image holds), which is
within 2^-11 relative (half's unit roundoff) of the float64 value. Before its point runs, the half
image is probed with known values; a device whose kernels do not read them back (PoCL lists the
format but reads it wrongly) has the point ``skipped`` with what the probe saw.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare, poison_device
from ..device.turns import host_work
from ..measure.parallel import map_chunks
from ..measure.results import OK, Results
from ..measure.staging import read_back, write_from
from ._kit import (FLOAT, by_variant, check_image_side, conclude_variants,
                   image_bytes, no_images_reason, pick)
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, ratio

# The labels the claim below names its rows by (the rows' ``variant``).
GLOBAL, FLOAT_IMAGE, HALF_IMAGE = "global", "float image", "half image"
VARIANTS = (GLOBAL, FLOAT_IMAGE, HALF_IMAGE)
TILE = (16, 16)
SHIFT = (3, -2)  # (dx, dy)
HALF_U = 2.0**-11  # unit roundoff of float16
HALF_SUBNORMAL = 2.0**-24  # float16's spacing below its normal range


@host_work
def shifted(x: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """out[y, x] = in[clamp(y + dy), clamp(x + dx)]: whole rows taken, then the columns moved
    by slices (a 2-D fancy index over a GPU-sized image took the host most of a second)."""
    h, w = x.shape
    rows = x[np.clip(np.arange(h) + dy, 0, h - 1)]
    out = np.empty_like(rows)
    k = max(-w, min(w, dx))
    if k >= 0:
        out[:, :w - k] = rows[:, k:]
        out[:, w - k:] = rows[:, w - 1:]
    else:
        out[:, -k:] = rows[:, :w + k]
        out[:, :-k] = rows[:, :1]
    return out


@host_work
def error_against(got: np.ndarray, exact: np.ndarray, bound: float) -> tuple[int, float]:
    """How many texels of ``got`` lie beyond ``bound`` relative (half of half's subnormal spacing
    absolute, where ``bound`` is set) from ``exact``, and the largest relative error among the
    texels in half's normal range (NaN where one is not finite): a chunk at a time on the
    host's cores."""
    g, e = got.reshape(-1), exact.reshape(-1)
    floor = HALF_SUBNORMAL / 2 if bound else 0.0

    def part(s: slice) -> tuple[int, float, bool]:
        e64 = e[s].astype(np.float64)
        with np.errstate(invalid="ignore"):  # an unwritten texel is the poison, a signalling NaN
            err = np.abs(g[s].astype(np.float64) - e64)
            mag = np.abs(e64)
            over = int(err.size - np.count_nonzero(err <= bound * mag + floor))
            normal = mag >= 2.0**-14
            rel = err[normal] / mag[normal]
        return over, float(rel.max()) if rel.size else -np.inf, bool(np.isfinite(rel).all())

    parts = map_chunks(part, g.size)
    over = sum(p[0] for p in parts)
    worst = max((p[1] for p in parts), default=-np.inf)
    finite = all(p[2] for p in parts) and worst > -np.inf
    return over, worst if finite else float("nan")


def half_over_float(results: Results) -> Figure:
    return ratio(results, "gtexels_per_s", {"variant": HALF_IMAGE}, {"variant": FLOAT_IMAGE})


class HalfTexture(Experiment):
    id = "halftex"
    description = ("a 2-D gather from global floats, a CL_FLOAT image and a CL_HALF_FLOAT image: "
                   "bandwidth and the error vs float64 (Quasar 9.4; `--size` is the side)")
    order = 165
    title = "16-bit textures: half vs float images vs global floats"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.4 (16-bit float textures)"
    claim = Claim(
        "16-bit float images need half the bandwidth of 32-bit ones, so they read faster",
        "Quasar 9.4 (in words)", "texel rate of half image / float image", half_over_float)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg, local_size_arg = "side", None, None

    def __init__(self, ctx: Any, side: int | None = None, variants: Sequence[str] | None = None,
                 value_range: float = 1000.0) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.side = int(side) if side is not None else (8192 if info.is_gpu else 512)
        if self.side <= 0 or self.side % TILE[0]:
            raise _core.InvalidArgumentError(f"{self.id}: side {self.side} must be a positive multiple of {TILE[0]}")
        if not 0 < value_range <= 65504:
            raise _core.InvalidArgumentError(f"{self.id}: the value range must lie in (0, 65504], half's largest")
        self.value_range = float(value_range)
        self.variants = pick(self.id, VARIANTS, variants, "variants")
        check_image_side(info, self.side, self.side, self.id)
        nbytes = image_bytes(info, self.side, self.side)
        self.program = ctx.program(file="halftex.cl")
        self.src, self.dst = ctx.buffer(nbytes), ctx.buffer(nbytes)
        self.images: dict[str, Any] = {}
        if info.image_support:
            self.images = {FLOAT_IMAGE: ctx.image(self.side, self.side),
                           HALF_IMAGE: ctx.image(self.side, self.side, half=True)}
        self.half_probe = self.probe() if info.image_support else None
        self.rng = np.random.default_rng()
        self._inputs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def probe(self) -> str | None:
        """None if a kernel reads a small half image back as stored; else what it read."""
        want = (np.arange(TILE[0] * TILE[1]).reshape(TILE) / 4 - 8).astype(np.float16)
        img = self.ctx.to_image(want)
        out = self.ctx.buffer(want.size * FLOAT)
        k = self.program.kernel("gather_image").set_args(img, np.int32(TILE[0]), np.int32(TILE[1]),
                                                         np.int32(0), np.int32(0), out)
        k.run(list(TILE), list(TILE))
        got = np.empty(TILE, np.float32)
        out.read(got)
        if np.array_equal(got, want.astype(np.float32)):
            return None
        return (f"this device's kernels do not read CL_HALF_FLOAT images as stored: a probe read "
                f"{got.reshape(-1)[:3].tolist()} where the image holds {want.reshape(-1)[:3].astype(float).tolist()}")

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "side": self.side, "shift": SHIFT, "value_range": self.value_range,
                "half_probe": self.half_probe or "ok"}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v} for v in self.variants]

    def skip(self, point: dict[str, Any]) -> str | None:
        if point["variant"] == GLOBAL:
            return None
        if not self.images:
            return no_images_reason(self.ctx)
        return self.half_probe if point["variant"] == HALF_IMAGE else None

    def launch(self, point: dict[str, Any]) -> Launch:
        v = point["variant"]
        args = (np.int32(self.side), np.int32(self.side), np.int32(SHIFT[0]), np.int32(SHIFT[1]), self.dst)
        if v == GLOBAL:
            k = self.program.kernel("gather_global").set_args(self.src, *args)
        else:
            k = self.program.kernel("gather_image").set_args(self.images[v], *args)
        n = self.side * self.side
        texel = 2 if v == HALF_IMAGE else FLOAT
        return Launch.one(k, (self.side, self.side), TILE, n * (texel + FLOAT),
                          columns={"texel_bytes": texel}, rates={"gtexels_per_s": n})

    @host_work
    def inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(x, x as float16, the shifted x, the shifted float16 rounding of x), drawn once a run:
        every variant reads the same texels, each from its own storage, so one draw and its two
        references serve all three (per point they cost the guide seconds at the GPU's side)."""
        if self._inputs is None:
            r = self.value_range
            x = self.rng.random((self.side, self.side), dtype=np.float32)
            x *= 2 * r
            x -= r
            half = x.astype(np.float16)
            self._inputs = (x, half, shifted(x, *SHIFT), shifted(half.astype(np.float32), *SHIFT))
        return self._inputs

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        x, half, want_float, want_half = self.inputs()
        v = point["variant"]
        if v == GLOBAL:
            write_from(self.src, x)
        elif v == FLOAT_IMAGE:
            self.images[v].write(x)
        else:
            self.images[v].write(half)
        poison_device(self.dst)
        launch.run()
        got = read_back(self.dst, x.dtype, shape=x.shape)
        want = want_half if v == HALF_IMAGE else want_float
        passed, detail = compare(got.view(np.uint32), want.view(np.uint32), "texels")
        # Below half's normal range (2^-14) its spacing is fixed at 2^-24: half of that absolute.
        bound = HALF_U if v == HALF_IMAGE else 0.0
        over, worst = error_against(got, want_float, bound)
        columns = {"max_rel_error": worst, "rel_bound": bound}
        if passed and over:
            passed, detail = False, f"{over} texels beyond the format's rounding bound"
        return Check(passed, detail, columns)

    def finish(self, results: Any) -> None:
        rows, ok = by_variant(results)
        base = rows.get("float image")
        parts = [f"{r['variant']} {r['gbps']:.1f} GB/s, {r['gtexels_per_s']:.2f} Gtexel/s{noise_note(r)}, "
                 f"max relative error {r['max_rel_error']:.2g}" for r in ok]
        half = rows.get("half image")
        if half and half.get("status") == OK and base and base.get("status") == OK:
            parts.append(f"half image at {half['gtexels_per_s'] / base['gtexels_per_s']:.2f}x the float "
                         "image's texel rate")
        conclude_variants(results, parts, (
            "Quasar 9.4: 16-bit float textures take half the memory bandwidth of 32-bit ones, at a "
            "precision of about 2^-10, a largest value of 65504, and whole numbers exact only up "
            "to 2048."))

    summary_columns = ["variant", "status", "texel_bytes", "median_ns", "spread_pct", "gbps",
                      "gtexels_per_s", "max_rel_error", "rel_bound", "error"]
