"""constant: where a convolution's filter taps and input come from (Quasar 9.1, Guide 3.2.5).

Each row of a 2-D float image is convolved with a filter of 32 taps, the taps (and the input)
read from different memories: plain global pointers, ``__constant``, ``const restrict`` global
pointers (the read-only cache path) and images (the texture path) (kernels/constant.cl, one
build). Image variants need CL_DEVICE_IMAGE_SUPPORT; without it their rows are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare_close, max_abs_error, poison_device
from ..measure.parallel import map_chunks
from ..device.turns import host_work
from ..device.program import ceil_to
from ..measure.results import OK, Results
from ..measure.staging import read_back, write_from
from ._kit import (DEFAULT_LOCAL_SIZE, EPS32, FLOAT, check_image_side, image_bytes, no_images_reason,
                   pick, positive)
from .base import Check, Experiment, Launch
from .claims import Claim, Figure, ratio


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


# The variants' labels (the rows' ``variant``); the claim below names its rows through them.
GLOBAL, F_CONSTANT = "global", "f constant"

CONV_VARIANTS = {v.name: v for v in (
    ConvVariant(GLOBAL, "conv_global", "global", "global", 513.0),
    ConvVariant(F_CONSTANT, "conv_constant", "global", "constant", 132.0),
    ConvVariant("f read-only", "conv_readonly_f", "global", "read-only", 128.0),
    ConvVariant("x,f read-only", "conv_readonly", "read-only", "read-only", 95.0),
    ConvVariant("f image", "conv_image_f", "global", "image", 169.0),
    ConvVariant("x image, f constant", "conv_image_x", "image", "constant", None),
    ConvVariant("x,f image", "conv_image_xf", "image", "image", None),
)}


def global_over_constant(results: Results) -> Figure:
    return ratio(results, "median_ns", {"variant": GLOBAL}, {"variant": F_CONSTANT})


class ConstantMemory(Experiment):
    id = "constant"
    description = ("a 32-tap row convolution with taps and input from global, `__constant`, `const "
                   "restrict` and image memory, against Quasar 9.1's ratios (`--size` is the image "
                   "width)")
    order = 130
    title = "Filter taps and input from global, constant, read-only and image memory"
    x = "variant"
    x_label = "variant"
    guide = "Quasar 9.1 (convolution, GTX 980); Guide 3.2.4-3.2.5"
    claim = Claim(
        "filter taps in constant memory make a convolution faster than taps in global memory",
        "Quasar 9.1 (GTX 980): global 513 ms, f in constant memory 132 ms",
        "time of global / f constant", global_over_constant, source_ratio=513.0 / 132.0)
    plot = {"kind": "bars", "label": "variant"}
    size_arg, values_arg = "width", None

    def __init__(self, ctx: Any, width: int | None = None, height: int | None = None,
                 local_size: int = DEFAULT_LOCAL_SIZE, taps: int = 32,
                 variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.variants = pick(self.id, CONV_VARIANTS, variants)
        self.local_size = positive(self.id, "work-group size", local_size)
        # 4096^2 floats (64 MiB per image) on a GPU: each launch streams far past the caches
        # while the taps stay hot. A small image on a CPU device (PoCL).
        self.width = positive(self.id, "width", width if width is not None else (4096 if info.is_gpu else 256))
        self.height = positive(
            self.id, "height", height if height is not None else (self.width if info.is_gpu else 64))
        self.taps = positive(self.id, "taps", taps)
        if self.taps * FLOAT > info.constant_mem_bytes:
            raise _core.InvalidArgumentError(
                f"{self.taps} taps need {self.taps * FLOAT} bytes of __constant memory; the "
                f"device has {info.constant_mem_bytes} (CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE)")
        nbytes = image_bytes(info, self.width, self.height)
        check_image_side(info, self.width, self.height, "input image")
        check_image_side(info, self.taps, 1, "filter image")
        self.x_buf, self.y_buf, self.f_buf = ctx.buffer(nbytes), ctx.buffer(nbytes), ctx.buffer(self.taps * FLOAT)
        self.images = info.image_support and any(v.images for v in self.variants)
        if self.images:
            self.x_img = ctx.image(self.width, self.height)
            self.f_img = ctx.image(self.taps, 1)
            # Integer coordinates, exact texels, the right edge clamped like min() in the kernels.
            self.sampler = ctx.sampler(normalized=False, addressing="clamp_to_edge", filter="nearest")
        self.rng = np.random.default_rng()
        self._input: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None

    @host_work
    def input(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """(x, f, want, tolerance), drawn and computed once a run: every variant filters the
        same x with the same f, and the host's float64 filter of a 4096^2 image takes seconds."""
        if self._input is None:
            x = self.rng.uniform(-1, 1, (self.height, self.width)).astype(np.float32)
            f = self.rng.uniform(-1, 1, self.taps).astype(np.float32)
            f /= np.float32(np.abs(f).sum())
            # float32 sums of `taps` products in any order (the device may fuse multiply-adds):
            # each partial sum rounds by at most eps/2 of at most sum|x_k f_k| <= max|x| sum|f|
            # = 1, so the error stays below taps * eps; twice that is the tolerance.
            tol = 2 * self.taps * EPS32 * float(np.abs(x).max()) * float(np.abs(f).sum())
            self._input = (x, f, self.reference(x, f), tol)
        return self._input

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
        k = self.program().kernel(v.kernel)
        x = self.x_img if v.x_from == "image" else self.x_buf
        f = self.f_img if v.f_from == "image" else self.f_buf
        args: list[Any] = [self.y_buf, x, f]
        if v.images:
            args.append(self.sampler)
        return k.set_args(*args, np.int32(self.width), np.int32(self.height))

    def program(self) -> Any:
        return self.ctx.program(file="constant.cl", defines={"TAPS": self.taps})

    def ranges(self) -> tuple[list[int], list[int]]:
        return [ceil_to(self.width, self.local_size), self.height], [self.local_size, 1]

    def skip(self, point: dict[str, Any]) -> str | None:
        if CONV_VARIANTS[point["variant"]].images and not self.ctx.info.image_support:
            return no_images_reason(self.ctx)
        return None

    def launch(self, point: dict[str, Any]) -> Launch:
        global_size, local = self.ranges()
        return Launch.one(self.kernel(CONV_VARIANTS[point["variant"]]), global_size, local,
                          self.bytes_moved(),
                          columns={"width": self.width, "height": self.height, "taps": self.taps})

    def reference(self, x: np.ndarray, f: np.ndarray) -> np.ndarray:
        """y[r, c] = sum_k x[r, min(c + k, width - 1)] * f[k], in float64: a band of rows at a
        time on the host's cores."""
        y = np.zeros(x.shape, np.float64)
        taps = f.astype(np.float64)

        def band(rows: slice) -> None:
            part = x[rows]
            padded = np.concatenate([part, np.repeat(part[:, -1:], len(f) - 1, axis=1)],
                                    axis=1).astype(np.float64)
            out = y[rows]
            for k, tap in enumerate(taps):
                out += padded[:, k:k + x.shape[1]] * tap

        map_chunks(band, x.shape[0], max(1, (1 << 18) // max(1, x.shape[1])))
        return y

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        x, f, want, tol = self.input()
        write_from(self.x_buf, x)
        self.f_buf.write(f)
        if self.images:
            self.x_img.write(x)
            self.f_img.write(f.reshape(1, -1))
        poison_device(self.y_buf)
        launch.run()
        y = read_back(self.y_buf, x.dtype, shape=x.shape)
        return Check(*compare_close(y, want, tol, "outputs"), {"max_abs_error": max_abs_error(y, want)})

    def finish(self, results: Any) -> None:
        """Each variant's speed-up over plain global memory, beside Quasar's GTX 980 figures."""
        rows = {r["variant"]: r for r in results.rows if r.get("status") == OK}
        base = rows.get(GLOBAL)
        if base is None:
            results.meta["conclusion"] = "the global-memory variant did not verify: no comparison"
            return
        quasar_base = CONV_VARIANTS[GLOBAL].quasar_ms
        parts, speedups = [], {}
        for name, r in rows.items():
            speedup = base["median_ns"] / r["median_ns"]
            r["speedup_vs_global"] = speedup
            v = CONV_VARIANTS[name]
            if v.quasar_ms is not None and quasar_base is not None:
                r["quasar_speedup"] = quasar_base / v.quasar_ms
            speedups[name] = speedup
        best = max(speedups, key=lambda n: speedups[n])
        for name in (F_CONSTANT, "f read-only", "x,f read-only", "f image"):
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

    summary_columns = ["variant", "status", "median_ns", "spread_pct", "gbps",
                      "speedup_vs_global", "quasar_speedup", "max_abs_error"]
