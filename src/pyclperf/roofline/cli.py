"""``pyclperf profile`` and ``pyclperf explain``: the command-line side of the roofline.

    pyclperf profile [--device D] [--quick] [--refresh] [--plot FIG.png] [--json]
                     [--check RESULTS.jsonl ...]
    pyclperf explain SPEC.json [--device D] [--config k=v ...] [--flops EXPR] [--bytes EXPR]
                     [--precision fp32] [--retune] [--refresh] [--quick] [--out FIG.png]

``explain`` reads the spec's results file (its ``out``) where it exists and holds the spec's
kernel, else runs the tune first (as ``pyclperf tune`` does); it prints the explanation, writes
the figure, and stores the explanation in the results file, where ``pyclperf report`` shows it.
Where the kernel runs more than 5% above its roof, the profile is wrong there and ``explain``
says so in one line; ``--refresh`` measures that ceiling again from the kernel's launch shape.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..views.command_line import EXIT_CODES, EXIT_OK, device_option


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cmd_profile(args: argparse.Namespace) -> int:
    import pyclperf

    from .profiling import profile

    ctx = pyclperf.Context(args.device)
    _say(f"profile of {ctx.info.name} ({ctx.info.platform_name}, driver {ctx.info.driver_version})"
         f"{' (quick)' if args.quick else ''}")
    result = profile(ctx, quick=args.quick, refresh=args.refresh,
                     progress=lambda part: _say(f"  measuring {part} ..."))
    print(result.summary())
    if result.path is not None:
        print(f"profile file: {result.path}")
    if args.check:
        check_against(ctx, result, args.check)
    if args.plot:
        os.environ.setdefault("MPLBACKEND", "Agg")
        import matplotlib.pyplot as plt

        fig = result.plot()
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=110)
        plt.close(fig)
        print(f"wrote {args.plot}")
    if args.json:
        print(json.dumps(result.data))
    return EXIT_OK


def check_against(ctx: Any, prof: Any, files: Sequence[str]) -> None:
    """Each results file's best point against the roof that binds it; a roof some row beats by
    more than 5% is measured again from that row's launch shape, and the files checked again."""
    from .audit import check
    from .refresh import remeasure

    found = check(files, prof)
    print("results against the roofs (each experiment's best point; the row nearest its roof "
          "where that is another):")
    redo = []
    for experiment, best, near in found:
        if best is None:
            print(f"  {experiment}: no verified row with a rate")
            continue
        print("  " + best.line())
        if near is not None and near.line() != best.line() and near.roof is not None:
            print("    nearest its roof: " + near.line())
        worst = near if near is not None and near.beaten else best if best.beaten else None
        if worst is not None and worst.roof is not None:
            redo.append(worst)
    for p in {id(p.roof): p for p in redo}.values():  # one search per roof, the first row's shape
        _say(f"measuring the {p.roof.name} ceiling again from {p.experiment}'s shape ...")
        print("  refresh: " + remeasure(ctx, prof, p.roof, p.hints, p.rate))
    if redo:
        print("after measuring again:")
        for experiment, best, _ in check(files, prof):
            if best is not None:
                print("  " + best.line())


def parse_config(pairs: Sequence[str], params: dict[str, Sequence[Any]]) -> dict[str, Any]:
    """``k=v`` pairs as a configuration: each value as the parameter's own value of that text
    (so ``block_size_x=128`` is the int 128). ValueError names an unknown parameter or value."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or key not in params:
            raise ValueError(f"--config {pair!r}: give name=value with a tuned parameter "
                             f"({', '.join(params)})")
        match = [v for v in params[key] if str(v) == text]
        if not match:
            raise ValueError(f"--config {pair!r}: {key} takes {', '.join(map(str, params[key]))}")
        out[key] = match[0]
    return out


def expression(text: str | None, params: Sequence[str], what: str) -> Callable[[dict], float] | None:
    """A FLOP or byte count as a safe expression over the tuned parameters (the spec's metric
    evaluator), or None."""
    if text is None:
        return None
    from ..tuner.restrictions import compile_expression

    expr = compile_expression(text, list(params), what=what)
    return lambda config: float(expr(config))


def cmd_explain(args: argparse.Namespace) -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    import pyclperf
    from pyclperf.tuner.spec import parse_spec

    from . import profiling
    from .explaining import explain_spec
    from .profiling import _plain
    from .refresh import Hints, remeasure

    spec = parse_spec(args.spec)  # checked before the device is opened
    params = spec.kwargs["params"]
    config = parse_config(args.config or [], params)
    flops = expression(args.flops, list(params), "--flops")
    nbytes = expression(args.bytes, list(params), "--bytes")
    ctx = pyclperf.Context(args.device)
    prof = profiling.cached(ctx.info) or profiling.profile(
        ctx, quick=args.quick, progress=lambda part: _say(f"  profile: measuring {part} ..."))

    def run(retune: bool) -> tuple[Any, Any]:
        return explain_spec(spec.path, prof, config=config or None, bytes=nbytes, flops=flops,
                            precision=args.precision, ctx=ctx, quick=args.quick, retune=retune, say=_say)

    found, results = run(args.retune)
    if args.refresh:
        print(found.text())
        hints = Hints(found.launch.get("local_size"), found.launch.get("vector"), found.working_set)
        _say(f"measuring the {found.binding.name} ceiling again from this kernel's launch shape ...")
        print("refresh: " + remeasure(ctx, prof, found.binding, hints, found.fraction * found.binding.value))
        found, results = run(False)
    print(found.text())
    figure = Path(args.out or spec.path.with_name(f"{spec.path.stem}-roofline.png"))
    print(f"wrote {found.save_figure(figure)}")
    out = spec.kwargs.get("out")
    if out and Path(out).is_file():
        results.meta["explain"] = _plain(found.as_dict())
        results.to_json(out)
        print(f"stored the explanation in {out} (pyclperf report shows it)")
    return EXIT_OK


def add_parsers(sub: Any, raw: type[argparse.HelpFormatter]) -> None:
    p = sub.add_parser("profile", formatter_class=raw, epilog=EXIT_CODES,
                       help="measure this device's ceilings (cached per device and driver)",
                       description="Measure the device's ceilings: DRAM read/write/copy, cache "
                                   "levels found from the working-set curves, local memory, host "
                                   "transfers, FP32/FP64/FP16 and integer throughput, launch "
                                   "latency. Cached under the user's cache folder; a second run "
                                   "reads the cache.")
    device_option(p)
    p.add_argument("--quick", action="store_true",
                   help="fewer launch shapes and launches: a minute or less on a CPU device")
    p.add_argument("--refresh", action="store_true", help="measure again even where a profile is cached")
    p.add_argument("--plot", default=None, metavar="FIG.png", help="also draw the device's roofline")
    p.add_argument("--json", action="store_true", help="also print the profile as JSON")
    p.add_argument("--check", nargs="+", default=None, metavar="RESULTS.jsonl",
                   help="hold results files (pyclperf run, tune) against the roofs: each "
                        "experiment's best point and the roof that binds it; a roof some row beats "
                        "by more than 5% is measured again from that row's launch shape")
    p.set_defaults(func=cmd_profile)
    e = sub.add_parser("explain", formatter_class=raw, epilog=EXIT_CODES,
                       help="a tuned kernel on this device's measured roofline",
                       description="Tune a spec (or read its results file), then place its "
                                   "configurations on the device's measured roofline: the bytes "
                                   "and FLOPs, achieved GB/s and FLOP/s, the roof that binds and "
                                   "the % reached, what each parameter moves, the Guide "
                                   "experiments that apply; writes the figure.")
    e.add_argument("spec", help="a tune spec (JSON), as pyclperf tune takes")
    device_option(e)
    e.add_argument("--config", nargs="+", default=None, metavar="K=V",
                   help="explain this configuration (default: the fastest verified one)")
    e.add_argument("--flops", default=None, metavar="EXPR",
                   help="FLOPs of one launch, an expression over the tuned parameters "
                        "(e.g. '2*1024**3'); without it the bandwidth roofs alone are used")
    e.add_argument("--bytes", default=None, metavar="EXPR",
                   help="bytes one launch moves, instead of counting them from the kernel's "
                        "argument qualifiers")
    e.add_argument("--precision", default="fp32", choices=("fp32", "fp64", "fp16", "int32"),
                   help="which compute ceiling the FLOPs are held against (default fp32)")
    e.add_argument("--retune", action="store_true", help="tune again even where the results file exists")
    e.add_argument("--refresh", action="store_true",
                   help="measure the binding roof's ceiling again, its search started from this "
                        "kernel's launch shape (do it when the kernel beats the roof: a roof is a "
                        "ceiling), store the higher figure in the cached profile, and explain again")
    e.add_argument("--quick", action="store_true",
                   help="where no profile of the device is cached (full or quick), measure a quick one")
    e.add_argument("--out", default=None, metavar="FIG.png",
                   help="the figure (default: SPEC-roofline.png beside the spec)")
    e.set_defaults(func=cmd_explain)


__all__ = ["add_parsers", "cmd_explain", "cmd_profile", "expression", "parse_config"]
