"""Memory ceilings of the device profile: DRAM read, write and copy, and host transfers.

* DRAM read, write and copy, each the best over the launch shapes that can reach it: the stream
  kernels of kernels/ceilings.cl over vector widths, elements per work-item and their layout,
  and work-group sizes (streams.py, searched by search.py), on every device; on a GPU also the
  ``bandwidth`` experiment's read_sum and fill over its work-group sizes and work-groups per
  compute unit, and the ``vector`` experiment's copies. The shapes are tried unverified, the
  fastest verified and timed again: that figure, with the shape that won, is the ceiling.
* Host <-> device: the ``transfer`` experiment's rig, pinned and pageable, both directions.

The cache levels and their curves are sweep.py's (cpusweep.py on a CPU device).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..experiments._transfer import Mode, TransferRig, transfer_limit
from ..experiments.bandwidth import Bandwidth
from ..experiments.vector import VectorWidth
from ..measure.stats import MiB
from .record import FINAL_TIME, Effort, Figure, best_of, from_row, guarded


def largest_cache(info: Any) -> int:
    """The largest cache the device reports, or (a CPU device) the OS reports, in bytes."""
    reported = int(info.global_mem_cache_bytes or 0)
    if info.is_gpu:
        return reported
    from .oscaches import os_caches

    return max([reported] + [c.size_bytes for c in os_caches()])


def dram_bytes(info: Any, quick: bool) -> int:
    """Bytes per buffer for the DRAM figures: 1 GiB on a GPU (a 256 MiB read still shows the
    launch's ramp on an H200: 0.937x of the 1 GiB figure), 256 MiB with ``quick``; on a CPU
    device 4x its largest cache (64 MiB to 1 GiB; 256 MiB at most with ``quick``): a CPU's last
    level keeps part of a set several times its size, whose reads then run above DRAM's rate
    (a ceiling still, and the cache sweep's curve says how far). Within an eighth of the
    device's memory."""
    if info.is_gpu:
        want = 256 * MiB if quick else 1024 * MiB
    else:
        want = min(256 * MiB if quick else 1024 * MiB, max(64 * MiB, 4 * largest_cache(info)))
    limit = min(int(info.max_alloc_bytes), int(info.global_mem_bytes) // 8)
    while want > 1 * MiB and want > limit:
        want //= 2
    return want


def _measure(exp: Any, point: dict[str, Any], effort: Effort, verify: bool) -> dict[str, Any]:
    return {**point, **exp.measure(point, warmup=effort.warmup, repeats=effort.repeats,
                                   method="events", verify=verify)}


def fastest_verified(exp: Any, points: Sequence[dict[str, Any]], effort: Effort,
                     label: Any) -> tuple[dict[str, Any], dict[str, float]]:
    """The fastest of ``points`` (searched unverified), verified and timed again for longer
    (a steadier median); with the search's GB/s per point (by ``label(point)``)."""
    exp.min_time_s = effort.min_time_s
    if len(points) == 1:
        return _measure(exp, points[0], effort, True), {}
    tried = [_measure(exp, p, effort, False) for p in points]
    search = {str(label(r)): float(r["gbps"]) for r in tried if r.get("gbps") is not None}
    timed = [(p, r) for p, r in zip(points, tried) if r.get("status") == "timed" and r.get("gbps")]
    if not timed:
        return tried[0], search
    point, _ = max(timed, key=lambda pr: pr[1]["gbps"])
    # The figure: the fastest shape verified, then timed over FINAL_TIME x the search's time.
    exp.min_time_s = effort.min_time_s * FINAL_TIME
    try:
        return _measure(exp, point, effort, True), search
    finally:
        exp.min_time_s = effort.min_time_s


def dram(ctx: Any, effort: Effort, nbytes: int | None = None,
         rng: np.random.Generator | None = None) -> dict[str, Figure]:
    """DRAM read, write and copy, each at the fastest launch shape of the stream kernels (and,
    on a GPU, of the experiments' kernels)."""
    from .streams import stream_ceilings

    info = ctx.info
    nbytes = nbytes or dram_bytes(info, effort.quick)
    rng = rng or np.random.default_rng()
    streams = stream_ceilings(ctx, effort, nbytes, rng)
    if not info.is_gpu:
        return streams
    found = experiment_ceilings(ctx, effort, nbytes)
    return {name: _better(streams[name], found[name]) for name in streams}


def _better(first: Figure, second: Figure) -> Figure:
    """The higher verified figure of two searches, with both searches' shapes tried."""
    won = best_of([first, second], first["unit"], first["how"])
    tried = {**first.get("shapes_tried", {}), **second.get("shapes_tried", {})}
    return {**won, "shapes_tried": tried} if tried else won


def experiment_ceilings(ctx: Any, effort: Effort, nbytes: int) -> dict[str, Figure]:
    """DRAM read and write at the bandwidth experiment's fastest shape, copy at the vector
    experiment's fastest variant (the GPU's shapes)."""
    out: dict[str, Figure] = {}
    sizes = (256,) if effort.quick else None  # None: the experiment's 128..1024
    per_cu = (4,) if effort.quick else (4, 8, 16, 32)

    def read_write() -> Figure:
        exp = Bandwidth(ctx, nbytes=nbytes, sizes=sizes, per_cu=per_cu, modes=["read", "write"])
        for mode in ("read", "write"):
            how = (f"bandwidth experiment ({'read_sum' if mode == 'read' else 'fill'}, "
                   f"kernels/bandwidth.cl) over {nbytes // MiB} MiB, the fastest of its launch "
                   "shapes, verified; OpenCL event times")
            points = [p for p in exp.points() if p["mode"] == mode]
            row, search = fastest_verified(exp, points, effort,
                                           lambda r: f"{r['local_size']} x {r['groups']}")
            out[f"dram_{mode}"] = from_row(row, "GB/s", how, bytes=nbytes,
                                           shape={"local_size": row.get("local_size"),
                                                  "groups": row.get("groups")},
                                           shapes_tried=search)
        return out["dram_read"]

    failed = guarded("GB/s", "bandwidth experiment", read_write)
    for mode in ("read", "write"):
        out.setdefault(f"dram_{mode}", failed)
    variants = ["float4 x1"] if effort.quick else ["float4 x1", "float4 x2", "float8 x1"]

    def copy() -> Figure:
        exp = VectorWidth(ctx, nbytes=nbytes, variants=variants, reference=False)
        how = (f"vector experiment (vector_copy, kernels/vector.cl) of {nbytes // MiB} MiB, "
               f"the fastest of {', '.join(variants)}, verified; read + written bytes / OpenCL "
               "event time")
        row, search = fastest_verified(exp, exp.points(), effort, lambda r: r["variant"])
        return from_row(row, "GB/s", how, bytes=nbytes, variant=row.get("variant"),
                        shape={"variant": row.get("variant")}, shapes_tried=search)

    out["dram_copy"] = guarded("GB/s", "vector experiment", copy)
    return out


TRANSFER_MODES = ("h2d pinned direct", "h2d pageable direct", "d2h pinned direct", "d2h pageable direct")


def transfers(ctx: Any, effort: Effort) -> dict[str, Figure]:
    """Host <-> device bandwidth, pinned and pageable, each transfer verified."""
    info = ctx.info
    size = (32 if effort.quick else 64) * MiB if info.is_gpu else (8 if effort.quick else 16) * MiB
    size = min(size, transfer_limit(info))
    out: dict[str, Figure] = {}

    def measure() -> Figure:
        rig = TransferRig(ctx, size, [Mode.parse(m) for m in TRANSFER_MODES])
        try:
            for name in TRANSFER_MODES:
                mode = Mode.parse(name)
                how = (f"transfer experiment's rig: {mode.direction} of {size // MiB} MiB from "
                       f"{mode.host_memory} host memory (enqueue{'Write' if mode.direction == 'h2d' else 'Read'}"
                       "Buffer), verified; OpenCL event times")
                row = rig.measure(mode, size, warmup=effort.warmup, repeats=max(effort.repeats, 5))
                out[f"{mode.direction}_{mode.host_memory}"] = from_row(row, "GB/s", how, bytes=size)
        finally:
            rig.release()
        return out["h2d_pinned"]

    failed = guarded("GB/s", "transfer experiment's rig", measure)
    for name in TRANSFER_MODES:
        mode = Mode.parse(name)
        out.setdefault(f"{mode.direction}_{mode.host_memory}", failed)
    return out


def _size(nbytes: float) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.3g} {unit}"
    return f"{nbytes:.0f} B"


def size_text(nbytes: float) -> str:
    """A byte count in the unit a reader takes in at a glance (3 significant digits)."""
    return _size(nbytes)


__all__ = ["TRANSFER_MODES", "dram", "dram_bytes", "experiment_ceilings", "fastest_verified",
           "largest_cache", "size_text", "transfers"]
