"""Fleet runs: one experiment on every device at once, one process per device, merged into one
results file keyed by a ``device`` column; and a side-by-side table that flags each device's
deviation from the fleet median.

Each device runs in its own process (a ProcessPoolExecutor: nothing to schedule beyond "one
job per device", so no Dask here) and writes its own file as points finish, so an interrupted
fleet keeps every device's finished points; the parent merges them into ``EXPERIMENT.jsonl``.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from .compare import checked, join_keys, label
from ..measure.results import Results, ResultsWriter

# A device this far (percent) from the fleet median at a point is flagged.
FLAG_PCT = 10.0


def _run_one(experiment: str, spec: str, out: str, kwargs: dict[str, Any]) -> tuple[str, str]:
    """In the child process: the experiment on one device; (device label, its file)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    from ..device.context import Context
    from ..tuner.remote import label
    from ..experiments import run

    ctx = Context(spec)
    run(experiment, ctx, out=out, progress=False, **kwargs)
    return label(ctx.info), out


def run_fleet(experiment: str, specs: Sequence[str], out_dir: str | os.PathLike[str],
              **kwargs: Any) -> Results:
    """``experiment`` on every device of ``specs`` in parallel; the merged Results (also
    written to ``out_dir/EXPERIMENT.jsonl``), each row with the ``device`` that produced it."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    # spawn: a forked child would inherit this process's OpenCL driver state.
    pool = cf.ProcessPoolExecutor(len(specs), mp_context=multiprocessing.get_context("spawn"))
    with pool:
        futures = [pool.submit(_run_one, experiment, s, str(folder / f"{experiment}.device{i}.jsonl"),
                               kwargs) for i, s in enumerate(specs)]
        parts = [f.result() for f in futures]
    return merge([Results.load(path) for _, path in parts], [lab for lab, _ in parts],
                 folder / f"{experiment}.jsonl")


def merge(parts: Sequence[Results], labels: Sequence[str],
          out: str | os.PathLike[str] | None = None) -> Results:
    """One Results of several devices' runs of one experiment, keyed by ``device``."""
    if len({p.experiment for p in parts}) != 1:
        raise ValueError("a fleet merges runs of one experiment only")
    seen: dict[str, int] = {}
    unique = []
    for lab in labels:  # two processes on one device (a spec given twice) stay two columns
        seen[lab] = seen.get(lab, 0) + 1
        unique.append(lab if seen[lab] == 1 else f"{lab} #{seen[lab]}")
    labels = unique
    meta = dict(parts[0].meta)
    meta["devices"] = {lab: p.meta.get("device", {}) for lab, p in zip(labels, parts)}
    meta["fleet"] = True
    rows = [{**row, "device": lab} for lab, p in zip(labels, parts) for row in p.rows]
    merged = Results(meta, rows)
    if out is not None:
        with ResultsWriter(out, meta) as writer:
            for row in rows:
                writer.add(row)
    return merged


def compare_fleet(results: Results, metric: str | None = None,
                  flag_pct: float = FLAG_PCT) -> pd.DataFrame:
    """Devices side by side at each point: the metric per device, the fleet median, each
    device's deviation from it in percent, and ``flagged`` naming devices beyond ``flag_pct``."""
    df = results.df
    if "device" not in df:
        raise ValueError("these results carry no 'device' column: not a fleet run")
    metric = metric or ("gbps" if "gbps" in df else "median_ns")
    if metric not in df:
        raise ValueError(f"metric {metric!r} is not in the results")
    keys = [k for k in join_keys(results.meta, df) if k in df]
    if not keys:
        raise ValueError("results carry no parameter columns to line devices up on")
    # Several rows per point are the devices' (and a device given twice): the median joins them.
    df = checked(df, keys + ["device"], metric, label(results, "the fleet run"), duplicates=True)
    ok = df[df["status"].isin(["ok", "timed"])]
    table = ok.pivot_table(index=keys, columns="device", values=metric, aggfunc="median")
    devices = list(table.columns)
    median = table.median(axis=1)
    out = table.copy()
    out["fleet median"] = median
    flagged: list[str] = []
    for i in range(len(out)):
        far = [d for d in devices
               if pd.notna(table.iloc[i][d]) and median.iloc[i]
               and abs(100.0 * (table.iloc[i][d] / median.iloc[i] - 1.0)) > flag_pct]
        flagged.append(", ".join(far))
    for d in devices:
        out[f"{d} vs median %"] = 100.0 * (table[d] / median - 1.0)
    out["flagged"] = flagged
    return out.reset_index()


def fleet_specs(devices: str) -> list[str]:
    """"all" (every GPU, else every device) or comma-separated device specs, as "P:D"."""
    from ..device.devices import list_devices, select_device

    if devices.strip() == "all":
        found = list_devices()
        chosen = [d for d in found if "GPU" in d.type] or found
    else:
        chosen = [select_device(s.strip()) for s in devices.split(",") if s.strip()]
    if not chosen:
        raise ValueError(f"--devices {devices!r} matched no OpenCL device")
    return [f"{d.platform_index}:{d.device_index}" for d in chosen]


def cmd_run_fleet(args: Any) -> int:
    """``pyclperf run EXPERIMENT --devices ...``: the fleet run, its table, an exit status."""
    specs = fleet_specs(args.devices)
    print(f"{args.experiment} on {len(specs)} device(s): {', '.join(specs)}", flush=True)
    res = run_fleet(args.experiment, specs, args.out, size=args.size, local_size=args.local_size,
                    warmup=args.warmup, repeats=args.repeats, method=args.method,
                    peak_gbps=args.peak_gbps, pcie_gbps=args.pcie_gbps)
    out = Path(args.out) / f"{args.experiment}.jsonl"
    try:
        table = compare_fleet(res)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    except ValueError as exc:  # nothing comparable (e.g. every point skipped): say so
        print(f"no side-by-side table: {exc}")
    print(f"wrote {out}")
    df = res.df
    failed = int((~df["status"].isin(["ok", "skipped"])).sum()) if "status" in df else len(df)
    if failed:
        print(f"{failed} point(s) did not pass: see the 'status' and 'error' columns")
        return 1
    return 0
