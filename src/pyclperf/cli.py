"""The ``pyclperf`` command: parses arguments, calls the package, prints. Nothing else."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Sequence

# Exit codes, the same for every command (the --help epilog and the README list them).
EXIT_OK = 0
EXIT_FAILED = 1        # ran, but some point (or guide experiment) did not pass
EXIT_ERROR = 2         # bad input (nothing ran), or a results file that cannot be read or written
                       # (argparse's usage errors use 2 as well)
EXIT_SLOWER = 3        # compare --fail-if-slower: B is slower than A beyond the threshold
EXIT_INTERRUPTED = 130  # Ctrl-C: finished points are saved
EXIT_CODES = f"""exit codes:
  {EXIT_OK}    success
  {EXIT_FAILED}    some point did not pass (wrong result, launch failed, ...) or a guide experiment failed
  {EXIT_ERROR}    bad input or usage (nothing ran), or a results file that cannot be read or
       written: a full disk stops the run with the finished points saved (one line on stderr says why)
  {EXIT_SLOWER}    compare --fail-if-slower: B slower than A beyond the threshold
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C); finished points are saved, the file marked interrupted"""


def cmd_devices(args: argparse.Namespace) -> int:
    from pyclperf.views.devices import print_devices

    if not print_devices(details=args.details):
        print("no OpenCL device found; install an ICD (e.g. `make deps` installs PoCL)")
        return EXIT_FAILED
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from pyclperf.measure.writer import check_out_dir
    from pyclperf.measure.results import results_lock

    out_dir = check_out_dir(args.out)
    # The lock is taken before the device is opened, so a second writer is refused at once.
    with results_lock(out_dir / f"{args.experiment}.jsonl"):
        return _run_locked(args, out_dir)


def _run_locked(args: argparse.Namespace, out_dir: Path) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    import pyclperf
    from pyclperf.device.clocks import timing_for
    from pyclperf.experiments import get, run
    from pyclperf.measure.sweep import timing_label
    from pyclperf.measure.results import NOT_FAILED, OK, SUSPECT
    from pyclperf.measure.stats import NOISY_SPREAD_PCT

    if args.devices:
        from pyclperf.views.fleet import cmd_run_fleet

        if args.cold or args.cold_check or args.lock_clocks:
            raise ValueError("--cold, --cold-check and --lock-clocks time one device: leave out --devices")

        return cmd_run_fleet(args)
    ctx = pyclperf.Context(args.device)
    # With --json, stdout carries the rows alone (for a pipe); every message goes to stderr.
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    timing = timing_for(ctx, args.method)  # the clock check, once per device and driver
    say(f"{args.experiment} on {ctx.info.name} ({ctx.info.platform_name}); timing: "
        f"{timing_label(timing.method)}" + (f" [{timing.reason}]" if timing.reason else ""))
    results = run(args.experiment, ctx, size=args.size, local_size=args.local_size,
                  warmup=args.warmup, repeats=args.repeats, method=args.method,
                  out=out_dir / f"{args.experiment}.jsonl", progress=None,
                  peak_gbps=args.peak_gbps, pcie_gbps=args.pcie_gbps, min_time_s=args.min_time_s,
                  policy=args.timing, cold=args.cold, cold_check=args.cold_check,
                  lock_clocks=args.lock_clocks)
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
    if results.meta.get("conclusion"):
        say(results.meta["conclusion"])
    if "status" in df and (df["status"] == SUSPECT).any():
        say(f"{int((df['status'] == SUSPECT).sum())} point(s) suspect: their figures are beyond what "
            "the device can do (column suspect says why); no conclusion rests on them")
    if not args.no_plot and "status" in df and (df["status"] == OK).any():
        png = pyclperf.save_plot(results, out_dir / f"{args.experiment}.png")
        if png is not None:
            paths["png"] = Path(png)
    for kind, p in paths.items():
        say(f"wrote {p}")
    say(f"wrote {out_dir / (args.experiment + '.jsonl')}")
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


def _plain(row: dict[str, object]) -> dict[str, object]:
    """A row as strict JSON: NaN and infinities (untimed fields) become null."""
    out: dict[str, object] = {}
    for k, v in row.items():
        if hasattr(v, "item"):
            v = v.item()
        out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
    return out


def cmd_report(args: argparse.Namespace) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    from pyclperf.views.report import write_report

    print(f"wrote {write_report(args.results, args.out)}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from pyclperf.views.compare import compare, slower_rows
    from pyclperf.guide.compare import is_guide_file
    from pyclperf.measure.results import Results

    if is_guide_file(args.a) or (args.b is not None and is_guide_file(args.b)):
        return _compare_guides(args)
    if args.b is None:  # one fleet file: its devices side by side
        from pyclperf.views.fleet import compare_fleet

        fleet = Results.load(args.a)
        table = compare_fleet(fleet, metric=args.metric)
        if not args.json:
            print(f"{fleet.experiment}: devices of {args.a}")
    else:
        a, b = Results.load(args.a), Results.load(args.b)
        table = compare(a, b, metric=args.metric, force=args.force)
        for diff in table.attrs["differences"]:
            print(f"warning: the runs differ in {diff} (compared anyway: --force)", file=sys.stderr)
        if not args.json:
            print(f"{a.experiment}: A = {args.a}, B = {args.b}")
            print(table.attrs["header"])
    if args.json:
        print(table.to_json(orient="records"))
    else:
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.csv:
        table.to_csv(args.csv, index=False)
        print(f"wrote {args.csv}", file=sys.stderr if args.json else sys.stdout)
    if args.fail_if_slower is not None:
        slower = slower_rows(table, args.fail_if_slower)
        if not slower.empty:
            print(f"{len(slower)} row(s) of B slower than A by more than {args.fail_if_slower:g}% "
                  f"in {table.attrs['metric']}", file=sys.stderr)
            return EXIT_SLOWER
    return EXIT_OK


def _compare_guides(args: argparse.Namespace) -> int:
    """compare on two guide.json files: verdicts side by side (pyclperf.guide.compare)."""
    from pyclperf.guide import compare as guide_compare

    if args.b is None:
        raise ValueError(f"{args.a} is a guide.json: compare it with a second one (B)")
    if not (guide_compare.is_guide_file(args.a) and guide_compare.is_guide_file(args.b)):
        raise ValueError(f"cannot compare a guide.json with a results file ({args.a}, {args.b})")
    for flag, given in (("--metric", args.metric), ("--force", args.force),
                        ("--fail-if-slower", args.fail_if_slower)):
        if given not in (None, False):
            raise ValueError(f"{flag} applies to results files; guide.json files compare verdicts")
    result = guide_compare.load_pair(args.a, args.b)
    print(json.dumps(result, indent=1) if args.json else guide_compare.format_text(result))
    if args.csv:
        guide_compare.write_csv(result, args.csv)
        print(f"wrote {args.csv}", file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("pyclperf")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error told in the one line every other refusal takes."""

    def error(self, message: str) -> None:  # type: ignore[override]
        text = " ".join(message.split())
        self.exit(EXIT_ERROR, f"pyclperf: error: {self.prog}: {text} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from pyclperf.experiments import DEFAULT_LOCAL_SIZE, catalogue, names

    raw = argparse.RawDescriptionHelpFormatter
    p = _Parser(prog="pyclperf", description="GPU memory-performance experiments over OpenCL",
                                formatter_class=raw, epilog=EXIT_CODES)
    p.add_argument("--version", action="version", version=f"pyclperf {_version()}",
                   help="print pyclperf's version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = sub.add_parser("devices", help="list OpenCL devices", epilog=EXIT_CODES, formatter_class=raw)
    d.add_argument("--details", action="store_true", help="every property that matters here")
    d.set_defaults(func=cmd_devices)
    listing = "\n".join(f"  {cls.id:<13} {cls.description}" for cls in catalogue())
    r = sub.add_parser("run", help="run an experiment, verify it, save CSV/JSONL and a plot",
                       formatter_class=raw, epilog="experiments:\n" + listing + "\n\n" + EXIT_CODES)
    r.add_argument("experiment", choices=names(), metavar="EXPERIMENT",
                   help="one of the experiments listed below")
    _device_option(r)
    r.add_argument("--size", type=int, default=None,
                   help="problem size: work-items for kernel sweeps, bytes for transfer (largest), "
                        "batching (total) and vector (per buffer) (default: by device kind)")
    r.add_argument("--local-size", type=int, default=None,
                   help=f"work-group size, for the experiments that take one (default {DEFAULT_LOCAL_SIZE})")
    r.add_argument("--warmup", type=int, default=3, help="untimed launches before timing each point (default 3)")
    r.add_argument("--repeats", type=int, default=None,
                   help="least number of timed launches per point (default: --timing's; 10 for default)")
    r.add_argument("--min-time-s", type=float, default=None,
                   help="least total kernel time per point, in seconds (default: --timing's; 0 for default)")
    r.add_argument("--timing", choices=("default", "thorough", "quick"), default="default",
                   help="when a point's timing stops: default: once the 95%% confidence interval on "
                        "the median is within 1%% of it (at least 10 launches, at most 0.25 s); "
                        "thorough: ten times that measurement (within 0.32%%, at least 100, at most "
                        "2.5 s); quick: two launches, no interval goal")
    _method_option(r)
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
    rep = sub.add_parser("report", help="one self-contained HTML page from results files",
                         epilog=EXIT_CODES, formatter_class=raw)
    rep.add_argument("results", nargs="+", help="results files (.jsonl)")
    rep.add_argument("--out", default="report", help="output folder (default ./report)")
    rep.set_defaults(func=cmd_report)
    cmp_ = sub.add_parser("compare", help="two results files of one experiment side by side, "
                          "the devices of one fleet run, or the verdicts of two guide.json files",
                          epilog=EXIT_CODES, formatter_class=raw)
    cmp_.add_argument("a", help="results file A (.jsonl): the reference, or a fleet run's file; "
                                "or a guide.json (pyclperf guide): then B is another guide.json")
    cmp_.add_argument("b", nargs="?", default=None,
                      help="results file B (.jsonl): ratios are B/A; omit it to compare the "
                           "devices of one fleet run (run --devices)")
    cmp_.add_argument("--metric", default=None, help="column to compare (default gbps, else median_ns)")
    cmp_.add_argument("--csv", default=None, help="also write the table as CSV")
    cmp_.add_argument("--json", action="store_true",
                      help="print the table as JSON instead (guide.json files: every verdict "
                           "with a 'differs' flag, and the count that differ)")
    cmp_.add_argument("--force", action="store_true",
                      help="compare even when the runs differ in more than device and driver "
                           "(size, local size, swept values, options, pyclperf version)")
    cmp_.add_argument("--fail-if-slower", type=float, default=None, metavar="PCT",
                      help=f"exit {EXIT_SLOWER} when any row of B is slower than A by more than PCT percent")
    cmp_.set_defaults(func=cmd_compare)
    add_tune_parser(sub, raw)
    add_guide_parser(sub, raw)
    from pyclperf.roofline.cli import add_parsers as add_roofline_parsers

    add_roofline_parsers(sub, raw, _device_option, EXIT_CODES)
    return p


def _method_option(parser: argparse.ArgumentParser, default: str | None = "auto") -> None:
    parser.add_argument("--method", choices=("auto", "events", "host"), default=default,
                        help="auto (default): event profiling where the device's event clock "
                             "passes its check against the host clock, else the host clock; "
                             "events; or host, a steady clock around enqueue+finish, which "
                             "includes the launch gap")


def _device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default=None,
                        help="index, 'platform:device', 'gpu'/'cpu' or a name substring "
                             "(default: $PYCLPERF_DEVICE, else first GPU, else CPU)")


def add_tune_parser(sub: Any, raw: type[argparse.HelpFormatter]) -> None:
    from pyclperf.tuner.cli import add_parser

    add_parser(sub, raw, EXIT_CODES)


def add_guide_parser(sub: Any, raw: type[argparse.HelpFormatter]) -> None:
    from pyclperf.guide.run import add_parser

    add_parser(sub, raw, _device_option, EXIT_CODES)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the command line shows a sentence, not a traceback
        from pyclperf import PyclperfError
        from pyclperf.measure.results import LockedError

        # OSError: a file that cannot be read or written (ResultsWriteError: a full disk
        # stopped the sweep; the message says what the file keeps).
        if isinstance(exc, (PyclperfError, ValueError, OSError, MemoryError, LockedError)):
            print(f"pyclperf: error: {' '.join(str(exc).split()) or type(exc).__name__}",
                  file=sys.stderr)
            if "unknown target CPU" in str(exc):  # clang's words: the way out is not in them
                from pyclperf.device.pocl_cpu import BUILD_FAILURE_HINT

                print(f"pyclperf: {BUILD_FAILURE_HINT}", file=sys.stderr)
            return EXIT_ERROR
        raise


if __name__ == "__main__":
    sys.exit(main())
