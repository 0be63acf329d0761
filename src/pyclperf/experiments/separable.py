"""separable: a separable Gaussian filter, two passes through global memory vs one fused kernel
on a local-memory tile with its halo (Quasar 9.2.3.2; kernels/separable.cl).

The filter has 2R + 1 taps, w_k proportional to exp(-k^2 / (2 sigma^2)) with sigma = R / 2,
normalised to sum 1 and rounded to float32; borders clamp to the edge. The swept parameter is
the radius R (a build define). Variants:

* ``two-pass``: rows into an intermediate image, then its columns into the output (two kernels;
  a launch's time is the sum of both events);
* ``local tile``: one fused kernel; each TX x TY work-group loads its tile plus an R-pixel halo
  into local memory, filters rows there into a second local array (halo rows included), then
  filters columns into the output. TX x TY is the work-group size (16 x 16 for 256).

Effective bandwidth counts the bytes each algorithm needs: the input read once and the output
written once (8 bytes per pixel), plus, for two-pass, the intermediate written and read back
(16 bytes per pixel). Compare variants by ``median_ns`` or ``mpix_per_s``; ``gbps`` says how
close each one runs to the memory's limit.

Verification: a fresh uniform [-1, 1) image (drawn once a run), outputs (and the intermediate)
poisoned, compared with a float64 NumPy reference using the same float32 weights. Bound: each pass is a dot
product of m = 2R + 1 terms, so |error| <= gamma_m W^2 M (2 + gamma_m) with W = sum |w_k|,
M = max |x| and gamma_m = m u / (1 - m u), u = 2^-24: the row pass errs by at most
gamma_m W M, the column pass adds its own rounding and carries the rows' error (Higham 3.1).
The float64 reference's own error (below 1e-13 here) is neglected.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare_close, gamma, max_abs_error, poison_device
from ..device.turns import host_only, host_work
from ..measure.parallel import map_chunks
from ..measure.results import OK, Results
from ..measure.staging import read_back, write_from
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, pick, positive
from .base import Check, Experiment, Launch
from .claims import Claim, Figure, paired

# The labels the claim below names its rows by (the rows' ``variant``).
TWO_PASS, LOCAL_TILE = "two-pass", "local tile"
VARIANTS = (TWO_PASS, LOCAL_TILE)
MAX_RADIUS = 64


def gaussian_weights(radius: int) -> np.ndarray:
    """The 2R + 1 float32 taps: a Gaussian with sigma = R / 2, normalised to sum 1."""
    k = np.arange(-radius, radius + 1, dtype=np.float64)
    sigma = max(radius / 2, 0.5)
    w = np.exp(-0.5 * (k / sigma) ** 2)
    return (w / w.sum()).astype(np.float32)


# Rows of the image the reference filters at a time: a band's float64 intermediates (16 rows
# of a 4096-wide image, half a MiB each) stay in the host's caches, where whole-image
# temporaries per tap would stream hundreds of MiB through memory for every tap.
BAND = 16


def _filter_taps(acc: np.ndarray, window: Callable[[int], np.ndarray], w: np.ndarray,
                 term: np.ndarray) -> None:
    """acc := sum_k w[k] window(k) over the 2R + 1 taps. A symmetric filter (every Gaussian
    here) adds each mirrored pair of windows before its one multiply: half the products."""
    r = (w.size - 1) // 2
    np.multiply(window(r), w[r], out=acc)
    symmetric = bool(np.array_equal(w, w[::-1]))
    for k in range(r):
        if symmetric:
            np.add(window(k), window(2 * r - k), out=term)
            term *= w[k]
            acc += term
            continue
        for j in (k, 2 * r - k):
            np.multiply(window(j), w[j], out=term)
            acc += term


@host_work
def reference(image: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The filtered image in float64: rows, then columns, borders clamped to the edge.

    Every tap is a slice of an edge-padded band (no gathered copies), worked in place; the bands
    run on the host's cores, off the device's turn (a second a radius at the GPU's size)."""
    w = weights.astype(np.float64)
    r = (w.size - 1) // 2
    h, wd = image.shape
    # The rows pass lands between r clamped copies of the first and last rows, so each tap of
    # the columns pass is a plain slice of it too.
    mid = np.empty((h + 2 * r, wd))

    def rows_pass(band: slice) -> None:  # each pass's bands run on the host's cores
        y, n = band.start, band.stop - band.start
        p = np.empty((n, wd + 2 * r))
        p[:, r:r + wd] = image[band]
        p[:, :r] = p[:, r:r + 1]
        p[:, r + wd:] = p[:, r + wd - 1:r + wd]
        _filter_taps(mid[r + y:r + y + n], lambda k: p[:, k:k + wd], w, np.empty((n, wd)))

    map_chunks(rows_pass, h, BAND)
    mid[:r] = mid[r]
    mid[r + h:] = mid[r + h - 1]
    out = np.empty((h, wd))

    def columns_pass(band: slice) -> None:
        y, n = band.start, band.stop - band.start
        _filter_taps(out[band], lambda k: mid[y + k:y + k + n], w, np.empty((n, wd)))

    map_chunks(columns_pass, h, BAND)
    return out


def error_bound(weights: np.ndarray, max_abs: float) -> float:
    """The largest |float32 result - exact| two float32 passes of ``weights`` can give."""
    g = gamma(weights.size)
    total = float(np.abs(weights.astype(np.float64)).sum())
    return g * total * total * max_abs * (2 + g)


def tile_shape(local_size: int) -> tuple[int, int]:
    """A power-of-two work-group size as a tile, as square as it gets (wider than tall)."""
    bits = local_size.bit_length() - 1
    tx = 1 << ((bits + 1) // 2)
    return tx, local_size // tx


def two_pass_over_tile(results: Results) -> Figure:
    """Time of two passes over the local tile, geometric mean over the radii."""
    return paired(results, "median_ns", "radius", {"variant": TWO_PASS}, {"variant": LOCAL_TILE})


class Separable(Experiment):
    id = "separable"
    host_bound = True  # its references and checks: most of its seconds on a GPU
    description = ("a Gaussian of radius 2..16 as two global passes vs one fused kernel on a local tile "
                   "plus halo (Quasar 9.2.3.2; `--size` is the image width)")
    order = 240
    title = "Separable Gaussian: two global passes vs a fused local-memory tile"
    x = "radius"
    x_label = "filter radius R (taps = 2R + 1)"
    guide = "Quasar 9.2.3.2 (separable filtering in shared memory), 9.8.1"
    claim = Claim(
        "a separable filter with its tile and halo in local memory beats two global passes",
        "Quasar 9.2.3.2 (in words)", "time of two-pass / local tile (geometric mean over radii)",
        two_pass_over_tile)
    plot = {"kind": "modes", "group": "variant", "logx": True}
    size_arg, values_arg = "width", "radii"  # size = image width (square unless height is given)

    def __init__(self, ctx: Any, width: int | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 radii: Sequence[int] | None = None, height: int | None = None,
                 variants: Sequence[str] = VARIANTS) -> None:
        super().__init__(ctx)
        info = ctx.info
        local = positive(self.id, "work-group size", local_size)
        if local & (local - 1):
            raise _core.InvalidArgumentError(
                f"{self.id}: work-group size {local} must be a power of two (a square-ish tile)")
        self.tx, self.ty = tile_shape(local)
        self.variants = pick(self.id, VARIANTS, variants, "variants")
        if radii is None:
            radii = [2, 4, 8, 16] if info.is_gpu else [2, 8]
        self.radii = [int(r) for r in radii]
        if not self.radii or any(not 1 <= r <= MAX_RADIUS for r in self.radii):
            raise _core.InvalidArgumentError(
                f"{self.id}: radii {self.radii}: need at least one, each in 1..{MAX_RADIUS}")
        # 4096^2 floats (64 MiB per image) on a GPU: past its last-level cache; 256^2 on a CPU.
        self.width = int(width) if width is not None else (4096 if info.is_gpu else 256)
        self.height = int(height) if height is not None else self.width
        if (self.width <= 0 or self.height <= 0 or self.width % self.tx or self.height % self.ty
                or self.width * self.height >= 2**31):
            raise _core.InvalidArgumentError(
                f"{self.id}: a {self.width} x {self.height} image must be a positive multiple of "
                f"the {self.tx} x {self.ty} tile (work-group size {local}) below 2^31 pixels")
        nbytes = self.width * self.height * FLOAT
        if nbytes > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: a {self.width} x {self.height} float image needs {nbytes} bytes, over "
                f"the device's largest allocation ({info.max_alloc_bytes} bytes)")
        need = self.local_bytes(max(self.radii))
        if LOCAL_TILE in self.variants and need > info.local_mem_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: radius {max(self.radii)} with a {self.tx} x {self.ty} tile needs "
                f"{need} bytes of local memory; the device has {info.local_mem_bytes}")
        self.src = ctx.buffer(nbytes)
        self.mid = ctx.buffer(nbytes)
        self.dst = ctx.buffer(nbytes)
        self.rng = np.random.default_rng()
        self._image: np.ndarray | None = None
        self._loaded: tuple[int, Any, np.ndarray, float] | None = None

    def local_bytes(self, radius: int) -> int:
        """Local memory the fused kernel declares: the haloed tile and the row-filtered middle."""
        span_y = self.ty + 2 * radius
        return FLOAT * span_y * (self.tx + 2 * radius + self.tx)

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "width": self.width, "height": self.height,
                "tile": f"{self.tx}x{self.ty}", "radii": self.radii, "sigma": "R / 2"}

    def points(self) -> list[dict[str, Any]]:
        # Radius outermost: each image and reference serves every variant.
        return [{"radius": r, "variant": v, "taps": 2 * r + 1} for r in self.radii for v in self.variants]

    def bytes_needed(self, variant: str) -> int:
        per_pixel = 4 * FLOAT if variant == TWO_PASS else 2 * FLOAT
        return per_pixel * self.width * self.height

    def build(self, radius: int) -> dict[str, Any]:
        return {"file": "separable.cl", "defines": {"R": radius, "TX": self.tx, "TY": self.ty}}

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.build(int(point["radius"]))]

    def program(self, radius: int) -> Any:
        return self.ctx.program(**self.build(radius))

    def load(self, radius: int) -> tuple[Any, np.ndarray, float]:
        """The input on the device and, for ``radius`` (once per radius): weights buffer,
        reference output and tolerance. The image is drawn once a run: the kernels only read
        it, and every radius filters the same pixels."""
        if self._image is None:
            with host_only():
                self._image = 2 * self.rng.random((self.height, self.width), dtype=np.float32) - 1
            write_from(self.src, self._image)
        if self._loaded is None or self._loaded[0] != radius:
            image, weights = self._image, gaussian_weights(radius)
            with host_only():
                tolerance = error_bound(weights, float(np.abs(image).max()))
                want = reference(image, weights)
            self._loaded = (radius, self.ctx.to_device(weights), want, tolerance)
        return self._loaded[1:]

    def steps(self, radius: int, variant: str, weights: Any) -> list[tuple[Any, Any, Any]]:
        program = self.program(radius)
        g, l = [self.width, self.height], [self.tx, self.ty]
        dims = (np.int32(self.width), np.int32(self.height))
        if variant == TWO_PASS:
            rows = program.kernel("sep_rows").set_args(self.mid, self.src, weights, *dims)
            columns = program.kernel("sep_columns").set_args(self.dst, self.mid, weights, *dims)
            return [(rows, g, l), (columns, g, l)]
        return [(program.kernel("sep_tile").set_args(self.dst, self.src, weights, *dims), g, l)]

    def launch(self, point: dict[str, Any]) -> Launch:
        radius, variant = point["radius"], point["variant"]
        weights, _, tolerance = self.load(radius)
        return Launch(self.steps(radius, variant, weights), self.bytes_needed(variant),
                      columns={"width": self.width, "height": self.height,
                               "tile": f"{self.tx}x{self.ty}", "tolerance": tolerance},
                      rates={"mpix_per_s": self.width * self.height * 1e3})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        _, want, tolerance = self.load(point["radius"])
        poison_device(self.mid)
        poison_device(self.dst)
        launch.run()
        got = read_back(self.dst, np.float32, shape=(self.height, self.width))
        return Check(*compare_close(got, want, tolerance, "pixels"),
                     {"max_abs_error": max_abs_error(got, want)})

    def finish(self, results: Any) -> None:
        """The fused tile's speed-up over two passes at each radius."""
        ok = {(r["radius"], r["variant"]): r for r in results.rows if r.get("status") == OK}
        speedup = {r: ok[(r, TWO_PASS)]["median_ns"] / ok[(r, LOCAL_TILE)]["median_ns"]
                   for r in self.radii if (r, TWO_PASS) in ok and (r, LOCAL_TILE) in ok}
        source = ("Quasar 9.2.3.2 proposes the fused tile without a figure (qualitative); "
                  "9.8.1 fuses the passes with a grid barrier instead")
        if not speedup:
            results.meta["conclusion"] = f"no radius had both variants verified; {source}"
            return
        results.meta["tile_speedup"] = speedup
        parts = ", ".join(f"R={r}: {s:.2f}x" for r, s in speedup.items())
        best = max(ok.values(), key=lambda r: r["mpix_per_s"])
        results.meta["conclusion"] = (
            f"local tile over two passes (time ratio): {parts}; fastest point {best['variant']} "
            f"R={best['radius']} at {best['mpix_per_s']:.0f} Mpixel/s; {source}")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["radius", "variant", "status", "median_ns", "spread_pct", "mpix_per_s", "gbps",
                "max_abs_error", "tolerance"]
        return df[[c for c in cols if c in df]]
