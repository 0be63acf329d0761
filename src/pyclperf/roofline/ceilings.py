"""Compute, local-memory and launch ceilings measured with kernels/ceilings.cl, each verified.

* ``compute``: FP32, FP64, FP16 (where the device claims the extension) multiply-add throughput
  and 32-bit integer multiply-add throughput: ACC independent chains per work-item, vector
  widths tried, the fastest verified one kept. One multiply-add counts as 2 operations.
* ``local_memory``: reads of a work-group's ``__local`` tile, conflict-free, in bytes per second
  over the whole device.
* ``launch_latency``: one work-item storing one word, launched and waited for from the host, in
  ns per launch (the host clock around enqueue and wait: what a launch costs the caller).

Every launch's output is compared with NumPy on fresh input: the chains in closed form (exact
integers for the floating types; the composed affine map for uint), the local reads by whole
sweeps of the tile plus a window of its prefix, the stamp word by value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..measure.checks import compare, poison_device
from .record import Effort, Figure, best_of, guarded, latency, missing, rate, timings

UNROLL = 16
UNROLL_GPU = 64  # 512 multiply-adds per loop trip: the loop's own instructions cost ~1%
ACC = 8
X_LIMIT = 64  # chain inputs are integers below this
FP16_STEPS = 1024  # half holds integers up to 2048 exactly: 64 + 8 + 1024 stays below


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
# Vector widths tried: the fastest differs between devices (scalar on NVIDIA and AMD GPUs,
# packed half2 for FP16, wide vectors on a CPU device, whose compiler may not vectorise across
# work-items once the kernel has a loop of its own).
WIDTHS = {  # (GPU?, quick?) -> precision -> widths
    (True, False): {"fp32": (1, 2, 4), "fp64": (1, 2), "fp16": (2, 4), "int32": (1, 2)},
    (True, True): {"fp32": (1, 2), "fp64": (1,), "fp16": (2,), "int32": (1,)},
    (False, False): {"fp32": (4, 8, 16), "fp64": (2, 4, 8), "fp16": (8, 16), "int32": (4, 8, 16)},
    (False, True): {"fp32": (8,), "fp64": (4,), "fp16": (8,), "int32": (8,)},
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


def chains_reference(x: np.ndarray, precision: str, steps: int, m: int = 1, c: int = 1) -> np.ndarray:
    """What ``chains`` writes for inputs ``x`` (one value per lane): sum over k < ACC of
    (k + 1) times chain k after ``steps`` multiply-adds."""
    k = np.arange(ACC, dtype=np.uint64)
    weights = k + np.uint64(1)
    if precision == "int32":
        big_m, big_c = affine_power(m, c, steps)
        start = x.astype(np.uint64)[..., None] + k  # chain k starts at x + k
        ends = (np.uint64(big_m) * start + np.uint64(big_c)) & np.uint64(0xFFFFFFFF)
        return ((ends * weights).sum(axis=-1) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    # m = 1, c = 1: chain k ends at x + k + steps, an integer every type holds exactly.
    ends = x.astype(np.float64)[..., None] + k.astype(np.float64) + steps
    return (ends * weights.astype(np.float64)).sum(axis=-1).astype(np.float32)


def shape(ctx: Any) -> tuple[int, int]:
    """(work-groups, work-group size) for the throughput kernels: many groups per compute unit
    on a GPU (every unit busy through the whole launch), a few on a CPU device."""
    info = ctx.info
    local = min(256, 1 << (int(info.max_work_group_size).bit_length() - 1))
    return int(info.compute_units) * (16 if info.is_gpu else 8), local


def chains_figure(ctx: Any, precision: str, width: int, effort: Effort, rng: np.random.Generator,
                  steps: int | None = None) -> Figure:
    """One precision at one vector width: verified, then timed."""
    p = PRECISIONS[precision]
    groups, local = shape(ctx)
    items = groups * local
    gpu = bool(ctx.info.is_gpu)
    if steps is None:  # FP32 on a GPU: about half a millisecond, so the grid's ramp weighs ~1%
        steps = (1024 if effort.quick else 4096) if gpu else (128 if effort.quick else 256)
    steps = min(steps, FP16_STEPS) if precision == "fp16" else steps
    unroll = UNROLL_GPU if gpu else UNROLL  # a long straight run of FMAs per loop trip on a GPU
    trips = max(1, steps // unroll)
    steps = trips * unroll
    how = (f"kernels/ceilings.cl chains: {ACC} independent {p.type}{'' if width == 1 else width} "
           f"multiply-add chains of {steps} steps per work-item, {groups} work-groups of {local}; "
           "2 operations per multiply-add; OpenCL event times")
    if p.extension and not ctx.info.has_extension(p.extension):
        return missing(p.unit, how, f"the device does not claim {p.extension}")

    def measure() -> Figure:
        defines = {"CHAINS": 1, p.define: 1, "T": p.type, "V": width, "ACC": ACC, "UNROLL": unroll}
        kernel = ctx.program(file="ceilings.cl", defines=defines).kernel("chains")
        lanes = items * width
        x = rng.integers(0, X_LIMIT, size=lanes).astype(p.dtype)
        src = ctx.to_device(x)
        out_dtype = np.uint32 if precision == "int32" else np.float32
        dst = ctx.buffer(lanes * 4)
        if precision == "int32":
            m, c = int(rng.integers(0, 2**31)) * 2 + 1, int(rng.integers(0, 2**32))
            kernel.set_args(src, np.uint32(m), np.uint32(c), np.uint32(trips), dst)
        else:
            m, c = 1, 1
            kernel.set_args(src, np.float32(m), np.float32(c), np.uint32(trips), dst)
        poison_device(dst)
        kernel.run(items, local)
        got = ctx.from_device(dst, out_dtype)
        ok, detail = compare(got.view(np.uint32), chains_reference(x, precision, steps, m, c).view(np.uint32),
                             f"{p.type} chain sums")
        if not ok:
            return missing(p.unit, how, f"wrong result: {detail}", "failed")
        times = timings(kernel, items, local, effort)
        return rate(times, 2.0 * ACC * steps * lanes, p.unit, how, vector_width=width,
                    work_items=items, local_size=local)

    return guarded(p.unit, how, measure)


def compute(ctx: Any, effort: Effort, rng: np.random.Generator,
            precisions: Sequence[str] = tuple(PRECISIONS)) -> dict[str, Figure]:
    """Each precision's fastest verified vector width."""
    widths = WIDTHS[(bool(ctx.info.is_gpu), effort.quick)]
    out = {}
    for name in precisions:
        tried = [chains_figure(ctx, name, w, effort, rng) for w in widths[name]]
        out[name] = best_of(tried, PRECISIONS[name].unit, tried[0]["how"])
        if len(tried) > 1 and out[name].get("status") == "ok":
            out[name]["widths_tried"] = {str(f.get("vector_width", w)): f.get("value")
                                         for f, w in zip(tried, widths[name])}
    return out


def local_reference(tiles: np.ndarray, reads: int) -> np.ndarray:
    """What ``local_reads`` writes: work-item l of a group sums tile[(l + j) mod WG] for
    j < reads, per vector lane, mod 2^32. ``tiles`` is (groups, WG, lanes) of uint32."""
    wg = tiles.shape[1]
    t = tiles.astype(np.uint64)
    sweeps, rest = divmod(reads, wg)
    whole = t.sum(axis=1, keepdims=True) * np.uint64(sweeps)
    doubled = np.concatenate([t, t], axis=1)
    prefix = np.concatenate([np.zeros_like(t[:, :1]), np.cumsum(doubled, axis=1)], axis=1)
    l = np.arange(wg)
    window = prefix[:, l + rest] - prefix[:, l]  # tile[l .. l + rest) with wrap
    return ((whole + window) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def local_figure(ctx: Any, lanes: int, effort: Effort, rng: np.random.Generator) -> Figure:
    """Local-memory read bandwidth with ``lanes``-wide uint elements."""
    groups, wg = shape(ctx)
    groups //= 2  # the tile reads run long enough with fewer groups
    reads = (1024 if ctx.info.is_gpu else 256) if not effort.quick else (512 if ctx.info.is_gpu else 128)
    trips = reads // UNROLL
    element = "uint" if lanes == 1 else f"uint{lanes}"
    how = (f"kernels/ceilings.cl local_reads: each work-item reads {reads} {element}s of its "
           f"group's __local tile of {wg} (consecutive work-items, consecutive elements), "
           f"{groups} work-groups; bytes read / OpenCL event time")

    def measure() -> Figure:
        program = ctx.program(file="ceilings.cl", defines={"LOCAL_READS": 1, "LT": element, "WG": wg,
                                                           "UNROLL": UNROLL})
        kernel = program.kernel("local_reads")
        items = groups * wg
        data = rng.integers(0, 2**32, size=items * lanes, dtype=np.uint32)
        src, dst = ctx.to_device(data), ctx.buffer(items * lanes * 4)
        kernel.set_args(src, np.uint32(trips), dst)
        poison_device(dst)
        kernel.run(items, wg)
        got = ctx.from_device(dst, np.uint32)
        want = local_reference(data.reshape(groups, wg, lanes), reads)
        ok, detail = compare(got, want.ravel(), "work-item sums of local reads")
        if not ok:
            return missing("GB/s", how, f"wrong result: {detail}", "failed")
        times = timings(kernel, items, wg, effort)
        return rate(times, float(items) * reads * 4 * lanes, "GB/s", how, element=element,
                    local_size=wg)

    return guarded("GB/s", how, measure)


def local_memory(ctx: Any, effort: Effort, rng: np.random.Generator) -> Figure:
    """The fastest verified element width of local-memory reads."""
    tried = [local_figure(ctx, lanes, effort, rng) for lanes in ((1,) if effort.quick else (1, 4))]
    return best_of(tried, "GB/s", tried[0]["how"])


def launch_latency(ctx: Any, effort: Effort, rng: np.random.Generator) -> Figure:
    """Host time per launch of a one-work-item kernel, enqueue to completion."""
    repeats = 30 if effort.quick else 200
    how = ("kernels/ceilings.cl stamp (one work-item stores one word), launched and waited for "
           f"{repeats} times: host clock around enqueue + wait, per launch")

    def measure() -> Figure:
        kernel = ctx.program(file="ceilings.cl").kernel("stamp")
        out = ctx.buffer(4)
        value = np.uint32(rng.integers(1, 2**32))
        kernel.set_args(out, value)
        poison_device(out)
        kernel.run(1, 1)
        got = ctx.from_device(out, np.uint32)
        ok, detail = compare(got, np.array([value], np.uint32), "stamped word")
        if not ok:
            return missing("ns", how, f"wrong result: {detail}", "failed")
        host = kernel.time(1, 1, warmup=max(effort.warmup, 3), repeats=repeats, method="host")
        device = kernel.time(1, 1, warmup=1, repeats=repeats, method="events")
        return latency(host, 1.0, how, device_ns=float(np.median(device)))

    return guarded("ns", how, measure)


__all__ = ["ACC", "PRECISIONS", "affine_power", "chains_figure", "chains_reference", "compute",
           "launch_latency", "local_figure", "local_memory", "local_reference", "shape"]
