"""Read bandwidth against working-set size on a CPU device: kernels/ceilings.cl's ws_pass.

The GPU's working-set walk (workingset's ws_read: one word per work-item, the grid striding over
the set) tells a CPU device's caches apart poorly: each core's work-items jump a grid apart, one
word each, and the walk runs at a fraction of any level's rate (a CPU profile measured its last
level at 2.6 GB/s, below DRAM's). ws_pass reads the way a CPU streams: one work-group per
compute unit, each owning a contiguous share of the set, read in uint16s, ``passes`` times, so
the reuse distance is the share, what the group's core must hold. The curve's knees then lie where the set outgrows the
caches the compute units hold together: a private cache's size times the units, a shared one's
size (oscaches.py).

On a virtual machine the same point can run at two speeds (a 2-core guest read its L2-sized sets
at 186 GB/s for seconds, then at 350 GB/s: the host had moved its two virtual CPUs from one core's
two threads to two cores), so the sweep reads every point in more than one round, the rounds
seconds apart, and keeps each point's fastest (``again``).

The set's words are ``a i + b`` (fill_affine on the device), so every work-item's sums have a
closed form; each point is verified in full after the output was poisoned. The sums are taken
mod 2^32, and a work-item whose window is shifted by d elements sums each lane to
a 16 d slice passes more, which vanishes mod 2^32 where d slice passes holds 2^28: a read that
ignored the sets' start (``first``, up to 2 MiB in) went unseen at 1024 passes of a 64 KiB set
whenever that start was a multiple of 32 KiB. So a slice of 1024 elements or more is 4 times an
odd number (4 elements less where it was not), and the passes are odd where one more costs at
most a sixteenth of the reads (16 passes or more) or the slice is shorter: every shift of fewer
than 2^19 elements (32 MiB) changes every sum. A set of a power of two bytes keeps its whole
number of passes (1 at 64 MiB, 2 at 32 MiB): the 4 elements its slice gave up do not count
against ``min_bytes``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..measure.checks import compare, poison_device
from ..measure.results import OK
from ..measure.stats import MiB
from .record import Effort, rate, timings
from .hugepages import sweep_buffer
from .streams import affine_sums

ELEMENT = 64  # bytes of a uint16
SLICE_STEP = 4  # the kernel reads four elements per loop trip
# From this many elements per work-item on, a slice is 4 times an odd number, and from this many
# passes on the passes are odd (module docstring).
ODD_SLICE_FROM, ODD_PASSES_FROM = 1024, 16


class PassReader:
    """ws_pass over sets of up to ``top`` bytes (on huge pages where Linux gives them):
    one work-group per compute unit of ``local`` work-items (one: then each work-item streams
    its group's whole share, and no barrier splits the passes; 1.2-1.8x the rate of groups of
    16 at small sets on PoCL), at least ``min_bytes`` read per launch (less up to 0.8%: the
    module docstring)."""

    def __init__(self, ctx: Any, top: int, rng: np.random.Generator, local: int = 1,
                 min_bytes: int = 64 * MiB) -> None:
        self.ctx = ctx
        self.groups = max(1, int(ctx.info.compute_units))
        self.local = int(local)
        self.min_bytes = int(min_bytes)
        self.a = int(rng.integers(0, 2**31)) * 2 + 1
        self.b = int(rng.integers(0, 2**32))
        self.src, self.huge, offset = sweep_buffer(ctx, int(top))
        self.first = offset // ELEMENT  # the element the sets begin at (hugepages.py)
        self.out = ctx.buffer(self.groups * self.local * ELEMENT)
        program = ctx.program(file="ceilings.cl")
        fill = program.kernel("fill_affine")
        fill.set_args(self.src, np.uint32(self.a), np.uint32(self.b)).run((offset + int(top)) // 4, None)
        self.kernel = program.kernel("ws_pass")

    def slice_of(self, size: int, groups: int | None = None) -> int:
        """Elements per work-item for a set of about ``size`` bytes (a whole number of trips)."""
        per_item = size // (ELEMENT * (groups or self.groups) * self.local)
        slice_ = max(SLICE_STEP, per_item // SLICE_STEP * SLICE_STEP)
        if slice_ >= ODD_SLICE_FROM and slice_ // SLICE_STEP % 2 == 0:
            slice_ -= SLICE_STEP
        return slice_

    def actual(self, size: int, groups: int | None = None) -> int:
        """The bytes a set of about ``size`` bytes really holds (shares are whole trips)."""
        groups = groups or self.groups
        return self.slice_of(size, groups) * groups * self.local * ELEMENT

    def measure(self, size: int, effort: Effort, groups: int | None = None) -> dict[str, Any]:
        """One point, by ``groups`` work-groups (default: one per compute unit): verified, then
        timed; ``size`` is rounded to ``actual(size, groups)``."""
        groups = int(groups or self.groups)
        slice_, passes = self.plan(size, groups)
        actual = self.actual(size, groups)
        items = groups * self.local
        kernel = self.kernel.set_args(self.src, np.uint32(self.first), np.uint32(slice_),
                                      np.uint32(passes), self.out)
        row: dict[str, Any] = {"kind": "read", "size": actual, "kernel": "ws_pass", "passes": passes,
                               "groups": groups, "local_size": self.local, "huge_pages": self.huge}
        poison_device(self.out)
        kernel.run(items, self.local)
        got = np.empty(items * 16, np.uint32)
        self.out.read(got)
        ok, detail = compare(got, self.sums(slice_, passes, items), "work-item sums")
        if not ok:
            return {**row, "status": "wrong result", "error": detail}
        fig = rate(timings(kernel, items, self.local, effort), float(actual) * passes, "GB/s", "")
        return {**row, "status": OK, "gbps": fig["value"], "gbps_median": fig["median"],
                "spread_pct": fig["spread_pct"], "n": fig["n"], "median_ns": fig["median_ns"],
                "rounds": 1}

    def plan(self, size: int, groups: int | None = None) -> tuple[int, int]:
        """(elements per work-item, passes) of a point of about ``size`` bytes."""
        slice_ = self.slice_of(size, groups)
        # at least min_bytes, less the up to 8 elements in 1024 a slice's rounding gave up
        floor = self.min_bytes * (ODD_SLICE_FROM - 2 * SLICE_STEP)
        passes = max(1, -(-floor // (ODD_SLICE_FROM * self.actual(size, groups))))
        if passes % 2 == 0 and (passes >= ODD_PASSES_FROM or slice_ < ODD_SLICE_FROM):
            passes += 1                                 # odd: the module docstring
        return slice_, passes

    def sums(self, slice_: int, passes: int, items: int, first: int | None = None) -> np.ndarray:
        """What ws_pass leaves in ``out``: each work-item's lane sums, its window ``slice_``
        elements from ``first`` (default: where the sets begin) on, read ``passes`` times."""
        start = self.first if first is None else first
        firsts = np.uint64(start) + np.arange(items, dtype=np.uint64) * np.uint64(slice_)
        elements = np.uint64(slice_) * firsts + np.uint64(slice_ * (slice_ - 1) // 2)
        want = affine_sums(self.a, self.b, 16, elements, slice_).astype(np.uint64)
        return ((want * np.uint64(passes)) & np.uint64(0xFFFFFFFF)).astype(np.uint32).reshape(-1)

    def again(self, row: dict[str, Any], effort: Effort) -> float:
        """Time a verified point once more (the same launch: its result was checked), keeping
        the faster figure in ``row``: a busy machine's rounds run at different speeds. Returns
        this round's own figure (GB/s)."""
        groups = int(row["groups"])
        slice_ = self.slice_of(int(row["size"]), groups)
        kernel = self.kernel.set_args(self.src, np.uint32(self.first), np.uint32(slice_),
                                      np.uint32(row["passes"]), self.out)
        fig = rate(timings(kernel, groups * self.local, self.local, effort),
                   float(row["size"]) * row["passes"], "GB/s", "")
        row["rounds"] = int(row.get("rounds", 1)) + 1
        if fig["value"] > row["gbps"]:
            row.update(gbps=fig["value"], gbps_median=fig["median"], spread_pct=fig["spread_pct"],
                       n=fig["n"], median_ns=fig["median_ns"])
        return float(fig["value"])

    def release(self) -> None:
        self.src.release()
        self.out.release()


__all__ = ["ELEMENT", "PassReader"]
