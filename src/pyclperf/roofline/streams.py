"""DRAM read, write and copy at the launch shape that reaches each: kernels/ceilings.cl's
stream kernels over buffers larger than the caches, the shape found by search.py.

A shape is a vector width (uint to uint16), the elements each work-item handles (``items``),
how they are laid out (``grid``: consecutive work-items on consecutive elements, the way a GPU
coalesces; ``blocked``: each work-item a run of its own, the way a CPU core's prefetcher
streams), and the work-group size; the number of work-groups follows (the buffer's elements over
items x work-group size) and is recorded with them against the compute units. Each device kind
starts from the shape that led on such devices, with the axes that moved its figure most.

The source holds the words ``a i + b`` (random a and b, written by fill_affine on the device,
so a buffer of any size costs no host time), which gives every result a closed form: each
work-item's read sums per lane, the written words (``value + i``), the copied ones. Results are
compared with NumPy in full, a slice of the buffer at a time, after the output was poisoned.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..measure.checks import compare, poison_device
from ..measure.stats import MiB
from . import search
from .record import Effort, Figure, fastest, missing, rate, timings

OPS = ("read", "write", "copy")  # the DRAM ceilings; "add" (two read, one written) serves caches
COUNTED = {"read": "bytes read", "write": "bytes written", "copy": "bytes read + written",
           "add": "bytes read + written"}
MOVED = {"read": 1, "write": 1, "copy": 2, "add": 3}  # buffers of nbytes each launch moves
LAYOUTS = ("grid", "blocked")
CHECK_BYTES = 32 * MiB  # verified a slice at a time: host memory stays small
PROBE_LAUNCHES = 2      # a shape's probe: the fastest of this many launches (after one warm-up)

# (GPU?, quick?) -> where the search starts and the values it tries on each axis, in order.
START = {True: {"vector": 4, "items": 4, "layout": "grid", "local_size": 256},
         False: {"vector": 16, "items": 16, "layout": "grid", "local_size": 64}}
AXES = {
    (True, True): {"vector": (4, 8), "items": (1, 4)},
    (True, False): {"vector": (2, 4, 8), "items": (1, 4, 16)},
    (False, True): {"vector": (8, 16), "layout": LAYOUTS},
    (False, False): {"vector": (4, 8, 16), "items": (4, 16, 64, 256, 1024), "layout": LAYOUTS,
                     "local_size": (16, 64, 256)},
}


def affine_sums(a: int, b: int, lanes: int, element_sums: np.ndarray, count: int) -> np.ndarray:
    """Per row and lane j: the sum over ``count`` elements e of the word e lanes + j, where
    word i holds a i + b (mod 2^32), given each row's sum of its elements' indices
    (``element_sums``, any size: reduced mod 2^32 here); shape (rows, lanes), uint32. The sum
    is a lanes (sum of e) + count (a j + b)."""
    mask = np.uint64(0xFFFFFFFF)
    a64, b64 = np.uint64(a), np.uint64(b)
    per_row = (((a64 * np.uint64(lanes)) & mask) * (element_sums.astype(np.uint64) & mask)) & mask
    lane = np.arange(lanes, dtype=np.uint64)
    per_lane = (np.uint64(count % 2**32) * ((a64 * lane + b64) & mask)) & mask
    return ((per_row[:, None] + per_lane[None, :]) & mask).astype(np.uint32)


def lanes(vector: int) -> str:
    """The LANES define: (0, 1, ..., V - 1) as a uintV."""
    return "0" if vector == 1 else f"(uint{vector})({','.join(str(j) for j in range(vector))})"


class StreamRig:
    """Two buffers of ``nbytes`` (source and destination), the source's words ``a i + b``; a
    third (words ``c i + d``) once stream_add asks for it."""

    def __init__(self, ctx: Any, nbytes: int, rng: np.random.Generator) -> None:
        self.ctx, self.nbytes = ctx, int(nbytes)
        self.words = self.nbytes // 4
        self.a = int(rng.integers(0, 2**31)) * 2 + 1
        self.b = int(rng.integers(0, 2**32))
        self.value = int(rng.integers(0, 2**32))
        self.src, self.dst = ctx.buffer(self.nbytes), ctx.buffer(self.nbytes)
        self.source: str | None = None  # the kernels' source where not kernels/ceilings.cl (tests)
        self.second: Any = None  # stream_add's second source, words c i + d, made when first asked
        self.c = int(rng.integers(0, 2**31)) * 2 + 1
        self.d = int(rng.integers(0, 2**32))
        fill = ctx.program(file="ceilings.cl").kernel("fill_affine")
        fill.set_args(self.src, np.uint32(self.a), np.uint32(self.b)).run(self.words, None)

    def release(self) -> None:
        self.src.release()
        self.dst.release()
        if self.second is not None:
            self.second.release()

    def _second(self) -> Any:
        if self.second is None:
            self.second = self.ctx.buffer(self.nbytes)
            fill = self.ctx.program(file="ceilings.cl").kernel("fill_affine")
            fill.set_args(self.second, np.uint32(self.c), np.uint32(self.d)).run(self.words, None)
        return self.second

    def launch(self, op: str, shape: search.Shape) -> tuple[Any, int, int]:
        """(kernel with its arguments set, global size, work-group size) for ``op`` at ``shape``;
        ValueError where the shape does not tile the buffer."""
        v, items, local = int(shape["vector"]), int(shape["items"]), int(shape["local_size"])
        elements = self.words // v
        if elements % (items * local):
            raise ValueError(f"{search.label(shape)} does not tile {elements} elements")
        defines = {"STREAM": 1, "V": v, "ITEMS": items, "LANES": lanes(v),
                   "BLOCKED" if shape["layout"] == "blocked" else "GRID": 1}
        where = {"source": self.source} if self.source else {"file": "ceilings.cl"}
        kernel = self.ctx.program(defines=defines, **where).kernel(f"stream_{op}")
        if op == "write":
            kernel.set_args(self.dst, np.uint32(self.value))
        elif op == "add":
            kernel.set_args(self.src, self._second(), self.dst)
        else:  # read (the sums land in dst) and copy
            kernel.set_args(self.src, self.dst)
        return kernel, elements // items, local

    def moved(self, op: str) -> float:
        return float(self.nbytes * MOVED[op])

    def probe(self, op: str, shape: search.Shape) -> float | None:
        """GB/s at the fastest of a few launches, unverified; None where the shape does not fit."""
        try:
            kernel, g, local = self.launch(op, shape)
        except ValueError:
            return None
        if local > int(self.ctx.info.max_work_group_size):
            return None
        times = kernel.time(g, local, warmup=1, repeats=PROBE_LAUNCHES, method="events")
        return self.moved(op) / fastest(times)

    def check(self, op: str, shape: search.Shape) -> tuple[bool, str]:
        """One launch at ``shape`` after the output was poisoned, compared with NumPy in full."""
        kernel, g, local = self.launch(op, shape)
        poison_device(self.dst)
        kernel.run(g, local)
        if op == "read":
            got = np.empty(g * int(shape["vector"]), np.uint32)
            self.dst.read(got)
            return compare(got, self.read_reference(shape, g), "work-item sums")
        start = {"write": self.value, "copy": self.b, "add": self.b + self.d}[op] % 2**32
        step = {"write": 1, "copy": self.a, "add": self.a + self.c}[op] % 2**32
        chunk = CHECK_BYTES // 4
        got = np.empty(chunk, np.uint32)
        for first in range(0, self.words, chunk):
            n = min(chunk, self.words - first)
            self.dst.read(got[:n], first * 4)
            i = np.arange(first, first + n, dtype=np.uint32)
            want = np.uint32(step) * i + np.uint32(start)  # uint32 arithmetic wraps as the device's
            ok, detail = compare(got[:n], want, {"write": "written words", "copy": "copied words",
                                                 "add": "added words"}[op])
            if not ok:
                return False, f"{detail} (in the slice from word {first})"
        return True, ""

    def read_reference(self, shape: search.Shape, g: int) -> np.ndarray:
        """What stream_read writes: per work-item and lane, the sum of its words (closed form)."""
        v, items = int(shape["vector"]), int(shape["items"])
        gid = np.arange(g, dtype=np.uint64)
        pairs = np.uint64(items * (items - 1) // 2)
        if shape["layout"] == "blocked":  # elements g items + k
            elements = np.uint64(items * items) * gid + pairs
        else:  # elements g + k G
            elements = np.uint64(items) * gid + np.uint64(g) * pairs
        return affine_sums(self.a, self.b, v, elements, items).reshape(-1)

    def figure(self, op: str, shape: search.Shape, effort: Effort, how: str) -> Figure:
        """``op`` at ``shape``: verified, then timed (effort's launches, FINAL_TIME longer)."""
        ok, detail = self.check(op, shape)
        if not ok:
            return {"value": None, "unit": "GB/s", "how": how, "status": "failed",
                    "reason": f"wrong result at {search.label(shape)}: {detail}"}
        kernel, g, local = self.launch(op, shape)
        times = timings(kernel, g, local, effort.longer())
        groups = g // local
        cus = int(self.ctx.info.compute_units)
        return rate(times, self.moved(op), "GB/s", how, bytes=self.nbytes,
                    work_groups=groups, groups_per_cu=groups / cus)


def stream_ceilings(ctx: Any, effort: Effort, nbytes: int, rng: np.random.Generator) -> dict[str, Figure]:
    """DRAM read, write and copy, each at the fastest verified stream shape found."""
    gpu = bool(ctx.info.is_gpu)
    start, axes = START[gpu], AXES[(gpu, effort.quick)]
    out: dict[str, Figure] = {}
    try:
        rig = StreamRig(ctx, nbytes, rng)
    except (_core.ClError, _core.InvalidArgumentError, MemoryError) as exc:  # that part only
        failed = missing("GB/s", f"kernels/ceilings.cl streams over {nbytes // MiB} MiB",
                         f"{type(exc).__name__}: {exc}", "failed")
        return {f"dram_{op}": failed for op in OPS}
    try:
        for op in OPS:
            how = (f"kernels/ceilings.cl stream_{op} over {nbytes // MiB} MiB"
                   + (" (and another as large)" if op == "copy" else "")
                   + ", the fastest verified of the launch shapes tried (vector width, elements "
                     f"per work-item and their layout, work-group size); {COUNTED[op]} / OpenCL "
                     "event time of the fastest launch")
            out[f"dram_{op}"] = search.best_shape(
                start, axes, search.refused(lambda s, op=op: rig.probe(op, s)),
                lambda s, op=op, how=how: rig.figure(op, s, effort, how), "GB/s", how)
    finally:
        rig.release()
    return out


__all__ = ["AXES", "COUNTED", "LAYOUTS", "MOVED", "OPS", "START", "StreamRig", "affine_sums", "lanes", "stream_ceilings"]
