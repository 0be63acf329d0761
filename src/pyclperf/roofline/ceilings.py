"""Local-memory and launch ceilings measured with kernels/ceilings.cl, each verified (the
compute ceilings are compute.py's).

* ``local_memory``: reads of a work-group's ``__local`` tile, conflict-free, in bytes per second
  over the whole device, at the fastest of the element widths (uint to uint16) and work-group
  sizes tried (search.py): a GPU's local memory is fastest at uint or uint4 in groups of 256, a
  CPU device's (ordinary memory in its L1) at its widest vectors.
* ``launch_latency``: one work-item storing one word, launched and waited for from the host, in
  ns per launch (the host clock around enqueue and wait: what a launch costs the caller).

Every launch's output is compared with NumPy on fresh input: the local reads by whole sweeps of
the tile plus a window of its prefix, the stamp word by value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..measure.checks import compare, poison_device
from . import search
from .record import Effort, Figure, fastest, guarded, latency, missing, rate, timings

UNROLL = 16
PROBE_LAUNCHES = 3
# (GPU?, quick?) -> where the search starts and the values it tries per axis.
LOCAL_START = {True: {"lanes": 1, "local_size": 256}, False: {"lanes": 16, "local_size": 64}}
LOCAL_AXES = {
    (True, True): {"lanes": (1, 4)}, (True, False): {"lanes": (1, 4)},
    (False, True): {"lanes": (4, 16)}, (False, False): {"lanes": (4, 16), "local_size": (16, 64, 256)},
}


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


class LocalRig:
    """local_reads at any shape (element width ``lanes``, work-group size): probed or verified."""

    def __init__(self, ctx: Any, effort: Effort, rng: np.random.Generator) -> None:
        self.ctx, self.effort, self.rng = ctx, effort, rng
        gpu = bool(ctx.info.is_gpu)
        self.reads = (1024 if gpu else 256) if not effort.quick else (512 if gpu else 128)
        self.groups_per_cu = 8 if gpu else 4

    def how(self) -> str:
        return (f"kernels/ceilings.cl local_reads: each work-item reads {self.reads} elements of "
                "its group's __local tile (consecutive work-items, consecutive elements), "
                f"{self.groups_per_cu} work-groups per compute unit, the fastest verified of the "
                "element widths and work-group sizes tried; bytes read / OpenCL event time of the "
                "fastest launch")

    def launch(self, shape: search.Shape) -> tuple[Any, int, int, np.ndarray, Any]:
        lanes, wg = int(shape["lanes"]), int(shape["local_size"])
        wg = min(wg, 1 << (int(self.ctx.info.max_work_group_size).bit_length() - 1))
        element = "uint" if lanes == 1 else f"uint{lanes}"
        program = self.ctx.program(file="ceilings.cl", defines={"LOCAL_READS": 1, "LT": element,
                                                                "WG": wg, "UNROLL": UNROLL})
        kernel = program.kernel("local_reads")
        items = int(self.ctx.info.compute_units) * self.groups_per_cu * wg
        data = self.rng.integers(0, 2**32, size=items * lanes, dtype=np.uint32)
        src, dst = self.ctx.to_device(data), self.ctx.buffer(items * lanes * 4)
        kernel.set_args(src, np.uint32(self.reads // UNROLL), dst)
        return kernel, items, wg, data, dst

    def probe(self, shape: search.Shape) -> float | None:
        kernel, items, wg, _, _ = self.launch(shape)
        times = kernel.time(items, wg, warmup=1, repeats=PROBE_LAUNCHES, method="events")
        return float(items) * self.reads * 4 * int(shape["lanes"]) / fastest(times)

    def figure(self, shape: search.Shape) -> Figure:
        kernel, items, wg, data, dst = self.launch(shape)
        lanes = int(shape["lanes"])
        poison_device(dst)
        kernel.run(items, wg)
        got = self.ctx.from_device(dst, np.uint32)
        want = local_reference(data.reshape(items // wg, wg, lanes), self.reads)
        ok, detail = compare(got, want.ravel(), "work-item sums of local reads")
        if not ok:
            return missing("GB/s", self.how(), f"wrong result at {search.label(shape)}: {detail}",
                           "failed")
        times = timings(kernel, items, wg, self.effort.longer())
        return rate(times, float(items) * self.reads * 4 * lanes, "GB/s", self.how(),
                    element="uint" if lanes == 1 else f"uint{lanes}", local_size=wg)


def local_figure(ctx: Any, shape: search.Shape, effort: Effort, rng: np.random.Generator) -> Figure:
    """Local-memory read bandwidth at one shape, verified."""
    rig = LocalRig(ctx, effort, rng)
    return guarded("GB/s", rig.how(), lambda: rig.figure(shape))


def local_memory(ctx: Any, effort: Effort, rng: np.random.Generator) -> Figure:
    """Local-memory read bandwidth at the fastest verified shape found."""
    rig = LocalRig(ctx, effort, rng)
    gpu = bool(ctx.info.is_gpu)
    return search.best_shape(LOCAL_START[gpu], LOCAL_AXES[(gpu, effort.quick)],
                             search.refused(rig.probe), rig.figure, "GB/s", rig.how())


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


__all__ = ["LOCAL_AXES", "LOCAL_START", "LocalRig", "launch_latency", "local_figure",
           "local_memory", "local_reference"]
