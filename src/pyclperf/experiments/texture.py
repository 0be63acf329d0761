"""texture: sampling by the texture unit vs by hand (Quasar 9.3, Guide 3.2.4).

An image is resampled at fractional coordinates, nearest and linear, with clamp and repeat
addressing: through an image and a sampler (the texture unit filters and addresses) against the
same sampling rules written out from global memory (kernels/texture.cl). Image variants need
CL_DEVICE_IMAGE_SUPPORT; without it their rows are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare_close, max_abs_error, poison_device
from ..device.turns import host_only, host_work
from ..measure.parallel import map_chunks
from ..device.program import ceil_to
from ..measure.results import OK, Results
from ..measure.staging import read_back, write_from
from ._kit import (DEFAULT_LOCAL_SIZE, EPS32, FLOAT, check_image_side, image_bytes, no_images_reason,
                   pick, positive)
from .base import Check, Experiment, Launch
from .claims import Claim, Figure, ratio


@dataclass(frozen=True)
class TexVariant:
    path: str        # "image" (sampler) or "global" (manual)
    filter: str      # "nearest" or "linear"
    addressing: str  # "clamp_to_edge" or "repeat"

    @property
    def name(self) -> str:
        return f"{self.path} {self.filter} {self.addressing}"


TEX_VARIANTS = {v.name: v for v in (
    TexVariant(path, filt, addr)
    for filt in ("nearest", "linear") for addr in ("clamp_to_edge", "repeat")
    for path in ("image", "global"))}

# Quasar 9.3, Geforce 435M, 2-D interpolation without / with hardware texturing (ms).
QUASAR_2D_MS = {"nearest": (109.2, 93.6), "linear": (156.0, 109.2)}

# The resampling transform, in 1/512 texel steps: scale 614/512 (about 1.2, so the output spans
# 1.2 input widths) and an odd offset near -0.1 of the side. Every coordinate is then an odd
# multiple of 1/512: exact in float32 (for sides up to 16384), never on a texel edge (nearest has
# one right answer) and with linear weights that need 9 fractional bits (an 8-bit weight, as
# NVIDIA's texture unit uses, cannot hold them exactly, so its rounding shows in the error).
STEP = 512
SCALE_STEPS = 614
MAX_SIDE = 16384


def _offset_steps(side: int) -> int:
    k = -round(0.1 * side * STEP)
    return k if k % 2 else k + 1


def _axis(c: np.ndarray, n: int, filt: str, addressing: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One axis of the OpenCL sampler's address computation (spec, "image addressing and
    filtering", normalized coordinates) at texel coordinates c over n texels, in float64: the
    two texel indices and the weight of the second (linear), or one index twice (nearest).

    Linear filtering takes the texels around c - 0.5 (texel centres sit at k + 0.5); repeat
    wraps the normalized coordinate to [0, 1); clamp_to_edge clamps the indices.
    """
    s = c / n
    x = (s - np.floor(s)) * n if addressing == "repeat" else s * n
    if filt == "nearest":
        i = np.floor(x).astype(np.int64)
        i = np.where(i > n - 1, i - n, i) if addressing == "repeat" else np.clip(i, 0, n - 1)
        return i, i, np.zeros_like(x)
    below = np.floor(x - 0.5)
    i0 = below.astype(np.int64)
    i1 = i0 + 1
    if addressing == "repeat":
        i0 = np.where(i0 < 0, i0 + n, i0)
        i1 = np.where(i1 > n - 1, i1 - n, i1)
    else:
        i0, i1 = np.clip(i0, 0, n - 1), np.clip(i1, 0, n - 1)
    return i0, i1, (x - 0.5) - below


def sample_reference(img: np.ndarray, u: np.ndarray, v: np.ndarray, filt: str, addressing: str) -> np.ndarray:
    """What the OpenCL sampler returns at texel coordinates u (columns) x v (rows), in float64:
    a band of output rows at a time on the host's cores."""
    i0, i1, a = _axis(u, img.shape[1], filt, addressing)
    j0, j1, b = _axis(v, img.shape[0], filt, addressing)
    a = a[None, :]
    out = np.empty((v.size, u.size))

    @host_work
    def band(rows: slice) -> None:
        bb = b[rows, None]
        top, bottom = img[j0[rows]].astype(np.float64), img[j1[rows]].astype(np.float64)
        out[rows] = ((1 - a) * (1 - bb) * top[:, i0] + a * (1 - bb) * top[:, i1]
                     + (1 - a) * bb * bottom[:, i0] + a * bb * bottom[:, i1])

    map_chunks(band, v.size, max(1, (1 << 18) // max(1, u.size)))
    return out


# How close to a texel edge a texture unit may resolve a nearest lookup either way: its
# coordinates may carry only 8 fractional bits (the same fixed point as its linear weights).
EDGE_SLACK = 1 / 256


def nearest_either_side(img: np.ndarray, u: np.ndarray, v: np.ndarray, addressing: str) -> np.ndarray:
    """The texels a nearest lookup at (u, v) may return when the coordinates move by up to
    EDGE_SLACK each way: shape (4, rows, columns); away from texel edges all four are equal."""
    lo_i, hi_i = (_axis(u + d, img.shape[1], "nearest", addressing)[0] for d in (-EDGE_SLACK, EDGE_SLACK))
    lo_j, hi_j = (_axis(v + d, img.shape[0], "nearest", addressing)[0] for d in (-EDGE_SLACK, EDGE_SLACK))
    return np.stack([img[np.ix_(j, i)] for j in (lo_j, hi_j) for i in (lo_i, hi_i)])


# The variants the claim compares (their ``name`` is the rows' ``variant``).
MANUAL_LINEAR = TexVariant("global", "linear", "clamp_to_edge")
SAMPLER_LINEAR = TexVariant("image", "linear", "clamp_to_edge")


def manual_over_sampler(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": MANUAL_LINEAR.name},
                 {"variant": SAMPLER_LINEAR.name})


class Texture(Experiment):
    id = "texture"
    description = ("nearest and linear resampling, clamp and repeat, through an image sampler vs by hand"
                   " from global memory, with each path's error (Quasar 9.3; `--size` is the width)")
    order = 140
    title = "Interpolation through the texture unit vs by hand from global memory"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.3 (hardware texturing, Geforce 435M); Guide 3.2.4"
    claim = Claim(
        "hardware texture interpolation beats interpolating by hand from global memory",
        "Quasar 9.3 (GeForce 435M): 2-D linear, manual 156 ms vs sampler 109 ms",
        "time of global / image (linear, clamp)", manual_over_sampler, source_ratio=156.0 / 109.0)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "width", None

    def __init__(self, ctx: Any, width: int | None = None, height: int | None = None,
                 local_size: int = DEFAULT_LOCAL_SIZE, variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.variants = pick(self.id, TEX_VARIANTS, variants)
        self.local_size = positive(self.id, "work-group size", local_size)
        # 4096^2 texels (64 MiB) on a GPU; small on a CPU device (PoCL).
        self.width = int(width) if width is not None else (4096 if info.is_gpu else 128)
        self.height = int(height) if height is not None else (self.width if info.is_gpu else 64)
        for name, side in (("width", self.width), ("height", self.height)):
            if side <= 0 or side & (side - 1) or side > MAX_SIDE:
                raise _core.InvalidArgumentError(
                    f"{self.id}: {name} must be a power of two up to {MAX_SIDE} (so that every "
                    f"sampling coordinate is exact in float32), got {side}")
        nbytes = image_bytes(info, self.width, self.height)
        check_image_side(info, self.width, self.height, "image")
        self.src_buf, self.out_buf = ctx.buffer(nbytes), ctx.buffer(nbytes)
        self.images = info.image_support and any(v.path == "image" for v in self.variants)
        self.src_img = ctx.image(self.width, self.height) if self.images else None
        # Output pixel (i, j) samples texel coordinates (i * scale + ox, j * scale + oy).
        scale = SCALE_STEPS / STEP
        self.transform = np.array([scale, _offset_steps(self.width) / STEP,
                                   scale, _offset_steps(self.height) / STEP], np.float32)
        self.inv_size = np.array([1 / self.width, 1 / self.height], np.float32)
        # A work-group of 16 x (local_size / 16): square-ish tiles suit the 2-D texture cache.
        lx = 16 if self.local_size % 16 == 0 else self.local_size
        self.local = [lx, self.local_size // lx]
        self.global_size = [ceil_to(self.width, self.local[0]), ceil_to(self.height, self.local[1])]
        self.rng = np.random.default_rng()
        # The image and each (filter, addressing)'s reference, once a run: the global and image
        # paths sample the same texels, and the host's reference of a GPU-sized image takes seconds.
        self._img: np.ndarray | None = None
        self._want: dict[tuple[str, str], np.ndarray] = {}

    def image(self) -> np.ndarray:
        if self._img is None:
            with host_only():
                self._img = self.rng.random((self.height, self.width), dtype=np.float32)
        return self._img

    def want(self, v: TexVariant) -> np.ndarray:
        key = (v.filter, v.addressing)
        if key not in self._want:
            u, w = self.coordinates()
            self._want[key] = sample_reference(self.image(), u, w, v.filter, v.addressing)
        return self._want[key]

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "width": self.width, "height": self.height,
                "local_size": self.local_size, "transform": [float(t) for t in self.transform]}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v.name, "path": v.path, "filter": v.filter, "addressing": v.addressing}
                for v in self.variants]

    def bytes_moved(self) -> int:
        """The input read once and the output written once (effective bandwidth)."""
        return 2 * self.width * self.height * FLOAT

    def kernel(self, v: TexVariant) -> Any:
        """The variant's kernel with its arguments bound."""
        size = (np.int32(self.width), np.int32(self.height))
        if v.path == "image":
            k = self.ctx.program(file="texture.cl").kernel("resample_image")
            smp = self.ctx.sampler(normalized=True, addressing=v.addressing, filter=v.filter)
            return k.set_args(self.out_buf, self.src_img, smp, *size, self.transform, self.inv_size)
        defines = {"LINEAR": int(v.filter == "linear"), "REPEAT": int(v.addressing == "repeat")}
        k = self.ctx.program(file="texture.cl", defines=defines).kernel("resample_manual")
        return k.set_args(self.out_buf, self.src_buf, *size, *size, self.transform, self.inv_size)

    @host_work
    def tolerance(self, v: TexVariant, img: np.ndarray) -> float:
        """How far a correct result may lie from the float64 reference.

        nearest: 0. The coordinates are exact in float32 and at least 1/512 texel from any
        texel edge, so there is one right texel, returned unchanged. The manual path must hit
        it; a texture unit is also allowed a neighbour within EDGE_SLACK (1/256 texel) of an
        edge, in case it resolves coordinates in 8-bit fixed point (counted in ``edge_picks``).
        linear, global: float32 rounding of three lerps of values within [min, max]: a few eps.
        linear, image: the OpenCL specification leaves the precision of linear filtering to the
        implementation. NVIDIA's texture unit keeps each interpolation weight in 9-bit fixed
        point with 8 fractional bits (CUDA C Programming Guide, "Linear Filtering"), so each of
        the two weights may be off by up to 1/256, and the result by 1/256 of the difference
        between neighbouring texels per axis: at most 2/256 of the image's value range.
        """
        top = float(np.abs(img).max())
        if v.filter == "nearest":
            return 0.0
        if v.path == "global":
            return 8 * EPS32 * top
        return 2 / 256 * float(img.max() - img.min()) + 8 * EPS32 * top

    def skip(self, point: dict[str, Any]) -> str | None:
        if TEX_VARIANTS[point["variant"]].path == "image" and not self.ctx.info.image_support:
            return no_images_reason(self.ctx)
        return None

    def launch(self, point: dict[str, Any]) -> Launch:
        return Launch.one(self.kernel(TEX_VARIANTS[point["variant"]]), self.global_size,
                          self.local, self.bytes_moved(),
                          columns={"width": self.width, "height": self.height})

    def coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        """The texel coordinates the kernels sample, exactly as float32 computes them."""
        sx, ox, sy, oy = (float(t) for t in self.transform)
        return np.arange(self.width) * sx + ox, np.arange(self.height) * sy + oy

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        v = TEX_VARIANTS[point["variant"]]
        img = self.image()
        write_from(self.src_buf, img)
        if self.src_img is not None:
            self.src_img.write(img)
        poison_device(self.out_buf)
        launch.run()
        out = read_back(self.out_buf, img.dtype, shape=img.shape)
        return self._judge(v, img, out)

    @host_work
    def _judge(self, v: TexVariant, img: np.ndarray, out: np.ndarray) -> Check:
        """The samples read back against the reference (host work, off the device's turn)."""
        want = self.want(v)
        tol = self.tolerance(v, img)
        passed, detail = compare_close(out, want, tol, "samples")
        extra: dict[str, Any] = {"max_abs_error": max_abs_error(out, want), "tolerance": tol}
        if v.filter == "nearest" and v.path == "image":
            # Count lookups that returned a neighbour next to a texel edge (see tolerance()).
            extra["edge_picks"] = int((out != want).sum())
            if not passed:
                u, w = self.coordinates()
                ok = (out[None] == nearest_either_side(img, u, w, v.addressing)).any(axis=0)
                passed = bool(ok.all())
                detail = "" if passed else (
                    f"{int((~ok).sum())} of {out.size} samples are neither the nearest texel "
                    f"nor a neighbour within {EDGE_SLACK} texel of an edge; " + detail)
        return Check(passed, detail, extra)

    def finish(self, results: Any) -> None:
        """Texture unit vs manual per filter and addressing, beside Quasar's 2-D figures."""
        rows = {r["variant"]: r for r in results.rows if r.get("status") == OK}
        parts = []
        for v in self.variants:
            if v.path != "image":
                continue
            manual = rows.get(TexVariant("global", v.filter, v.addressing).name)
            hw = rows.get(v.name)
            if manual is None or hw is None:
                continue
            speedup = manual["median_ns"] / hw["median_ns"]
            hw["speedup_vs_manual"] = speedup
            without, with_hw = QUASAR_2D_MS[v.filter]
            hw["quasar_speedup"] = without / with_hw
            err = hw.get("max_abs_error")
            parts.append(f"{v.filter} {v.addressing}: {speedup:.2f}x"
                         + (f" (max error {err:.2g})" if err is not None else ""))
        if not parts:
            results.meta["conclusion"] = "no image/manual pair verified: no comparison"
            return
        results.meta["conclusion"] = (
            "texture unit vs manual interpolation from global memory: " + "; ".join(parts) +
            ". Quasar (Geforce 435M, 2-D): nearest 1.17x (109 -> 94 ms), linear 1.43x "
            "(156 -> 109 ms)")

    summary_columns = ["variant", "status", "median_ns", "gbps", "speedup_vs_manual",
                      "quasar_speedup", "max_abs_error", "tolerance", "edge_picks"]
