"""Two runs of one experiment side by side, refused where they did not measure the same thing.

A comparison only means something when the runs differ in the device and its driver alone: a
different size, work-group size, swept values, options or pyclperf version changes the numbers
by itself. ``differences`` lists every such difference; ``compare`` refuses them unless forced.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

from ..measure.results import Results

# Metadata that describes the machine or the moment, not what was measured: two runs on two
# GPUs are expected to differ here. Everything else in the metadata must match.
MACHINE_KEYS = frozenset({
    "device", "driver", "platform", "host", "icd", "created", "versions", "peak_gbps",
    "pcie_gbps", "peak", "conclusion", "noisy_points", "load_warnings", "interrupted",
    "write_error",
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
        # str() each value: astype(str) keeps a missing value as a float NaN, unsortable
        # among strings.
        xa, xb = sorted({str(v) for v in a.df[x]}), sorted({str(v) for v in b.df[x]})
        if xa != xb:
            out.append(f"swept {x}: {_short(xa)} vs {_short(xb)}")
    return out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def metric_of(a: Results, b: Results, metric: str | None) -> str:
    da, db = a.df, b.df
    chosen = metric or ("gbps" if "gbps" in da and "gbps" in db else "median_ns")
    if chosen not in da or chosen not in db:
        if metric is None:
            raise ValueError("neither 'gbps' nor 'median_ns' is in both results; choose the "
                             "column to compare with --metric")
        raise ValueError(f"metric {metric!r} is not in both results")
    return chosen


# Parameters that name a point beside the swept one, wherever the rows carry them.
POINT_KEYS = ("direction", "memory", "access", "size", "variant", "mode", "layout")


def join_keys(meta: dict[str, Any], *frames: pd.DataFrame) -> list[str]:
    """The columns that name a point in all of ``frames``: the swept parameter (``meta["x"]``,
    or a tuning run's ``config``), POINT_KEYS, and, where they take more than one value in a
    run, the figure's lines (``meta["plot"]["group"]``: bandwidth's mode, blocksize's kernel)
    and the work-group size. Held fixed, those two are left out, so that two runs of different
    fixed work-group sizes still pair point by point (compare --force)."""
    x = meta.get("x")
    keys = [x] if x else ["config"] if all("config" in f for f in frames) else []
    keys += [k for k in POINT_KEYS if all(k in f for f in frames) and k not in keys]
    group = (meta.get("plot") or {}).get("group")
    for k in (group, "local_size"):
        if (isinstance(k, str) and k not in keys and all(k in f for f in frames)
                and any(len({str(v) for v in f[k] if not _missing(v)}) > 1 for f in frames)):
            keys.append(k)
    return keys


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def label(results: Results, name: str) -> str:
    """How messages name a run: "A (a.jsonl)" where it was loaded from a file."""
    return f"{name} ({results.path})" if results.path is not None else name


def checked(df: pd.DataFrame, keys: list[str], metric: str, name: str,
            duplicates: bool = False) -> pd.DataFrame:
    """The rows of one run, ready to join on ``keys`` and compare in ``metric``: ValueError
    naming the run and the field where a row lacks a key or the status, a key holds more than
    one value, the metric holds something other than numbers, or (unless ``duplicates``) two
    rows share their keys (a join would pair each with every row of the other run)."""
    if df.empty:
        raise ValueError(f"{name} has no rows to compare")
    if metric in keys:
        raise ValueError(f"metric {metric!r} is a parameter the rows are joined on; "
                         "choose a measured column")
    for field in keys + ["status", metric]:
        if field not in df:
            raise ValueError(f"{name} has no {field!r} field in any row")
    for field in keys + ["status"]:
        lacking = int(df[field].isna().sum())
        if lacking:
            raise ValueError(f"{name}: {lacking} of {len(df)} rows have no {field!r} field")
        several = [v for v in df[field] if isinstance(v, (list, dict))]
        if several:
            raise ValueError(f"{name}: field {field!r} must hold one value per row, "
                             f"not {several[0]!r}")
    odd = [v for v in df[metric] if v is not None and not _number(v)]
    if odd:
        raise ValueError(f"metric {metric!r} is not numeric in {name}: {len(odd)} rows hold "
                         f"values such as {_short(odd[0])}; choose a measured column")
    repeated = df.duplicated(keys, keep="first")
    if repeated.any() and not duplicates:
        first = df[repeated].iloc[0]
        example = ", ".join(f"{k}={_plain(first[k])!r}" for k in keys)
        raise ValueError(f"{name} has {int(repeated.sum())} duplicate rows (more than one row "
                         f"for the same {', '.join(keys)}, e.g. {example}); compare needs one "
                         "row per point")
    try:
        values = [float("nan") if v is None else float(v) for v in df[metric]]
    except OverflowError:  # an integer of hundreds of digits
        raise ValueError(f"metric {metric!r} in {name} holds a number too large for a float"
                         ) from None
    out = df.copy()
    out[metric] = values
    return out


def _plain(v: Any) -> Any:
    """A NumPy scalar as the Python value a message shows (1, not np.int64(1))."""
    return v.item() if isinstance(v, np.generic) else v


def _number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


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
    for run, name in ((a, "A"), (b, "B")):
        if not run.rows:
            raise ValueError(f"{label(run, name)} has no rows to compare")
    diffs = differences(a, b)
    if diffs and not force:
        raise MismatchError(f"the runs measured different things ({'; '.join(diffs)}); "
                            f"compare them anyway with --force")
    da, db = a.df, b.df
    metric = metric_of(a, b, metric)
    keys = join_keys(a.meta, da, db)
    if not keys:
        raise ValueError("results carry no parameter columns to join on")
    da = checked(da, keys, metric, label(a, "A"))
    db = checked(db, keys, metric, label(b, "B"))
    name_a = str((a.meta.get("device") or {}).get("name", "A"))
    name_b = str((b.meta.get("device") or {}).get("name", "B"))
    if name_a == name_b:
        name_a, name_b = f"{name_a} (A)", f"{name_b} (B)"
    # The status joins as a column of each side, unless it is itself a key (a file whose
    # figure groups by status): then it is matched, not shown twice.
    extra = [] if "status" in keys else ["status"]
    left = da[keys + [metric] + extra].rename(columns={metric: name_a, "status": "status A"}
                                              if extra else {metric: name_a})
    right = db[keys + [metric] + extra].rename(columns={metric: name_b, "status": "status B"}
                                               if extra else {metric: name_b})
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
