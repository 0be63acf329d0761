"""A CPU device's cache levels: the read curve the CPU way, the chase, and the OS's caches.

* Reads: passes.py's ws_pass by one work-group (one compute unit: its knees lie at one cache
  instance's size, as the OS reports it, however many units share a cache or how the host
  places them) over sets from 16 KiB to ``top`` (2x the
  largest cache the OS or the device reports, within the device's limits), powers of two, read
  again after the chase (``ROUNDS`` rounds in all, each point's fastest kept: a virtual machine's
  cores change speed for seconds at a time), then 4 to the octave between the points around each
  knee (quick: 2). Any size is read by the same kernel, so refined points need no agreement
  check.
* Chases: chase.py's one work-item at powers of two up to 4x the largest read knee (past it
  the chase only adds host time: each point draws a random cycle over its set), in as many
  rounds as the reads, refined around the chase's own knees that no read knee sizes. Both curves' memory is on huge pages where
  Linux gives them (hugepages.py), or the chase measures the TLB.
* Levels: cpulevels.py, against oscaches.py's caches; each level's read bandwidth for the
  whole device is ws_pass by one work-group per compute unit over sets across the level's
  plateau times the instances the units span, the fastest of ``ROUNDS`` rounds, beside the
  stream kernels' read and copy over the plateau's middle set from many work-groups (the
  fastest of all is the level's figure) (a
  virtual machine's host moves its CPUs between cores, and the rate with them: 2-core guest's
  L1 read 300 GB/s with both on one core's two threads, 570 on two cores). The DRAM load latency
  is sweep.py's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..experiments.workingset import pow2_floor
from ..measure.stats import MiB
from . import cpulevels as C
from . import knees as K
from . import streams
from .chase import ChaseRig
from .memory import largest_cache
from .memory import size_text as _size
from .oscaches import is_virtual, os_caches
from .passes import PassReader
from .record import Effort, Figure, best_of, missing, usable
from .sweep import CacheSweep, found_record

CHASE_PAST = 4  # the chase goes this far past the largest read knee
ROUNDS = {True: 2, False: 3}  # rounds of the read curve (quick?), each point's fastest kept
PLATEAU_POINTS = 3  # sets across a level's plateau its device-wide read bandwidth is read at


def cpu_top(info: Any) -> int:
    """The largest set: 2x the largest cache (at least 64 MiB, at most 1 GiB), within a quarter
    of the device's memory and its largest allocation."""
    want = min(1024 * MiB, max(64 * MiB, 2 * largest_cache(info)))
    limit = min(int(info.max_alloc_bytes), int(info.global_mem_bytes) // 4)
    return pow2_floor(min(want, limit))


class CpuSweep(CacheSweep):
    """CacheSweep's curves and levels, measured and named the CPU way (module docstring)."""

    read_what = "read bandwidth of one compute unit (kernels/ceilings.cl ws_pass, one work-group)"

    def __init__(self, ctx: Any, effort: Effort, top: int | None = None) -> None:
        self.ctx, self.effort = ctx, effort
        self.rng = np.random.default_rng()
        self.top = int(top or cpu_top(ctx.info))
        self.reader = PassReader(ctx, self.top, self.rng)
        first = 16 * 1024
        self.sizes = [s for s in (1 << e for e in range(40)) if first <= s <= self.top]
        self.read: dict[int, dict[str, Any]] = {}
        self.chase: dict[int, dict[str, Any]] = {}
        self.notes: list[str] = []
        self.chaser: ChaseRig | None = None  # made once the read curve says how far to go
        self.os = os_caches()
        self.units = int(ctx.info.compute_units)

    def read_point(self, size: int) -> None:
        row = self.reader.measure(size, self.effort, groups=1)
        self.read[int(row["size"])] = row

    def sweep(self) -> None:
        for size in self.sizes:
            self.read_point(size)
        knees = self.knees("read")
        reach = CHASE_PAST * max((k.size for k in knees), default=self.top / CHASE_PAST)
        chase_sizes = [s for s in self.sizes if s <= max(reach, self.sizes[0] * 16)]
        self.chaser = ChaseRig(self.ctx, max(chase_sizes), self.rng)
        for size in chase_sizes:
            self.chase_point(size)
        for _ in range(ROUNDS[self.effort.quick] - 1):  # seconds after the first: both again
            for row in self.read.values():
                if row.get("status") == "ok":
                    self.reader.again(row, self.effort)
            for row in self.chase.values():
                if row.get("status") == "ok":
                    self.chaser.again(row, self.effort)

    def chase_point(self, size: int) -> None:
        assert self.chaser is not None
        row = self.chaser.measure(size, self.effort)
        self.chase[int(row["size"])] = row

    def refine(self) -> None:
        steps = 2 if self.effort.quick else 4
        reads = self.knees("read")
        for knee in reads:
            for size in K.bracket_sizes(knee, steps=steps, align=self.reader.actual(1, groups=1)):
                self.read_point(size)
        for knee in self.knees("read"):  # the chase either side of each (cpulevels.latency_step)
            for size in (knee.size * C.INSIDE, knee.size * C.PAST):
                if self.chaser is not None and size <= self.chaser.next.nbytes:
                    self.chase_point(int(size) >> 12 << 12)

    def levels(self, reported_bytes: int | None = None) -> list[dict[str, Any]]:
        """The levels both curves show, named after the OS's caches where they match them
        (cpulevels.py). ``reported_bytes`` (the device's cache size, a CPU device's copy of the
        OS's largest) is not set beside a level: the OS's own record is."""
        found, notes = C.cpu_levels(self.knees("read"), self.curve("chase"), self.os, self.units)
        self.notes += notes
        out = []
        for level in found:
            end = level.end
            b, l = end.bandwidth, end.latency
            assert b is not None and l is not None
            entry: dict[str, Any] = {
                "name": level.name, "label": level.label, "last": level.last,
                "size_bytes": int(round(level.size)), "unit_bytes": int(round(level.unit_bytes)),
                "found_from": ["bandwidth", "latency"],
                "bandwidth_knee_bytes": int(round(b.size)), "latency_knee_bytes": int(round(l.size)),
                "bracket_bytes": [int(b.below), int(b.above)],
                "read": self.device_read(level, b.before),
                "read_one_unit": self.plateau_figure("read", b.before),
                "latency": self.plateau_figure("chase", l.before),
                "os": C.os_record(level, self.units), "steps": []}
            if level.notes:
                entry["os_note"] = "; ".join(level.notes)
            out.append(entry)
        return out

    def device_read(self, level: C.CpuLevel, plateau: K.Plateau) -> Figure:
        """A level's read bandwidth for the whole device: one work-group per compute unit over
        PLATEAU_POINTS sets across the level's plateau on one compute unit, times the instances
        the units span, each the fastest of ROUNDS rounds of longer timing; the fastest set's."""
        spanned = level.os.spanned(self.units) if level.os else 1
        low, high = plateau.low_size, plateau.high_size
        sizes = sorted({int(low * (high / low) ** (i / max(1, PLATEAU_POINTS - 1)) * spanned)
                        for i in range(PLATEAU_POINTS)})
        rows = []
        for size in sizes:
            row = self.reader.measure(size, self.effort.longer())
            if row.get("status") != "ok":
                return missing("GB/s", self.read_what, f"{row.get('status')}: {row.get('error')}", "failed")
            for _ in range(ROUNDS[self.effort.quick] - 1):
                self.reader.again(row, self.effort.longer())
            rows.append(row)
        row = max(rows, key=lambda r: r["gbps"])
        how = (f"read bandwidth of the device (kernels/ceilings.cl ws_pass, one work-group per "
               f"compute unit), the fastest of {len(rows)} sets across the level's plateau on one "
               f"compute unit times the {spanned} instance(s) the {self.units} units span "
               f"({', '.join(_size(r['size']) for r in rows)}), each the fastest launch of "
               f"{row['rounds']} rounds; OpenCL event times")
        passes = {"value": row["gbps"], "median": row["gbps_median"], "unit": "GB/s", "how": how,
                  "status": "ok", "spread_pct": row["spread_pct"], "n": row["n"], "bytes": row["size"],
                  "sets": {str(r["size"]): r["gbps"] for r in rows}}
        streamed = self.streamed(sizes[len(sizes) // 2])
        best = best_of([passes, *streamed], "GB/s", how)
        return {**best, "kernels_tried": {f["kernel"]: f["value"] for f in [{**passes, "kernel": "ws_pass"},
                                                                         *streamed] if usable(f)}}

    def streamed(self, nbytes: int) -> list[Figure]:
        """The stream kernels' read, copy and add over a set of about ``nbytes`` (their buffers
        together), many work-groups: a level's traffic from every compute unit at once runs
        faster in some patterns than in one share per unit (a last level shared by the units;
        two reads and a write, as a vector addition's, reached 1.07x a read's rate)."""
        out: list[Figure] = []
        for op in ("read", "copy", "add"):
            size = max(1 << 16, nbytes // streams.MOVED[op] >> 16 << 16)
            how = (f"kernels/ceilings.cl stream_{op} over {_size(size)}"
                   + (f" (and {streams.MOVED[op] - 1} more as large)" if op != "read" else "")
                   + f", the fastest verified of two layouts; {streams.COUNTED[op]} / OpenCL event "
                     "time of the fastest launch")
            try:
                rig = streams.StreamRig(self.ctx, size, self.rng)
            except (_core.ClError, _core.InvalidArgumentError, MemoryError):
                continue
            try:
                figs = [rig.figure(op, {**streams.START[False], "layout": layout}, self.effort.longer(), how)
                        for layout in streams.LAYOUTS]
            finally:
                rig.release()
            won = best_of(figs, "GB/s", how)
            if usable(won):
                out.append({**won, "kernel": f"stream_{op}"})
        return out

    def os_summary(self) -> dict[str, Any]:
        """The OS's caches as the profile stores them."""
        return {"caches": [c.as_dict() for c in self.os], "virtual": is_virtual()}

    def curve_meta(self) -> dict[str, Any]:
        r = self.reader
        return {"grid": r.groups * r.local, "local_size": r.local, "min_bytes": r.min_bytes,
                "chase_steps": self.chaser.steps if self.chaser else None,
                "huge_pages": {"read": r.huge, "chase": self.chaser.huge if self.chaser else None}}

    def release(self) -> None:
        self.reader.release()
        if self.chaser is not None:
            self.chaser.release()


def caches(ctx: Any, effort: Effort, top: int | None = None) -> dict[str, Any]:
    """A CPU device's curves, levels and DRAM load latency (CpuSweep), with the OS's caches
    they were held against (``os``)."""
    cpu = CpuSweep(ctx, effort, top)
    try:
        cpu.sweep()
        cpu.refine()
        return {**found_record(cpu, None), "os": cpu.os_summary()}
    finally:
        cpu.release()


__all__ = ["CHASE_PAST", "CpuSweep", "ROUNDS", "caches", "cpu_top"]
