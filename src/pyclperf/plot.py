"""Figures in the style of the Guide's Figures 3.7 and 3.9: bandwidth against the swept parameter."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .results import Results


def plot_bandwidth(results: Results, ax: Any = None, label: str | None = None) -> Any:
    """Effective bandwidth (median, with the min-max time band) against ``meta['x']``.

    Points that failed verification are drawn as red crosses: their speed means nothing.
    Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    df = results.df
    x = results.meta.get("x")
    if x is None or df.empty or x not in df or "gbps" not in df:
        raise ValueError("results have no bandwidth rows to plot")
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    else:
        fig = ax.figure
    ok = df[df["status"] == "ok"]
    bad = df[df["status"] != "ok"]
    name = results.meta.get("device", {}).get("name", "device")
    lo = ok["bytes"] / ok["max_ns"]
    hi = ok["bytes"] / ok["min_ns"]
    line = ax.plot(ok[x], ok["gbps"], marker="o", ms=4, label=label or name)[0]
    ax.fill_between(ok[x], lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
    if not bad.empty and "gbps" in bad:
        ax.plot(bad[x], np.nan_to_num(bad["gbps"]), "x", color="red", label="failed verification")
    ax.set_xlabel(results.meta.get("x_label") or x)
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.set_title(f"{results.meta.get('title', results.experiment)}\n{name}", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def save_plot(results: Results, path: str | os.PathLike[str]) -> str:
    import matplotlib.pyplot as plt

    fig = plot_bandwidth(results)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return os.fspath(path)
