"""Figures of a tuning run: the measured metric against each tuned parameter, and a heat map of
two parameters.

Each parameter gets a small panel: every verified config as a faint point (the spread that the
other parameters cause) and the best config for each value as a line (what that value can reach).
When exactly two parameters vary (or ``pair`` names two), a heat map shows the best value of each
cell. Configs that failed are not drawn (their times mean nothing) but are counted in the title.
Where nothing was verified, unverified ("timed") configs are drawn instead and the title says so.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..tuner.rows import param_names


def _higher_is_better(metric: str) -> bool:
    # Same rule as Results.best(): times and nanoseconds are lower-is-better, any metric higher.
    return not (metric.startswith("time") or metric.endswith("_ns"))


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values)


def _order(values: Sequence[Any]) -> list[Any]:
    distinct: list[Any] = []
    for v in values:
        if v not in distinct:
            distinct.append(v)
    return sorted(distinct) if _numeric(distinct) else distinct


def _best(values: Sequence[float], higher: bool) -> float:
    return max(values) if higher else min(values)


def _label(metric: str) -> str:
    return {"time_ms": "time (ms)", "median_ns": "median time (ns)"}.get(metric, metric)


def _panel(ax: Any, rows: list[dict], p: str, metric: str, higher: bool) -> None:
    values = _order([r[p] for r in rows])
    numeric = _numeric(values)
    pos = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
    xs = [pos[r[p]] for r in rows]
    ys = [float(r[metric]) for r in rows]
    ax.scatter(xs, ys, s=12, alpha=0.35, color="tab:blue", linewidths=0, label="configs")
    best = [_best([float(r[metric]) for r in rows if r[p] == v], higher) for v in values]
    ax.plot([pos[v] for v in values], best, marker="o", ms=4, color="tab:orange",
            label="best per value")
    if numeric and min(values) > 0 and max(values) / min(values) >= 8:
        ax.set_xscale("log", base=2)            # block sizes and tile factors grow by doubling
    if numeric:
        ax.set_xticks([float(v) for v in values])
        ax.set_xticklabels([str(v) for v in values], fontsize=7)
        ax.minorticks_off()
    else:
        ax.set_xticks(list(pos.values()))
        ax.set_xticklabels([str(v) for v in values], fontsize=7, rotation=30)
    ax.set_xlabel(p)
    ax.set_ylabel(_label(metric))
    ax.grid(True, alpha=0.3)


def _heatmap(ax: Any, rows: list[dict], pair: tuple[str, str], metric: str, higher: bool) -> Any:
    px, py = pair
    xv, yv = _order([r[px] for r in rows]), _order([r[py] for r in rows])
    grid = np.full((len(yv), len(xv)), np.nan)
    for r in rows:
        i, j = yv.index(r[py]), xv.index(r[px])
        v = float(r[metric])
        if math.isnan(grid[i, j]) or (v > grid[i, j] if higher else v < grid[i, j]):
            grid[i, j] = v
    # Colour so that "better" is always the bright end, whichever way the metric points.
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis" if higher else "viridis_r")
    ax.set_xticks(range(len(xv)))
    ax.set_xticklabels([str(v) for v in xv], fontsize=7)
    ax.set_yticks(range(len(yv)))
    ax.set_yticklabels([str(v) for v in yv], fontsize=7)
    ax.set_xlabel(px)
    ax.set_ylabel(py)
    ax.figure.colorbar(im, ax=ax, label=f"best {_label(metric)}")
    for i in range(len(yv)):
        for j in range(len(xv)):
            if not math.isnan(grid[i, j]):
                r, g, b, _ = im.cmap(im.norm(grid[i, j]))
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5   # readable on either end
                ax.text(j, i, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=6,
                        color="white" if dark else "black")
    return im


def _kind(row: dict, unverified: bool) -> str:
    if row.get("status") == "replayed":
        return "replayed"
    return "unverified" if unverified else "verified"


def plot_tune(results: Any, metric: str = "time_ms", ax: Any = None,
              pair: tuple[str, str] | None = None, params: Sequence[str] | None = None) -> Any:
    """``metric`` against each tuned parameter (one panel each), plus a heat map of the best value
    per cell when two parameters vary or ``pair`` names two. Returns the matplotlib Figure.

    ``ax``: None (a new figure), or a sequence of Axes, one per panel (and one more for the heat
    map). ``params``: the parameters to show (default: those that take more than one value).
    """
    import matplotlib.pyplot as plt

    rows = list(results.rows)
    names = list(params) if params is not None else param_names(results.meta, rows)
    higher = _higher_is_better(metric)
    usable = [r for r in rows if r.get(metric) is not None
              and not (isinstance(r[metric], float) and math.isnan(r[metric]))]
    shown = [r for r in usable if r.get("status") == "ok"]
    unverified = not shown
    if unverified:   # unverified times, or a replay's recorded ones
        shown = [r for r in usable if r.get("status") == "timed"] or [
            r for r in usable if r.get("status") == "replayed"]
    if not shown:
        raise ValueError(f"nothing to plot: no config has a {metric!r} value "
                         f"({len(rows)} rows)")
    tuned = list(names)
    if params is None:
        varying = [p for p in names if len(_order([r.get(p) for r in shown])) > 1]
        names = varying or names
    if pair is not None:
        if len(pair) != 2 or any(p not in tuned for p in pair):
            raise ValueError(f"pair must name two tuned parameters (of {', '.join(tuned)})")
        pair = (pair[0], pair[1])
    elif len(names) == 2:
        pair = (names[0], names[1])
    n = len(names) + (1 if pair else 0)
    axes: list[Any]
    if ax is None:
        fig, grid = plt.subplots(1, n, figsize=(3.2 * n + (1.0 if pair else 0), 3.2),
                                 layout="constrained", squeeze=False)
        axes = list(grid[0])
    else:
        axes = list(ax) if isinstance(ax, (list, tuple, np.ndarray)) else [ax]
        if len(axes) != n:
            raise ValueError(f"ax: {n} axes are needed ({len(names)} parameters"
                             f"{' and the heat map' if pair else ''}), got {len(axes)}")
        fig = axes[0].figure
    for a, p in zip(axes, names):
        _panel(a, shown, p, metric, higher)
    axes[0].legend(fontsize=7)
    if pair:
        _heatmap(axes[-1], shown, pair, metric, higher)
    failed = sum(1 for r in rows if r.get("status") not in ("ok", "timed", "skipped", "replayed"))
    skipped = sum(1 for r in rows if r.get("status") == "skipped")
    device = (results.meta.get("device") or {}).get("name")
    kernel = results.meta.get("kernel") or results.meta.get("kernel_name") or "tuning"
    parts = [f"{kernel}" + (f" on {device}" if device else ""),
             f"{len(shown)} {_kind(shown[0], unverified)} configs plotted"]
    if failed:
        parts.append(f"{failed} failed (not plotted)")
    if skipped:
        parts.append(f"{skipped} skipped")
    fig.suptitle(", ".join(parts), fontsize=9)
    return fig
