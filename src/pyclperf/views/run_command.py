"""``pyclperf run EXPERIMENT``: its options, and the run itself: the experiment swept on one
device (or a fleet), its table and conclusion printed, its CSV, JSON lines and figure written,
and an exit code.

The top-level command (cli.py) adds it as a subcommand; the guide's shared worker
(guide/worker.py) parses the same options with ``parser()`` and calls the same ``cmd_run``, so
an experiment run by the guide is run exactly as ``pyclperf run`` runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from .command_line import (EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageParser,
                           device_option, method_option)


def cmd_run(args: argparse.Namespace) -> int:
    from ..measure.results import results_lock
    from ..measure.writer import check_out_dir

    out_dir = check_out_dir(args.out)
    # The lock is taken before the device is opened, so a second writer is refused at once.
    with results_lock(out_dir / f"{args.experiment}.jsonl"):
        return _run_locked(args, out_dir)


def _run_locked(args: argparse.Namespace, out_dir: Path) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    from ..device.clocks import timing_for
    from ..device.context import Context
    from ..device.turns import device_turn
    from ..experiments import get, run
    from ..measure.sweep import timing_label

    if args.warmup is None:
        args.warmup = 1 if args.quick else 3
    if args.devices:
        from .fleet import cmd_run_fleet

        if args.cold or args.cold_check or args.lock_clocks:
            raise ValueError("--cold, --cold-check and --lock-clocks time one device: leave out --devices")

        return cmd_run_fleet(args)
    ctx = Context(args.device)
    # With --json, stdout carries the rows alone (for a pipe); every message goes to stderr.
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    # --quick: the quick timing and one warm-up unless given, and the experiment's quick sizes.
    policy = args.timing or ("quick" if args.quick else "default")
    # Where the guide runs lanes side by side, the sweep holds the device's turn (device/turns.py;
    # elsewhere a no-op); the context opened above, and the tables and files after, are the
    # lane's own host work. The clock check launches copies (the first time on a device and
    # driver): it takes the turn too, or it would run beside another lane's measurement.
    with device_turn(quiet=bool(getattr(get(args.experiment), "quiet", False)), label=args.experiment):
        timing = timing_for(ctx, args.method)  # the clock check, once per device and driver
        say(f"{args.experiment} on {ctx.info.name} ({ctx.info.platform_name}); timing: "
            f"{timing_label(timing.method)}" + (f" [{timing.reason}]" if timing.reason else ""))
        results = run(args.experiment, ctx, size=args.size, local_size=args.local_size,
                      warmup=args.warmup, repeats=args.repeats, method=args.method,
                      out=out_dir / f"{args.experiment}.jsonl", progress=None,
                      peak_gbps=args.peak_gbps, pcie_gbps=args.pcie_gbps,
                      min_time_s=args.min_time_s, policy=policy, cold=args.cold,
                      cold_check=args.cold_check, lock_clocks=args.lock_clocks, quick=args.quick)
    return _report(args, out_dir, results, say)


def _report(args: argparse.Namespace, out_dir: Path, results: Any, say: Any) -> int:
    """The finished run's table, notes and files; its exit code."""
    from ..experiments import get
    from ..measure.results import NOT_FAILED, OK, SUSPECT
    from ..measure.stats import NOISY_SPREAD_PCT
    from .plot import save_plot

    if results.meta.get("quick_options"):
        say("quick sizes: " + ", ".join(f"{k} {v}" for k, v in results.meta["quick_options"].items()))
    jsonl = out_dir / f"{args.experiment}.jsonl"
    with _saying_what_is_safe(f"{jsonl} holds every finished point"):
        paths = {"csv": results.to_csv(out_dir / f"{args.experiment}.csv")}
    df = results.df
    x = results.meta["x"]
    table = get(args.experiment).summary(results)
    if table is None and "gbps" in df:
        table = df[[c for c in (x, "status", "median_ns", "spread_pct", "noisy", "gbps") if c in df]]
    if table is not None and "noisy" in df and "noisy" not in table and len(table) == len(df):
        table = table.assign(noisy=df["noisy"].to_numpy())
    if table is not None:
        say(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if "noisy" in df and df["noisy"].fillna(False).astype(bool).any():
        say(f"{int(df['noisy'].fillna(False).astype(bool).sum())} point(s) noisy: the spread of "
              f"their times exceeds {NOISY_SPREAD_PCT:.0f}% (column spread_pct); read them with care")
    refused = df["refused"].notna() & (df["refused"] != "") if "refused" in df else None
    if refused is not None and refused.any():
        say(f"{int(refused.sum())} point(s) refused by the device for resources it lacks "
            "(skipped, not failed: column error says why)")
    if results.meta.get("conclusion"):
        say(results.meta["conclusion"])
    if "status" in df and (df["status"] == SUSPECT).any():
        say(f"{int((df['status'] == SUSPECT).sum())} point(s) suspect: their figures are beyond what "
            "the device can do (column suspect says why); no conclusion rests on them")
    if not args.no_plot and "status" in df and (df["status"] == OK).any():
        with _saying_what_is_safe(f"{jsonl} and {paths['csv']} hold every finished point; "
                                  f"'pyclperf report {jsonl}' draws the figure again"):
            png = save_plot(results, out_dir / f"{args.experiment}.png")
        if png is not None:
            paths["png"] = Path(png)
    for kind, p in paths.items():
        say(f"wrote {p}")
    say(f"wrote {jsonl}")
    if args.json:
        print(json.dumps([_plain(r) for r in results.rows]))
    if results.meta.get("interrupted"):
        print("interrupted: the finished points are saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    # A skipped point (a ceiling nobody can know here) is reported, not failed.
    failed = int((~df["status"].isin(NOT_FAILED)).sum()) if "status" in df else len(df)
    if failed:
        print(f"{failed} point(s) did not pass: see the 'status' and 'error' columns", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


@contextlib.contextmanager
def _saying_what_is_safe(safe: str) -> Iterator[None]:
    """A file written after the run's record that cannot be written (a full disk) is named,
    with what is already safe."""
    from ..measure.writer import ResultsWriteError

    try:
        yield
    except ResultsWriteError as exc:
        exc.detail = f"{exc.detail}; {safe}" if exc.detail else safe
        raise


def _plain(row: dict[str, object]) -> dict[str, object]:
    """A row as strict JSON: NaN and infinities (untimed fields) become null."""
    out: dict[str, object] = {}
    for k, v in row.items():
        if hasattr(v, "item"):
            v = v.item()
        out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
    return out


def _epilog() -> str:
    from ..experiments import catalogue

    listing = "\n".join(f"  {cls.id:<13} {cls.description}" for cls in catalogue())
    return "experiments:\n" + listing + "\n\n" + EXIT_CODES


def add_arguments(r: argparse.ArgumentParser) -> None:
    """The options of ``pyclperf run``."""
    from ..experiments import DEFAULT_LOCAL_SIZE, names

    r.add_argument("experiment", choices=names(), metavar="EXPERIMENT",
                   help="one of the experiments listed below")
    device_option(r)
    r.add_argument("--size", type=int, default=None,
                   help="problem size: work-items for kernel sweeps, bytes for transfer (largest), "
                        "batching (total) and vector (per buffer) (default: by device kind)")
    r.add_argument("--local-size", type=int, default=None,
                   help=f"work-group size, for the experiments that take one (default {DEFAULT_LOCAL_SIZE})")
    r.add_argument("--warmup", type=int, default=None,
                   help="untimed launches before timing each point (default 3; 1 with --quick)")
    r.add_argument("--repeats", type=int, default=None,
                   help="least number of timed launches per point (default: --timing's; 10 for default)")
    r.add_argument("--min-time-s", type=float, default=None,
                   help="least total kernel time per point, in seconds (default: --timing's; 0 for default)")
    r.add_argument("--timing", choices=("default", "thorough", "quick"), default=None,
                   help="when a point's timing stops: default: once the 95%% confidence interval on "
                        "the median is within 1%% of it (at least 10 launches, at most 0.25 s); "
                        "thorough: ten times that measurement (within 0.32%%, at least 100, at most "
                        "2.5 s); quick: two launches, or more to fill half a millisecond of kernel "
                        "time, no interval goal (the default with --quick)")
    r.add_argument("--quick", action="store_true",
                   help="a quick run: --timing quick, one warm-up, and the experiment's smaller "
                        "sizes or fewer points where its verdict does not need the defaults (the "
                        "results' quick_options say which; --size and the like still apply)")
    method_option(r)
    r.add_argument("--peak-gbps", type=float, default=None,
                   help="theoretical device-memory bandwidth, instead of NVML's figures")
    r.add_argument("--pcie-gbps", type=float, default=None,
                   help="theoretical PCIe bandwidth per direction, instead of NVML's figures")
    r.add_argument("--out", default="results", help="output folder (default ./results); one writer per file")
    r.add_argument("--no-plot", action="store_true", help="skip the PNG figure")
    r.add_argument("--cold", action="store_true",
                   help="flush the last-level cache before every timed launch (outside the timed "
                        "events), so a working set that fits in the cache is timed from memory")
    r.add_argument("--lock-clocks", action="store_true",
                   help="hold the GPU's clocks at their maxima for the run where the driver allows "
                        "it (NVML; usually root), restored after; the results say whether it worked")
    r.add_argument("--cold-check", action="store_true",
                   help="after the run, measure again cold the cache-resident points the guide's "
                        "source figure uses, and record the cold figure (pyclperf guide passes it)")
    r.add_argument("--json", action="store_true",
                   help="print the rows as one JSON array on stdout (messages go to stderr)")
    r.add_argument("--devices", default=None,
                   help="'all' (every GPU) or comma-separated specs: one process per device, "
                        "one results file with a 'device' column")
    r.set_defaults(func=cmd_run)


def add_parser(sub: Any, raw: type[argparse.HelpFormatter]) -> None:
    """``run`` as a subcommand of ``pyclperf``."""
    add_arguments(sub.add_parser("run", help="run an experiment, verify it, save CSV/JSONL and a plot",
                                 formatter_class=raw, epilog=_epilog()))


def parser() -> argparse.ArgumentParser:
    """``pyclperf run`` alone: the guide's worker reads its requests with it."""
    p = UsageParser(prog="pyclperf run", formatter_class=argparse.RawDescriptionHelpFormatter,
                    epilog=_epilog())
    add_arguments(p)
    return p


__all__ = ["add_arguments", "add_parser", "cmd_run", "parser"]
