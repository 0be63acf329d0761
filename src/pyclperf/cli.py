"""The ``pyclperf`` command: parses arguments, calls the package, prints. Nothing else."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import pyclperf


def _human_bytes(nbytes: int) -> str:
    n = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _details(d: "pyclperf.DeviceInfo") -> dict[str, object]:
    """Every property of a device, with those that need a context (a kernel build) where one
    can be made."""
    import pyclperf

    try:
        return pyclperf.Context(d).summary()
    except pyclperf.PyclperfError as exc:
        return {**pyclperf.device_summary(d), "preferred_work_group_multiple": f"unknown ({exc})"}


def cmd_devices(args: argparse.Namespace) -> int:
    import pyclperf

    devices = pyclperf.list_devices()
    if not devices:
        print("no OpenCL device found; install an ICD (e.g. `make deps` installs PoCL)")
        return 1
    try:
        chosen = pyclperf.select_device(None)
    except pyclperf.InvalidArgumentError as exc:
        print(f"warning: {exc}", file=sys.stderr)
        chosen = None
    for i, d in enumerate(devices):
        mark = "*" if chosen is not None and (d.platform_index, d.device_index) == (
            chosen.platform_index, chosen.device_index) else " "
        print(f"{mark}[{i}] {d.platform_index}:{d.device_index} {d.type:<4} {d.name} "
              f"({d.platform_name}; {d.compute_units} CUs, {_human_bytes(d.global_mem_bytes)})")
        if args.details:
            for key, value in _details(d).items():
                print(f"        {key:<32} {value}")
    from pyclperf._icd import NOTE

    print("(* = default device)")
    # Which .icd files the loader read, and what pyclperf added (PoCL from PyPI, NVIDIA).
    print("ICD loader set-up:")
    for part in NOTE.split("; "):
        print(f"  {part}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    import pyclperf
    from pyclperf.experiments import get, run

    ctx = pyclperf.Context(args.device)
    out_dir = Path(args.out)
    print(f"{args.experiment} on {ctx.info.name} ({ctx.info.platform_name})", flush=True)
    results = run(args.experiment, ctx, size=args.size, local_size=args.local_size,
                  warmup=args.warmup, repeats=args.repeats, method=args.method,
                  out=out_dir / f"{args.experiment}.jsonl", progress=None,
                  peak_gbps=args.peak_gbps, pcie_gbps=args.pcie_gbps)
    paths = {"csv": results.to_csv(out_dir / f"{args.experiment}.csv")}
    df = results.df
    x = results.meta["x"]
    table = get(args.experiment).summary(results)
    if table is None and "gbps" in df:
        table = df[[c for c in (x, "status", "median_ns", "spread_pct", "gbps") if c in df]]
    if table is not None:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if results.meta.get("conclusion"):
        print(results.meta["conclusion"])
    if not args.no_plot and "status" in df and (df["status"] == "ok").any():
        png = pyclperf.save_plot(results, out_dir / f"{args.experiment}.png")
        if png is not None:
            paths["png"] = Path(png)
    for kind, p in paths.items():
        print(f"wrote {p}")
    print(f"wrote {out_dir / (args.experiment + '.jsonl')}")
    if results.meta.get("interrupted"):
        print("interrupted: the finished points are saved", file=sys.stderr)
        return 130
    # A skipped point (a ceiling nobody can know here) is reported, not failed.
    failed = int((~df["status"].isin(["ok", "skipped"])).sum()) if "status" in df else len(df)
    if failed:
        print(f"{failed} point(s) did not pass: see the 'status' and 'error' columns", file=sys.stderr)
        return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    from pyclperf.report import write_report

    print(f"wrote {write_report(args.results, args.out)}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from pyclperf.report import compare
    from pyclperf.results import Results

    table = compare(Results.load(args.a), Results.load(args.b), metric=args.metric)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from pyclperf.experiments import names

    p = argparse.ArgumentParser(prog="pyclperf", description="GPU memory-performance experiments over OpenCL")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("devices", help="list OpenCL devices")
    d.add_argument("--details", action="store_true", help="every property that matters here")
    d.set_defaults(func=cmd_devices)
    r = sub.add_parser("run", help="run an experiment, verify it, save CSV/JSONL and a plot")
    r.add_argument("experiment", choices=names())
    r.add_argument("--device", default=None,
                   help="index, 'platform:device', 'gpu'/'cpu' or a name substring "
                        "(default: $PYCLPERF_DEVICE, else first GPU, else CPU)")
    r.add_argument("--size", type=int, default=None,
                   help="problem size: work-items for kernel sweeps, bytes for transfer (largest), "
                        "batching (total) and vector (per buffer) (default: by device kind)")
    r.add_argument("--local-size", type=int, default=256, help="work-group size (default 256)")
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--repeats", type=int, default=20)
    r.add_argument("--method", choices=("events", "host"), default="events",
                   help="event profiling (default) or a host clock around enqueue+finish")
    r.add_argument("--peak-gbps", type=float, default=None,
                   help="theoretical device-memory bandwidth, instead of NVML's figures")
    r.add_argument("--pcie-gbps", type=float, default=None,
                   help="theoretical PCIe bandwidth per direction, instead of NVML's figures")
    r.add_argument("--out", default="results", help="output folder (default ./results)")
    r.add_argument("--no-plot", action="store_true")
    r.set_defaults(func=cmd_run)
    rep = sub.add_parser("report", help="one self-contained HTML page from results files")
    rep.add_argument("results", nargs="+", help="results files (.jsonl)")
    rep.add_argument("--out", default="report", help="output folder (default ./report)")
    rep.set_defaults(func=cmd_report)
    cmp_ = sub.add_parser("compare", help="two results files of one experiment side by side")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    cmp_.add_argument("--metric", default=None, help="column to compare (default gbps, else median_ns)")
    cmp_.add_argument("--csv", default=None, help="also write the table as CSV")
    cmp_.set_defaults(func=cmd_compare)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the command line shows a sentence, not a traceback
        from pyclperf import PyclperfError

        if isinstance(exc, (PyclperfError, ValueError, FileNotFoundError)):
            print(f"pyclperf: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
