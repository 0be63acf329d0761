"""Compute ceilings: FP32, FP64, FP16 (where the device claims the extension) and 32-bit integer
multiply-add throughput, each at the launch shape that reaches it (search.py).

kernels/ceilings.cl's ``chains``: ACC independent multiply-add chains per work-item, each step V
multiply-adds of a vector of width V. The shape is the vector width, the number of chains, the
work-group size and the work-groups per compute unit. A GPU's fastest is scalar (or half2) with
8 chains over many groups; a CPU device needs the widest vectors its units hold and enough
chains to cover the FMA latency, or it reaches a half or a quarter of its rate. One multiply-add
counts as 2 operations.

Every launch's output is compared with NumPy on fresh input: the chains in closed form (exact
integers for the floating types; the composed affine map for uint).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..measure.checks import compare, poison_device
from . import search
from .record import Effort, Figure, fastest, guarded, missing, rate, timings

UNROLL = 16
UNROLL_GPU = 64  # 512 multiply-adds per loop trip: the loop's own instructions cost ~1%
ACC = 8
X_LIMIT = 64  # chain inputs are integers below this
FP16_STEPS = 1024  # half holds integers up to 2048 exactly: 64 + 16 chains + 1024 stays below
PROBE_LAUNCHES = 3


@dataclass(frozen=True)
class Precision:
    name: str          # the profile's key
    type: str          # OpenCL C element type
    dtype: Any         # its NumPy type
    extension: str     # what the device must claim ("" for none)
    define: str        # the build's switch
    unit: str


PRECISIONS = {p.name: p for p in (
    Precision("fp32", "float", np.float32, "", "FP32", "GFLOP/s"),
    Precision("fp64", "double", np.float64, "cl_khr_fp64", "FP64", "GFLOP/s"),
    Precision("fp16", "half", np.float16, "cl_khr_fp16", "FP16", "GFLOP/s"),
    Precision("int32", "uint", np.uint32, "", "INT", "Gop/s"),
)}
# Vector widths tried, the first where the search starts: scalar on NVIDIA and AMD GPUs (packed
# half2 for FP16), the widest on a CPU device, whose compiler may not vectorise across
# work-items once the kernel has a loop of its own.
WIDTHS = {  # (GPU?, quick?) -> precision -> widths
    (True, False): {"fp32": (1, 2, 4), "fp64": (1, 2), "fp16": (2, 4), "int32": (1, 2)},
    (True, True): {"fp32": (1, 2), "fp64": (1, 2), "fp16": (2, 4), "int32": (1, 2)},
    (False, False): {"fp32": (16, 8, 4), "fp64": (8, 4, 2), "fp16": (16, 8), "int32": (16, 8, 4)},
    (False, True): {"fp32": (16, 8), "fp64": (8, 4), "fp16": (16, 8), "int32": (16, 8)},
}
# The other axes, after the width: (GPU?, quick?) -> axis -> values. A GPU keeps the shape that
# led there (8 chains, groups of 256, 16 per compute unit); a CPU device's chains and groups move
# its figure (4 chains of float16 reach half of what 8 do).
OTHER_AXES = {
    (True, False): {}, (True, True): {},
    (False, False): {"chains": (8, 16, 4), "local_size": (64, 16, 256), "groups_per_cu": (8, 2, 32)},
    (False, True): {"chains": (8, 16)},
}


def affine_power(m: int, c: int, steps: int) -> tuple[int, int]:
    """(M, C) with x -> M x + C (mod 2^32) the map x -> m x + c applied ``steps`` times."""
    mask = (1 << 32) - 1
    big_m, big_c = 1, 0  # identity
    pm, pc = m & mask, c & mask  # the map applied 2^i times
    while steps:
        if steps & 1:
            big_m, big_c = (pm * big_m) & mask, (pm * big_c + pc) & mask
        pm, pc = (pm * pm) & mask, (pm * pc + pc) & mask
        steps >>= 1
    return big_m, big_c


def chains_reference(x: np.ndarray, precision: str, steps: int, m: int = 1, c: int = 1,
                     acc: int = ACC) -> np.ndarray:
    """What ``chains`` writes for inputs ``x`` (one value per lane): sum over k < acc of
    (k + 1) times chain k after ``steps`` multiply-adds."""
    k = np.arange(acc, dtype=np.uint64)
    weights = k + np.uint64(1)
    if precision == "int32":
        big_m, big_c = affine_power(m, c, steps)
        start = x.astype(np.uint64)[..., None] + k  # chain k starts at x + k
        ends = (np.uint64(big_m) * start + np.uint64(big_c)) & np.uint64(0xFFFFFFFF)
        return ((ends * weights).sum(axis=-1) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    # m = 1, c = 1: chain k ends at x + k + steps, an integer every type holds exactly.
    ends = x.astype(np.float64)[..., None] + k.astype(np.float64) + steps
    return (ends * weights.astype(np.float64)).sum(axis=-1).astype(np.float32)


def start_shape(ctx: Any, precision: str, quick: bool) -> search.Shape:
    """Where the search starts: the first width, 8 chains, groups of up to 256 work-items, 16
    per compute unit on a GPU (every unit busy through the whole launch), 8 on a CPU device."""
    info = ctx.info
    gpu = bool(info.is_gpu)
    local = min(256 if gpu else 64, 1 << (int(info.max_work_group_size).bit_length() - 1))
    return {"vector": WIDTHS[(gpu, quick)][precision][0], "chains": ACC, "local_size": local,
            "groups_per_cu": 16 if gpu else 8}


class ChainRig:
    """One precision's chains at any shape: built, fed fresh input, probed or verified."""

    def __init__(self, ctx: Any, precision: str, effort: Effort, rng: np.random.Generator,
                 steps: int | None = None) -> None:
        self.ctx, self.p, self.effort, self.rng = ctx, PRECISIONS[precision], effort, rng
        gpu = bool(ctx.info.is_gpu)
        if steps is None:  # FP32 on a GPU: about half a millisecond, so the grid's ramp weighs ~1%
            steps = (1024 if effort.quick else 4096) if gpu else (128 if effort.quick else 256)
        steps = min(steps, FP16_STEPS) if precision == "fp16" else steps
        self.unroll = UNROLL_GPU if gpu else UNROLL  # a long straight run of FMAs per trip on a GPU
        self.trips = max(1, steps // self.unroll)
        self.steps = self.trips * self.unroll

    def how(self) -> str:
        return (f"kernels/ceilings.cl chains: independent {self.p.type}-vector multiply-add chains "
                f"of {self.steps} steps per work-item, the fastest verified of the launch shapes "
                "tried (vector width, chains, work-group size, work-groups per compute unit); "
                "2 operations per multiply-add / OpenCL event time of the fastest launch")

    def launch(self, shape: search.Shape) -> tuple[Any, int, int, np.ndarray, tuple[int, int]]:
        """(kernel with arguments set, work-items, work-group size, input, (m, c))."""
        p, v, acc = self.p, int(shape["vector"]), int(shape["chains"])
        local = int(shape["local_size"])
        items = int(self.ctx.info.compute_units) * int(shape["groups_per_cu"]) * local
        defines = {"CHAINS": 1, p.define: 1, "T": p.type, "V": v, "ACC": acc, "UNROLL": self.unroll}
        kernel = self.ctx.program(file="ceilings.cl", defines=defines).kernel("chains")
        x = self.rng.integers(0, X_LIMIT, size=items * v).astype(p.dtype)
        src, dst = self.ctx.to_device(x), self.ctx.buffer(items * v * 4)
        if p.name == "int32":
            m, c = int(self.rng.integers(0, 2**31)) * 2 + 1, int(self.rng.integers(0, 2**32))
            kernel.set_args(src, np.uint32(m), np.uint32(c), np.uint32(self.trips), dst)
        else:
            m, c = 1, 1
            kernel.set_args(src, np.float32(m), np.float32(c), np.uint32(self.trips), dst)
        self._dst = dst
        return kernel, items, local, x, (m, c)

    def operations(self, shape: search.Shape, items: int) -> float:
        return 2.0 * int(shape["chains"]) * self.steps * items * int(shape["vector"])

    def probe(self, shape: search.Shape) -> float | None:
        """G operations per second at the fastest of a few launches, unverified."""
        kernel, items, local, _, _ = self.launch(shape)
        times = kernel.time(items, local, warmup=1, repeats=PROBE_LAUNCHES, method="events")
        return self.operations(shape, items) / fastest(times)

    def figure(self, shape: search.Shape, effort: Effort | None = None) -> Figure:
        """Verified on fresh input, then timed."""
        kernel, items, local, x, (m, c) = self.launch(shape)
        poison_device(self._dst)
        kernel.run(items, local)
        got = self.ctx.from_device(self._dst, np.uint32 if self.p.name == "int32" else np.float32)
        want = chains_reference(x, self.p.name, self.steps, m, c, int(shape["chains"]))
        ok, detail = compare(got.view(np.uint32), want.view(np.uint32), f"{self.p.type} chain sums")
        if not ok:
            return missing(self.p.unit, self.how(), f"wrong result at {search.label(shape)}: {detail}",
                           "failed")
        times = timings(kernel, items, local, effort or self.effort.longer())
        return rate(times, self.operations(shape, items), self.p.unit, self.how(),
                    vector_width=int(shape["vector"]), work_items=items, local_size=local)


def chains_figure(ctx: Any, precision: str, shape: search.Shape, effort: Effort,
                  rng: np.random.Generator, steps: int | None = None) -> Figure:
    """One precision at one shape: verified, then timed (a failed figure where it is wrong or
    the device lacks the extension)."""
    rig = ChainRig(ctx, precision, effort, rng, steps)
    if rig.p.extension and not ctx.info.has_extension(rig.p.extension):
        return missing(rig.p.unit, rig.how(), f"the device does not claim {rig.p.extension}")
    return guarded(rig.p.unit, rig.how(), lambda: rig.figure(shape, effort))


def compute(ctx: Any, effort: Effort, rng: np.random.Generator,
            precisions: Sequence[str] = tuple(PRECISIONS)) -> dict[str, Figure]:
    """Each precision at the fastest verified shape found."""
    gpu = bool(ctx.info.is_gpu)
    out = {}
    for name in precisions:
        rig = ChainRig(ctx, name, effort, rng)
        if rig.p.extension and not ctx.info.has_extension(rig.p.extension):
            out[name] = missing(rig.p.unit, rig.how(), f"the device does not claim {rig.p.extension}")
            continue
        axes = {"vector": WIDTHS[(gpu, effort.quick)][name], **OTHER_AXES[(gpu, effort.quick)]}
        out[name] = search.best_shape(start_shape(ctx, name, effort.quick), axes,
                                      search.refused(rig.probe), rig.figure, rig.p.unit, rig.how())
    return out


__all__ = ["ACC", "ChainRig", "PRECISIONS", "WIDTHS", "X_LIMIT", "affine_power", "chains_figure",
           "chains_reference", "compute", "start_shape"]
