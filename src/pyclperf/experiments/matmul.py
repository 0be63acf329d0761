"""matmul, aat and tiling: local memory in matrix products (Guide 3.2.2.2-3.2.2.3, Tables 3.2
and 3.3; Tradeoffs' tiled matrix multiply).

``matmul`` and ``aat`` are the Guide's set-up: the inner dimension is one tile (TILE_DIM = 16),
so every work-item computes a dot product of length 16 and the kernels differ only in how the
operands reach it (kernels/matmul.cl). ``tiling`` multiplies square matrices with the
optimisations the Tradeoffs slides discuss (kernels/tiling.cl), beside a vendor GEMM (CuPy)
where one exists. Every variant is verified against a float64 NumPy product with the rounding
bound of a float32 dot product (``product_tolerance``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..bankmodel import WARP, conflict_degree
from ..checks import poison_device
from ..sweep import OK, timed_row, verdict
from .base import Sweep, pick_variants

FLOAT = 4  # bytes

# The Guide's Tables 3.2 and 3.3: effective bandwidth in GB/s on a GeForce GTX 280 and an
# 8800 GTX, one entry per variant of ours (same order as the experiments' variants).
GUIDE_TABLES: dict[str, list[tuple[str, float, float]]] = {
    "matmul": [("no optimization", 8.8, 0.7),
               ("coalesced using shared memory to store a tile of A", 14.3, 8.2),
               ("shared memory to eliminate redundant reads of a tile of B", 29.7, 15.7)],
    "aat": [("no optimization", 1.1, 0.5),
            ("using shared memory to coalesce global reads", 24.8, 13.2),
            ("removing bank conflicts", 30.3, 15.6)],
}


@dataclass(frozen=True)
class Variant:
    name: str
    kernel: str
    defines: tuple[tuple[str, int], ...] = ()
    source: str = ""  # where the documents describe it
    columns_per_item: int = 1  # outputs of one work-item, side by side along a row of C


def product_tolerance(k: int, magnitude: np.ndarray) -> np.ndarray:
    """How far a float32 dot product of length ``k`` may lie from the exact one.

    A float32 dot product of length k, summed in any order, with or without fused multiply-add,
    differs from the exact value by at most gamma_k * sum |a_i b_i| with
    gamma_k = k u / (1 - k u) and u = 2^-24 (Higham, Accuracy and Stability of Numerical
    Algorithms, 3.1). ``magnitude`` is |A| |B| (the sums of |a_i b_i|); the reference itself is
    float64, whose error is ~1e-16 relative and ignored. k tiny normals are added for a device
    that flushes subnormal products to zero.
    """
    u = 2.0 ** -24
    gamma = k * u / (1 - k * u)
    return gamma * magnitude + k * float(np.finfo(np.float32).tiny)


def check_product(got: np.ndarray, a: np.ndarray, b: np.ndarray,
                  what: str = "elements of C") -> tuple[bool, str]:
    """Whether ``got`` (float32, shape (rows, cols)) is A B within product_tolerance.

    Computed in blocks of rows so that a 1 GiB result needs no more than a few hundred MiB of
    float64 temporaries. NaN (the poison) never passes.
    """
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if got.shape != (a.shape[0], b.shape[1]):
        return False, f"{what}: shape {got.shape}, expected {(a.shape[0], b.shape[1])}"
    k = a.shape[1]
    rows = max(1, (1 << 24) // max(1, b.shape[1]))
    wrong, first = 0, ""
    for r0 in range(0, a.shape[0], rows):
        block = slice(r0, r0 + rows)
        want = a64[block] @ b64
        tol = product_tolerance(k, np.abs(a64[block]) @ np.abs(b64))
        with np.errstate(invalid="ignore"):  # the poison is a signalling NaN
            bad = ~(np.abs(got[block] - want) <= tol)
        if bad.any():
            if not first:
                r, c = np.argwhere(bad)[0]
                first = (f"first at row {r0 + r}, column {c}: got {got[r0 + r, c]!r}, "
                         f"want {want[r, c]!r} +- {tol[r, c]:.3g}")
            wrong += int(bad.sum())
    if wrong:
        return False, f"{wrong} of {got.size} {what} outside the float32 rounding bound; {first}"
    return True, ""


class _Product(Sweep):
    """One verified, timed matrix product per variant; subclasses give shapes and kernels."""

    kernel_file = ""
    plot = {"kind": "bars", "label": "variant"}
    x = "variant"
    x_label = "variant"
    size_arg, values_arg, local_size_arg = "size", None, None
    variants: Sequence[Variant] = ()

    def __init__(self, ctx: Any, size: int | None = None, tile: int = 16,
                 variants: Sequence[str] | None = None) -> None:
        super().__init__(ctx)
        self.chosen = pick_variants(self.id, {v.name: v for v in self.variants}, variants)
        self.tile = int(tile)
        info = ctx.info
        if self.tile <= 0 or self.tile * self.tile > info.max_work_group_size:
            raise _core.InvalidArgumentError(
                f"{self.id}: a {self.tile} x {self.tile} work-group needs {self.tile ** 2} "
                f"work-items; the device allows {info.max_work_group_size}")
        if 3 * (self.tile + 1) * self.tile * FLOAT > info.local_mem_bytes:  # the most any kernel takes
            raise _core.InvalidArgumentError(
                f"{self.id}: tile {self.tile} needs more local memory than the device's "
                f"{info.local_mem_bytes} bytes")
        self.size = int(size) if size is not None else self.default_size(info)
        unit = self.tile * max(v.columns_per_item for v in self.chosen)
        if self.size <= 0 or self.size % unit:
            raise _core.InvalidArgumentError(
                f"{self.id}: size {self.size} is not a positive multiple of {unit} (the tile "
                f"{self.tile} x the outputs per work-item)")
        if self.size * self.size >= 2**31:
            raise _core.InvalidArgumentError(
                f"{self.id}: size {self.size} overflows the kernels' int indices")
        largest = max(self.output_shape()[0] * self.output_shape()[1], *self.input_elements())
        if largest * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: size {self.size} needs a {largest * FLOAT}-byte buffer, over the "
                f"device's largest allocation of {info.max_alloc_bytes} bytes")
        self.inputs = [ctx.buffer(n * FLOAT) for n in self.input_elements()]
        rows, cols = self.output_shape()
        self.out = ctx.buffer(rows * cols * FLOAT)
        self.rng = np.random.default_rng()

    # --- what a subclass says ----------------------------------------------------------
    def default_size(self, info: _core.DeviceInfo) -> int:
        raise NotImplementedError

    def input_elements(self) -> list[int]:
        raise NotImplementedError

    def output_shape(self) -> tuple[int, int]:
        """Rows and columns of C (square in every experiment here)."""
        return self.size, self.size

    def operands(self, inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The two matrices whose product the kernels compute, from the host inputs."""
        raise NotImplementedError

    def inner(self) -> int:
        """The length of each dot product."""
        raise NotImplementedError

    def bytes_needed(self) -> int:
        """Bytes the product needs to read and write: each input once, C once."""
        rows, cols = self.output_shape()
        return FLOAT * (sum(self.input_elements()) + rows * cols)

    def flops(self) -> int:
        rows, cols = self.output_shape()
        return 2 * rows * cols * self.inner()

    def defines(self, v: Variant) -> dict[str, int]:
        raise NotImplementedError

    # --- the engine's side --------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "size": self.size, "tile": self.tile,
                "output_shape": list(self.output_shape()), "inner": self.inner(),
                "flops": self.flops(), "bytes_needed": self.bytes_needed()}

    def points(self) -> list[dict[str, Any]]:
        return [{"variant": v.name, "kernel": v.kernel, "tile": self.tile, "source": v.source}
                for v in self.chosen]

    def kernel(self, v: Variant) -> Any:
        """The variant's kernel with its buffers bound (builds are cached by the context)."""
        program = self.ctx.program(file=self.kernel_file, defines=self.defines(v))
        return program.kernel(v.kernel).set_args(*self.inputs, self.out, np.int32(self.size))

    def ndrange(self, v: Variant) -> tuple[list[int], list[int]]:
        rows, cols = self.output_shape()
        return [cols // v.columns_per_item, rows], [self.tile, self.tile]

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        v = next(v for v in self.chosen if v.name == point["variant"])
        kernel = self.kernel(v)
        global_size, local_size = self.ndrange(v)
        passed, detail = self._verify(kernel, global_size, local_size) if verify else (True, "")
        times = kernel.time(global_size, local_size, warmup=warmup, repeats=repeats, method=method)
        row = timed_row(times, self.bytes_needed(), method)
        row.update(self.flop_rates(row))
        row.update(verdict(verify, passed, detail))
        return row

    def flop_rates(self, row: dict[str, Any]) -> dict[str, Any]:
        return {"flops": self.flops(), "gflops": self.flops() / row["median_ns"],
                "gflops_best": self.flops() / row["min_ns"]}

    def _verify(self, kernel: Any, global_size: list[int], local_size: list[int]) -> tuple[bool, str]:
        host = [self.rng.uniform(-1.0, 1.0, n).astype(np.float32) for n in self.input_elements()]
        for buf, data in zip(self.inputs, host):
            buf.write(data)
        poison_device(self.out)
        kernel.run(global_size, local_size)
        got = np.empty(self.output_shape(), np.float32)
        self.out.read(got)
        a, b = self.operands(host)
        return check_product(got, a, b)

    # --- conclusions ----------------------------------------------------------------------
    def finish(self, results: Any) -> None:
        """The measured ratio of each row to the first (the baseline) beside the Guide's."""
        base = results.rows[0] if results.rows else None
        base_ok = base is not None and base.get("status") == OK
        guide = GUIDE_TABLES.get(self.id, [])
        names = [v.name for v in self.variants]
        table = []
        for r in results.rows:
            ok = base_ok and r.get("status") == OK
            entry: dict[str, Any] = {
                "variant": r["variant"], "status": r.get("status"), "median_ns": r.get("median_ns"),
                "gbps": r.get("gbps"), "gflops": r.get("gflops"),
                "ratio": base["median_ns"] / r["median_ns"] if ok else None}  # type: ignore[index]
            i = names.index(r["variant"]) if r["variant"] in names else len(guide)
            if i < len(guide):
                label, gtx280, gtx8800 = guide[i]
                entry.update(guide_row=label,
                             guide_gtx280_gbps=gtx280, guide_gtx280_ratio=gtx280 / guide[0][1],
                             guide_8800gtx_gbps=gtx8800, guide_8800gtx_ratio=gtx8800 / guide[0][2])
            table.append(entry)
        results.meta["guide_comparison"] = table
        results.meta["guide_comparison_md"] = comparison_markdown(table, results.meta)
        results.meta["conclusion"] = self.conclusion(results, table)

    def conclusion(self, results: Any, table: list[dict[str, Any]]) -> str:
        done = [e for e in table if e["ratio"] is not None]
        if not done:
            return f"{self.id}: the baseline or every variant failed; nothing to compare"
        best = max(done, key=lambda e: e["gbps"])
        text = (f"fastest: {best['variant']} at {best['gbps']:.1f} GB/s effective "
                f"({best['gflops']:.0f} GFLOP/s). Speed against {table[0]['variant']}: ")
        parts = []
        for e in done[1:]:
            part = f"{e['variant']} {e['ratio']:.2f}x"
            if "guide_gtx280_ratio" in e:
                part += (f" (the Guide: {e['guide_gtx280_ratio']:.1f}x on a GTX 280, "
                         f"{e['guide_8800gtx_ratio']:.1f}x on an 8800 GTX)")
            parts.append(part)
        return text + ("; ".join(parts) if parts else "no other variant verified")

    @classmethod
    def summary(cls, results: Any) -> Any:
        import pandas as pd

        table = results.meta.get("guide_comparison")
        if not table:
            return None
        cols = ["variant", "status", "median_ns", "gbps", "gflops", "ratio",
                "guide_gtx280_ratio", "guide_8800gtx_ratio"]
        df = pd.DataFrame(table)
        return df[[c for c in cols if c in df]]


def comparison_markdown(table: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The measured ratios beside the Guide's, as a Markdown table for benchmarks/RESULTS.md."""
    device = meta.get("device", {}).get("name", "device")
    has_guide = any("guide_gtx280_gbps" in e for e in table)
    head = f"| variant | {device} GB/s | GFLOP/s | x simple |"
    rule = "| --- | --- | --- | --- |"
    if has_guide:
        head += " GTX 280 GB/s (x) | 8800 GTX GB/s (x) |"
        rule += " --- | --- |"
    lines = [head, rule]

    def num(value: Any, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    for e in table:
        line = (f"| {e['variant']} | {num(e['gbps'], '.1f')} | {num(e['gflops'], '.0f')} "
                f"| {num(e['ratio'], '.2f')} |")
        if "guide_gtx280_gbps" in e:
            line += (f" {e['guide_gtx280_gbps']} ({e['guide_gtx280_ratio']:.1f}) |"
                     f" {e['guide_8800gtx_gbps']} ({e['guide_8800gtx_ratio']:.1f}) |")
        elif has_guide:
            line += " - | - |"
        lines.append(line)
    return "\n".join(lines)


def _fit_square(info: _core.DeviceInfo, want: int, unit: int, floats_per_element: int) -> int:
    """``want``, halved (to a multiple of ``unit``) until the output fits the device."""
    limit = min(info.max_alloc_bytes, info.global_mem_bytes // 4)
    size = want
    while size > unit and size * size * floats_per_element * FLOAT > limit:
        size //= 2
    return size


class MatMul(_Product):
    """C = A B with A of M x TILE_DIM and B of TILE_DIM x N (here M = N = size)."""

    id = "matmul"
    title = "C = AB through local memory (Guide Table 3.2)"
    guide = "Guide 3.2.2.2, Listings 3.7-3.9, Table 3.2"
    kernel_file = "matmul.cl"
    variants = (
        Variant("simple", "ab_simple", source="Listing 3.7"),
        Variant("local A", "ab_local_a", source="Listing 3.8"),
        Variant("local A+B", "ab_local_ab", source="Listing 3.9"),
    )

    def default_size(self, info: _core.DeviceInfo) -> int:
        # GPU: C is 256 MiB, far past the L2; the product takes well under a millisecond.
        return _fit_square(info, 8192, self.tile, 1) if info.is_gpu else 256

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


class AAT(_Product):
    """C = A A^T with A of M x TILE_DIM (C is M x M, M = size)."""

    id = "aat"
    title = "C = AA^T: strided reads, a transposed local tile, padding (Guide Table 3.3)"
    guide = "Guide 3.2.2.3, Listings 3.10-3.11, Table 3.3"
    kernel_file = "matmul.cl"
    variants = (
        Variant("simple", "aat_simple", source="Listing 3.10"),
        Variant("local tiles", "aat_local", (("PAD", 0),), source="Listing 3.11"),
        Variant("padded tile", "aat_local", (("PAD", 1),), source="Listing 3.11, TILE_DIM+1"),
    )

    def default_size(self, info: _core.DeviceInfo) -> int:
        return _fit_square(info, 8192, self.tile, 1) if info.is_gpu else 256

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

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        row = super().measure(point, warmup=warmup, repeats=repeats, method=method, verify=verify)
        v = next(v for v in self.chosen if v.name == point["variant"])
        if v.kernel == "aat_local":
            row["tile_write_conflict"] = self.tile_write_conflicts(dict(v.defines).get("PAD", 0))
        return row


# --- tiling: square GEMM with the Tradeoffs optimisations ----------------------------------

REFERENCE = "cupy.matmul"


def _import_cupy() -> Any:
    """CuPy if it can be imported (and finds a GPU), else None."""
    try:
        import cupy  # type: ignore[import-not-found]

        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - any failure means: no reference here
        return None
    return cupy


def _is_nvidia(info: _core.DeviceInfo) -> bool:
    return "NVIDIA" in f"{info.vendor} {info.platform_name}".upper()


def find_reference(info: _core.DeviceInfo) -> tuple[Any, str]:
    """(the cupy module, "") where a vendor GEMM can be measured on this device, else (None, why)."""
    if not _is_nvidia(info):
        return None, f"no reference GEMM: {info.name} is not an NVIDIA device (CuPy needs CUDA)"
    cupy = _import_cupy()
    if cupy is None:
        return None, "no reference GEMM: CuPy is not importable here"
    return cupy, ""


def time_reference(cupy: Any, a: np.ndarray, b: np.ndarray,
                   batches: int) -> tuple[np.ndarray, tuple[bool, str], str]:
    """cupy.matmul(A, B) timed by the CUDA reference module (pyclperf.reference_cuda): ns per
    launch, one figure per batch of back-to-back launches, so the host's launch gap stays out as
    it does from OpenCL's event times; whether its result (into an output filled with NaN first)
    passed check_product and what differed; and how it was timed."""
    from ..reference_cuda import CudaReference

    ref, _ = CudaReference(cp=cupy).matmul(a, b)
    timing = ref.timer.measure(batches)
    return 1e9 * np.asarray(timing.batch_per_launch_s), (ref.verified, ref.detail), timing.how


class Tiling(_Product):
    """Square C = A B (n x n) with the tiled kernel and the Tradeoffs slides' variants."""

    id = "tiling"
    title = "Tiled matrix multiply: work per item, prefetching, unrolling (Tradeoffs)"
    guide = "Tradeoffs (tiled matrix multiply, unrolling, prefetch, tile workload); Guide 3.2.2"
    kernel_file = "tiling.cl"
    plot = {"kind": "bars", "label": "variant", "value": "gflops", "xlabel": "GFLOP/s"}
    variants = (
        Variant("tiled", "tiled", source="baseline: A and B tiles in local memory"),
        Variant("two outputs", "two_outputs", source="tile workload: 2 outputs per work-item",
                columns_per_item=2),
        Variant("prefetch", "prefetch_next", source="prefetch the next tile into registers"),
        Variant("unrolled", "tiled", (("UNROLL", 1),), source="inner loop fully unrolled"),
        Variant("rolled", "tiled", (("UNROLL", 0),), source="inner loop kept rolled (control)"),
    )

    def __init__(self, ctx: Any, size: int | None = None, tile: int = 16,
                 variants: Sequence[str] | None = None, reference: bool = True) -> None:
        super().__init__(ctx, size, tile, variants)
        self.cupy: Any = None
        self.reference_note = "no reference GEMM: not requested"
        if reference:
            self.cupy, self.reference_note = find_reference(ctx.info)

    def default_size(self, info: _core.DeviceInfo) -> int:
        # GPU: 2 n^3 = 137 GFLOP per product, tens of milliseconds for these kernels.
        return _fit_square(info, 4096, 2 * self.tile, 1) if info.is_gpu else 128

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
        if point["variant"] != REFERENCE:
            return super().measure(point, warmup=warmup, repeats=repeats, method=method,
                                   verify=verify)
        shape = (self.size, self.size)
        a, b = (self.rng.uniform(-1.0, 1.0, shape).astype(np.float32) for _ in range(2))
        # One figure per batch: ``repeats`` batches, each calibrated to last ~20 ms.
        # The reference checks its own product (check_product), verify or not.
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
                f"{best['ratio']:.2f}x the tiled baseline (tile {self.tile}, n = {self.size})")
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
