"""``pyclperf tune SPEC.json``: the command line of the tuner. Parses nothing of the spec
itself (tuner/spec.py and tuner/speccheck.py do); applies the options, shows a dry run or
runs tune() and prints the best configurations."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..views.command_line import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK

# The spec keys the command line may override, and the option that does.
TUNE_OVERRIDES = {"strategy": "--strategy", "max_fevals": "--max-fevals",
                  "time_limit": "--time-limit", "timeout": "--timeout", "out": "--out",
                  "cache": "--cache", "method": "--method", "seed": "--seed",
                  "memory_limit": "--memory-limit"}


def _dry_run_space(space: Any, samples: int = 10_000) -> str:
    """How many configurations the restrictions allow: counted where the space is small (or
    unrestricted), else estimated from a random sample and said to be an estimate."""
    if space.allowed_count is not None:
        text = f"{space.allowed_count} of {space.size} configs allowed by the restrictions"
        if space.failed:
            text += (f" ({len(space.failed)} more whose restriction raised, e.g. "
                     f"{space.failed[0][1]})")
        return text
    drawn, allowed, raised, first = space.estimate(samples)
    text = (f"{space.size} configs in the product of tune_params, too many to count; estimated "
            f"from {drawn} random ones: about {allowed / drawn:.1%} allowed by the restrictions "
            f"(about {round(space.size * allowed / drawn)} configs; {allowed} of the {drawn})")
    if raised:
        text += f", {raised} of the {drawn} raised in a restriction, e.g. {first}"
    return text


def cmd_tune(args: argparse.Namespace) -> int:
    """Check the spec with the options applied; then show what would run (--dry-run) or run
    it. Exit 0, or 1 when no configuration ran to completion; a refusal raises SpecError."""
    import pyclperf
    from pyclperf.tuner.options import from_flat
    from pyclperf.tuner.rows import best_table
    from pyclperf.tuner.spec import parse_spec

    # The options go into the spec before it is checked: they are checked as its keys are,
    # and a refusal names the option. Paths given here are relative to the working folder.
    overrides = {key: getattr(args, key) for key in TUNE_OVERRIDES if getattr(args, key) is not None}
    for key in ("out", "cache"):
        if key in overrides:
            overrides[key] = os.path.abspath(overrides[key])
    labels = {key: TUNE_OVERRIDES[key] for key in overrides}
    replaying = args.replay is not None
    # A replay builds nothing and launches nothing: its arguments are never made.
    spec = parse_spec(args.spec, overrides, labels=labels,
                      allocate=not (args.dry_run or replaying))
    kwargs = dict(spec.kwargs)
    if args.no_isolate:
        kwargs["isolate"] = False
    if args.memcheck:
        from pyclperf.tuner.inputs import check_kind

        kwargs["check"] = check_kind("memory")  # Oclgrind missing: said now, dry run or not
    if args.dry_run:
        shown = {k: v for k, v in kwargs.items() if k not in ("source", "args", "answer", "metrics")}
        print(f"{spec.path}: {_dry_run_space(spec.search_space())}, "
              f"{len(spec.arg_names)} arguments, metrics {sorted(kwargs.get('metrics') or {})}, "
              f"verified: {spec.verified}")
        for k, v in shown.items():
            print(f"  {k} = {v!r}")
        return EXIT_OK
    if replaying:
        kwargs.setdefault("args", [])
        for key in ("isolate", "check", "cache"):
            kwargs.pop(key, None)
        print(f"replaying {kwargs['kernel_name']} from {args.replay}: no device is used", flush=True)
        results = pyclperf.tune(
            **from_flat({**kwargs, "replay": args.replay, "replay_missing": args.replay_missing})
        )
        replay = results.meta["replay"]
        print(f"{replay['format']} recorded on {replay['device_name'] or 'an unnamed device'}; "
              f"{results.meta['fevals']} configurations replayed by {results.meta['algorithm']}, "
              f"{results.meta['simulated_time_s']:.1f} s of recorded tuning time")
    else:
        ctx = pyclperf.Context(args.device)
        print(f"tuning {kwargs['kernel_name']} on {ctx.info.name} ({ctx.info.platform_name})",
              flush=True)
        results = pyclperf.tune(**from_flat({**kwargs, "ctx": ctx}))
    print(best_table(results, top=args.top))
    for key in ("out", "cache"):
        if kwargs.get(key):
            print(f"wrote {kwargs[key]}")
    if spec.t4 is not None:
        from pyclperf.tuner.t4 import write_t4

        print(f"wrote {write_t4(results, spec.t4)}")
    stop = results.meta.get("stop")
    if stop:  # why it stopped early, in one sentence (tuner/stops.py)
        print(stop["reason"], file=sys.stderr)
    if results.meta.get("interrupted"):
        if not stop:
            print("interrupted: the finished configurations are saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    # Exit 1 when no config ran to completion: a tuning run with nothing to pick is a failure.
    return EXIT_OK if any(r.get("status") in ("ok", "timed", "replayed") for r in results.rows) \
        else EXIT_FAILED


def _count(text: str) -> int:
    """argparse type: a non-negative integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def add_parser(sub: Any, raw: type[argparse.HelpFormatter]) -> None:
    """The ``tune`` subcommand and its options."""
    t = sub.add_parser("tune", help="tune a kernel described by a JSON spec (see pyclperf.tuner.spec)",
                       epilog=EXIT_CODES, formatter_class=raw)
    t.add_argument("spec", help="the spec file (JSON)")
    t.add_argument("--device", default=None, help="as for 'run' (default: $PYCLPERF_DEVICE, else first GPU)")
    t.add_argument("--strategy", default=None, help="override the spec's strategy")
    t.add_argument("--max-fevals", type=int, default=None, help="override the spec's max_fevals")
    t.add_argument("--time-limit", type=float, default=None, help="override the spec's time_limit (s)")
    t.add_argument("--timeout", type=float, default=None,
                   help="seconds one configuration may take (build, verification, timing) before "
                        "its worker is stopped and its row says 'timeout' (default: the spec's, "
                        "else 10x the slowest so far, at least 30)")
    t.add_argument("--memory-limit", default=None, metavar="BYTES",
                   help="the most memory a worker process may hold, as bytes or with a unit "
                        "(512M, 2G); an allocation past it makes that configuration 'out of "
                        "memory' (default: the spec's, else 75%% of the memory available)")
    t.add_argument("--memcheck", action="store_true",
                   help="run each configuration's launch on Oclgrind first: out-of-bounds accesses, "
                        "data races and uninitialised values become the row's status (small sizes)")
    t.add_argument("--no-isolate", action="store_true",
                   help="run the kernel in this process, not a supervised worker: unprotected "
                        "from a kernel that crashes, corrupts memory or hangs")
    t.add_argument("--method", choices=("auto", "events", "host"), default=None,
                   help="the clock (default: the spec's, else auto: events where the device's "
                        "event clock passes its check against the host clock, else the host clock)")
    t.add_argument("--out", default=None, help="override the spec's results file")
    t.add_argument("--cache", default=None, help="override the spec's Kernel Tuner cache file")
    t.add_argument("--top", type=_count, default=10, help="rows of the best-configs table (default 10)")
    t.add_argument("--replay", default=None, metavar="FILE",
                   help="search the times a Kernel Tuner cache (.json or .json.gz) or a T4 "
                        "results file recorded, instead of measuring: no device is opened, "
                        "nothing is built, rows are marked 'replayed'")
    t.add_argument("--replay-missing", choices=("error", "skip"), default="error",
                   help="a configuration the replayed file lacks: stop with an error naming it "
                        "(default), or give it a 'skipped' row")
    t.add_argument("--seed", type=_count, default=None, help="override the spec's seed")
    t.add_argument("--dry-run", action="store_true", help="check the spec and show what would run")
    t.set_defaults(func=cmd_tune)
