"""Figures of the models (theory/models.py) drawn against the measurements: the sector model under
offset's and stride's measured curves, and a roofline with matmul, aat, tiling and math placed on
it. Each figure states its assumptions in its legend or title."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np

from ..theory import models
from ..measure.results import OK, Results

SECTOR_EXPERIMENTS = ("offset", "stride")
ROOFLINE_EXPERIMENTS = {"matmul": "flops", "aat": "flops", "tiling": "flops", "math": "ops"}


def plot_sector_model(results: Results) -> Any:
    """Measured bandwidth against the offset or stride, beside the sector model's prediction
    (the aligned, unit-stride figure x useful/moved bytes per warp) for 32-byte sectors and,
    for the older GPUs the Guide measured, whole 128-byte lines. ValueError without a baseline."""
    import matplotlib.pyplot as plt

    x = results.meta["x"]
    df = results.df
    ok = df[df["status"] == OK].sort_values(x) if "status" in df else df.iloc[0:0]
    base = ok[ok[x] == (0 if x == "offset" else 1)]
    if ok.empty or base.empty:
        raise ValueError(f"{results.experiment}: no verified {x} {0 if x == 'offset' else 1} to scale the model from")
    baseline = float(base["gbps"].iloc[0])
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    ax.plot(ok[x], ok["gbps"], marker="o", ms=4, label="measured (median)")
    for sector, style, what in ((models.SECTOR_BYTES, "--", "32-byte sectors"),
                                (models.LINE_BYTES, ":", "128-byte lines")):
        ax.plot(ok[x], models.sector_model(x, ok[x], baseline, sector=sector), ls=style,
                label=f"model: {what} (x useful/moved bytes per {models.WARP}-item warp)")
    if x == "stride":
        ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(results.meta.get("x_label") or x)
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.set_title(f"{results.experiment}: measured vs the sector model", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def plot_roofline(results: Results, flops_per_clock_per_cu: float | None = None,
                  profile: Any = None) -> Any:
    """The device's roofline with each verified row placed at its arithmetic intensity
    (operations / bytes the launch needs) and its measured rate: the measured one where a
    profile of this device and driver is cached (``pyclperf profile``; or ``profile`` given),
    else the theoretical one (models.roofline_for). ValueError where neither can be drawn."""
    import matplotlib.pyplot as plt

    unit = ROOFLINE_EXPERIMENTS.get(results.experiment, "flops")
    if flops_per_clock_per_cu is None:
        from ..roofline.profiling import cached

        measured = profile if profile is not None else cached(results.meta.get("device", {}))
        if measured is not None and measured.compute_roofs() and measured.memory_roofs():
            return _measured_roofline(results, measured, unit)
    roof = models.roofline_for(results.meta, flops_per_clock_per_cu)
    if roof is None:
        raise ValueError(f"{results.experiment}: no roofline: the theoretical DRAM bandwidth or the "
                         f"clock is unknown (give --peak-gbps)")
    df = results.df
    rate = f"g{unit}"
    if df.empty or not {unit, "bytes", rate, "status"} <= set(df.columns):
        raise ValueError(f"{results.experiment}: rows carry no {unit} and bytes to place on a roofline")
    ok = df[(df["status"] == OK) & (df["bytes"] > 0)]
    intensity = ok[unit].astype(float) / ok["bytes"].astype(float)
    lo = min(float(intensity.min()) if len(ok) else roof.ridge, roof.ridge) / 4
    hi = max(float(intensity.max()) if len(ok) else roof.ridge, roof.ridge) * 4
    grid = np.geomspace(lo, hi, 200)
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    ax.plot(grid, [roof.attainable(i) for i in grid], color="gray", label="roofline (theoretical)")
    label = "variant" if "variant" in ok else results.meta.get("x", "variant")
    for (_, row), i in zip(ok.iterrows(), intensity):
        ax.plot(i, row[rate], "o", label=f"{row.get(label, '')}: {roof.bound(i)}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"arithmetic intensity ({unit} per byte moved)")
    ax.set_ylabel(f"G{unit[:-1] if unit.endswith('s') else unit}/s" if unit == "flops" else "Gop/s")
    ax.set_title(f"{results.experiment} on the roofline\n{roof.assumption}", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def _measured_roofline(results: Results, profile: Any, unit: str) -> Any:
    """The rows on the device's measured, hierarchical roofline (pyclperf.roofline.plot)."""
    from ..roofline.plot import plot_roofline as measured_roofline

    df = results.df
    rate = f"g{unit}"
    if df.empty or not {unit, "bytes", rate, "status"} <= set(df.columns):
        raise ValueError(f"{results.experiment}: rows carry no {unit} and bytes to place on a roofline")
    ok = df[(df["status"] == OK) & (df["bytes"] > 0)]
    label = "variant" if "variant" in ok else results.meta.get("x", "variant")
    points = [{"label": str(row.get(label, "")), "intensity": float(row[unit]) / float(row["bytes"]),
               "gflops": float(row[rate]), "gbps": float(row["gbps"]) if "gbps" in row else 0.0}
              for _, row in ok.iterrows()]
    fig = measured_roofline(profile, points, unit="GFLOP/s" if unit == "flops" else "Gop/s",
                            title=f"{results.experiment} on {profile.device}'s measured roofline "
                                  f"(pyclperf profile{', quick' if profile.quick else ''})")
    for p in points:  # each row labelled, as the theoretical figure does
        fig.axes[0].annotate(p["label"], (p["intensity"], p["gflops"]), fontsize=6,
                             xytext=(3, 3), textcoords="offset points")
    return fig


def model_figures_png(results: Results) -> list[str]:
    """The model figures that apply to ``results``, as base64 PNGs; an experiment without a
    model, or without what its model needs, gets none (the page says the plot alone)."""
    import matplotlib.pyplot as plt

    draw = (plot_sector_model if results.experiment in SECTOR_EXPERIMENTS
            else plot_roofline if results.experiment in ROOFLINE_EXPERIMENTS else None)
    if draw is None:
        return []
    try:
        fig = draw(results)
    except (ValueError, KeyError):
        return []
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return [base64.b64encode(buf.getvalue()).decode("ascii")]
