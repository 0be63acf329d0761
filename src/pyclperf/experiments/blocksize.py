"""blocksize: the work-group size sweep of Guide 4.4 on a copy and on a naive matmul.

The copy (kernels/copy.cl, offset 0) is bandwidth-bound; the matmul (kernels/blocksize.cl) reads
its operands many times from global memory through the caches. Both are launched with each
work-group size in turn: multiples of 32 up to the device's maximum plus a few that are not
(16, 48, 200). The matmul's 2-D work-groups are (x, y) with x the largest divisor of the size up
to 32 (a warp's width along a row) and y the rest. Each row records the kernel's preferred
work-group multiple and whether the size is a multiple of it and of 32.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..device.turns import host_work
from ..measure.checks import compare_close, poison_device
from ..device.program import ceil_to
from ..measure.results import OK, Results
from ._kit import FLOAT, CopyCheck, pick, positive
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, NotMeasured, geometric_mean, pooled, rows_for

KERNELS = ("copy", "matmul")
NON_MULTIPLES = (16, 48, 200)  # sizes that are not multiples of 32 (or not powers of two)
GUARD_ELEMENTS = 4096  # copy: elements past the copied range that must keep the poison
GUIDE_RANGE = (128, 256)  # Guide 4.4: "between 128 and 256 threads per block" to start with


def matmul_shape(size: int) -> tuple[int, int]:
    """The 2-D work-group (x, y) for ``size`` work-items: x the largest divisor up to 32."""
    x = max(d for d in range(1, min(size, 32) + 1) if size % d == 0)
    return x, size // x


def default_sizes(info: _core.DeviceInfo) -> list[int]:
    """Multiples of 32 up to the device maximum plus NON_MULTIPLES on a GPU; on a CPU device,
    where the sweep must take seconds, the powers of two from 32 to 1024 with 96 and those."""
    top = int(info.max_work_group_size)
    if info.is_gpu:
        base = set(range(32, top + 1, 32))
    else:
        base = {32, 64, 96, 128, 256, 512, 1024}
    return sorted(s for s in base | set(NON_MULTIPLES) if s <= top)


WARP = 32  # Guide 4.4's multiple
# A quick run on a GPU: the sizes the claim compares (each non-multiple of 32 and its multiple-of-
# 32 neighbours) and the powers of two for the best size and the Guide's 128-256.
QUICK_SIZES = (16, 32, 48, 64, 128, 192, 200, 224, 256, 512, 1024)


def multiples_over_neighbours(results: Results) -> Figure:
    """For every verified size that is not a multiple of 32, its verified multiple-of-32
    neighbours' speed (geometric mean) over its own; then the mean over all such sizes."""
    found = []
    for kernel in KERNELS:
        metric = "gflops" if kernel == "matmul" else "gbps"
        try:
            rows = rows_for(results, kernel=kernel)
        except NotMeasured:
            continue
        speed = {r["local_size"]: r for r in rows if r.get(metric)}
        for size in (s for s in speed if s % WARP):
            near = [m for m in (size // WARP * WARP, (size // WARP + 1) * WARP) if m in speed]
            if near:
                found.append(geometric_mean(pooled([speed[m]], metric) for m in near)
                             / pooled([speed[size]], metric))
    return geometric_mean(found)


class BlockSize(Experiment):
    id = "blocksize"
    description = ("work-group sizes on a copy and a naive matmul, against the preferred multiple and "
                   "Guide 4.4's 128-256 (`--size` is the copy's floats)")
    order = 150
    title = "Work-group size: copy and naive matmul"
    x = "local_size"
    x_label = "work-group size (work-items)"
    guide = "Guide 4.4 (thread and block heuristics)"
    claim = Claim(
        "work-group sizes that are multiples of 32 run at least as fast as their neighbours",
        "Guide 4.4 (in words: a multiple of the warp size)",
        "speed of the nearest multiples of 32 / a size between them", multiples_over_neighbours)
    plot = {"kind": "lines", "y": "relative", "ylabel": "speed / the best size's speed",
            "group": "kernel", "mark": "multiple_of_preferred",
            "mark_label": "multiple of the preferred work-group multiple", "logx": True,
            "vlines": {"Guide: 128": 128, "Guide: 256": 256}}
    size_arg, values_arg, local_size_arg = "items", "sizes", None
    quick_gpu = {"sizes": QUICK_SIZES}  # a size past the device's limit is skipped, as ever

    def __init__(self, ctx: Any, items: int | None = None, sizes: Sequence[int] | None = None,
                 n: int | None = None, kernels: Sequence[str] = KERNELS) -> None:
        """``items``: floats the copy moves (rounded down to whole work-groups at each size);
        ``n``: the matmul's matrix order; ``sizes``: work-group sizes to sweep."""
        super().__init__(ctx)
        info = ctx.info
        self.kernels = pick(self.id, KERNELS, [str(k) for k in kernels], "kernels")
        self.sizes = [int(s) for s in (sizes if sizes is not None else default_sizes(info))]
        if not self.sizes or min(self.sizes) <= 0:
            raise _core.InvalidArgumentError(f"{self.id}: work-group sizes must be positive, got {self.sizes}")
        self.items = int(items) if items is not None else (1 << 25 if info.is_gpu else 1 << 18)
        if self.items < max(self.sizes):
            raise _core.InvalidArgumentError(
                f"{self.id}: {self.items} items are fewer than the largest work-group "
                f"({max(self.sizes)})")
        default_n = 2048 if info.is_gpu else 128
        self.n = positive(self.id, "matrix order", default_n if n is None else n)
        capacity = (self.items + GUARD_ELEMENTS) * FLOAT
        if max(capacity, self.n * self.n * FLOAT) > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: buffers of {capacity} bytes (copy) or {self.n ** 2 * FLOAT} bytes "
                f"(matmul) exceed the device's largest allocation of {info.max_alloc_bytes}")
        self.rng = np.random.default_rng()
        # Inputs and the matmul's reference, once a run (every size reads the same): the host's
        # float64 product of two 2048^2 matrices, and 128 MiB of random words, cost per point.
        self.copy_check = CopyCheck(ctx, self.rng, same_words=True)
        self._matmul: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        if "copy" in self.kernels:
            self.copy_kernel = ctx.program(file="copy.cl").kernel("offset_copy")
            self.src, self.dst = ctx.buffer(capacity), ctx.buffer(capacity)
        if "matmul" in self.kernels:
            self.matmul_kernel = ctx.program(file="blocksize.cl").kernel("matmul")
            self.a, self.b, self.c = (ctx.buffer(self.n * self.n * FLOAT) for _ in range(3))

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "n": self.n, "sizes": self.sizes,
                "matmul_flops": 2 * self.n ** 3,
                "note": "copy rows: effective bandwidth (GB/s); matmul rows: GFLOP/s = 2 n^3 / "
                        "time (bytes = the 3 n^2 floats it must read and write); 'relative' = "
                        "each row's speed over its kernel's best"}

    def points(self) -> list[dict[str, Any]]:
        return [{"kernel": k, "local_size": s} for k in self.kernels for s in self.sizes]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return "dram" if row.get("kernel") == "copy" else None

    def matmul_ranges(self, size: int) -> tuple[list[int], list[int]]:
        x, y = matmul_shape(size)
        return [ceil_to(self.n, x), ceil_to(self.n, y)], [x, y]

    def launch(self, point: dict[str, Any]) -> Launch:
        size = int(point["local_size"])
        kernel = self.copy_kernel if point["kernel"] == "copy" else self.matmul_kernel
        limits = kernel.limits()
        pm = int(limits.preferred_multiple)
        # The kernel's reported CL_KERNEL_WORK_GROUP_SIZE is recorded, not obeyed: drivers
        # report conservatively (NVIDIA says 256 and runs 1024); a launch the driver refuses
        # ends as "launch failed" with its OpenCL error.
        columns: dict[str, Any] = {"preferred_multiple": pm, "multiple_of_preferred": size % pm == 0,
                                   "multiple_of_32": size % 32 == 0,
                                   "kernel_max_work_group_size": int(limits.work_group_size),
                                   "over_kernel_limit": size > int(limits.work_group_size)}
        if point["kernel"] == "copy":
            items = self.items // size * size
            kernel.set_args(self.dst, self.src, np.int32(0))
            columns.update(items=items, shape=str(size), work_groups=items // size)
            return Launch.one(kernel, items, size, 2 * items * FLOAT, columns=columns)
        n = self.n
        global_size, local = self.matmul_ranges(size)
        kernel.set_args(self.c, self.a, self.b, np.int32(n))
        columns.update(items=n * n, shape=f"{local[0]}x{local[1]}",
                       work_groups=(global_size[0] // local[0]) * (global_size[1] // local[1]))
        return Launch.one(kernel, global_size, local, 3 * n * n * FLOAT, ops=2 * n ** 3,
                          ops_unit="flops", columns=columns)

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        if point["kernel"] == "copy":
            items = launch.columns["items"]
            return Check(*self.copy_check(self.src, self.dst, launch.run, items + GUARD_ELEMENTS,
                                          slice(0, items)))
        n = self.n
        a, b, want, tolerance = self.matmul_input()
        self.a.write(a)
        self.b.write(b)
        poison_device(self.c)
        launch.run()
        got = np.empty((n, n), np.float32)
        self.c.read(got)
        return Check(*compare_close(got, want, tolerance, "elements of C"))

    @host_work
    def matmul_input(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(A, B, the float64 product, the tolerance per element), drawn once a run."""
        if self._matmul is None:
            n = self.n
            a = self.rng.uniform(-1, 1, (n, n)).astype(np.float32)
            b = self.rng.uniform(-1, 1, (n, n)).astype(np.float32)
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            # A float32 dot product of n terms, in any order, is within about n unit roundoffs
            # of the exact sum of |terms| (with a factor of 2 to spare).
            self._matmul = (a, b, a64 @ b64, 2 * n * 2.0**-24 * (np.abs(a64) @ np.abs(b64)))
        return self._matmul

    def finish(self, results: Any) -> None:
        """Each row's speed relative to its kernel's best; the winner against the Guide."""
        parts = []
        for r in results.rows:  # the speed each kernel is judged by
            if r.get("median_ns"):
                r["metric"] = r["gflops"] if r.get("kernel") == "matmul" else r["gbps"]
        for kernel in self.kernels:
            rows = [r for r in results.rows if r.get("kernel") == kernel]
            good = [r for r in rows if r.get("status") == OK and r.get("metric")]
            for r in rows:
                r["relative"] = None
            if not good:
                parts.append(f"{kernel}: no size verified")
                continue
            best = max(good, key=lambda r: r["metric"])
            for r in good:
                r["relative"] = r["metric"] / best["metric"]
            unit = "GB/s" if kernel == "copy" else "GFLOP/s"
            results.meta[f"best_{kernel}_local_size"] = best["local_size"]
            text = (f"{kernel}: best work-group size {best['local_size']} ({best['metric']:.1f} "
                    f"{unit}, {'a' if best['multiple_of_preferred'] else 'not a'} multiple of the "
                    f"preferred {best['preferred_multiple']}){noise_note(best)}")
            in_range = [r for r in good if GUIDE_RANGE[0] <= r["local_size"] <= GUIDE_RANGE[1]
                        and r["multiple_of_32"]]
            if in_range:
                guide = max(in_range, key=lambda r: r["metric"])
                text += (f"; the best in the Guide's 128-256 range ({guide['local_size']}) reaches "
                         f"{100 * guide['relative']:.0f}% of it")
            odd = [r["relative"] for r in good if not r["multiple_of_32"]]
            if odd:
                text += f"; sizes not a multiple of 32 average {100 * np.mean(odd):.0f}%"
            parts.append(text)
        results.meta["conclusion"] = (
            "; ".join(parts) + ". Guide 4.4: a multiple of 32 (the warp), at least 64, and "
            "128-256 as a good first choice.")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["kernel", "local_size", "shape", "multiple_of_preferred", "status", "median_ns",
                "gbps", "gflops", "relative"]
        return df[[c for c in cols if c in df]]
