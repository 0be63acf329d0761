"""``pyclperf guide``'s command line: its options, and the run's one-line summary and exit code
(the run itself is guide/run.py)."""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any, Sequence

from ..views.command_line import EXIT_CODES, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, device_option
from .run import (CANNOT_RUN, INTERRUPTED, ONLY_ENV, QUICK_TIMEOUT_S, THOROUGH_TIMEOUT_S, TIMEOUT_S,
                  failed, run_guide)


def _term_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # `timeout` and schedulers send SIGTERM: stop as Ctrl-C does


def cmd_guide(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _term_as_interrupt)
    os.environ.setdefault("MPLBACKEND", "Agg")  # the page's figures go into it, not to a window
    page, outcomes = run_guide(args.out, device=args.device, quick=args.quick,
                               timeout_s=args.timeout, only=args.only, peak_gbps=args.peak_gbps,
                               budget_s=args.budget, method=args.method, thorough=args.thorough,
                               lanes=args.lanes)
    bad = [o for o in outcomes if failed(o)]
    here = [o for o in outcomes if o.status.startswith(CANNOT_RUN)]
    print(f"{len(outcomes) - len(bad) - len(here)} of {len(outcomes)} experiments passed"
          + (f"; not run on this device: {', '.join(o.experiment for o in here)}" if here else "")
          + (f"; not passed: {', '.join(f'{o.experiment} ({o.status})' for o in bad)}" if bad else ""))
    print(f"wrote {page}")
    if any(o.status == INTERRUPTED for o in outcomes):
        return EXIT_INTERRUPTED
    return EXIT_FAILED if bad else EXIT_OK


def add_parser(sub: Any, raw: type[argparse.HelpFormatter]) -> None:
    g = sub.add_parser(
        "guide", formatter_class=raw, epilog=EXIT_CODES,
        help="every experiment on one device, into one HTML page",
        description="Run the whole catalogue on one device and write DIR/guide.html: a summary "
                    "table, the device, and per experiment its plot, conclusion, the source "
                    "document's figure beside this device's, and a verdict (holds / changed / "
                    "reversed). Results files go to DIR/results/.")
    device_option(g)
    g.add_argument("--out", default="guide", metavar="DIR", help="output folder (default ./guide)")
    g.add_argument("--quick", action="store_true",
                   help="two timed launches per point, no interval goal, and on a GPU smaller "
                        "sizes or fewer points where an experiment's verdict does not need the "
                        "defaults (pyclperf run --quick; the page names them)")
    g.add_argument("--thorough", action="store_true",
                   help="ten times the measurement per point (pyclperf run --timing thorough): a "
                        "reference run to check that the default run's verdicts hold")
    g.add_argument("--timeout", type=float, default=None, metavar="S",
                   help=f"seconds one experiment may take before it is stopped "
                        f"(default {TIMEOUT_S:.0f}, {QUICK_TIMEOUT_S:.0f} with --quick, "
                        f"{THOROUGH_TIMEOUT_S:.0f} with --thorough)")
    g.add_argument("--only", default=None, metavar="IDS",
                   help=f"comma-separated experiment ids to run instead of all (also ${ONLY_ENV})")
    g.add_argument("--budget", type=float, default=None, metavar="S",
                   help="seconds the whole run may take: later experiments get what is left, and "
                        "those that find nothing left are listed as not run")
    g.add_argument("--lanes", type=int, default=None, metavar="N",
                   help="experiments side by side, taking turns at the device (default on a GPU: "
                        "one per 2 host cores, at most 6; 1 on a CPU device or with --method host)")
    g.add_argument("--peak-gbps", type=float, default=None,
                   help="theoretical device-memory bandwidth, where NVML cannot tell (rooflines need it)")
    g.add_argument("--method", choices=("auto", "events", "host"), default="auto",
                   help="every experiment's clock, as for 'run' (default auto: events where the "
                        "device's event clock passes its check, else the host clock)")
    g.set_defaults(func=cmd_guide)


__all__: Sequence[str] = ["add_parser", "cmd_guide"]
