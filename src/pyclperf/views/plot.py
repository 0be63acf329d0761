"""Figures from results records: bandwidth against the swept parameter (the Guide's Figures 3.7
and 3.9), one line per mode (transfers), one bar per variant, or any column per group (lines).
A record says which in ``meta["plot"]``; records without it get plot_bandwidth."""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from ..measure.results import OK, Results
from ..measure.stats import NOISY_SPREAD_PCT
from ..measure.sweep import timing_label


def plot_bandwidth(results: Results, ax: Any = None, label: str | None = None) -> Any:
    """Effective bandwidth (median, with the min-max time band) against ``meta['x']``.

    Points that failed verification are drawn as red crosses: their speed means nothing; noisy
    points (spread over stats.NOISY_SPREAD_PCT) get an orange ring. Returns the matplotlib Figure.
    """
    df = _rows_with(results, "gbps", "bytes", "min_ns", "max_ns")
    x = results.meta["x"]
    fig, ax = _axes(ax)
    ok = df[df["status"] == OK]
    bad = df[df["status"] != OK]
    name = results.meta.get("device", {}).get("name", "device")
    lo = ok["bytes"] / ok["max_ns"]
    hi = ok["bytes"] / ok["min_ns"]
    line = ax.plot(ok[x], ok["gbps"], marker="o", ms=4, label=f"{label or name} (median)")[0]
    # The band is the fastest and slowest launch of each point, not a confidence interval.
    ax.fill_between(ok[x], lo, hi, color=line.get_color(), alpha=0.2, linewidth=0,
                    label="min-max over the timed launches")
    _mark_noisy(ax, ok, x, "gbps")
    if not bad.empty and "gbps" in bad:
        ax.plot(bad[x], np.nan_to_num(bad["gbps"]), "x", color="red", label="failed verification")
    ax.set_xlabel(results.meta.get("x_label") or x)
    ax.set_ylabel("effective bandwidth (GB/s)")
    _title(ax, results)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _mark_noisy(ax: Any, rows: Any, x: str, y: str) -> None:
    """Ring the points whose spread exceeds the noise threshold (the rows' ``noisy`` flag): their
    median is drawn, but says less than the others'."""
    if "noisy" not in rows or rows.empty:
        return
    noisy = rows[rows["noisy"].fillna(False).astype(bool)]
    if noisy.empty:
        return
    label = f"noisy (spread > {NOISY_SPREAD_PCT:.0f}%)"
    if label in ax.get_legend_handles_labels()[1]:
        label = "_nolegend_"
    ax.plot(noisy[x], noisy[y], "D", ms=9, mfc="none", color="tab:orange", label=label)


def _axes(ax: Any, figsize: tuple[float, float] = (7, 4)) -> tuple[Any, Any]:
    import matplotlib.pyplot as plt

    if ax is None:
        return plt.subplots(figsize=figsize, layout="constrained")
    return ax.figure, ax


def _title(ax: Any, results: Results) -> None:
    name = results.meta.get("device", {}).get("name", "device")
    method = results.meta.get("method")
    # Event timing is the default and goes unsaid; any other clock is named on the figure.
    timing = f" · {timing_label(str(method))}" if method and method != "events" else ""
    ax.set_title(f"{results.meta.get('title') or results.experiment}\n{name}{timing}", fontsize=10)


# Theoretical ceilings drawn as dashed lines where the record knows them.
_CEILINGS = (("peak_gbps", "DRAM peak"), ("pcie_gbps", "PCIe peak"))


def plot_modes(results: Results, group: str = "mode", ax: Any = None, logx: bool = True,
               logy: bool = False) -> Any:
    """Bandwidth (median) against ``meta['x']``, one line per value of ``group``.

    Failed points are red crosses; known theoretical ceilings are dashed lines.
    """
    df = _rows_with(results, "gbps", groups=(group,))
    x = results.meta["x"]
    fig, ax = _axes(ax)
    ok = df[df["status"] == OK]
    for name, rows in ok.groupby(group, sort=False):
        rows = rows.sort_values(x)
        ax.plot(rows[x], rows["gbps"], marker="o", ms=3, label=str(name))
        _mark_noisy(ax, rows, x, "gbps")
    bad = df[df["status"] != OK]
    if not bad.empty:
        ax.plot(bad[x], np.nan_to_num(bad["gbps"], nan=0.0), "x", color="red", label="failed")
    top = ok["gbps"].max() if not ok.empty else np.nan
    for key, label in _CEILINGS:
        value = results.meta.get(key)
        # A ceiling far above every line would flatten them all; show it only when in reach.
        if value and (logy or value <= 3 * top):
            ax.axhline(value, ls="--", lw=1, color="gray")
            ax.annotate(f"{label} {value:.0f} GB/s", (0.01, value), xycoords=("axes fraction", "data"),
                        fontsize=7, color="gray", va="bottom")
    _finish(ax, results, "bandwidth (GB/s)", logx, logy)
    return fig


def plot_columns(results: Results, columns: dict[str, str], ylabel: str, ax: Any = None,
                 logx: bool = True, logy: bool = True) -> Any:
    """Several columns of the verified rows against ``meta['x']``, one line each, labelled by
    ``columns`` (column -> label): e.g. the same runs timed by two clocks."""
    if not columns:
        raise ValueError("a 'columns' figure names no column to draw")
    df = _rows_with(results, *columns)
    x = results.meta["x"]
    fig, ax = _axes(ax)
    ok = df[df["status"] == OK].sort_values(x)
    for column, label in columns.items():
        ax.plot(ok[x], ok[column], marker="o", ms=3, label=label)
    _mark_noisy(ax, ok, x, next(iter(columns)))
    _finish(ax, results, ylabel, logx, logy)
    return fig


def _key(value: Any) -> Any:
    """``value`` where it can be a key, else its text."""
    try:
        hash(value)
    except TypeError:
        return str(value)
    return value


def _rows_with(results: Results, *numbers: str, groups: Sequence[str] = ()) -> Any:
    """The rows to draw: those with a value of ``meta['x']``, with it and the ``numbers``
    columns as floats (a missing value is NaN: a gap). ValueError, which means "no figure",
    where a column is missing or holds something other than numbers."""
    df = results.df
    x = results.meta.get("x")
    if x is None or df.empty or any(c not in df for c in (x, "status", *numbers, *groups)):
        raise ValueError("results have no bandwidth rows to plot")
    df = df[df[x].notna()].copy()
    for column in dict.fromkeys((x, *numbers)):
        try:
            df[column] = df[column].astype(float)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"column {column!r} holds values that are not numbers") from None
    # A group's value only names a line: one that cannot be a key (a list or a mapping from a
    # hand-edited or foreign file) is named by its text rather than stopping the figure.
    for column in groups:
        df[column] = df[column].map(_key)
    return df


def _finish(ax: Any, results: Results, ylabel: str, logx: bool, logy: bool) -> None:
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel(results.meta.get("x_label") or results.meta["x"])
    ax.set_ylabel(ylabel)
    _title(ax, results)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def plot_bars(results: Results, label: str = "variant", ax: Any = None, value: str = "gbps",
              xlabel: str = "effective bandwidth (GB/s)") -> Any:
    """One horizontal bar per row: the median's ``value`` column (bandwidth unless told, e.g.
    "gops" for operations per second), labelled by ``label``; failed rows red."""
    df = results.df
    if df.empty or label not in df or value not in df:
        raise ValueError(f"results have no {value!r} rows to plot")
    fig, ax = _axes(ax, figsize=(7, 0.3 * len(df) + 1.5))
    colors = ["tab:blue" if s == OK else "tab:red" for s in df["status"]]
    heights = np.nan_to_num(df[value].astype(float), nan=0.0)
    # Horizontal bars: long variant names sit on the y axis, one per line, never overlapping.
    bars = ax.barh([str(v) for v in df[label]], heights, color=colors, label=f"{value} at the median time")
    whiskers = rate_range(df, value)
    if whiskers is not None:
        lo, hi = whiskers
        ax.errorbar(heights, np.arange(len(df)), xerr=[np.clip(heights - lo, 0, None),
                    np.clip(hi - heights, 0, None)], fmt="none", ecolor="black", capsize=2, lw=0.8,
                    label="min-max over the timed launches")
        ax.legend(fontsize=7, loc="lower right")
    if "noisy" in df:  # hatched: the spread of its times exceeds the noise threshold
        for bar, noisy in zip(bars, df["noisy"].fillna(False).astype(bool)):
            if noisy:
                bar.set_hatch("///")
                bar.set_edgecolor("tab:orange")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    _title(ax, results)
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def rate_range(df: Any, value: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The range of a rate column (bandwidth, operations per second) over a row's timed
    launches: a rate is an amount over the time, so the slowest launch (max_ns) gives the low end
    and the fastest (min_ns) the high end. None where the rows carry no times."""
    if not {"median_ns", "min_ns", "max_ns"} <= set(df.columns):
        return None
    rate = df[value].astype(float).to_numpy()
    median = df["median_ns"].astype(float).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = rate * median / df["max_ns"].astype(float).to_numpy()
        hi = rate * median / df["min_ns"].astype(float).to_numpy()
    lo, hi = np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=0.0)
    return (lo, hi) if np.isfinite(hi).all() else None


def plot_lines(results: Results, y: str, ylabel: str, group: str | None = None,
               mark: str | None = None, mark_label: str = "", logx: bool = False,
               logy: bool = False, hlines: dict[str, Any] | None = None,
               vlines: dict[str, Any] | None = None, label_format: str = "{}",
               ax: Any = None) -> Any:
    """Column ``y`` of the verified rows against ``meta['x']``, one line per value of ``group``
    (labelled ``label_format.format(value)``).

    Rows where the boolean column ``mark`` is true get a ring (e.g. work-group sizes that are a
    multiple of the preferred multiple). ``hlines``/``vlines`` map a label to a number or to the
    name of a meta entry holding one (e.g. the warp size); unknown ones are left out.
    """
    df = _rows_with(results, y, groups=(group,) if group else ())
    x = results.meta["x"]
    fig, ax = _axes(ax)
    placed = df[df[x].notna()]
    if logx:
        placed = placed[placed[x] > 0]
    ok = placed[(placed["status"] == OK) & placed[y].notna()]
    for name, rows in (ok.groupby(group, sort=False) if group else [(None, ok)]):
        rows = rows.sort_values(x)
        label = (label_format.format(name) if group
                 else results.meta.get("device", {}).get("name", "device"))
        # Several points at one x (occupancy's capped targets) would make the line jump back
        # and forth: the line joins their medians, every point is still drawn.
        medians = rows.groupby(x, sort=True)[y].median()
        line = ax.plot(medians.index, medians.to_numpy(), marker="o", ms=3, label=label)[0]
        if len(medians) < len(rows):
            ax.plot(rows[x], rows[y], ".", ms=3, color=line.get_color(), label="_nolegend_")
        _mark_noisy(ax, rows, x, y)
        if mark and mark in rows:
            ringed = rows[rows[mark].astype(bool)]
            ax.plot(ringed[x], ringed[y], "o", ms=8, mfc="none", color=line.get_color(),
                    label=mark_label or mark)
            mark_label = "_nolegend_"  # one legend entry for all groups
    bad = placed[placed["status"] != OK]
    if not bad.empty and not logy:
        ax.plot(bad[x], np.zeros(len(bad)), "x", color="red", label="failed / not run")
    for label, value in (hlines or {}).items():
        value = results.meta.get(value) if isinstance(value, str) else value
        if isinstance(value, (int, float)) and np.isfinite(value):
            ax.axhline(value, ls="--", lw=1, color="gray")
            ax.annotate(label, (0.01, value), xycoords=("axes fraction", "data"), fontsize=7,
                        color="gray", va="bottom")
    for label, value in (vlines or {}).items():
        value = results.meta.get(value) if isinstance(value, str) else value
        if isinstance(value, (int, float)) and np.isfinite(value):
            ax.axvline(value, ls=":", lw=1, color="gray")
            ax.annotate(label, (value, 0.98), xycoords=("data", "axes fraction"), fontsize=7,
                        color="gray", ha="right", va="top", rotation=90)
    _finish(ax, results, ylabel, logx, logy)
    return fig


def plot_model(results: Results, group: str, value: str, model: str, ylabel: str = "",
               ax: Any = None, logx: bool = True, logy: bool = True) -> Any:
    """A measured column of the verified rows against ``meta['x']``, one solid line per value of
    ``group``, each beside the prediction in column ``model`` (dashed, same colour)."""
    import matplotlib.pyplot as plt

    df = _rows_with(results, value, model, groups=(group,))
    x = results.meta["x"]
    # The model gets its own panel under the measurement: on one log axis its integer steps
    # drew dashed spikes across the measured curves, and the two quantities have different units.
    if ax is None:
        fig, (ax, model_ax) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, layout="constrained",
                                           height_ratios=(3, 2))
    else:
        fig, model_ax = ax.figure, None
    ok = df[df["status"] == OK]
    for name, rows in ok.groupby(group, sort=False):
        rows = rows.sort_values(x)
        line = ax.plot(rows[x], rows[value], marker="o", ms=3, label=f"{name}: measured")[0]
        _mark_noisy(ax, rows, x, value)
        if model_ax is not None:
            model_ax.step(rows[x], rows[model], where="mid", lw=1, color=line.get_color(),
                          label=f"{name}: {model.replace('_', ' ')}")
    measured_label = (ylabel or value).split("(solid)")[0].strip().rstrip(";")
    _finish(ax, results, measured_label, logx, logy)
    if model_ax is not None:
        if logx:
            model_ax.set_xscale("log", base=2)
        model_ax.set_ylabel(f"model: {model.replace('_', ' ')}")
        model_ax.set_xlabel(results.meta.get("x_label") or x)
        model_ax.grid(True, which="both", alpha=0.3)
        model_ax.legend(fontsize=7)
        ax.set_xlabel("")
    return fig


# The figures a record's ``meta["plot"]`` may name as its "kind": one drawing function for each
# kind of measure.plot_spec.FIGURES, taking the arguments that table lists (the loader checks a
# record's spec against the table; tests/test_plots.py holds the table and these together).
DRAWS: dict[str, Callable[..., Any]] = {"bandwidth": plot_bandwidth, "modes": plot_modes,
                                        "columns": plot_columns, "bars": plot_bars,
                                        "lines": plot_lines, "model": plot_model}


def plot_results(results: Results) -> Any:
    """The record's own figure as ``meta['plot']`` describes it; None where it wants none."""
    spec = dict(results.meta.get("plot", {"kind": "bandwidth"}) or {"kind": None})
    kind = spec.pop("kind", None)
    draw = DRAWS.get(str(kind)) if kind else None
    return draw(results, **spec) if draw is not None else None


def save_plot(results: Results, path: str | os.PathLike[str]) -> str | None:
    """Save the record's figure (plot_results) as ``path``; None where it has no figure. The
    file is replaced whole or not at all: a full disk leaves the old one as it was
    (ResultsWriteError naming it)."""
    import matplotlib.pyplot as plt

    from ..measure.writer import replace_whole

    fig = plot_results(results)
    if fig is None:
        return None
    kind = os.path.splitext(os.fspath(path))[1].lstrip(".") or "png"
    try:
        replace_whole(path, lambda tmp: fig.savefig(tmp, dpi=120, format=kind))
    finally:
        plt.close(fig)
    return os.fspath(path)
