"""tiling: square C = AB with the optimisations of the Tradeoffs slides (two outputs per
work-item, prefetching the next tile, an unrolled inner loop; kernels/tiling.cl), beside a
vendor GEMM (cuBLAS through CuPy) with ``reference=True`` where one exists."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.results import OK, Results
from ..measure.sweep import timed_row, verdict
from ._kit import is_nvidia
from ._product import Product, Variant, fit_square
from .base import noise_note
from .claims import Claim, Figure, ratio


REFERENCE = "cupy.matmul"


def _import_cupy() -> Any:
    """CuPy if it can be imported (and finds a GPU), else None."""
    try:
        import cupy  # type: ignore[import-not-found]

        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - any failure means: no reference here
        return None
    return cupy


def find_reference(info: _core.DeviceInfo) -> tuple[Any, str]:
    """(the cupy module, "") where a vendor GEMM can be measured on this device, else (None, why)."""
    if not is_nvidia(info):
        return None, f"no reference GEMM: {info.name} is not an NVIDIA device (CuPy needs CUDA)"
    cupy = _import_cupy()
    if cupy is None:
        return None, "no reference GEMM: CuPy is not importable here"
    return cupy, ""


def time_reference(cupy: Any, a: np.ndarray, b: np.ndarray,
                   batches: int) -> tuple[np.ndarray, tuple[bool, str], str]:
    """cupy.matmul(A, B) timed by the CUDA reference module (pyclperf.reference.cuda): ns per
    launch, one figure per batch of back-to-back launches, so the host's launch gap stays out as
    it does from OpenCL's event times; whether its result (into an output filled with NaN first)
    passed the product check and what differed; and how it was timed."""
    from ..reference.cuda import CudaReference

    ref, _ = CudaReference(cp=cupy).matmul(a, b)
    timing = ref.timer.measure(batches)
    return 1e9 * np.asarray(timing.batch_per_launch_s), (ref.verified, ref.detail), timing.how


TILED, TWO_OUTPUTS = "tiled", "two outputs"


def two_outputs_over_tiled(results: Results) -> Figure:
    return ratio(results, "gflops", {"variant": TWO_OUTPUTS}, {"variant": TILED})


class Tiling(Product):
    """Square C = A B (n x n) with the tiled kernel and the Tradeoffs slides' variants."""

    id = "tiling"
    description = ("Tradeoffs' matmul variants (two outputs per work-item, prefetch, unrolled) against "
                   "the tiled baseline and, with reference=True where CuPy reaches an NVIDIA GPU, "
                   "cuBLAS (`--size` is n)")
    order = 120
    title = "Tiled matrix multiply: work per item, prefetching, unrolling (Tradeoffs)"
    guide = "Tradeoffs (tiled matrix multiply, unrolling, prefetch, tile workload); Guide 3.2.2"
    claim = Claim(
        "giving each work-item more outputs speeds up a tiled matrix product",
        "Tradeoffs, tile workload (in words)", "GFLOP/s of two outputs / tiled",
        two_outputs_over_tiled)
    kernel_file = "tiling.cl"
    plot = {"kind": "bars", "label": "variant", "value": "gflops", "xlabel": "GFLOP/s"}
    variants = (
        Variant(TILED, "tiled", source="baseline: A and B tiles in local memory"),
        Variant(TWO_OUTPUTS, "two_outputs", source="tile workload: 2 outputs per work-item",
                columns_per_item=2),
        Variant("prefetch", "prefetch_next", source="prefetch the next tile into registers"),
        Variant("unrolled", "tiled", (("UNROLL", 1),), source="inner loop fully unrolled"),
        Variant("rolled", "tiled", (("UNROLL", 0),), source="inner loop kept rolled (control)"),
    )

    def __init__(self, ctx: Any, size: int | None = None, tile: int = 16,
                 variants: Sequence[str] | None = None, reference: bool = False) -> None:
        """``reference``: also time cuBLAS (through CuPy) where it can be (``reference=True``;
        off by default: loading CuPy opens a CUDA context beside OpenCL and costs a plain run
        seconds, and the claim's verdict compares our kernels only)."""
        super().__init__(ctx, size, tile, variants)
        self.cupy: Any = None
        self.reference_note = "no reference GEMM measured (not requested: reference=True times cuBLAS)"
        if reference:
            self.cupy, self.reference_note = find_reference(ctx.info)

    def default_size(self, info: _core.DeviceInfo) -> int:
        # GPU: 2 n^3 = 137 GFLOP per product, tens of milliseconds for these kernels.
        return fit_square(info, 4096, 2 * self.tile, 1) if info.is_gpu else 128

    def input_elements(self) -> list[int]:
        return [self.size * self.size, self.size * self.size]

    def inner(self) -> int:
        return self.size

    def operands(self, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        shape = (self.size, self.size)
        return inputs[0].reshape(shape), inputs[1].reshape(shape)

    def defines(self, v: Variant) -> dict[str, int]:
        return {"TILE": self.tile, **dict(v.defines)}

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "reference": self.reference_note or REFERENCE}

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None  # compute-bound: a DRAM fraction would say nothing

    def points(self) -> list[dict[str, Any]]:
        points = super().points()
        if self.cupy is not None:
            points.append({"variant": REFERENCE, "kernel": "cuBLAS via CuPy", "tile": None,
                           "source": "vendor GEMM: the ceiling"})
        return points

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        """The kernels through the contract; the vendor GEMM is timed by CUDA events instead."""
        if point["variant"] != REFERENCE:
            return super().measure(point, warmup=warmup, repeats=repeats, method=method,
                                   verify=verify)
        shape = (self.size, self.size)
        a, b = (self.rng.uniform(-1.0, 1.0, shape).astype(np.float32) for _ in range(2))
        # One figure per batch: ``repeats`` batches, each calibrated to last ~20 ms.
        # The reference checks its own product, verify or not.
        times, (passed, detail), how = time_reference(self.cupy, a, b, batches=repeats)
        row = timed_row(times, self.bytes_needed(), how)
        row.update(self.flop_rates(row))
        row.update(verdict(verify, passed, detail))
        return row

    def conclusion(self, results: Any, table: list[dict[str, Any]]) -> str:
        ours = [e for e in table if e["ratio"] is not None and e["variant"] != REFERENCE]
        if not ours:
            return "tiling: the baseline or every variant failed; nothing to compare"
        best = max(ours, key=lambda e: e["gflops"])
        text = (f"fastest kernel: {best['variant']} at {best['gflops']:.0f} GFLOP/s, "
                f"{best['ratio']:.2f}x the tiled baseline (tile {self.tile}, n = {self.size})"
                + noise_note(best))
        ref = next((r for r in results.rows if r["variant"] == REFERENCE), None)
        if ref is not None and ref.get("status") == OK:
            share = best["gflops"] / ref["gflops"]
            results.meta["fraction_of_reference"] = share
            text += (f"; {REFERENCE} reached {ref['gflops']:.0f} GFLOP/s ({100 * share:.0f}% of it; "
                     f"timed by {ref['method']})")
        else:
            text += f"; {self.reference_note or 'the reference GEMM failed'}"
        return text + (". Tradeoffs expects each optimisation to help only while occupancy "
                       "holds (qualitative)")
