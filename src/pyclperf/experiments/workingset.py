"""workingset: read and copy bandwidth, and dependent-load latency, against the size of the data a
kernel keeps touching (kernels/workingset.cl).

The Guide (2009, Table 3.1 and 5.1.1) describes global memory as uncached, every access paying
400 to 600 clock cycles. Today's devices put one or more caches in front of it; this experiment
finds them by walking the same working set over and over:

* ``read``: every work-item sums words of a set of ``size`` bytes, the grid sweeping it ``passes``
  times or more per launch (at least ``min_bytes`` of reads, so a tiny set still makes a launch
  long enough to time). Bandwidth counts every word read.
* ``copy``: the same walk copying a set of size / 2 bytes into another (working set: both halves).
  Bandwidth counts every word read and written.
* ``chase``: one work-item follows a random cycle through all the set's words (_chain.py), ``steps`` loads
  each waiting for the one before: the row's ``latency_ns`` is the time per load.

Sizes are powers of two from 4 KiB up to min(1/4 of global memory, 1 GiB) on a GPU and 64 MiB on a
CPU device (never past the largest allocation). The plot marks the global-memory cache size the
device reports (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE).

Verification, per point, with poisoned outputs: each work-item's sum against NumPy's (32-bit,
wrapping) and the copied words exactly (and the poison past them intact), on random words drawn
once a run for the largest set (each smaller set reads a prefix of them); the chase's end position
on a fresh random cycle per point (experiments/_chain.py) against the cycle's closed form.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import POISON_U32, compare, poison_device, random_bytes
from ..device.turns import host_only, host_work
from ..measure.results import OK, Results
from ..measure.staging import read_back, write_from
from ._chain import Cycle, cycle
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, check_alloc, pick, positive
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, NotMeasured, pooled, rows_for

KINDS = ("read", "copy", "chase")
SMALLEST = 4 << 10
GUIDE_LATENCY_CYCLES = (400, 600)
GUARD = 256  # words past the largest copy's destination that must keep their poison
LEVEL_JUMP = 1.5  # a latency this many times the previous size's marks a new level


def pow2_floor(v: int) -> int:
    return 1 << (max(int(v), 1).bit_length() - 1)


def default_sizes(info: Any) -> list[int]:
    """4 KiB, 8 KiB ... up to min(1/4 of global memory, 1 GiB) on a GPU, 64 MiB elsewhere (a CPU
    device's caches are a few MiB; more only makes the run slow), within the largest allocation."""
    cap = min(info.global_mem_bytes // 4, 1 << 30) if info.is_gpu else 64 << 20
    cap = pow2_floor(min(cap, info.max_alloc_bytes))
    return [1 << k for k in range(SMALLEST.bit_length() - 1, cap.bit_length())]


@host_work
def read_reference(words: np.ndarray, grid: int, iters: int) -> np.ndarray:
    """What ws_read writes: work-item g sums words[(g + j grid) % n] for j < iters, mod 2^32.

    n and grid are powers of two and iters a multiple of n / grid where that exceeds 1, so each
    work-item sees its residue class of n modulo grid (or the one word g % n) whole, iters / r
    times."""
    n = words.size
    # uint32 arithmetic wraps at 2^32 as the kernel's does: no wider copy of a large set.
    if grid >= n:
        return np.multiply(words[np.arange(grid) % n], np.uint32(iters % (1 << 32)), dtype=np.uint32)
    r = n // grid
    sums = words.reshape(r, grid).sum(axis=0, dtype=np.uint32)
    return np.multiply(sums, np.uint32((iters // r) % (1 << 32)), dtype=np.uint32)


def latency(results: Results, size: int) -> Figure:
    """Time per dependent load (median over steps) of the chase over ``size`` bytes."""
    rows = [{**r, "latency_ns": r["median_ns"] / r["steps"]}
            for r in rows_for(results, kind="chase", size=size) if r.get("steps")]
    return pooled(rows, "latency_ns")


def largest_over_smallest(results: Results) -> Figure:
    """Latency per dependent load at the largest working set over the smallest."""
    sizes = sorted(r["size"] for r in rows_for(results, kind="chase"))
    if len(sizes) < 2:
        raise NotMeasured("fewer than two chase sizes verified")
    return latency(results, sizes[-1]) / latency(results, sizes[0])


class WorkingSet(Experiment):
    id = "workingset"
    description = ("read and copy bandwidth and dependent-load latency against working-set size, "
                   "4 KiB up to much of device memory, the reported cache size marked (the Guide's "
                   "uncached global memory vs today's caches; values are sizes in bytes)")
    order = 85
    title = "Bandwidth and latency vs working-set size"
    x = "size"
    x_label = "working set (bytes)"
    guide = "Guide 3.2 Table 3.1, 5.1.1 (global memory uncached, 400-600 cycles)"
    claim = Claim(
        "global memory is uncached: an access costs the same whatever the working set",
        "Guide 3.2 Table 3.1, 5.1.1: 400-600 cycles per access, no cache",
        "dependent-load latency at the largest working set / the smallest", largest_over_smallest,
        direction=0)
    plot = {"kind": "lines", "y": "gbps", "ylabel": "GB/s (chase: 4 bytes per dependent load)",
            "group": "kind", "logx": True, "logy": True,
            "vlines": {"CL_DEVICE_GLOBAL_MEM_CACHE_SIZE": "global_mem_cache_bytes"}}
    size_arg, values_arg = None, "sizes"

    def __init__(self, ctx: Any, sizes: Sequence[int] | None = None,
                 local_size: int = DEFAULT_LOCAL_SIZE, kinds: Sequence[str] | None = None,
                 passes: int = 4, min_bytes: int | None = None, steps: int | None = None,
                 groups: int | None = None) -> None:
        super().__init__(ctx)
        info = ctx.info
        self.sizes = [int(s) for s in (sizes if sizes is not None else default_sizes(info))]
        if not self.sizes or any(s < 64 or s & (s - 1) for s in self.sizes):
            raise _core.InvalidArgumentError(
                f"{self.id}: sizes must be powers of two of at least 64 bytes, got {self.sizes}")
        self.kinds = pick(self.id, KINDS, kinds, "kinds")
        self.local_size = positive(self.id, "work-group size", local_size)
        self.passes = positive(self.id, "passes", passes)
        # Enough reads per launch that the smallest set's launch is not all launch overhead.
        self.min_bytes = positive(self.id, "min_bytes", min_bytes if min_bytes is not None
                                  else (256 << 20 if info.is_gpu else 8 << 20))
        self.steps = positive(self.id, "steps", steps if steps is not None
                              else (1 << 15 if info.is_gpu else 1 << 16))
        if groups is None:
            # Full occupancy many times over; a power of two keeps the reference in closed form.
            groups = pow2_floor(32 * info.compute_units)
        self.groups = positive(self.id, "groups", groups)
        if self.groups & (self.groups - 1) or self.local_size & (self.local_size - 1):
            raise _core.InvalidArgumentError(
                f"{self.id}: work-groups ({self.groups}) and work-group size ({self.local_size}) "
                "must be powers of two")
        self.grid = self.groups * self.local_size
        largest = check_alloc(self.id, info, max(self.sizes), "the largest working set")
        self.program = ctx.program(file="workingset.cl")
        self.src = ctx.buffer(largest)
        self.dst = ctx.buffer(largest // 2 + GUARD * FLOAT)
        self.out = ctx.buffer(self.grid * FLOAT)
        self.pos, self.end = ctx.buffer(FLOAT), ctx.buffer(FLOAT)
        self.rng = np.random.default_rng()
        self.chain: Cycle | None = None  # the cycle now in ``src`` (None: none)
        self.pool: np.ndarray | None = None  # the run's random words for read and copy
        self.pool_in_src = False  # whether ``src`` holds them

    @classmethod
    def quick_options(cls, info: Any) -> dict[str, Any]:
        # The claim compares the smallest and the largest working set: a quick run on a GPU
        # keeps both and every other size between (factors of 4), half the points.
        if not info.is_gpu:
            return {}
        sizes = default_sizes(info)
        return {"sizes": sorted(set(sizes[::2]) | {sizes[-1]})}

    def forget_src(self) -> None:
        """Say that something else was written into ``src``: the next point writes its own."""
        self.chain, self.pool_in_src = None, False

    def random_words(self, n: int) -> np.ndarray:
        """The first n of the run's random words, in ``src`` from the first word on. They are
        drawn once, for the largest set, and written again only after a chase's cycle."""
        if self.pool is None:
            self.pool = random_bytes(self.rng, max(self.sizes) // FLOAT * FLOAT).view(np.uint32)
        if not self.pool_in_src:
            self.chain = None
            write_from(self.src, self.pool)
            self.pool_in_src = True
        return self.pool[:n]

    def meta(self) -> dict[str, Any]:
        info = self.ctx.info
        return {**super().meta(), "global_mem_cache_bytes": info.global_mem_cache_bytes,
                "global_mem_cacheline_bytes": info.global_mem_cacheline_bytes,
                "global_mem_bytes": info.global_mem_bytes, "passes": self.passes,
                "min_bytes": self.min_bytes, "steps": self.steps, "grid": self.grid}

    def points(self) -> list[dict[str, Any]]:
        return [{"kind": k, "size": s, "size_kib": s / 1024} for k in self.kinds for s in self.sizes]

    def peak_kind(self, row: dict[str, Any]) -> str | None:
        return None if row.get("kind") == "chase" else "dram"

    def footprint_bytes(self, row: dict[str, Any]) -> int | None:
        return int(row["size"])  # the walk reads the same set again: its bytes count once

    def words(self, point: dict[str, Any]) -> int:
        """Words in each buffer of the set: the copy splits its working set between two."""
        return point["size"] // (2 * FLOAT if point["kind"] == "copy" else FLOAT)

    def iters(self, n: int) -> int:
        """Loop trips per work-item: ``passes`` sweeps of the set or ``min_bytes`` of reads,
        whichever is more, rounded up to whole sweeps of each work-item's residue class."""
        reads = max(self.passes * n, self.min_bytes // FLOAT)
        r = max(1, n // self.grid)
        trips = -(-reads // self.grid)
        return -(-trips // r) * r

    def install_chain(self, n: int) -> Cycle:
        """A fresh random cycle of n words into ``src`` and the chase's start into ``pos``."""
        self.pool_in_src = False
        with host_only():
            chain = cycle(self.rng, n)
        write_from(self.src, chain.next)
        self.pos.write(np.array([chain.after(0)], np.uint32))
        self.chain = chain
        return chain

    def launch(self, point: dict[str, Any]) -> Launch:
        kind, n = point["kind"], self.words(point)
        columns = {"words": n, "grid": self.grid}
        if kind == "chase":
            # The timed launches follow a valid cycle even unverified; a verified point checks
            # the fresh one installed here (one cycle per point: they cost host time).
            self.install_chain(n)
            k = self.program.kernel("ws_chase").set_args(self.src, np.uint32(self.steps), self.pos,
                                                         self.end)
            return Launch.one(k, 1, 1, self.steps * FLOAT, columns={**columns, "steps": self.steps})
        iters = self.iters(n)
        out = self.out if kind == "read" else self.dst
        k = self.program.kernel(f"ws_{kind}").set_args(self.src, np.uint32(n - 1), np.uint32(iters), out)
        moved = self.grid * iters * FLOAT * (1 if kind == "read" else 2)
        return Launch.one(k, self.grid, self.local_size, moved,
                          columns={**columns, "iters": iters, "sweeps": self.grid * iters / n})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        kind, n = point["kind"], self.words(point)
        if kind == "chase":
            chain = self.chain if self.chain is not None and self.chain.n == n else self.install_chain(n)
            start = np.array([chain.after(0)], np.uint32)
            self.pos.write(start)
            poison_device(self.end)
            launch.run()
            got = np.empty(1, np.uint32)
            self.end.read(got)
            want = np.array([chain.after(self.steps)], np.uint32)
            self.pos.write(start)  # timing starts from the cycle's start again
            return Check(*compare(got, want, "chase end positions"))
        words = self.random_words(n)
        if kind == "read":
            poison_device(self.out)
            launch.run()
            got = np.empty(self.grid, np.uint32)
            self.out.read(got)
            return Check(*compare(got, read_reference(words, self.grid, launch.columns["iters"]),
                                  "work-item sums"))
        poison_device(self.dst)
        launch.run()
        span = min(n + GUARD, self.dst.nbytes // FLOAT)
        got = read_back(self.dst, np.uint32, span)
        ok, detail = compare(got[:n], words, "copied words")
        if ok:
            ok, detail = compare(got[n:], np.full(span - n, POISON_U32, np.uint32),
                                 f"words past the {n} copied (poison that must stay)")
        return Check(ok, detail)

    def finish(self, results: Any) -> None:
        """Latency per load for the chase rows; levels where it jumps; the Guide beside both."""
        for r in results.rows:
            if r.get("kind") == "chase" and r.get("median_ns"):
                r["latency_ns"] = r["median_ns"] / r["steps"]
        ok = [r for r in results.rows if r.get("status") == OK]
        parts = []
        for kind in ("read", "copy"):
            rows = sorted((r for r in ok if r["kind"] == kind), key=lambda r: r["size"])
            if len(rows) >= 2:
                top = max(rows, key=lambda r: r["gbps"])
                last = rows[-1]
                parts.append(f"{kind}: {top['gbps']:.1f} GB/s at {_size(top['size'])}"
                             f"{noise_note(top)} vs {last['gbps']:.1f} GB/s at {_size(last['size'])} "
                             f"({top['gbps'] / last['gbps']:.1f}x)")
        chase = sorted((r for r in ok if r["kind"] == "chase"), key=lambda r: r["size"])
        if chase:
            levels = [f"{_size(b['size'])} ({b['latency_ns']:.1f} ns)" for a, b in zip(chase, chase[1:])
                      if b["latency_ns"] > LEVEL_JUMP * a["latency_ns"]]
            results.meta["latency_steps_at"] = [b["size"] for a, b in zip(chase, chase[1:])
                                                if b["latency_ns"] > LEVEL_JUMP * a["latency_ns"]]
            parts.append(f"dependent loads: {chase[0]['latency_ns']:.1f} ns at {_size(chase[0]['size'])}, "
                         f"{chase[-1]['latency_ns']:.1f} ns at {_size(chase[-1]['size'])}; latency "
                         f"rises more than {LEVEL_JUMP}x at " + (", ".join(levels) if levels else "no size"))
        cache = results.meta.get("global_mem_cache_bytes")
        device = (f"The device reports a {_size(cache)} global-memory cache"
                  if cache else "The device reports no global-memory cache")
        lo, hi = GUIDE_LATENCY_CYCLES
        results.meta["conclusion"] = (
            "; ".join(parts or ["no point verified"]) + f". {device}. The Guide (2009, Table 3.1) "
            f"calls global memory uncached, each access paying {lo}-{hi} cycles whatever the size: "
            "a flat curve. Steps in these curves are cache levels it did not have.")

    summary_columns = ["kind", "size_kib", "status", "median_ns", "spread_pct", "gbps",
                      "fraction_of_peak", "latency_ns", "sweeps"]


def _size(nbytes: float) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):g} {unit}"
    return f"{nbytes:g} B"
