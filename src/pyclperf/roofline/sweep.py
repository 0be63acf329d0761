"""The cache levels of the device profile, found from the working-set curves.

The ``workingset`` experiment's read and dependent-load (chase) curves over working sets of
4 KiB up to far past the last cache, every point verified, on a grid of one wave (every
work-item resident at once, so a repeated sweep's reuse distance is the whole set); on a GPU the
chase stops at half the largest read set (each chase point draws a random cycle over its set
twice, seconds of host time at 256 MiB). Knees are found in both curves (knees.py), measured
again between the points around each knee (reads of any size with ceilings.cl's read_any; chases
of any size with the experiment's own kernel, only for a knee no read knee sizes), and found once
more. Levels come from the knees (levels.py): a bandwidth knee and a latency knee within a
factor of 2.5 of each other are one boundary; a boundary within 2x below the next is a step
inside that level (an H200's L2 partitions); the last level ends where the curves reach DRAM.
Each level gets the read bandwidth and load latency of its best plateau, each step the plateaus
after it. Every point's figure is its fastest launch (a busy machine only slows launches down).

A CPU device reads its sets another way, and its levels are held against the caches the
operating system reports (cpusweep.py).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..experiments.workingset import WorkingSet, default_sizes, pow2_floor
from ..measure.checks import compare, poison_device
from ..measure.results import OK
from ..measure.stats import MiB
from . import knees as K
from . import levels as L
from .memory import size_text as _size
from .record import Effort, Figure, missing, rate, timings

AGREE = 1.15  # read_any and ws_read must agree this closely to share a curve
MAX_REFINED = 3  # knees refined per curve, the largest steps first (each costs a few points)
MATCH = L.MATCH  # a bandwidth knee and a latency knee this close in size are one level


def measure_point(exp: Any, point: dict[str, Any], effort: Effort) -> dict[str, Any]:
    """One verified point of the workingset experiment; a chase's ``latency_ns`` is its fastest
    launch's time per load."""
    row = {**point, **exp.measure(point, warmup=effort.warmup, repeats=effort.repeats,
                                  method="events", verify=True)}
    if point["kind"] == "chase" and row.get("steps"):
        fastest = row.get("min_ns") or row.get("median_ns")
        if fastest:
            row["latency_ns"] = float(fastest) / row["steps"]
    return row


def cache_sizes(info: Any, top: int | None) -> list[int]:
    """Powers of two from 4 KiB to ``top`` (default: 256 MiB on a GPU, 64 MiB on a CPU device;
    within a quarter of its memory and its largest allocation)."""
    sizes = default_sizes(info)
    cap = top or (256 * MiB if info.is_gpu else 64 * MiB)
    return [s for s in sizes if s <= cap]


class CacheSweep:
    """The working-set curves, their refinement around knees, and the levels found."""

    read_what = "read bandwidth (workingset ws_read, one wave)"

    def __init__(self, ctx: Any, effort: Effort, sizes: Sequence[int]) -> None:
        self.ctx, self.effort = ctx, effort
        # One wave: 8 groups of (up to) 256 work-items per compute unit, all resident at once.
        local = min(256, pow2_floor(int(ctx.info.max_work_group_size)))
        groups = pow2_floor(8 * int(ctx.info.compute_units) * 256 // local)
        self.exp = WorkingSet(ctx, sizes=list(sizes), kinds=["read", "chase"], passes=1,
                              groups=groups, local_size=local)
        self.exp.min_time_s = effort.min_time_s
        # Each chase point writes a fresh random cycle over the set (host time and a transfer
        # of the whole set). Half the largest read set still lies well
        # past a GPU's last cache (an H200's 50 MiB); a CPU device's sets are small anyway.
        self.chase_top = max(sizes) // 2 if ctx.info.is_gpu and len(sizes) > 8 else max(sizes)
        self.read: dict[int, dict[str, Any]] = {}
        self.chase: dict[int, dict[str, Any]] = {}
        self.rng = np.random.default_rng()
        self._any: Any = None
        self.notes: list[str] = []  # what the refinement left out, and why

    def sweep(self) -> None:
        for point in self.exp.points():
            if point["kind"] == "chase" and point["size"] > self.chase_top:
                continue
            row = measure_point(self.exp, point, self.effort)
            (self.read if point["kind"] == "read" else self.chase)[int(point["size"])] = row

    def curve(self, kind: str) -> tuple[list[int], list[float]]:
        """(sizes, values) of the verified points: each read's fastest launch in GB/s, each
        chase's in ns per load."""
        rows = self.read if kind == "read" else self.chase
        ok = sorted((s, _value(kind, r)) for s, r in rows.items() if r.get("status") == OK and _value(kind, r))
        return [s for s, _ in ok], [v for _, v in ok]

    def knees(self, kind: str) -> list[K.Knee]:
        sizes, values = self.curve(kind)
        return K.knees(sizes, values, lower_is_better=kind == "chase") if len(sizes) >= 4 else []

    def refine(self) -> None:
        """More points between the two measurements around each knee of both curves. Reads
        between powers of two need read_any, another kernel than ws_read: its points join the
        curve only where it agrees with ws_read at the knee's two ends (within AGREE), since a
        kernel slower on its own account would make a step of its own."""
        steps = 2 if self.effort.quick else 4
        reads = self.knees("read")
        for kind in ("read", "chase"):
            for knee in sorted(self.knees(kind), key=lambda k: -k.ratio)[:MAX_REFINED]:
                if kind == "chase" and any(max(r.size / knee.size, knee.size / r.size) <= MATCH
                                           for r in reads):
                    continue  # a level the read curve sizes: its latency plateau is enough
                extra = K.bracket_sizes(knee, steps=steps)
                if kind == "read" and extra:
                    ends = {int(s): self.read_any(int(s)) for s in (knee.below, knee.above)}
                    ratios = [_value("read", ends[s]) / _value("read", self.read[s]) for s in ends]
                    if not all(1 / AGREE <= r <= AGREE for r in ratios):
                        self.notes.append(
                            f"reads between {_size(knee.below)} and {_size(knee.above)} not refined: "
                            f"read_any ran at {', '.join(f'{r:.2f}' for r in ratios)}x ws_read's "
                            "rate at those sizes")
                        continue
                for size in extra:
                    if kind == "read":
                        self.read[size] = self.read_any(size)
                    else:
                        point = {"kind": "chase", "size": size, "size_kib": size / 1024}
                        self.chase[size] = measure_point(self.exp, point, self.effort)

    def read_any(self, size: int) -> dict[str, Any]:
        """ceilings.cl's read_any over ``size`` bytes with the sweep's grid, verified: the total
        of all work-items' sums in closed form, and 64 work-items' sums replayed on the host."""
        exp, n = self.exp, size // 4
        grid, local = exp.grid, exp.local_size
        iters = -(-max(exp.passes * n, exp.min_bytes // 4) // grid)
        if self._any is None:
            self._any = self.ctx.program(file="ceilings.cl").kernel("read_any")
        kernel = self._any.set_args(exp.src, np.uint32(n), np.uint32(iters), exp.out)
        words = self.rng.integers(0, 2**32, size=n, dtype=np.uint32)
        exp.src.write(words)
        exp.forget_src()  # neither the chase's cycle nor the run's words are in src now
        poison_device(exp.out)
        kernel.run(grid, local)
        got = self.ctx.from_device(exp.out, np.uint32)[:grid]
        total = grid * iters  # the walk visits t mod n for every t < grid x iters, once
        w = words.astype(np.uint64)
        want_total = (int(w.sum()) * (total // n) + int(w[: total % n].sum())) & 0xFFFFFFFF
        ok, detail = compare(np.array([int(got.astype(np.uint64).sum()) & 0xFFFFFFFF], np.uint32),
                             np.array([want_total], np.uint32), "total of the work-item sums")
        if ok:
            sample = self.rng.choice(grid, size=min(64, grid), replace=False)
            idx = (sample[:, None].astype(np.uint64) + np.arange(iters, dtype=np.uint64) * np.uint64(grid)) % np.uint64(n)
            want = (w[idx].sum(axis=1) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            ok, detail = compare(got[sample], want, "sampled work-item sums")
        row: dict[str, Any] = {"kind": "read", "size": size, "kernel": "read_any", "iters": iters}
        if not ok:
            return {**row, "status": "wrong result", "error": detail}
        fig = rate(timings(kernel, grid, local, self.effort), float(grid) * iters * 4, "GB/s", "")
        return {**row, "status": OK, "gbps": fig["value"], "gbps_best": fig["best"],
                "spread_pct": fig["spread_pct"], "n": fig["n"], "median_ns": fig["median_ns"]}

    def curve_meta(self) -> dict[str, Any]:
        """How the curves were measured (the profile's ``curves``)."""
        return {"grid": self.exp.grid, "local_size": self.exp.local_size,
                "chase_steps": self.exp.steps, "min_bytes": self.exp.min_bytes}

    def points(self, kind: str) -> list[dict[str, Any]]:
        rows = self.read if kind == "read" else self.chase
        key = "gbps" if kind == "read" else "latency_ns"
        return [{"size": s, key: _value(kind, r) or None, "spread_pct": r.get("spread_pct"), "status": r.get("status"),
                 "kernel": r.get("kernel", "ws_read" if kind == "read" else "ws_chase")}
                for s, r in sorted(rows.items())]

    def plateau_figure(self, kind: str, plateau: K.Plateau) -> Figure:
        """A plateau's level as a figure: the best of its points (the highest read rate, the
        lowest latency: a ceiling, as every point's fastest launch is), beside their median."""
        sizes, values = self.curve(kind)
        rows = self.read if kind == "read" else self.chase
        on = [rows[s] for s in sizes[plateau.first: plateau.last + 1]]
        mine = values[plateau.first: plateau.last + 1]
        what = (self.read_what if kind == "read" else "dependent-load latency (workingset ws_chase, one work-item)")
        how = (f"{what}: the best of the plateau's {len(on)} working sets, "
               f"{_size(plateau.low_size)} to {_size(plateau.high_size)}, each its fastest launch; "
               "OpenCL event times")
        spreads = sorted(float(r["spread_pct"]) for r in on if r.get("spread_pct") is not None)
        return {"value": max(mine) if kind == "read" else min(mine), "median": plateau.value,
                "unit": "GB/s" if kind == "read" else "ns", "how": how,
                "status": OK, "spread_pct": spreads[len(spreads) // 2] if spreads else None,
                "n": len(on), "range_pct": 100.0 * (plateau.spread - 1.0),
                "sizes": [int(plateau.low_size), int(plateau.high_size)]}

    def levels(self, reported_bytes: int | None = None) -> list[dict[str, Any]]:
        """The cache levels, smallest first (levels.py: knees inside one level are its steps,
        the last is where the curves reach DRAM); ``reported_bytes`` (the device's
        global-memory cache size) is set beside the level nearest it in size."""
        found = L.levels(self.knees("read"), self.knees("chase"))
        out = []
        for level in found:
            group = [*level.steps, level.end]
            bw = next((g.bandwidth for g in group if g.bandwidth), None)
            lat = next((g.latency for g in group if g.latency), None)
            end = level.end
            entry: dict[str, Any] = {
                "name": level.name, "label": level.label, "last": level.last,
                "size_bytes": int(round(end.size)),
                "found_from": [k for k in ("bandwidth", "latency") if any(k in g.found_from for g in group)],
                "bandwidth_knee_bytes": int(round(end.bandwidth.size)) if end.bandwidth else None,
                "latency_knee_bytes": int(round(end.latency.size)) if end.latency else None,
                "bracket_bytes": [int(end.knee.below), int(end.knee.above)],
                "read": self.plateau_figure("read", bw.before) if bw else None,
                "latency": self.plateau_figure("chase", lat.before) if lat else None,
                "steps": [self._step(s, level.label) for s in level.steps]}
            if bw is None:
                entry["read_note"] = ("no step in the read curve here: the read kernel runs at "
                                      "the next level's rate, so this level adds no roof")
            out.append(entry)
        if reported_bytes and out:
            near = min(out, key=lambda e: abs(math.log(e["size_bytes"] / reported_bytes)))
            near["reported_bytes"] = int(reported_bytes)
        return out

    def _step(self, step: L.Boundary, label: str) -> dict[str, Any]:
        """A boundary inside a level: its size, and the plateaus the curves reach after it."""
        b, l = step.bandwidth, step.latency
        return {"label": f"step inside the {label}", "size_bytes": int(round(step.size)),
                "found_from": step.found_from,
                "bracket_bytes": [int(step.knee.below), int(step.knee.above)],
                "read_after": self.plateau_figure("read", b.after) if b else None,
                "latency_after": self.plateau_figure("chase", l.after) if l else None}

    def dram_latency(self) -> Figure:
        """Load latency past every cache: the chase curve's last plateau where it reaches the
        largest working set measured, else the median of the three largest (a tail too noisy or
        still rising for a plateau)."""
        sizes, values = self.curve("chase")
        if not sizes:
            return missing("ns", "workingset chase", "no verified chase point", "failed")
        flat = K.plateaus(sizes, values, lower_is_better=True) if len(sizes) >= 2 else []
        if flat and flat[-1].last == len(sizes) - 1:
            return self.plateau_figure("chase", flat[-1])
        top = sorted(values[-3:])
        rows = [self.chase[s] for s in sizes[-3:]]
        spreads = sorted(float(r["spread_pct"]) for r in rows if r.get("spread_pct") is not None)
        return {"value": top[len(top) // 2], "unit": "ns", "status": OK, "n": len(top),
                "how": (f"dependent-load latency (workingset ws_chase, one work-item): median of the "
                        f"{len(top)} largest working sets, {_size(sizes[-len(top)])} to "
                        f"{_size(sizes[-1])} (no plateau there); OpenCL event times"),
                "spread_pct": spreads[len(spreads) // 2] if spreads else None,
                "range_pct": 100.0 * (top[-1] / top[0] - 1.0)}


def caches(ctx: Any, effort: Effort, top: int | None = None) -> dict[str, Any]:
    """Curves, levels and the DRAM load latency of a GPU (CacheSweep; a CPU device's are
    cpusweep.caches)."""
    sweep = CacheSweep(ctx, effort, cache_sizes(ctx.info, top))
    sweep.sweep()
    sweep.refine()
    return found_record(sweep, int(ctx.info.global_mem_cache_bytes) or None)


def found_record(sweep: CacheSweep, reported: int | None) -> dict[str, Any]:
    """A sweep's levels, DRAM load latency and curves, as the profile stores them."""
    levels = sweep.levels(reported)
    return {"levels": levels, "dram_latency": sweep.dram_latency(),
            "curves": {"read": sweep.points("read"), "chase": sweep.points("chase"),
                       **sweep.curve_meta(), "notes": sweep.notes}}


def _value(kind: str, row: dict[str, Any]) -> float:
    """A curve point's figure: the fastest launch's GB/s (read) or ns per load (chase)."""
    if kind == "read":
        return float(row.get("gbps_best") or row.get("gbps") or 0.0)
    return float(row.get("latency_ns") or 0.0)


__all__ = ["AGREE", "CacheSweep", "MAX_REFINED", "cache_sizes", "caches", "found_record", "measure_point"]
