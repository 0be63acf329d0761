"""Each cache level's copy ceiling: a copy looped inside one launch over a set the level holds.

A level can serve reads and writes together faster than reads alone: on an H200 the
``workingset`` experiment's copy of 2-8 MiB sets ran at 1.22-1.24x the L2's read plateau. A
kernel that reads and writes through a level is held against the higher of the level's read and
copy figures (binding.memory_roof). A stream copy of such a set, one pass per launch, cannot
measure that: one pass of a few MiB is shorter than a launch costs (17 us on an H200). So
kernels/ceilings.cl's ``copy_passes`` copies the set again and again inside one launch, each
work-item the same elements every pass (no two write one element); on a CPU device a barrier
ends each pass, so a group copies its whole share between two copies of an element and the
level holding the set serves them (without it a CPU runs each work-item's passes back to back
from its L1). A CPU device also runs the groups of a core one after another, each through all
its passes: a group's share, not the set, is what the core's caches hold, so a shape whose
share would fit the level below is not tried there (4 groups per compute unit copied a 256 KiB
set at L1's 350 GB/s on PoCL, one group per unit at the L2's 105).

What is searched, as for the other ceilings (search.py): the vector width, the work-group size,
the work-groups per compute unit and (on a CPU device) the layout, at each of a few sets across
the level: powers of two where its read plateau lies, above twice the previous level's size and
at most half its own (``sets``). Every launch moves about ``LAUNCH_BYTES`` whatever the set
(the passes follow from it), so a level costs about the same at any size. The level's figure is
the fastest verified set and shape, with both recorded (``bytes``, ``shape``, ``shapes_tried``,
``sets``).

Verification: the source holds ``a i + b`` (fill_affine, random a and b); after a launch into a
poisoned destination every copied word is compared with NumPy, and the words past the set must
keep their poison.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..measure.checks import POISON_U32, compare, poison_device
from ..measure.stats import MiB
from . import search
from .record import Effort, Figure, best_of, fastest, guarded, missing, rate, timings, usable
from .streams import LAYOUTS

# (GPU?, quick?) -> bytes read + written per launch: tens of microseconds on a GPU's L2 (well
# past the launch's ramp), a few milliseconds on a CPU device's last level.
LAUNCH_BYTES = {(True, False): 1024 * MiB, (True, True): 512 * MiB,
                (False, False): 64 * MiB, (False, True): 16 * MiB}
SETS = {(True, False): 4, (True, True): 2, (False, False): 3, (False, True): 2}  # sets per level
SMALLEST = 16 << 10  # no set below this (a few elements per work-item at most)
GUARD_WORDS = 256  # words past the set that must keep their poison
PROBE_LAUNCHES = 2
# Where each device kind's search starts and the values it tries per axis. A CPU device copies a
# set its L1 holds 3-6x faster in groups of 16 than of 64 (PoCL, 2 cores), and its layout is
# blocked (a run per work-item: the grid's walk reached a seventh of it over 32 MiB); one group
# per compute unit is the one shape whose share is the core's whole part of the set.
START = {True: {"vector": 1, "local_size": 256, "groups_per_cu": 8, "layout": "grid"},
         False: {"vector": 16, "local_size": 16, "groups_per_cu": 1, "layout": "blocked"}}
AXES = {
    (True, True): {"vector": (1, 4), "groups_per_cu": (4, 16)},
    (True, False): {"vector": (1, 2, 4), "groups_per_cu": (2, 4, 16, 32), "local_size": (128, 512)},
    (False, True): {"vector": (8, 16), "local_size": (16, 64), "groups_per_cu": (4,)},
    (False, False): {"vector": (4, 8, 16), "local_size": (16, 64, 256), "groups_per_cu": (4, 16),
                     "layout": LAYOUTS},
}


def plateau_bytes(level: dict[str, Any]) -> tuple[int, int] | None:
    """The sets (whole device, bytes) across which the level's read curve ran at its rate: a
    CPU device's plateau on one compute unit times the instances its units span, else the
    read figure's own; None where the level has no read plateau."""
    one = level.get("read_one_unit")
    if usable(one) and one.get("sizes"):
        span = (level.get("os") or {}).get("spanned") or max(1, round(level["size_bytes"] / (level.get("unit_bytes") or level["size_bytes"])))
        return int(one["sizes"][0]) * span, int(one["sizes"][1]) * span
    read = level.get("read")
    if usable(read) and read.get("sizes"):
        return int(read["sizes"][0]), int(read["sizes"][1])
    return None


def sets(levels: list[dict[str, Any]], at: int, count: int, floor: int = 0) -> list[int]:
    """The copy's working sets (source and destination together) for level ``at``: powers of
    two above twice the previous level's size (and ``floor``), at most half this level's,
    within its read plateau where it has one; the ``count`` largest (a set near the previous
    level's size is partly served by it). Where no power of two fits, the middle of that range."""
    size = int(levels[at]["size_bytes"])
    low = max(SMALLEST, floor, 2 * int(levels[at - 1]["size_bytes"]) if at else 0)
    high = size // 2
    plateau = plateau_bytes(levels[at])
    if plateau is not None and max(low, plateau[0]) <= min(high, plateau[1]):
        low, high = max(low, plateau[0]), min(high, plateau[1])
    if high < low:
        return []
    powers = [1 << e for e in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << e <= high]
    return powers[-count:] if powers else [int((low * high) ** 0.5) >> 7 << 7]


def share_floor(ctx: Any, levels: list[dict[str, Any]], at: int) -> int:
    """The least bytes one work-group of a CPU device may copy for its core's caches to be
    level ``at``'s: twice an instance of the level before (none for the first)."""
    if not at:
        return 0
    below = levels[at - 1]
    unit = below.get("unit_bytes") or int(below["size_bytes"]) // max(1, int(ctx.info.compute_units))
    return 2 * int(unit)


class CopyRig:
    """``copy_passes`` over sets up to ``largest`` bytes (two buffers of half that, plus a
    guard), the source's words ``a i + b``."""

    def __init__(self, ctx: Any, largest: int, effort: Effort, rng: np.random.Generator,
                 min_share: int = 0) -> None:
        self.ctx, self.effort = ctx, effort
        self.gpu = bool(ctx.info.is_gpu)
        self.min_share = 0 if self.gpu else int(min_share)  # the least a CPU group's share may be
        self.words = largest // 8 + GUARD_WORDS
        self.a = int(rng.integers(0, 2**31)) * 2 + 1
        self.b = int(rng.integers(0, 2**32))
        self.src, self.dst = ctx.buffer(self.words * 4), ctx.buffer(self.words * 4)
        self.source: str | None = None  # the kernel's source where not kernels/ceilings.cl (tests)
        fill = ctx.program(file="ceilings.cl").kernel("fill_affine")
        fill.set_args(self.src, np.uint32(self.a), np.uint32(self.b)).run(self.words, None)

    def release(self) -> None:
        self.src.release()
        self.dst.release()

    def how(self, nbytes: int) -> str:
        return (f"kernels/ceilings.cl copy_passes: a set of {nbytes / MiB:.3g} MiB (source and "
                "destination) copied again and again inside one launch"
                + (", a barrier between passes" if not self.gpu else "")
                + ", the fastest verified of the sets and launch shapes tried (vector width, "
                  "work-group size, work-groups per compute unit, layout); bytes read + written / "
                  "OpenCL event time of the fastest launch")

    def launch(self, shape: search.Shape, nbytes: int) -> tuple[Any, int, int, int, float]:
        """(kernel with its arguments set, global size, work-group size, elements, bytes moved)
        for a set of ``nbytes`` at ``shape``; ValueError where the shape cannot run."""
        v, local = int(shape["vector"]), int(shape["local_size"])
        if local > int(self.ctx.info.max_work_group_size):
            raise ValueError(f"work-group size {local} is above the device's limit")
        n = nbytes // (8 * v)
        if n < 1:
            raise ValueError(f"a set of {nbytes} bytes holds no uint{v} element per buffer")
        groups = int(self.ctx.info.compute_units) * int(shape["groups_per_cu"])
        if nbytes < self.min_share * groups:
            raise ValueError(f"{groups} groups' shares of {nbytes} bytes would fit the level below")
        g = groups * local
        passes = max(1, LAUNCH_BYTES[(self.gpu, self.effort.quick)] // (8 * v * n))
        defines = {"COPY_PASSES": 1, "V": v, "BLOCKED" if shape["layout"] == "blocked" else "GRID": 1,
                   **({} if self.gpu else {"BARRIER": 1})}
        where = {"source": self.source} if self.source else {"file": "ceilings.cl"}
        kernel = self.ctx.program(defines=defines, **where).kernel("copy_passes")
        kernel.set_args(self.src, self.dst, np.uint32(n), np.uint32(passes))
        return kernel, g, local, n, float(8 * v * n) * passes

    def probe(self, shape: search.Shape, nbytes: int) -> float | None:
        """GB/s at the fastest of a few launches, unverified; None where the shape cannot run."""
        try:
            kernel, g, local, _, moved = self.launch(shape, nbytes)
        except ValueError:
            return None
        return moved / fastest(kernel.time(g, local, warmup=1, repeats=PROBE_LAUNCHES, method="events"))

    def check(self, shape: search.Shape, nbytes: int) -> tuple[bool, str]:
        """One launch into a poisoned destination: the copied words, and the poison after them."""
        kernel, g, local, n, _ = self.launch(shape, nbytes)
        poison_device(self.dst)
        kernel.run(g, local)
        words = n * int(shape["vector"])
        got = np.empty(min(words + GUARD_WORDS, self.words), np.uint32)
        self.dst.read(got)
        want = np.uint32(self.a) * np.arange(words, dtype=np.uint32) + np.uint32(self.b)
        ok, detail = compare(got[:words], want, "copied words")
        if ok:
            ok, detail = compare(got[words:], np.full(got.size - words, POISON_U32, np.uint32),
                                 f"words past the {words} copied (poison that must stay)")
        return ok, detail

    def figure(self, shape: search.Shape, nbytes: int) -> Figure:
        """The copy at ``shape``: verified, then timed (the effort's longer launches)."""
        how = self.how(nbytes)
        ok, detail = self.check(shape, nbytes)
        if not ok:
            return missing("GB/s", how, f"wrong result at {search.label(shape)}: {detail}", "failed")
        kernel, g, local, n, moved = self.launch(shape, nbytes)
        groups = g // local
        return rate(timings(kernel, g, local, self.effort.longer()), moved, "GB/s", how,
                    bytes=8 * int(shape["vector"]) * n, passes=int(moved // (8 * int(shape["vector"]) * n)),
                    work_groups=groups, groups_per_cu=groups / int(self.ctx.info.compute_units))


def level_copy(ctx: Any, levels: list[dict[str, Any]], at: int, effort: Effort,
               rng: np.random.Generator, start: search.Shape | None = None,
               axes: dict[str, Any] | None = None, at_sets: list[int] | None = None) -> Figure:
    """Level ``at``'s copy ceiling: the fastest verified set and launch shape (module
    docstring); ``start``, ``axes`` and ``at_sets`` override the search's (refresh.py starts it
    from a kernel's shape and working set)."""
    gpu = bool(ctx.info.is_gpu)
    start = start or START[gpu]
    axes = axes if axes is not None else AXES[(gpu, effort.quick)]
    # A CPU device's work-groups (one per compute unit at least) must each copy more than the
    # level below holds: a level found just above another one whose instance is a unit's
    # (no OS cache beside it) may leave no such set within half its own size.
    floor = 0 if gpu else share_floor(ctx, levels, at)
    chosen = at_sets or sets(levels, at, SETS[(gpu, effort.quick)],
                             floor * max(1, int(ctx.info.compute_units)))
    what = f"kernels/ceilings.cl copy_passes within {levels[at]['name']}"
    if not chosen:
        return missing("GB/s", what, "no set lies above twice the previous level (on a CPU "
                       "device, twice its instance per work-group) and within half this one",
                       "skipped")
    try:
        rig = CopyRig(ctx, max(chosen), effort, rng, min_share=floor)
    except MemoryError as exc:
        return missing("GB/s", what, f"MemoryError: {exc}", "failed")
    try:
        found = {size: guarded("GB/s", rig.how(size), lambda size=size: search.best_shape(
            start, axes, search.refused(lambda s: rig.probe(s, size)),
            lambda s: rig.figure(s, size), "GB/s", rig.how(size))) for size in chosen}
    finally:
        rig.release()
    best = best_of(list(found.values()), "GB/s", what)
    return {**best, "sets": {str(k): f.get("value") for k, f in found.items()}} if usable(best) else best


def add_copies(ctx: Any, levels: list[dict[str, Any]], effort: Effort,
               rng: np.random.Generator | None = None) -> None:
    """Each level's copy ceiling into its record (``copy``)."""
    rng = rng or np.random.default_rng()
    for at, level in enumerate(levels):
        level["copy"] = guarded("GB/s", f"kernels/ceilings.cl copy_passes within {level['name']}",
                                lambda at=at: level_copy(ctx, levels, at, effort, rng))


__all__ = ["AXES", "CopyRig", "LAUNCH_BYTES", "SETS", "START", "add_copies", "level_copy",
           "plateau_bytes", "sets", "share_floor"]
