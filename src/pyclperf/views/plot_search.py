"""Figures of searches: how fast strategies close in on the best configuration, and the Pareto
front of a search over two objectives.

``plot_convergence`` takes, per strategy, the Results of several seeded searches and draws the
median (and the 10th to 90th percentile band) of the best objective found after each
evaluation, as a fraction of the best any of them found, or of a given optimum (a replayed
space's, for instance). ``plot_pareto`` draws every configuration that produced both objectives
and joins the front, the configurations no other beats on both.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

_GOOD = ("ok", "timed", "replayed")


def _times(results: Any, field: str) -> list[float | None]:
    out: list[float | None] = []
    for r in results.rows:
        if r.get("status") == "skipped":
            continue                          # not evaluated: no place on the evaluation axis
        v = r.get(field)
        good = r.get("status") in _GOOD and isinstance(v, (int, float)) and not isinstance(v, bool)
        out.append(float(v) if good else None)
    return out


def best_so_far(results: Any, field: str = "time_ms") -> np.ndarray:
    """The lowest ``field`` found after each evaluation of a search (NaN before the first)."""
    best = np.nan
    out = []
    for v in _times(results, field):
        if v is not None and not (best <= v):
            best = v
        out.append(best)
    return np.array(out, dtype=float)


def plot_convergence(runs: Mapping[str, Sequence[Any]], optimum: float | None = None,
                     field: str = "time_ms", ax: Any = None, band: bool = True) -> Any:
    """Median fraction of the optimum (``optimum`` / best ``field`` found) after each evaluation,
    one line per strategy over its seeded runs. ``optimum`` defaults to the best value any run
    found. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    if not runs or not all(runs.values()):
        raise ValueError("plot_convergence needs, per strategy, at least one search's Results")
    curves = {name: [best_so_far(r, field) for r in rs] for name, rs in runs.items()}
    found = [np.nanmin(c) for cs in curves.values() for c in cs if np.isfinite(c).any()]
    if optimum is None:
        if not found:
            raise ValueError(f"no search found a {field!r} value")
        optimum = min(found)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    else:
        fig = ax.figure
    for name, cs in curves.items():
        n = max(len(c) for c in cs)
        padded = np.array([np.concatenate([c, np.full(n - len(c), c[-1] if len(c) else np.nan)])
                           for c in cs])
        frac = np.where(np.isfinite(padded), optimum / padded, 0.0)
        x = np.arange(1, n + 1)
        line, = ax.plot(x, np.median(frac, axis=0), lw=2 if name == "auto" else 1.2, label=name)
        if band and len(cs) > 2:
            ax.fill_between(x, np.percentile(frac, 10, axis=0), np.percentile(frac, 90, axis=0),
                            color=line.get_color(), alpha=0.12, lw=0)
    ax.set_xlabel("configurations evaluated")
    ax.set_ylabel("fraction of the optimum reached")
    ax.set_ylim(0, 1.02)
    ax.set_xscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"median over {min(len(v) for v in runs.values())} seeds"
                 + (" (band: 10th to 90th percentile)" if band else ""), fontsize=9)
    return fig


def plot_pareto(results: Any, objectives: Sequence[str] | None = None, ax: Any = None) -> Any:
    """Every configuration with both objectives (of ``meta["objectives"]`` unless given) as a
    point, the Pareto front joined and marked. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    names = list(objectives or results.meta.get("objectives") or [])
    if len(names) != 2:
        raise ValueError(f"plot_pareto draws two objectives; this search has {names or 'none'}"
                         " (give objectives=[x, y])")
    fields = ["time_ms" if n == "time" else n for n in names]
    pts = [(r[fields[0]], r[fields[1]], bool(r.get("pareto"))) for r in results.rows
           if r.get("status") in _GOOD and all(isinstance(r.get(f), (int, float)) for f in fields)]
    if not pts:
        raise ValueError(f"no configuration has both {names[0]!r} and {names[1]!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.6, 4.2), layout="constrained")
    else:
        fig = ax.figure
    xs, ys, front = zip(*pts)
    ax.scatter(xs, ys, s=14, color="0.6", label="configurations")
    on = sorted((x, y) for x, y, f in pts if f)
    if on:
        ax.plot(*zip(*on), "o-", color="C3", ms=5, lw=1.4, label="Pareto front")
    ax.set_xlabel(fields[0])
    ax.set_ylabel(fields[1])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{len(on)} of {len(pts)} configurations on the front", fontsize=9)
    return fig
