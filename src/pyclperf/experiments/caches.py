"""constant and texture: the read-only caches (Quasar 9.1 and 9.3, Guide 3.2.4-3.2.5).

``constant`` convolves each row of a 2-D float image with a filter of 32 taps and reads the
taps (and the input) from different memories: plain global pointers, ``__constant``, ``const
restrict`` global pointers (the read-only cache path) and images (the texture path)
(kernels/convolution.cl, one build).

``texture`` resamples an image at fractional coordinates, nearest and linear, with clamp and
repeat addressing: through an image and a sampler (the texture unit filters and addresses)
against the same sampling rules written out from global memory (kernels/texture.cl).

Image variants need CL_DEVICE_IMAGE_SUPPORT; on a device without it their rows are "skipped".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import _core
from ..checks import poison_device
from ..program import ceil_to
from ..sweep import OK, SKIPPED, timed_row, verdict
from .base import Sweep, pick_variants

FLOAT = 4  # bytes
EPS32 = float(np.finfo(np.float32).eps)


def close(got: np.ndarray, want: np.ndarray, tol: float, what: str) -> tuple[bool, str, float]:
    """(passed, what differed, max |got - want|) for float results held to an absolute ``tol``.

    NaN (the poison of an output nobody wrote) always fails.
    """
    if got.shape != want.shape:
        return False, f"{what}: shape {got.shape} differs from the expected {want.shape}", float("nan")
    err = np.abs(got.astype(np.float64) - want)
    bad = ~(err <= tol)  # NaN compares False: counted as wrong
    worst = float(np.nanmax(err)) if np.isfinite(err).any() else float("nan")
    if not bad.any():
        return True, "", worst
    first = int(np.flatnonzero(bad.reshape(-1))[0])
    return False, (f"{int(bad.sum())} of {got.size} {what} differ by more than {tol:.3g}; "
                   f"first at {first}: got {got.reshape(-1)[first]!r}, "
                   f"want {want.reshape(-1)[first]!r}"), worst


def verified_timing(verify: bool, check: Callable[[], tuple[bool, str, dict[str, Any]]],
                    time: Callable[[], np.ndarray], nbytes: int, method: str) -> dict[str, Any]:
    """A row's verification and timing: ``check()`` (passed, what differed, extra columns) when
    verifying, then ``time()`` per-launch ns, then the statistics, bandwidth and status."""
    row: dict[str, Any] = {}
    passed, detail = True, "not verified"
    if verify:
        passed, detail, extra = check()
        row.update(extra)
    row.update(timed_row(time(), nbytes, method))
    row.update(verdict(verify, passed, detail))
    return row


def table(results: Any, columns: Sequence[str]) -> Any:
    """The summary table: those of ``columns`` the results have, in that order."""
    df = results.df
    return df[[c for c in columns if c in df]]


def _check_alloc(info: _core.DeviceInfo, width: int, height: int) -> int:
    """Bytes of a width x height float image; InvalidArgumentError past the allocation limit or
    the kernels' int index range."""
    nbytes = width * height * FLOAT
    if nbytes > info.max_alloc_bytes or width * height >= 2**31:
        raise _core.InvalidArgumentError(
            f"{width} x {height} floats ({nbytes} bytes) exceed the device's largest allocation "
            f"of {info.max_alloc_bytes} bytes or the kernels' int index range")
    return nbytes


def _check_positive(name: str, value: int) -> int:
    value = int(value)
    if value <= 0:
        raise _core.InvalidArgumentError(f"{name} must be positive, got {value}")
    return value


def _no_images_reason(ctx: Any) -> str:
    return f"needs image support, which {ctx.info.name} lacks (CL_DEVICE_IMAGE_SUPPORT = false)"


def _check_image_side(info: _core.DeviceInfo, width: int, height: int, what: str) -> None:
    if info.image_support and (width > info.image2d_max_width or height > info.image2d_max_height):
        raise _core.InvalidArgumentError(
            f"{what}: {width} x {height} exceeds the device's largest 2-D image of "
            f"{info.image2d_max_width} x {info.image2d_max_height} (CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT)")


def _check_local(info: _core.DeviceInfo, local: int) -> int:
    local = _check_positive("work-group size", local)
    if local > info.max_work_group_size:
        raise _core.InvalidArgumentError(
            f"work-group size {local} exceeds the device's limit of {info.max_work_group_size} "
            "(CL_DEVICE_MAX_WORK_GROUP_SIZE)")
    return local


# --- constant: where the filter taps and the input come from ----------------------------------

@dataclass(frozen=True)
class ConvVariant:
    name: str
    kernel: str
    x_from: str  # "global", "read-only", "image"
    f_from: str  # "global", "constant", "read-only", "image"
    quasar_ms: float | None  # Quasar's GTX 980 time for 100 runs on 2048^2 (None: not measured)

    @property
    def images(self) -> bool:
        return "image" in (self.x_from, self.f_from)


CONV_VARIANTS = {v.name: v for v in (
    ConvVariant("global", "conv_global", "global", "global", 513.0),
    ConvVariant("f constant", "conv_constant", "global", "constant", 132.0),
    ConvVariant("f read-only", "conv_readonly_f", "global", "read-only", 128.0),
    ConvVariant("x,f read-only", "conv_readonly", "read-only", "read-only", 95.0),
    ConvVariant("f image", "conv_image_f", "global", "image", 169.0),
    ConvVariant("x image, f constant", "conv_image_x", "image", "constant", None),
    ConvVariant("x,f image", "conv_image_xf", "image", "image", None),
)}


class ConstantMemory(Sweep):
    id = "constant"
    title = "Filter taps and input from global, constant, read-only and image memory"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.1 (convolution, GTX 980); Guide 3.2.4-3.2.5"
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "width", None

    def __init__(self, ctx: Any, width: int | None = None, height: int | None = None,
                 local_size: int = 256, taps: int = 32, variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.variants = pick_variants(self.id, CONV_VARIANTS, variants)
        self.local_size = _check_local(info, local_size)
        # 4096^2 floats (64 MiB per image) on a GPU: each launch streams far past the caches
        # while the taps stay hot. A small image on a CPU device (PoCL).
        self.width = _check_positive("width", width if width is not None else (4096 if info.is_gpu else 256))
        self.height = _check_positive(
            "height", height if height is not None else (self.width if info.is_gpu else 64))
        self.taps = _check_positive("taps", taps)
        if self.taps * FLOAT > info.constant_mem_bytes:
            raise _core.InvalidArgumentError(
                f"{self.taps} taps need {self.taps * FLOAT} bytes of __constant memory; the "
                f"device has {info.constant_mem_bytes} (CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE)")
        nbytes = _check_alloc(info, self.width, self.height)
        _check_image_side(info, self.width, self.height, "input image")
        _check_image_side(info, self.taps, 1, "filter image")
        self.x_buf, self.y_buf, self.f_buf = ctx.buffer(nbytes), ctx.buffer(nbytes), ctx.buffer(self.taps * FLOAT)
        self.images = info.image_support and any(v.images for v in self.variants)
        if self.images:
            self.x_img = ctx.image(self.width, self.height)
            self.f_img = ctx.image(self.taps, 1)
            # Integer coordinates, exact texels, the right edge clamped like min() in the kernels.
            self.sampler = ctx.sampler(normalized=False, addressing="clamp_to_edge", filter="nearest")
        self.rng = np.random.default_rng()

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "width": self.width, "height": self.height, "taps": self.taps,
                "local_size": self.local_size}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v.name, "x_from": v.x_from, "f_from": v.f_from} for v in self.variants]

    def bytes_moved(self) -> int:
        """x read once, y written once, the taps once (effective bandwidth, Guide 2.2.2)."""
        return 2 * self.width * self.height * FLOAT + self.taps * FLOAT

    def kernel(self, v: ConvVariant) -> Any:
        """The variant's kernel with its arguments bound (one cached build for all)."""
        k = self.ctx.program(file="convolution.cl", defines={"TAPS": self.taps}).kernel(v.kernel)
        x = self.x_img if v.x_from == "image" else self.x_buf
        f = self.f_img if v.f_from == "image" else self.f_buf
        args: list[Any] = [self.y_buf, x, f]
        if v.images:
            args.append(self.sampler)
        return k.set_args(*args, np.int32(self.width), np.int32(self.height))

    def ranges(self) -> tuple[list[int], list[int]]:
        return [ceil_to(self.width, self.local_size), self.height], [self.local_size, 1]

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        v = CONV_VARIANTS[point["variant"]]
        if v.images and not self.ctx.info.image_support:
            return {"status": SKIPPED, "error": _no_images_reason(self.ctx)}
        kernel = self.kernel(v)
        global_size, local = self.ranges()
        return {"width": self.width, "height": self.height, "taps": self.taps, **verified_timing(
            verify, lambda: self._verify(kernel),
            lambda: kernel.time(global_size, local, warmup=warmup, repeats=repeats, method=method),
            self.bytes_moved(), method)}

    def reference(self, x: np.ndarray, f: np.ndarray) -> np.ndarray:
        """y[r, c] = sum_k x[r, min(c + k, width - 1)] * f[k], in float64."""
        padded = np.concatenate([x, np.repeat(x[:, -1:], len(f) - 1, axis=1)], axis=1).astype(np.float64)
        y = np.zeros(x.shape, np.float64)
        for k, tap in enumerate(f.astype(np.float64)):
            y += padded[:, k:k + x.shape[1]] * tap
        return y

    def _verify(self, kernel: Any) -> tuple[bool, str, dict[str, Any]]:
        x = self.rng.uniform(-1, 1, (self.height, self.width)).astype(np.float32)
        f = self.rng.uniform(-1, 1, self.taps).astype(np.float32)
        f /= np.float32(np.abs(f).sum())
        self.x_buf.write(x)
        self.f_buf.write(f)
        if self.images:
            self.x_img.write(x)
            self.f_img.write(f.reshape(1, -1))
        poison_device(self.y_buf)
        kernel.run(*self.ranges())
        y = np.empty_like(x)
        self.y_buf.read(y)
        # float32 sums of `taps` products in any order (the device may fuse multiply-adds):
        # each partial sum rounds by at most eps/2 of at most sum|x_k f_k| <= max|x| sum|f| = 1,
        # so the error stays below taps * eps; twice that is the tolerance.
        tol = 2 * self.taps * EPS32 * float(np.abs(x).max()) * float(np.abs(f).sum())
        passed, detail, worst = close(y, self.reference(x, f), tol, "outputs")
        return passed, detail, {"max_abs_error": worst}

    def finish(self, results: Any) -> None:
        """Each variant's speed-up over plain global memory, beside Quasar's GTX 980 figures."""
        rows = {r["variant"]: r for r in results.rows if r.get("status") == OK}
        base = rows.get("global")
        if base is None:
            results.meta["conclusion"] = "the global-memory variant did not verify: no comparison"
            return
        quasar_base = CONV_VARIANTS["global"].quasar_ms
        parts, speedups = [], {}
        for name, r in rows.items():
            speedup = base["median_ns"] / r["median_ns"]
            r["speedup_vs_global"] = speedup
            v = CONV_VARIANTS[name]
            if v.quasar_ms is not None and quasar_base is not None:
                r["quasar_speedup"] = quasar_base / v.quasar_ms
            speedups[name] = speedup
        best = max(speedups, key=lambda n: speedups[n])
        for name in ("f constant", "f read-only", "x,f read-only", "f image"):
            if name in speedups:
                v = CONV_VARIANTS[name]
                assert v.quasar_ms is not None and quasar_base is not None
                parts.append(f"{name} {speedups[name]:.2f}x (Quasar {quasar_base / v.quasar_ms:.1f}x)")
        ms100 = 100 * rows[best]["median_ns"] / 1e6
        results.meta["best_variant"] = best
        results.meta["speedups_vs_global"] = speedups
        results.meta["conclusion"] = (
            f"fastest: {best} ({speedups[best]:.2f}x over plain global, {ms100:.1f} ms per 100 "
            f"runs on {self.width}x{self.height}); vs global: " + ", ".join(parts) +
            ". Quasar's GTX 980 (2048^2, 100 runs): global 513 ms, constant 132, f texture 169, "
            "x,f read-only 95")

    @classmethod
    def summary(cls, results: Any) -> Any:
        return table(results, ["variant", "status", "median_ns", "spread_pct", "gbps",
                               "speedup_vs_global", "quasar_speedup", "max_abs_error"])


# --- texture: sampling by the texture unit vs by hand -----------------------------------------

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
    """What the OpenCL sampler returns at texel coordinates u (columns) x v (rows), in float64."""
    t = img.astype(np.float64)
    i0, i1, a = _axis(u, img.shape[1], filt, addressing)
    j0, j1, b = _axis(v, img.shape[0], filt, addressing)
    a, b = a[None, :], b[:, None]
    return ((1 - a) * (1 - b) * t[np.ix_(j0, i0)] + a * (1 - b) * t[np.ix_(j0, i1)]
            + (1 - a) * b * t[np.ix_(j1, i0)] + a * b * t[np.ix_(j1, i1)])


# How close to a texel edge a texture unit may resolve a nearest lookup either way: its
# coordinates may carry only 8 fractional bits (the same fixed point as its linear weights).
EDGE_SLACK = 1 / 256


def nearest_either_side(img: np.ndarray, u: np.ndarray, v: np.ndarray, addressing: str) -> np.ndarray:
    """The texels a nearest lookup at (u, v) may return when the coordinates move by up to
    EDGE_SLACK each way: shape (4, rows, columns); away from texel edges all four are equal."""
    lo_i, hi_i = (_axis(u + d, img.shape[1], "nearest", addressing)[0] for d in (-EDGE_SLACK, EDGE_SLACK))
    lo_j, hi_j = (_axis(v + d, img.shape[0], "nearest", addressing)[0] for d in (-EDGE_SLACK, EDGE_SLACK))
    return np.stack([img[np.ix_(j, i)] for j in (lo_j, hi_j) for i in (lo_i, hi_i)])


class Texture(Sweep):
    id = "texture"
    title = "Interpolation through the texture unit vs by hand from global memory"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.3 (hardware texturing, Geforce 435M); Guide 3.2.4"
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "width", None

    def __init__(self, ctx: Any, width: int | None = None, height: int | None = None,
                 local_size: int = 256, variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.variants = pick_variants(self.id, TEX_VARIANTS, variants)
        self.local_size = _check_local(info, local_size)
        # 4096^2 texels (64 MiB) on a GPU; small on a CPU device (PoCL).
        self.width = int(width) if width is not None else (4096 if info.is_gpu else 128)
        self.height = int(height) if height is not None else (self.width if info.is_gpu else 64)
        for name, side in (("width", self.width), ("height", self.height)):
            if side <= 0 or side & (side - 1) or side > MAX_SIDE:
                raise _core.InvalidArgumentError(
                    f"{self.id}: {name} must be a power of two up to {MAX_SIDE} (so that every "
                    f"sampling coordinate is exact in float32), got {side}")
        nbytes = _check_alloc(info, self.width, self.height)
        _check_image_side(info, self.width, self.height, "image")
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

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        v = TEX_VARIANTS[point["variant"]]
        if v.path == "image" and not self.ctx.info.image_support:
            return {"status": SKIPPED, "error": _no_images_reason(self.ctx)}
        kernel = self.kernel(v)
        return {"width": self.width, "height": self.height, **verified_timing(
            verify, lambda: self._verify(kernel, v),
            lambda: kernel.time(self.global_size, self.local, warmup=warmup, repeats=repeats,
                                method=method),
            self.bytes_moved(), method)}

    def coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        """The texel coordinates the kernels sample, exactly as float32 computes them."""
        sx, ox, sy, oy = (float(t) for t in self.transform)
        return np.arange(self.width) * sx + ox, np.arange(self.height) * sy + oy

    def _verify(self, kernel: Any, v: TexVariant) -> tuple[bool, str, dict[str, Any]]:
        img = self.rng.random((self.height, self.width), dtype=np.float32)
        self.src_buf.write(img)
        if self.src_img is not None:
            self.src_img.write(img)
        poison_device(self.out_buf)
        kernel.run(self.global_size, self.local)
        out = np.empty_like(img)
        self.out_buf.read(out)
        u, w = self.coordinates()
        want = sample_reference(img, u, w, v.filter, v.addressing)
        tol = self.tolerance(v, img)
        passed, detail, worst = close(out, want, tol, "samples")
        extra: dict[str, Any] = {"max_abs_error": worst, "tolerance": tol}
        if v.filter == "nearest" and v.path == "image":
            # Count lookups that returned a neighbour next to a texel edge (see tolerance()).
            extra["edge_picks"] = int((out != want).sum())
            if not passed:
                ok = (out[None] == nearest_either_side(img, u, w, v.addressing)).any(axis=0)
                passed = bool(ok.all())
                detail = "" if passed else (
                    f"{int((~ok).sum())} of {out.size} samples are neither the nearest texel "
                    f"nor a neighbour within {EDGE_SLACK} texel of an edge; " + detail)
        return passed, detail, extra

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

    @classmethod
    def summary(cls, results: Any) -> Any:
        return table(results, ["variant", "status", "median_ns", "gbps", "speedup_vs_manual",
                               "quasar_speedup", "max_abs_error", "tolerance", "edge_picks"])
