"""The ``pyclperf`` command: parses arguments, calls the package, prints. Nothing else."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from .guide.cli import add_parser as add_guide_parser
from .roofline.cli import add_parsers as add_roofline_parsers
from .tuner.cli import add_parser as add_tune_parser
from .views.command_line import (EXIT_CODES, EXIT_ERROR, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK,
                                 EXIT_SLOWER, UsageParser, call, device_option)
from .views.run_command import add_parser as add_run_parser


def cmd_devices(args: argparse.Namespace) -> int:
    from pyclperf.views.devices import print_devices

    if not print_devices(details=args.details):
        print("no OpenCL device found; install an ICD (e.g. `make deps` installs PoCL)")
        return EXIT_FAILED
    return EXIT_OK


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


def build_parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    p = UsageParser(prog="pyclperf", description="GPU memory-performance experiments over OpenCL",
                                formatter_class=raw, epilog=EXIT_CODES)
    p.add_argument("--version", action="version", version=f"pyclperf {_version()}",
                   help="print pyclperf's version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = sub.add_parser("devices", help="list OpenCL devices", epilog=EXIT_CODES, formatter_class=raw)
    d.add_argument("--details", action="store_true", help="every property that matters here")
    d.set_defaults(func=cmd_devices)
    add_run_parser(sub, raw)
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
    add_roofline_parsers(sub, raw)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return call(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
