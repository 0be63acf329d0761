"""Two runs of one experiment side by side, refused where they did not measure the same thing.

A comparison only means something when the runs differ in the device and its driver alone: a
different size, work-group size, swept values, options or pyclperf version changes the numbers
by itself. ``differences`` lists every such difference; ``compare`` refuses them unless forced.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .results import Results

# Metadata that describes the machine or the moment, not what was measured: two runs on two
# GPUs are expected to differ here. Everything else in the metadata must match.
MACHINE_KEYS = frozenset({
    "device", "driver", "platform", "host", "icd", "created", "versions", "peak_gbps",
    "pcie_gbps", "peak", "conclusion", "noisy_points", "load_warnings", "interrupted",
    # Text and figure specs: the same experiment's wording may change without its measurement.
    "title", "description", "guide", "plot", "x_label",
    # What the compiler or the device decided (occupancy's estimate inputs), not the user.
    "registers_per_item", "static_local_bytes", "estimate_source", "estimate_cannot_know",
})

# Units and direction of the usual metrics: (unit, higher is better).
METRICS: dict[str, tuple[str, bool]] = {
    "gbps": ("GB/s", True), "gbps_best": ("GB/s", True), "gflops": ("GFLOP/s", True),
    "gops": ("Gop/s", True), "fraction_of_peak": ("fraction of peak", True),
    "median_ns": ("ns", False), "min_ns": ("ns", False), "time_ms": ("ms", False),
    "slowdown": ("x", False), "relative": ("x", True),
}


class MismatchError(ValueError):
    """The two runs measured different things; --force compares them anyway."""


def differences(a: Results, b: Results) -> list[str]:
    """Every difference between the runs other than the machine's: one line each."""
    out = []
    for key in sorted((set(a.meta) | set(b.meta)) - MACHINE_KEYS):
        va, vb = a.meta.get(key), b.meta.get(key)
        if va != vb:
            out.append(f"{key}: {_short(va)} vs {_short(vb)}")
    pa = a.meta.get("versions", {}).get("pyclperf")
    pb = b.meta.get("versions", {}).get("pyclperf")
    if pa != pb:
        out.append(f"pyclperf version: {pa} vs {pb}")
    x = a.meta.get("x")
    if x and x == b.meta.get("x") and x in a.df and x in b.df:
        xa, xb = sorted(set(a.df[x].astype(str))), sorted(set(b.df[x].astype(str)))
        if xa != xb:
            out.append(f"swept {x}: {_short(xa)} vs {_short(xb)}")
    return out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def metric_of(a: Results, b: Results, metric: str | None) -> str:
    da, db = a.df, b.df
    metric = metric or ("gbps" if "gbps" in da and "gbps" in db else "median_ns")
    if metric not in da or metric not in db:
        raise ValueError(f"metric {metric!r} is not in both results")
    return metric


def header(metric: str) -> str:
    """What the table's numbers are: the metric, its unit and which way is better."""
    unit, higher = METRICS.get(metric, ("as recorded", True))
    better = "higher is better" if higher else "lower is better"
    return f"metric: {metric} ({unit}; {better}); ratio B/A"


def compare(a: Results, b: Results, metric: str | None = None, force: bool = False) -> pd.DataFrame:
    """Rows of two runs of one experiment joined on their parameters, with b/a ratios.

    ``metric`` defaults to ``gbps`` where present, else ``median_ns``. MismatchError when the
    runs differ in anything but the machine (``differences``), unless ``force``; the differences
    are kept in the table's ``attrs["differences"]`` either way.
    """
    if a.experiment != b.experiment:
        raise ValueError(f"cannot compare different experiments: {a.experiment!r} and {b.experiment!r}")
    diffs = differences(a, b)
    if diffs and not force:
        raise MismatchError(f"the runs measured different things ({'; '.join(diffs)}); "
                            f"compare them anyway with --force")
    da, db = a.df, b.df
    metric = metric_of(a, b, metric)
    x = a.meta.get("x")
    keys = [x] if x else ["config"] if "config" in da else []
    keys += [k for k in ("direction", "memory", "access", "size", "variant", "mode", "layout")
             if k in da and k in db and k not in keys]
    if not keys:
        raise ValueError("results carry no parameter columns to join on")
    name_a = a.meta.get("device", {}).get("name", "A")
    name_b = b.meta.get("device", {}).get("name", "B")
    if name_a == name_b:
        name_a, name_b = f"{name_a} (A)", f"{name_b} (B)"
    left = da[keys + [metric, "status"]].rename(columns={metric: name_a, "status": "status A"})
    right = db[keys + [metric, "status"]].rename(columns={metric: name_b, "status": "status B"})
    joined = left.merge(right, on=keys, how="outer")
    joined["ratio B/A"] = joined[name_b] / joined[name_a]
    joined.attrs.update(differences=diffs, metric=metric, header=header(metric))
    return joined


def slower_rows(table: pd.DataFrame, pct: float) -> pd.DataFrame:
    """The rows where B is slower than A by more than ``pct`` percent (the regression gate)."""
    _, higher = METRICS.get(str(table.attrs.get("metric")), ("", True))
    ratio = table["ratio B/A"]
    slower = ratio < 1 - pct / 100 if higher else ratio > 1 + pct / 100
    return table[slower.fillna(False)]
