"""occupancy: speed against occupancy, forced down with dynamic local memory (Guide 4.5).

A bandwidth-bound copy (kernels/occupancy.cl) takes a ``__local`` buffer whose size the host
sets at launch. For each target number of work-groups per compute unit the buffer is sized so
that only that many fit in a compute unit's local memory; the copy's work does not change. Each
row carries the theoretical estimate of pyclperf.theory.limits (work-groups per compute unit allowed by
local memory, by threads and by registers, and the occupancy they give where the device is
known) beside the measured bandwidth.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _core
from ..theory.limits import (CANNOT_KNOW, NVIDIA_SM, estimate, nv_compute_capability, parse_registers,
                      verbose_build_options)
from ..device.program import LocalMemory
from ..measure.results import OK, Results
from ._kit import FLOAT, CopyCheck, whole_groups
from .base import Check, Experiment, Launch, noise_note
from .claims import Claim, Figure, NotMeasured, geometric_mean, pooled, rows_for

TARGETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # work-groups per compute unit to force
WORK_GROUP_SIZES = (64, 256)
GUARD_ELEMENTS = 4096
ALIGN = 16  # dynamic local sizes are rounded down to this many bytes
GUIDE_KNEE_PCT = 50.0  # Guide 4.4/4.5: above ~50% occupancy little more is gained


def full_over_half(results: Results) -> Figure:
    """Per work-group size, bandwidth at the highest occupancy over the point nearest 50%
    (nearest half the most work-groups per compute unit where occupancy is not known)."""
    rows = rows_for(results)
    axis = "occupancy_pct" if any(r.get("occupancy_pct") is not None for r in rows) else "groups_per_cu"
    found = []
    for size in sorted({r["local_size"] for r in rows}):
        mine = [r for r in rows if r["local_size"] == size and r.get(axis) is not None]
        if len(mine) < 2:
            continue
        top = max(mine, key=lambda r: r[axis])
        half = GUIDE_KNEE_PCT if axis == "occupancy_pct" else top[axis] / 2
        mid = min((r for r in mine if r is not top), key=lambda r: abs(r[axis] - half))
        found.append(pooled([top], "gbps") / pooled([mid], "gbps"))
    if not found:
        raise NotMeasured("no work-group size verified at two occupancies")
    return geometric_mean(found)


class Occupancy(Experiment):
    id = "occupancy"
    description = ("a copy slowed by a growing dynamic `__local` buffer beside a theoretical occupancy "
                   "estimate (Guide 4.5; `--size` is floats copied)")
    order = 160
    title = "Occupancy forced down by dynamic local memory"
    guide = "Guide 4.1-4.5 (occupancy; effects of shared memory); Quasar 9.7"
    claim = Claim(
        "beyond about half occupancy, more occupancy gains little",
        "Guide 4.5 (in words)", "bandwidth at the highest occupancy / at about 50%",
        full_over_half, direction=0)
    size_arg, values_arg, local_size_arg = "items", "targets", None

    def __init__(self, ctx: Any, items: int | None = None, targets: Sequence[int] | None = None,
                 work_group_sizes: Sequence[int] = WORK_GROUP_SIZES) -> None:
        """``items``: floats copied per launch; ``targets``: work-groups per compute unit the
        local buffer should leave room for; ``work_group_sizes``: one line per size."""
        super().__init__(ctx)
        info = ctx.info
        self.targets = [int(t) for t in (targets if targets is not None else TARGETS)]
        self.sizes = [int(s) for s in work_group_sizes]
        if not self.targets or min(self.targets) < 1:
            raise _core.InvalidArgumentError(f"{self.id}: targets must be >= 1 work-group, got {self.targets}")
        self.items = whole_groups(
            self.id, items if items is not None else (1 << 26 if info.is_gpu else 1 << 18), self.sizes)
        nbytes = (self.items + GUARD_ELEMENTS) * FLOAT
        if nbytes > info.max_alloc_bytes:
            raise _core.InvalidArgumentError(
                f"{self.id}: {nbytes} bytes exceed the device's largest allocation of {info.max_alloc_bytes}")
        self.program = ctx.program(file="occupancy.cl", options=verbose_build_options(info))
        # A kernel with no local argument set yet reports only its static local memory.
        probe = self.program.kernel("staged_copy").limits()
        self.static_local = int(probe.local_mem_bytes)
        self.registers = parse_registers(self.program.build_log, "staged_copy")
        self.kernel = self.program.kernel("staged_copy")
        self.src, self.dst = ctx.buffer(nbytes), ctx.buffer(nbytes)
        self.rng = np.random.default_rng()
        # Every point copies the same span: on the host the same random words, drawn once a run.
        self.copy_check = CopyCheck(ctx, self.rng, same_words=True)
        cc = nv_compute_capability(info)
        self.table = NVIDIA_SM.get(cc) if cc is not None else None
        # With a known compute unit the x axis is the estimated occupancy; elsewhere only the
        # local-memory bound on work-groups per compute unit is known.
        if self.table is not None:
            self.x, self.x_label = "occupancy_pct", "theoretical occupancy (%)"
        else:
            self.x, self.x_label = "groups_per_cu", "work-groups per compute unit (local-memory bound)"
        self.plot = {"kind": "lines", "y": "gbps", "ylabel": "effective bandwidth (GB/s)",
                     "group": "local_size", "label_format": "{} work-items per group",
                     "logx": False,
                     "vlines": {"Guide: 50%": GUIDE_KNEE_PCT} if self.table is not None else {}}

    def dynamic_bytes(self, size: int, target: int) -> int:
        """Dynamic local bytes per work-group that leave room for ``target`` groups per compute
        unit, within what one work-group may use and at least one float per work-item."""
        info = self.ctx.info
        capacity = self.table["smem_per_sm"] if self.table else int(info.local_mem_bytes)
        reserved = self.table["reserved_smem"] if self.table else 0
        want = capacity // target - reserved - self.static_local
        most = int(info.local_mem_bytes) - self.static_local
        least = size * FLOAT
        return max(least, min(most, want) // ALIGN * ALIGN)

    def meta(self) -> dict[str, Any]:
        sample = estimate(self.ctx.info, self.sizes[0], self.static_local, self.registers.registers)
        return {**super().meta(), "items": self.items, "work_group_sizes": self.sizes,
                "static_local_bytes": self.static_local,
                "registers_per_item": self.registers.registers,
                "estimate_source": sample.source, "estimate_cannot_know": CANNOT_KNOW,
                "guide_knee_pct": GUIDE_KNEE_PCT}

    def points(self) -> list[dict[str, Any]]:
        out = []
        for size in self.sizes:
            seen = set()
            for target in self.targets:
                dyn = self.dynamic_bytes(size, target)
                if dyn not in seen:  # clipped targets give the same launch: run it once
                    seen.add(dyn)
                    out.append({"local_size": size, "target_groups": target,
                                "dynamic_local_bytes": dyn})
        return out

    def launch(self, point: dict[str, Any]) -> Launch:
        size, dyn = int(point["local_size"]), int(point["dynamic_local_bytes"])
        est = estimate(self.ctx.info, size, self.static_local + dyn, self.registers.registers)
        self.kernel.set_args(self.dst, self.src, LocalMemory(dyn))
        return Launch.one(self.kernel, self.items, size, 2 * self.items * FLOAT,
                          columns={"items": self.items, **est.as_row()})

    def check(self, point: dict[str, Any], launch: Launch) -> Check:
        return Check(*self.copy_check(self.src, self.dst, launch.run, self.items + GUARD_ELEMENTS,
                                      slice(0, self.items)))

    def finish(self, results: Any) -> None:
        parts = []
        for size in self.sizes:
            rows = [r for r in results.rows if r.get("local_size") == size and r.get("status") == OK
                    and r.get(self.x) is not None]
            if not rows:
                parts.append(f"work-groups of {size}: no point verified")
                continue
            best = max(rows, key=lambda r: r["gbps"])
            low = min(rows, key=lambda r: r[self.x])
            unit = "% occupancy" if self.x == "occupancy_pct" else " work-groups per compute unit"
            text = (f"work-groups of {size}: best {best['gbps']:.1f} GB/s at {best[self.x]:.4g}"
                    f"{unit}{noise_note(best)}; at the lowest ({low[self.x]:.4g}{unit}) "
                    f"{100 * low['gbps'] / best['gbps']:.0f}% of it")
            reach = sorted(r[self.x] for r in rows if r["gbps"] >= 0.9 * best["gbps"])
            text += f", within 10% of the best from {reach[0]:.4g}{unit} up"
            parts.append(text)
        estimate_note = ("estimate from the compute capability table" if self.table is not None
                         else "occupancy unknown on this device (no table of its compute-unit "
                              "limits): only the local-memory bound is shown")
        results.meta["conclusion"] = (
            "; ".join(parts) + f" ({estimate_note}). Guide 4.5: beyond about 50% occupancy more "
            "occupancy rarely pays.")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["local_size", "dynamic_local_bytes", "groups_by_local", "groups_by_threads",
                "groups_by_registers", "groups_per_cu", "limited_by", "occupancy_pct", "status",
                "median_ns", "gbps"]
        return df[[c for c in cols if c in df]]
