"""A ceiling measured again when a kernel beat it: the profile's search, widened by the launch
shape that kernel used.

A roof is what the device can do; a kernel that runs more than ``BEATEN`` faster than one has
shown the profile wrong (its search missed the shape that kernel found). ``remeasure`` runs that
ceiling's search again starting from the kernel's shape (its work-group size and vector width,
where they are known) and stores the new figure where it is higher, saying what prompted it:

* DRAM read, write or copy: the stream kernels over the profile's DRAM buffers (streams.py);
* a cache level's read roof: stream reads, copies and additions over a working set that fits
  the level, the highest replacing the level's read figure where it is higher;
* a cache level's copy roof: its copy looped inside one launch (levelcopy.py), searched from the
  kernel's shape at the kernel's working set where it fits the level;
* local memory and the compute ceilings: their own searches (ceilings.py, compute.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import search, streams
from .record import Effort, Figure, usable

BEATEN = 1.05  # a kernel this much above a roof shows the roof wrong
DRAM_NAMES = {"DRAM read": ("dram_read", "read"), "DRAM write": ("dram_write", "write"),
              "DRAM copy": ("dram_copy", "copy")}


@dataclass(frozen=True)
class Hints:
    """What is known of the launch shape of a kernel that beat a roof."""

    local_size: int | None = None
    vector: int | None = None
    working_set: int | None = None

    def apply(self, start: search.Shape, axes: dict[str, Any]) -> tuple[search.Shape, dict[str, Any]]:
        """The search's start moved to the kernel's shape, and its values added to the axes."""
        start, axes = dict(start), {k: tuple(v) for k, v in axes.items()}
        for axis, value in (("local_size", self.local_size), ("vector", self.vector)):
            if value and axis in start:
                start[axis] = int(value)
                axes[axis] = tuple(dict.fromkeys((*axes.get(axis, ()), int(value))))
        return start, axes


def _stream(ctx: Any, op: str, nbytes: int, hints: Hints, effort: Effort, rng: np.random.Generator,
            what: str) -> Figure:
    gpu = bool(ctx.info.is_gpu)
    start, axes = hints.apply(streams.START[gpu], streams.AXES[(gpu, False)])
    if hints.vector:  # a narrow kernel's width with the stream's items and layouts
        axes["vector"] = tuple(dict.fromkeys((*axes["vector"], 1, 2, 4)))
    rig = streams.StreamRig(ctx, nbytes, rng)
    start_from = " from the shape of a kernel that beat the roof" if any(vars(hints).values()) else ""
    how = (f"kernels/ceilings.cl stream_{op} over {nbytes / (1 << 20):.3g} MiB ({what}), the fastest "
           f"verified of the launch shapes tried{start_from}; "
           f"{streams.COUNTED[op]} / OpenCL event time of the fastest launch")
    try:
        return search.best_shape(start, axes, search.refused(lambda s: rig.probe(op, s)),
                                 lambda s: rig.figure(op, s, effort, how), "GB/s", how)
    finally:
        rig.release()


def level_streams(ctx: Any, caches: list[dict[str, Any]], at: int, hints: Hints, effort: Effort,
                  rng: np.random.Generator) -> Figure:
    """The fastest of stream reads, copies and additions over a working set that cache level
    ``at`` holds and the one before it does not: a level serves a copy or an addition (reads
    and writes together) faster than a read alone, so the level's roof is the best of the three."""
    level = caches[at]
    below = 2 * int(caches[at - 1]["size_bytes"]) if at else 1 << 16
    # The kernel's working set where one beat the roof, else a set well inside the level: a GPU's
    # L2 is served fastest by the partition near the compute units (the H200's read curve steps
    # inside its L2), where the read plateau was measured too.
    inside = min(int(level["size_bytes"]) // 8, 8 << 20)
    fits = max(below, min(int(hints.working_set or inside), int(level["size_bytes"])))
    tried = [_stream(ctx, op, max(1 << 16, fits // streams.MOVED[op] >> 16 << 16), hints,
                     effort, rng, f"within {level['name']}") for op in ("read", "copy", "add")]
    good = [f for f in tried if usable(f)]
    return max(good, key=lambda f: f["value"]) if good else tried[0]


def _level_copy(ctx: Any, caches: list[dict[str, Any]], at: int, hints: Hints, effort: Effort,
                rng: np.random.Generator) -> Figure:
    """Level ``at``'s looped copy searched from the kernel's shape, over the level's own sets
    and the kernel's working set where it fits the level."""
    from . import levelcopy

    gpu = bool(ctx.info.is_gpu)
    start, axes = hints.apply(levelcopy.START[gpu], levelcopy.AXES[(gpu, False)])
    sets = levelcopy.sets(caches, at, levelcopy.SETS[(gpu, False)])
    if hints.working_set and hints.working_set <= int(caches[at]["size_bytes"]):
        sets = sorted({*sets, int(hints.working_set) >> 7 << 7})
    return levelcopy.level_copy(ctx, caches, at, effort, rng, start, axes, sets)


def _new_figure(ctx: Any, profile: Any, roof: Any, hints: Hints, effort: Effort,
                rng: np.random.Generator) -> tuple[dict[str, Any], str, Figure]:
    """(the record holding the figure, its key, the figure measured again)."""
    from . import ceilings, compute
    from .memory import dram_bytes

    if roof.kind == "dram":
        name, op = DRAM_NAMES[roof.name]
        nbytes = int(profile.ceilings[name].get("bytes") or dram_bytes(ctx.info, profile.quick))
        return profile.ceilings, name, _stream(ctx, op, nbytes, hints, effort, rng, "DRAM")
    if roof.kind == "cache":
        at = [i for i, c in enumerate(profile.caches) if c["size_bytes"] == roof.size_bytes][0]
        if roof.traffic == "copy":
            return profile.caches[at], "copy", _level_copy(ctx, profile.caches, at, hints, effort, rng)
        return profile.caches[at], "read", level_streams(ctx, profile.caches, at, hints, effort,
                                                         rng)
    if roof.kind == "local":
        rig = ceilings.LocalRig(ctx, effort, rng)
        gpu = bool(ctx.info.is_gpu)
        start, axes = hints.apply(ceilings.LOCAL_START[gpu], ceilings.LOCAL_AXES[(gpu, False)])
        fig = search.best_shape(start, axes, search.refused(rig.probe), rig.figure, "GB/s", rig.how())
        return profile.ceilings, "local", fig
    name = roof.name.lower()
    chain = compute.ChainRig(ctx, name, effort, rng)
    gpu = bool(ctx.info.is_gpu)
    start, axes = hints.apply(compute.start_shape(ctx, name, False),
                              {"vector": compute.WIDTHS[(gpu, False)][name], **compute.OTHER_AXES[(gpu, False)]})
    fig = search.best_shape(start, axes, search.refused(chain.probe), chain.figure, chain.p.unit, chain.how())
    return profile.ceilings, name, fig


def remeasure(ctx: Any, profile: Any, roof: Any, hints: Hints, reached: float,
              effort: Effort | None = None) -> str:
    """Measure the ceiling behind ``roof`` again from the kernel's shape; the higher figure is
    kept (with what prompted it, ``remeasured``) and the profile saved where it has a file.
    Returns one line saying what changed."""
    effort = effort or Effort.of(False)
    rng = np.random.default_rng()
    holder, key, fig = _new_figure(ctx, profile, roof, hints, effort, rng)
    old = holder.get(key) or {}
    before = float(old["value"]) if usable(old) else None
    why = {"reached": float(reached), "before": before, "hints": {k: v for k, v in vars(hints).items() if v}}
    if usable(fig) and (before is None or fig["value"] > before):
        holder[key] = {**fig, "remeasured": why}
        said = (f"{roof.name}: measured again from the kernel's shape, {fig['value']:,.1f} {fig['unit']} "
                f"(was {before:,.1f})" if before is not None else f"{roof.name}: {fig['value']:,.1f}")
    elif usable(fig):
        holder[key] = {**old, "remeasured": {**why, "found": float(fig["value"])}}
        said = (f"{roof.name}: measured again from the kernel's shape, {fig['value']:,.1f} {fig['unit']}, "
                f"no higher than the {before:,.1f} stored: the kernel's figure, not the roof, needs a look "
                "(its bytes or operations may be counted too high)")
    else:
        said = f"{roof.name}: measuring again failed: {fig.get('reason')}"
    if profile.path is not None:
        profile.save(profile.path)
    return said


__all__ = ["BEATEN", "Hints", "remeasure"]
