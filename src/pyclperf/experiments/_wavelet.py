"""The `rgba` experiment's wavelet points (Quasar 9.6): one stage of a vertical wavelet transform
on RGBA float pixels, with the pixels in an interleaved buffer, in four planes, or in CL_RGBA
float images read with read_imagef and written with write_imagef (kernels/rgba.cl, its TAPS part).

The document times this step with its 4-component texture reads and surface writes against the
same kernel on plain global arrays, whose RGBA cube is stored pixel by pixel (interleaved): 1000
runs took 513 ms without and 176 ms with textures on a GTX 780M. So the figure this device is held
against is time(interleaved) / time(image); the planar buffer is there to tell the layout's share
from the image path's.

The filter pair is Daubechies' of ``taps`` taps (16 by default: the length of the document's
sym8, so the same work per pixel; any even length works, 2 is Haar). Verification: uniform [0, 1)
pixels drawn once a run (the three variants share them and their reference), the output poisoned, against NumPy's float64 transform of the same pixels with the
same float32 coefficients, within gamma_taps times the sum of |c x| per value (Higham's bound for a
dot product of ``taps`` terms; a fused multiply-add only rounds less).
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

from .. import _core
from ..measure.checks import POISON_U32, compare_close, gamma, max_abs_error, poison_device
from ..device.turns import host_only, host_work
from ..measure.parallel import map_chunks
from ..measure.staging import read_back, write_from
from ._kit import FLOAT
from .base import Check, Launch

INTERLEAVED, PLANAR, RGBA_FLOAT = "wavelet interleaved", "wavelet planar", "wavelet rgba float image"
VARIANTS = (INTERLEAVED, PLANAR, RGBA_FLOAT)
KERNELS = {INTERLEAVED: "wavelet_interleaved", PLANAR: "wavelet_planar",
           RGBA_FLOAT: "wavelet_image"}
TILE = (16, 8)  # work-items span the width and half the height: side / 2 is a multiple of 8
SHIFT = 4  # where the filter starts relative to row 2 i, as in the document's call (ctd = 4)


def daubechies(taps: int) -> np.ndarray:
    """The low-pass Daubechies filter of ``taps`` (even) coefficients, summing to sqrt(2), by
    spectral factorisation: the minimum-phase root of each factor of the half-band polynomial."""
    if taps < 2 or taps % 2 or taps > 20:
        raise _core.InvalidArgumentError(f"wavelet taps must be even and in 2..20, got {taps}")
    n = taps // 2
    # P(y) = sum_k C(n-1+k, k) y^k with y = sin^2(w/2) = (2 - z - 1/z) / 4; each root y_r of P
    # gives z^2 - (2 - 4 y_r) z + 1 = 0, of whose two roots (z and 1/z) the one inside the unit
    # circle is kept. The filter is (1 + z)^n times those factors.
    p = [comb(n - 1 + k, k) for k in range(n)]
    zeros = [-1.0] * n
    for y in np.roots(p[::-1]) if n > 1 else []:
        z = np.roots([1.0, -(2.0 - 4.0 * y), 1.0])
        zeros.append(z[np.argmin(np.abs(z))])
    h = np.real(np.poly(zeros))
    return h * (np.sqrt(2.0) / h.sum())


def filter_pair(taps: int) -> tuple[np.ndarray, np.ndarray]:
    """The float32 low-pass and its quadrature-mirror high-pass g[k] = (-1)^k h[taps - 1 - k]."""
    h = daubechies(taps)
    g = h[::-1] * (-1.0) ** np.arange(taps)
    return h.astype(np.float32), g.astype(np.float32)


@host_work
def reference(pixels: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              shift: int = SHIFT) -> tuple[np.ndarray, np.ndarray]:
    """The float64 vertical step of (h, w, 4) pixels: row i holds the low-pass of rows 2 i +
    shift + k (k < taps, wrapping at the bottom), row h / 2 + i the high-pass; and sum |c x|."""
    height = pixels.shape[0]
    half = height // 2
    out = np.zeros(pixels.shape, np.float64)
    mag = np.zeros(pixels.shape, np.float64)
    nonneg = bool(pixels.min() >= 0)  # then |x| = x: no absolute values to take

    # A band of output rows at a time: its inputs are gathered and widened per band, so the
    # intermediates stay small (the whole image in float64 is half a GiB at the GPU's default),
    # and the bands run on the host's cores (measure.parallel).
    def band(span: slice) -> None:
        i = np.arange(span.start, span.stop)
        lo_out, hi_out = out[span], out[half + span.start:half + span.stop]
        lo_mag, hi_mag = mag[span], mag[half + span.start:half + span.stop]
        u = np.empty((i.size,) + pixels.shape[1:])
        a, t = (u if nonneg else np.empty_like(u)), np.empty_like(u)
        for k in range(lo.size):
            np.copyto(u, pixels[(2 * i + shift + k) % height])
            if not nonneg:
                np.abs(u, out=a)
            for acc, c, x in ((lo_out, float(lo[k]), u), (hi_out, float(hi[k]), u),
                              (lo_mag, abs(float(lo[k])), a), (hi_mag, abs(float(hi[k])), a)):
                np.multiply(x, c, out=t)
                acc += t

    map_chunks(band, half, 32)
    return out, mag


class WaveletStep:
    """The wavelet points' buffers, images, launches and checks, for the `rgba` experiment."""

    def __init__(self, ctx: Any, side: int, taps: int, variants: list[str]) -> None:
        self.ctx, self.side, self.taps = ctx, side, int(taps)
        self.lo, self.hi = filter_pair(self.taps)
        if self.taps > side:
            raise _core.InvalidArgumentError(f"rgba: {self.taps} wavelet taps exceed the side {side}")
        self.program = ctx.program(file="rgba.cl", defines={"TAPS": self.taps, "SHIFT": SHIFT})
        nbytes = 4 * FLOAT * side * side
        wanted_buffers = any("image" not in v for v in variants)
        self.src = ctx.buffer(nbytes) if wanted_buffers else None
        self.dst = ctx.buffer(nbytes) if wanted_buffers else None
        self.lo_buf, self.hi_buf = ctx.to_device(self.lo), ctx.to_device(self.hi)
        self.images: tuple[Any, Any] | None = None
        self.image_reason: str | None = None
        if RGBA_FLOAT in variants:
            if not ctx.info.image_support:
                self.image_reason = (f"needs image support, which {ctx.info.name} lacks "
                                     "(CL_DEVICE_IMAGE_SUPPORT = false)")
            else:
                try:  # the core checks the format list for reading and writing (CL_MEM_READ_WRITE)
                    self.images = (ctx.image(side, side, 4), ctx.image(side, side, 4))
                except _core.InvalidArgumentError as exc:
                    self.image_reason = f"no CL_RGBA/CL_FLOAT image to read and write: {exc}"
        self.rng = np.random.default_rng()
        self._input: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @host_work
    def input(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pixels, want, tolerance), once a run: the host's transform of a GPU-sized image
        takes seconds, the same for every variant."""
        if self._input is None:
            pixels = self.rng.random((self.side, self.side, 4), dtype=np.float32)
            want, mag = reference(pixels, self.lo, self.hi)
            self._input = (pixels, want, gamma(self.taps) * mag)
        return self._input

    def skip(self, variant: str) -> str | None:
        return self.image_reason if "image" in variant else None

    def launch(self, variant: str) -> Launch:
        k = self.program.kernel(KERNELS[variant])
        src, dst = self.images if "image" in variant else (self.src, self.dst)
        k.set_args(src, np.int32(self.side), self.lo_buf, self.hi_buf, dst)
        n = self.side * self.side
        # Each pixel is read by several work-items but fetched from memory once at best, and
        # written once: 16 bytes each way.
        return Launch.one(k, (self.side, self.side // 2), TILE, n * 32,
                          columns={"taps": self.taps}, rates={"mpix_per_s": n * 1e3})

    def check(self, variant: str, launch: Launch) -> Check:
        s = self.side
        pixels, want, tol = self.input()
        if variant == INTERLEAVED:
            write_from(self.src, pixels)
        elif variant == PLANAR:
            with host_only():
                planes = np.ascontiguousarray(np.moveaxis(pixels, 2, 0))
            write_from(self.src, planes)
        else:
            self.images[0].write(pixels)
            self.images[1].write(np.full((s, s, 4), POISON_U32, np.uint32).view(np.float32))
        if self.dst is not None:
            poison_device(self.dst)
        launch.run()
        if variant == "wavelet rgba float image":
            got = np.empty_like(pixels)
            self.images[1].read(got)
        elif variant == "wavelet planar":
            got = np.moveaxis(read_back(self.dst, np.float32, shape=(4, s, s)), 0, 2)
        else:
            got = read_back(self.dst, pixels.dtype, shape=pixels.shape)
        with np.errstate(invalid="ignore"):  # an unwritten value is the poison, a signalling NaN
            passed, detail = compare_close(got, want, tol, "transformed values")
        return Check(passed, detail, {"max_abs_error": max_abs_error(got, want)})
