"""launchbounds: the same kernel with and without reqd_work_group_size (Quasar 9.9).

kernels/launchbounds.cl keeps LANES accumulators per work-item live through a loop of cubic
evaluations, so its register count grows with LANES. Built with ``-D REQD=X`` it carries
``__attribute__((reqd_work_group_size(X, 1, 1)))`` (OpenCL's form of CUDA's launch bounds): the
compiler may then budget registers for exactly X work-items. Without it the kernel must run at
any size the device allows. Each X is launched with local size X in both builds. Rows record
what the runtime reports about each build: the required size (CL_KERNEL_COMPILE_WORK_GROUP_SIZE),
the largest work-group it accepts, its private memory and, on NVIDIA (-cl-nv-verbose), the
registers and spills ptxas reports.

A size the device refuses to launch (clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES; on NVIDIA the
128-register build without the declaration at 1,024 work-items) is recorded as skipped with the
reason (measure.refusal). Where only the declared build launches, that is the claim's finding:
the declaration let the compiler fit the group, so the verdict is "holds".
"""

from __future__ import annotations

from math import comb
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare_close
from ..device.turns import host_only, host_work
from ..theory.limits import parse_registers, verbose_build_options
from ..measure.results import OK, Results
from ._kit import FLOAT, round_trip, whole_groups
from .base import Check, Experiment, Launch
from .claims import Claim, Figure, paired

BOUNDS = ("none", "reqd")
STEP_GAP, LANE_GAP = 2.0**-9, 2.0**-7  # the kernel's defaults, exact in float32
COEFFS = (0.5, 0.25, 0.125, 0.0625)  # p(y) = C0 + C1 y + C2 y^2 + C3 y^3, as in the kernel


@host_work
def reference(x: np.ndarray, steps: int, lanes: int) -> np.ndarray:
    """The kernel's output in float64: sum over steps s and lanes l of p(x + s*STEP_GAP +
    l*LANE_GAP), through the moments of the offsets (a cubic in x; no loop over steps)."""
    offsets = (np.arange(steps)[:, None] * STEP_GAP + np.arange(lanes)[None, :] * LANE_GAP).ravel()
    moments = [float(np.sum(offsets ** m)) for m in range(4)]
    x = x.astype(np.float64)
    out = np.zeros_like(x)
    for j, c in enumerate(COEFFS):
        for m in range(j + 1):
            out += c * comb(j, m) * moments[m] * x ** (j - m)
    return out


def flops_per_item(steps: int, lanes: int) -> int:
    """Per step: t = x + s*gap (2); per lane: y = t + offset (1), Horner's cubic as three
    multiply-adds (6), the accumulation (1)."""
    return steps * (2 + 8 * lanes)


def reqd_over_none(results: Results) -> Figure:
    """GFLOP/s with reqd_work_group_size over without, geometric mean over the sizes."""
    return paired(results, "gflops", "work_group_size", {"bounds": "reqd"}, {"bounds": "none"})


def only_reqd_launches(results: Results) -> list[int]:
    """The work-group sizes at which the build with reqd_work_group_size verified while the
    device refused to launch the build without it (measure.refusal: a row's ``refused``)."""
    rows = {(r.get("work_group_size"), r.get("bounds")): r for r in results.rows}
    return sorted(int(size) for (size, bounds), row in rows.items()
                  if bounds == "reqd" and row.get("status") == OK
                  and (rows.get((size, "none")) or {}).get("refused"))


def refused_without_reqd(results: Results) -> str | None:
    """The claim's finding: sizes only the declared build could launch, in words."""
    sizes = only_reqd_launches(results)
    if not sizes:
        return None
    codes = sorted({str(r["refused"]) for r in results.rows
                    if r.get("bounds") == "none" and r.get("refused")
                    and int(r.get("work_group_size", 0)) in sizes})
    return (f"at {', '.join(map(str, sizes))} work-items per group only the build with "
            f"reqd_work_group_size launches: the device refused the build without it "
            f"({', '.join(codes)}), which the declaration let the compiler fit")


class LaunchBounds(Experiment):
    id = "launchbounds"
    description = ("one arithmetic kernel with and without `reqd_work_group_size`, with registers and "
                   "spills where the driver says (Quasar 9.9; `--size` is work-items)")
    order = 170
    # The guide runs it in a process of its own: register-heavy builds at every required size: a
    # driver may abort compiling or launching one.
    isolate = True
    title = "reqd_work_group_size vs none (launch bounds)"
    x = "work_group_size"
    x_label = "work-group size (work-items)"
    guide = "Quasar 9.9 (kernel launch bounds); Guide 4.2 (registers and occupancy)"
    claim = Claim(
        "declaring the work-group size at build time lets the compiler speed a kernel up",
        "Quasar 9.9: 20-30% from tuning registers and threads per block",
        "GFLOP/s with reqd_work_group_size / without (geometric mean over sizes)",
        reqd_over_none, source_ratio=1.25, finding=refused_without_reqd)
    plot = {"kind": "lines", "y": "gflops", "ylabel": "GFLOP/s", "group": "bounds", "logx": True}
    size_arg, values_arg, local_size_arg = "items", "sizes", None

    def __init__(self, ctx: Any, items: int | None = None, sizes: Sequence[int] | None = None,
                 lanes: int | None = None, steps: int | None = None) -> None:
        """``items``: work-items per launch; ``sizes``: the work-group sizes X; ``lanes``:
        accumulators per work-item (register pressure); ``steps``: loop trips."""
        super().__init__(ctx)
        info = ctx.info
        top = int(info.max_work_group_size)
        if sizes is None:
            sizes = [s for s in ((64, 128, 256, 512, 1024) if info.is_gpu else (64, 256)) if s <= top]
        self.sizes = [int(s) for s in sizes]
        self.items = whole_groups(
            self.id, items if items is not None else (1 << 23 if info.is_gpu else 1 << 12), self.sizes)
        self.lanes = int(lanes) if lanes is not None else (64 if info.is_gpu else 8)
        self.steps = int(steps) if steps is not None else (128 if info.is_gpu else 16)
        if not 1 <= self.lanes <= 256 or not 1 <= self.steps <= 4096:
            raise _core.InvalidArgumentError(
                f"{self.id}: lanes must lie in 1..256 and steps in 1..4096, got {self.lanes}, {self.steps}")
        if self.items * FLOAT > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(f"{self.id}: {self.items} floats exceed the largest allocation")
        self.src, self.dst = ctx.buffer(self.items * FLOAT), ctx.buffer(self.items * FLOAT)
        self.rng = np.random.default_rng()
        self._input: tuple[np.ndarray, np.ndarray] | None = None  # (x, the reference), once a run

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "items": self.items, "lanes": self.lanes, "steps": self.steps,
                "flops_per_item": flops_per_item(self.steps, self.lanes),
                "note": "gflops counts a multiply-add as 2 flops; 'none' and 'reqd' builds are "
                        "launched with the same local size"}

    def points(self) -> list[dict[str, Any]]:
        return [{"work_group_size": s, "bounds": b} for s in self.sizes for b in BOUNDS]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None  # arithmetic-bound: no memory ceiling applies

    def build(self, bounds: str, size: int) -> dict[str, Any]:
        defines: dict[str, Any] = {"LANES": self.lanes}
        if bounds == "reqd":
            defines["REQD"] = size
        return {"file": "launchbounds.cl", "defines": defines,
                "options": verbose_build_options(self.ctx.info)}

    def builds(self, point: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.build(point["bounds"], int(point["work_group_size"]))]

    def program(self, bounds: str, size: int) -> Any:
        return self.ctx.program(**self.build(bounds, size))

    def launch(self, point: dict[str, Any]) -> Launch:
        size, bounds = int(point["work_group_size"]), point["bounds"]
        program = self.program(bounds, size)
        kernel = program.kernel("poly").set_args(self.dst, self.src, np.int32(self.steps))
        limits = kernel.limits()
        reqd = [int(v) for v in limits.compile_work_group_size]
        regs = parse_registers(program.build_log, "poly")
        # The build's reported CL_KERNEL_WORK_GROUP_SIZE is recorded and the launch tried: a
        # size the driver refuses (registers, usually) ends as "launch failed" with its error.
        columns: dict[str, Any] = {
            "items": self.items, "lanes": self.lanes, "steps": self.steps,
            "compile_work_group_size": ",".join(map(str, reqd)),
            "reqd_reported": reqd[:1] == [size] if bounds == "reqd" else not any(reqd),
            "kernel_max_work_group_size": int(limits.work_group_size),
            "over_kernel_limit": size > int(limits.work_group_size),
            "private_mem_bytes": int(limits.private_mem_bytes),
            "registers": regs.registers, "spill_store_bytes": regs.spill_store_bytes,
            "spill_load_bytes": regs.spill_load_bytes}
        return Launch.one(kernel, self.items, size, 2 * self.items * FLOAT,
                          ops=self.items * flops_per_item(self.steps, self.lanes), ops_unit="flops",
                          columns=columns)

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        if self._input is None:  # every build computes the same: drawn once, off the device's turn
            with host_only():
                x = self.rng.random(self.items, dtype=np.float32)
                self._input = x, reference(x, self.steps, self.lanes)
        x, want = self._input
        got = round_trip(self.src, self.dst, x, launch.run)
        # Every term is positive: float32 sums of steps + lanes terms stay within a few unit
        # roundoffs per term of the exact value.
        with host_only():
            tolerance = 4 * (self.steps + self.lanes + 8) * 2.0**-24 * np.abs(want)
        return Check(*compare_close(got, want, tolerance, "outputs"))

    def finish(self, results: Any) -> None:
        ok = {(r["work_group_size"], r["bounds"]): r for r in results.rows if r.get("status") == OK}
        ratios, only = [], []
        for size in self.sizes:
            none, reqd = ok.get((size, "none")), ok.get((size, "reqd"))
            if none and reqd:
                ratios.append(f"{size}: {reqd['gflops'] / none['gflops']:.2f}x")
            elif reqd and not none:
                only.append(size)
        results.meta["reqd_over_none"] = ratios
        results.meta["only_reqd_launches"] = only_reqd_launches(results)
        text = ("reqd_work_group_size over none (GFLOP/s ratio) at " + ", ".join(ratios)
                if ratios else "no size verified in both builds")
        if only:
            limit = min(r["kernel_max_work_group_size"] for r in results.rows
                        if r.get("bounds") == "none" and "kernel_max_work_group_size" in r)
            refused = [r.get("refused") for r in results.rows
                       if r.get("bounds") == "none" and r.get("work_group_size") in only]
            answer = (f"the device refused the launch ({', '.join(sorted({str(c) for c in refused if c}))})"
                      if any(refused) else "its launch did not verify")
            text += (f"; only the reqd build ran at {only} (the build without it reports at most "
                     f"{limit} work-items per group, and {answer})")
        regs = {(r["work_group_size"], r["bounds"]): r.get("registers") for r in results.rows
                if r.get("registers") is not None}
        if regs:
            text += "; registers per work-item: " + ", ".join(
                f"{s} {b}: {v}" for (s, b), v in sorted(regs.items()))
        results.meta["conclusion"] = (
            text + ". Quasar 9.9: 20-30% or more from tuning registers and threads per block.")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["work_group_size", "bounds", "compile_work_group_size", "kernel_max_work_group_size",
                "registers", "spill_store_bytes", "private_mem_bytes", "status", "median_ns", "gflops"]
        return df[[c for c in cols if c in df]]
