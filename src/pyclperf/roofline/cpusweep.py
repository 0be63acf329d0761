"""A CPU device's cache levels: the read curve the CPU way, the chase, and the OS's caches.

* Reads: passes.py's ws_pass by one work-group (one compute unit: its knees lie at one cache
  instance's size, as the OS reports it, however many units share a cache or how the host
  places them) over sets from 16 KiB to ``top`` (4x the largest cache the OS or the device
  reports, within the device's limits), powers of two and the sets between up to
  ``levels.PER_UNIT_MAX`` (``sweep_sizes``), read again after the chase (``ROUNDS`` rounds in
  all, each point's fastest kept: a virtual machine's cores change speed for seconds at a
  time). Sets 4 to the octave between the points around
  each knee (quick: 2, but 4 up to ``levels.PER_UNIT_MAX``) are added before the chase, so that
  the later rounds read them too, and after it around each chase knee no read knee sizes (where
  the curves disagree, the read curve needs points of its own there to agree or not). With 2 to
  the octave the L1's knee rested on one set, 45 KiB, which a co-runner on the core's other
  hardware thread (below) pushes out of a 48 KiB L1 for seconds while 32 KiB stays in it: the
  knee fell to 38-40 KiB. Any size is read by the same kernel, so refined points need no
  agreement check.
* Chases: chase.py's one work-item at 4 and 8 KiB and the read curve's sets up to 4x the
  largest read knee or the largest cache, whichever is larger (past it the chase only adds host
  time: each point draws a random cycle over its set), in as many
  rounds as the reads, and either side of each read knee (cpulevels.latency_step). Both
  curves' memory is on huge pages where Linux gives them (hugepages.py), or the chase measures
  the TLB.
* Settling: the points of both curves within ``NEAR`` of each candidate knee (the read
  curve's, and the chase's where no read knee lies) are measured again in rounds over the span
  in turn, each keeping its fastest, until one round comes within ``AGREE`` of every point's
  fastest and no chase knee in the span lacks its read knee; ``SETTLE`` bounds the rounds and
  seconds. The chase's sets either side of each read knee are drawn after it, at the settled
  knees. Why: on a loaded host another process's work on the core's other hardware thread (a
  virtual machine's CPUs may be two threads of one host core) slows one compute unit's reads
  for milliseconds to seconds at a time, L1-sized sets to 0.55-0.7x, L2-sized ones to 0.8x,
  and pushes a set that nearly fills the L1 (45 KiB of 48) out of it. A point's figure of two
  rounds of three launches said which moments it happened to be timed in: one L1-sized set had
  a quiet moment (213 GB/s), its neighbour none (145), and the read curve lost its L1 knee (the
  chase still showed it), or placed it at 38 KiB for 48; a 32 KiB chase read 4.2 ns between
  16 KiB's 2.1 and 64 KiB's 3.9, and the chase's step there did not stand out. Rounds over a
  span's points in turn meet the same quiet moments; a round in which every point comes near
  its fastest shows the fastest figures belong together (on a quiet machine the first round
  does); a level the chase shows keeps being read until the read curve shows it too or the
  span's time is up, so that measuring again confirms or refutes it. Each read is timed for
  ``SAMPLE_S`` at least (about 30 launches of an L1-sized set: quiet moments come and go in
  milliseconds). Agreement alone can mislead: a 2-core guest's host runs the other thread of
  the core for stretches of up to 2 s, in which L1-sized reads fall to the L2's rate and 38-45
  KiB sets out of the L1, every round agreeing. So the span of a compute unit's own cache is read
  for ``STEADY`` seconds at least, and a span where the chase steps as a level's end and the
  read curve does not for up to ``DISAGREE``'s (a quick profile: 13-22 s instead of 11-14 s on
  that guest; the L1 found in 10 of 10 profiles under the sanitizer's build, 9 of 12 before).
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

import time
from dataclasses import replace
from typing import Any

import numpy as np

from .. import _core
from ..experiments.workingset import pow2_floor
from ..measure.stats import MiB
from . import cpulevels as C
from . import knees as K
from . import levels as L
from . import streams
from .chase import ChaseRig
from .memory import largest_cache
from .memory import size_text as _size
from .oscaches import is_virtual, os_caches
from .passes import PassReader
from .record import Effort, Figure, best_of, missing, usable
from .sweep import CacheSweep, found_record

CHASE_PAST = 4  # the chase goes this far past the largest read knee
FIRST = 16 * 1024  # the smallest read set: below, a pass's own overhead weighs on one unit's rate
# The chase's sets below FIRST: a dependent load costs the same at any set inside the L1, and
# a level's inside needs points of its own (cpulevels.latency_step: up to 0.75x a 32 KiB L1's
# knee an AMD EPYC guest's chase had only 16 and 28 KiB, and one slow round at 28 KiB hid the
# L1).
CHASE_FIRST = [4 * 1024, 8 * 1024]
ROUNDS = {True: 2, False: 3}  # rounds of the read curve (quick?), each point's fastest kept
# Settling (module docstring). NEAR: a knee found from disturbed points can lie 1.6x off its
# level (79 KiB for a 48 KiB L1), and its span must still hold both plateaus' near ends.
NEAR, AGREE, SAMPLE_S = 6.0, 1.08, 0.01
# (rounds, seconds) per span and seconds in all (quick?): on a loaded 2-core host the L1 span's
# rounds (0.1 s) agreed after 1 to 6; spans past the L2 do not always agree, so they stop here:
# settling adds at most 0.7 s to a quick profile.
SETTLE = {True: (12, 0.4, 0.7), False: (24, 2.0, 5.0)}
# (rounds, seconds) for a span where the chase steps as a level's end and the read curve does
# not, on top of SETTLE's total: a 2-core guest's host runs one compute unit's L1-sized reads at
# 135 GB/s instead of 238, its L2 rate, in stretches of up to 2 s (seen 30 times a minute
# mixed with milliseconds at full speed), and a span whose rounds all fall in one reads no L1.
DISAGREE = {True: (96, 3.0), False: (192, 6.0)}
# Seconds a span around a knee of a compute unit's own size class (levels.PER_UNIT_MAX) is read
# at least, agreeing or not (quick?): in those stretches the host's other thread on the core
# also takes half the L1, so 38 and 45 KiB sets read at 160 GB/s round after round, every round
# agreeing, and the knee fell to 37 KiB; the span must outlast a stretch to meet the full speed.
STEADY = {True: 2.0, False: 4.0}
PLATEAU_POINTS = 3  # sets across a level's plateau its device-wide read bandwidth is read at


def cpu_top(info: Any) -> int:
    """The largest set: 4x the largest cache (at least 64 MiB, at most 1 GiB), within a quarter
    of the device's memory and its largest allocation. Not 2x: a shared last level keeps part
    of a set twice its size, and the read curve needs a last plateau past its knee (an AMD EPYC
    guest's 32 MiB L3: 27, 20 and 14 GB/s at 16, 32 and 64 MiB, no plateau)."""
    want = min(1024 * MiB, max(64 * MiB, 4 * largest_cache(info)))
    limit = min(int(info.max_alloc_bytes), int(info.global_mem_bytes) // 4)
    return pow2_floor(min(want, limit))


def sweep_sizes(top: int) -> list[int]:
    """The read curve's first sets: powers of two from ``FIRST`` to ``top``, and the sets between
    (2 to the octave) up to levels.PER_UNIT_MAX, a compute unit's own caches. With powers of
    two alone a 32 KiB L1d's plateau held two sets, 16 and 32 KiB, so one slow round made it a
    slope (an AMD EPYC guest's: no L1 knee, or one of 1.27x that did not stand out); now it holds
    three, and its knee lies between 32 and 45 KiB before the bracket's sets refine it."""
    out = []
    for e in range(40):
        size = 1 << e
        if FIRST <= size <= top:
            out.append(size)
            half = int(size * 2 ** 0.5) >> 8 << 8
            if size < L.PER_UNIT_MAX and half <= top:
                out.append(half)
    return out


class CpuSweep(CacheSweep):
    """CacheSweep's curves and levels, measured and named the CPU way (module docstring)."""

    read_what = "read bandwidth of one compute unit (kernels/ceilings.cl ws_pass, one work-group)"

    def __init__(self, ctx: Any, effort: Effort, top: int | None = None) -> None:
        self.ctx, self.effort = ctx, effort
        self.rng = np.random.default_rng()
        self.top = int(top or cpu_top(ctx.info))
        self.reader = PassReader(ctx, self.top, self.rng)
        self.sizes = sweep_sizes(self.top)
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
        self.bracket(knees)  # before the chase: read again with the rest after it
        # Past the OS's largest cache too: a last level whose read knee shows only once the
        # curve is settled needs chase points past it (an AMD EPYC guest's first pass found
        # knees up to 491 KiB, and its 15 MiB last level had no chase past it).
        reach = max(CHASE_PAST * max((k.size for k in knees), default=self.top / CHASE_PAST),
                    largest_cache(self.ctx.info))
        reach = min(self.top, max(reach, self.sizes[0] * 16))
        chase_sizes = CHASE_FIRST + [s for s in self.sizes if s <= reach]
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

    def bracket(self, knees: list[K.Knee]) -> None:
        """Reads between the two sets around each of ``knees`` not refined yet: 4 to the octave
        around a knee of a compute unit's own size class (levels.PER_UNIT_MAX) also in a quick
        profile, where a read point costs milliseconds and one set between two powers of two is
        not enough (module docstring), 2 elsewhere."""
        for knee in knees:
            # Refined already (the sweep's sets are 2x apart, or 1.41x below PER_UNIT_MAX):
            # more sets there would only cut a gradual step (an L2 a co-runner shares) into two
            # knees, neither a level.
            if knee.above < 1.3 * knee.below:
                continue
            steps = 4 if not self.effort.quick or knee.above <= L.PER_UNIT_MAX else 2
            for size in K.bracket_sizes(knee, steps=steps, align=self.reader.actual(1, groups=1)):
                if self.reader.actual(size, groups=1) not in self.read:
                    self.read_point(size)

    def refine(self) -> None:
        # Between the points around each read knee, and around each chase knee no read knee
        # sizes: there the curves disagree, and the read curve's points must say which is right.
        reads = self.knees("read")
        self.bracket([*reads, *self.unmatched(reads)])
        self.settle()
        for knee in self.knees("read"):  # the chase either side of each (cpulevels.latency_step)
            for size in (knee.size * C.INSIDE, knee.size * C.PAST):
                if self.chaser is not None and size <= self.chaser.next.nbytes:
                    self.chase_point(int(size) >> 12 << 12)

    def unmatched(self, reads: list[K.Knee]) -> list[K.Knee]:
        """The chase's knees that step as a level's end does (cpulevels.stands_out, by
        CHASE_STEP) where no read knee lies (within levels.MATCH): the curves disagree there.
        The chase's smaller steps inside a level (its L2's climb) are no disagreement."""
        return [k for k in self.knees("chase") if C.stands_out(k, C.CHASE_STEP)
                and not any(max(r.size / k.size, k.size / r.size) <= L.MATCH for r in reads)]

    def settle(self) -> None:
        """Measure the points of both curves near each candidate knee (knees.spans) again, in
        rounds over the span's points in turn, each point keeping its fastest, until a round
        comes within AGREE of every point's fastest and the span holds no chase knee the read
        curve lacks, or the span's rounds or seconds run out (SETTLE; module docstring)."""
        rounds, seconds, total = SETTLE[self.effort.quick]
        knees = self.knees("read")
        lacking = self.unmatched(knees)
        end = time.monotonic() + total
        for low, high in K.spans([k.size for k in [*knees, *lacking]], NEAR, L.MATCH):
            now = time.monotonic()
            own = low * NEAR <= L.PER_UNIT_MAX  # the span of a compute unit's own cache
            at_least = now + STEADY[self.effort.quick] if own else now
            if any(low <= k.size <= high for k in lacking):  # the curves disagree: read longer
                more, longer = DISAGREE[self.effort.quick]
                self.settle_span(low, high, more, now + max(longer, STEADY[self.effort.quick]), at_least)
            elif own:
                self.settle_span(low, high, DISAGREE[self.effort.quick][0], at_least, at_least)
            else:
                self.settle_span(low, high, rounds, min(end, now + seconds))

    def settle_span(self, low: float, high: float, rounds: int, deadline: float,
                    at_least: float = 0.0) -> None:
        """settle's rounds over the points from ``low`` to ``high`` bytes, stopped at
        ``deadline`` (time.monotonic) also inside a round: a large set's read or chase takes
        tenths of a second on a loaded host; agreement stops them only after ``at_least``."""
        effort = replace(self.effort, min_time_s=max(self.effort.min_time_s, SAMPLE_S))
        reads = [self.read[s] for s in self.curve("read")[0] if low <= s <= high]
        chases = [self.chase[s] for s in self.curve("chase")[0] if low <= s <= high]
        chaser = self.chaser
        for _ in range(rounds if len(reads) > 1 else 0):
            agree = []
            for row in reads:
                if time.monotonic() > deadline:
                    return
                agree.append(self.reader.again(row, effort) * AGREE >= row["gbps"])
            for row in chases if chaser is not None else []:
                if time.monotonic() > deadline:
                    return
                agree.append(chaser.again(row, self.effort) <= row["latency_ns"] * AGREE)
            lacking = [k for k in self.unmatched(self.knees("read")) if low <= k.size <= high]
            if all(agree) and not lacking and time.monotonic() >= at_least:
                return

    def levels(self, reported_bytes: int | None = None) -> list[dict[str, Any]]:
        """The levels both curves show, named after the OS's caches where they match them
        (cpulevels.py). ``reported_bytes`` (the device's cache size, a CPU device's copy of the
        OS's largest) is not set beside a level: the OS's own record is."""
        found, notes = C.cpu_levels(self.knees("read"), self.curve("chase"), self.os, self.units,
                                    read=self.curve("read"))
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


__all__ = ["CHASE_FIRST", "CHASE_PAST", "CpuSweep", "DISAGREE", "FIRST", "NEAR", "ROUNDS", "SETTLE",
           "STEADY", "caches", "cpu_top", "sweep_sizes"]
