"""What matmul, aat and tiling share: one verified, timed matrix product per variant, GB/s and
GFLOP/s, and the Guide's Tables 3.2 and 3.3 beside the measured ratios. Every variant is checked
against a float64 NumPy product within the rounding bound of a float32 dot product
(checks.product_reference, drawn once a run, and within_product)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_work
from ..measure.checks import poison_device, product_reference, within_product
from ..measure.results import OK
from ..measure.staging import read_back, write_from
from ._kit import FLOAT, pick
from .base import Check, Experiment, Launch, noise_note

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


class Product(Experiment):
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
        self.chosen = pick(self.id, {v.name: v for v in self.variants}, variants)
        self.tile = int(tile)
        info = ctx.info
        if self.tile <= 0:
            raise _core.InvalidArgumentError(f"{self.id}: tile must be positive, got {self.tile}")
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
        self._reference: tuple[list[np.ndarray], np.ndarray, np.ndarray] | None = None

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

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        if point.get("kernel") not in {v.kernel for v in self.chosen}:
            return []  # not one of ours (tiling's vendor reference)
        return [{"file": self.kernel_file, "defines": self.defines(self.variant(point))}]

    def kernel(self, v: Variant) -> Any:
        """The variant's kernel with its buffers bound (builds are cached by the context)."""
        program = self.ctx.program(file=self.kernel_file, defines=self.defines(v))
        return program.kernel(v.kernel).set_args(*self.inputs, self.out, np.int32(self.size))

    def ndrange(self, v: Variant) -> tuple[list[int], list[int]]:
        rows, cols = self.output_shape()
        return [cols // v.columns_per_item, rows], [self.tile, self.tile]

    def variant(self, point: dict[str, Any]) -> Variant:
        return next(v for v in self.chosen if v.name == point["variant"])

    def launch(self, point: dict[str, Any]) -> Launch:
        v = self.variant(point)
        return Launch.one(self.kernel(v), *self.ndrange(v), self.bytes_needed(), ops=self.flops(),
                          ops_unit="flops", columns=self.columns(v))

    def columns(self, v: Variant) -> dict[str, Any]:
        """Extra columns of a variant's row (none by default)."""
        return {}

    def flop_rates(self, row: dict[str, Any]) -> dict[str, Any]:
        return {"flops": self.flops(), "gflops": self.flops() / row["median_ns"],
                "gflops_best": self.flops() / row["min_ns"]}

    @host_work
    def reference(self) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """(the host inputs, C = A B in float64, its tolerance), drawn and computed once a run:
        every variant computes the same C from the same inputs, and the host's float64 products
        (two per reference) cost more than any kernel at the GPU's sizes."""
        if self._reference is None:
            host = [2 * self.rng.random(n, dtype=np.float32) - 1 for n in self.input_elements()]
            self._reference = (host, *product_reference(*self.operands(host)))
        return self._reference

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        host, want, tol = self.reference()
        for buf, data in zip(self.inputs, host):
            write_from(buf, data)
        poison_device(self.out)
        launch.run()
        got = read_back(self.out, np.float32, shape=self.output_shape())
        return Check(*within_product(got, want, tol))

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
                "gbps": r.get("gbps"), "gflops": r.get("gflops"), "spread_pct": r.get("spread_pct"),
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
                f"({best['gflops']:.0f} GFLOP/s){noise_note(best)}. Speed against {table[0]['variant']}: ")
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


def fit_square(info: _core.DeviceInfo, want: int, unit: int, floats_per_element: int) -> int:
    """``want``, halved (to a multiple of ``unit``) until the output fits the device."""
    limit = min(info.max_alloc_bytes, info.global_mem_bytes // 4)
    size = want
    while size > unit and size * size * floats_per_element * FLOAT > limit:
        size //= 2
    return size
