"""The hierarchical roofline from measured ceilings, and the bandwidth chart for kernels whose
FLOPs are not given.

Roofline: arithmetic intensity (operations per byte moved) on x, rate on y, both logarithmic.
Each memory level (local memory, each cache level the profile found, DRAM) is a slanted roof
``intensity x bandwidth`` up to the highest compute ceiling; each measured compute ceiling
(FP32, FP64, FP16, INT32) is a flat one. A kernel's configurations are points; the chosen one is
ringed. Everything drawn is measured: the profile's figures, and the configurations' verified
times over the bytes and operations counted for them.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

# A point: {"label": str, "intensity": float | None, "gflops": float | None, "gbps": float,
# "chosen": bool}.
Point = dict


def _roofs(source: Any) -> tuple[list[Any], list[Any]]:
    """(memory roofs, compute roofs) of a Profile, or of an explanation's dict (as_dict)."""
    from .roof import Roof

    if hasattr(source, "memory_roofs"):
        return source.memory_roofs(), source.compute_roofs()
    return ([Roof(**r) for r in source["memory_roofs"]], [Roof(**r) for r in source["compute_roofs"]])


def _title(source: Any) -> str:
    device = source.device if hasattr(source, "device") else source.get("device", "")
    return f"{device}: measured roofline"


def plot_roofline(source: Any, points: Sequence[Point] = (), *, ax: Any = None,
                  title: str | None = None, unit: str = "GFLOP/s") -> Any:
    """The roofline of a Profile (or an explanation's dict) with ``points`` placed on it;
    returns the matplotlib figure. ValueError where the profile holds no memory or no compute
    ceiling (nothing to draw a roofline from)."""
    import matplotlib.pyplot as plt

    memory, compute = _roofs(source)
    memory = [r for r in memory]
    if not memory or not compute:
        raise ValueError("no roofline: the profile has no verified memory ceiling or no verified "
                         "compute ceiling (see Profile.summary())")
    placed = [p for p in points if p.get("intensity") and p.get("gflops")]
    top = max(r.value for r in compute)
    ridges = [top / r.value for r in memory]
    lo = min([min(ridges) / 8] + [p["intensity"] / 2 for p in placed])
    hi = max([max(ridges) * 8] + [p["intensity"] * 2 for p in placed])
    grid = np.geomspace(lo, hi, 256)
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    else:
        fig = ax.figure
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(memory):
        style = ":" if r.kind == "local" else "--" if r.kind == "cache" else "-"
        ax.plot(grid, np.minimum(grid * r.value, top), style, color=colours[i % len(colours)],
                lw=1.4, label=f"{r.label()}")
    for i, r in enumerate(compute):  # labels staggered along x: two ceilings may nearly meet
        ax.axhline(r.value, color="black", lw=1.0 if r.name == "FP32" else 0.6,
                   ls="-" if r.name == "FP32" else "-.", alpha=0.8)
        ax.annotate(f"{r.name} {r.value:,.0f} {r.unit}", (hi / 6.0 ** i, r.value), xytext=(-4, 3),
                    textcoords="offset points", ha="right", fontsize=7)
    for p in placed:
        if p.get("chosen"):
            ax.plot(p["intensity"], p["gflops"], "o", ms=11, mfc="none", mec="red", mew=1.8,
                    label=f"{p['label']} (chosen)")
        ax.plot(p["intensity"], p["gflops"], "o", ms=4, color="red" if p.get("chosen") else "gray",
                alpha=0.9 if p.get("chosen") else 0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (operations per byte moved)")
    ax.set_ylabel(unit)
    ax.set_title(title or _title(source), fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left")  # above the roofs: nothing can be drawn there
    return fig


def plot_bandwidth_roofs(source: Any, points: Sequence[Point], *, ax: Any = None,
                         title: str | None = None, binding: str | None = None) -> Any:
    """Achieved GB/s of each configuration (fastest first) under the memory roofs, for a kernel
    with no FLOP count: the roofline's memory half. ``binding`` names the roof that applies."""
    import matplotlib.pyplot as plt

    memory, _ = _roofs(source)
    if not memory:
        raise ValueError("no memory ceiling in the profile to draw against")
    ordered = sorted(points, key=lambda p: -float(p["gbps"]))
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    else:
        fig = ax.figure
    x = np.arange(len(ordered))
    ax.bar(x, [p["gbps"] for p in ordered], color=["red" if p.get("chosen") else "gray" for p in ordered],
           alpha=0.8)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(memory):
        ax.axhline(r.value, color=colours[i % len(colours)], lw=2.0 if r.name == binding else 1.0,
                   ls="-" if r.name == binding else "--",
                   label=r.label() + (" (binds)" if r.name == binding else ""))
    ax.set_xticks(x, [p["label"] for p in ordered], rotation=60, ha="right", fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel("achieved GB/s (bytes counted / median time)")
    ax.set_title((title or _title(source)) + "\n(memory roofs; no FLOP count given)", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(True, axis="y", which="both", alpha=0.25)
    return fig


__all__ = ["plot_bandwidth_roofs", "plot_roofline"]
