"""Where the guide's time goes: every experiment run as the guide's shared worker runs it
(`pyclperf run ID --out DIR` with the guide's RUN_ARGS, in one process), under cProfile.

For each experiment it prints the wall time and how it splits: program builds (timed around
each build, with their count), the rest of the time inside the core's calls (kernel launches
and timing, transfers: the device and its driver), NumPy, matplotlib and the rest (Python),
then the functions with the most time of their own. The split is what decides how a faster
guide is to be had: a run bound by the device needs smaller sweeps, one bound by the host needs
its host work moved or shared. NumPy's operators (a - b on arrays) count as their caller's own
time, so a check's arithmetic shows under the experiment's function, not under NumPy. From
Python 3.12 on, cProfile sees every thread (it works through sys.monitoring), so the split sums
the host's helper threads too and can exceed the wall time; each record says which it saw.

    python benchmarks/guide_profile.py --device nvidia --mode default --out prof [--only a,b]

``--held`` profiles only what an experiment does while it holds the device's turn (as in the
guide's lanes, device/turns.py): in lanes that sum bounds the run, and whatever host work shows
there keeps the other lanes from the device.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pyclperf.guide.run import QUICK_ARGS, RUN_ARGS, THOROUGH_ARGS, experiment_ids

# What cProfile follows: the main thread before Python 3.12, every thread from 3.12 on.
THREADS_PROFILED = "all" if sys.version_info >= (3, 12) else "main"


def split(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of own time in the core's calls, in program builds, in NumPy, in matplotlib and
    elsewhere."""
    parts = {"core": 0.0, "build": 0.0, "numpy": 0.0, "plot": 0.0, "other": 0.0}
    for (path, _, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{path}:{name}"
        if "pyclperf._core" in where or "_core." in path:
            parts["core"] += own
        elif "numpy" in where:
            parts["numpy"] += own
        elif "matplotlib" in where:
            parts["plot"] += own
        else:
            parts["other"] += own
    return parts


class BuildClock:
    """Program builds (Program's constructor, where the driver compiles): how many, and their
    seconds on the profiled thread and on others (Context.prebuild's, side by side)."""

    def __init__(self, counting: Any = None) -> None:
        from pyclperf.device.program import Program

        self.seconds, self.elsewhere, self.count, self.program = 0.0, 0.0, 0, Program
        self.real = Program.__init__
        clock = self

        def timed(program: Any, *args: Any, **kwargs: Any) -> None:
            if counting is not None and not counting():  # a build the profile does not see
                return clock.real(program, *args, **kwargs)
            start = time.perf_counter()
            try:
                clock.real(program, *args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                if threading.current_thread() is threading.main_thread():
                    clock.seconds += spent
                else:
                    clock.elsewhere += spent
                clock.count += 1

        Program.__init__ = timed  # type: ignore[method-assign]

    def close(self) -> None:
        self.program.__init__ = self.real  # type: ignore[method-assign]


def _where() -> str:
    """The innermost pyclperf frames of the caller outside device/turns.py, as file:line."""
    import traceback

    frames = [f for f in traceback.extract_stack()[:-2]
              if "pyclperf" in f.filename and "turns.py" not in f.filename
              and "guide_profile" not in f.filename]
    return " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in frames[::-1][:3])


class HeldOnly:
    """The profiler on only while this process holds the device's turn (turns.watching), with a
    turns folder of the profile's own (so the turn is taken as in the guide's lanes, and never
    waited for)."""

    def __init__(self, prof: cProfile.Profile, folder: Path) -> None:
        import os

        from pyclperf.device import turns

        self.turns, self.folder = turns, folder
        self.saved = os.environ.get(turns.TURNS_ENV)
        os.environ[turns.TURNS_ENV] = str(folder)
        # Each span the turn was held: its seconds and where in pyclperf it was taken and given
        # up (a span's host work shows there even where the profile cannot see it: the frames
        # on the stack when the profiler starts keep their own time out of its table).
        self.spans: list[tuple[float, str, str]] = []
        since: list[Any] = [0.0, ""]

        def taken() -> None:
            since[:] = [time.perf_counter(), _where()]
            prof.enable()

        def giving() -> None:
            prof.disable()
            self.spans.append((time.perf_counter() - since[0], since[1], _where()))

        self.watch = turns.watching(taken, giving)
        self.watch.__enter__()

    def held_s(self) -> float:
        return sum(t["held_s"] for t in self.turns.held(self.folder))

    def close(self) -> None:
        import os

        self.watch.__exit__(None, None, None)   # and the profile's lock files closed
        if self.saved is None:
            os.environ.pop(self.turns.TURNS_ENV, None)
        else:
            os.environ[self.turns.TURNS_ENV] = self.saved


def profile_one(name: str, out: Path, device: str | None, mode: str, top: int,
                held: bool = False) -> dict[str, Any]:
    from pyclperf.views.command_line import call
    from pyclperf.views.run_command import cmd_run, parser

    argv = [name, "--out", str(out), *RUN_ARGS]
    if device:
        argv += ["--device", device]
    argv += list(QUICK_ARGS if mode == "quick" else THOROUGH_ARGS if mode == "thorough" else ())
    prof = cProfile.Profile()
    turn = HeldOnly(prof, Path(tempfile.mkdtemp(prefix="turns-"))) if held else None
    # With --held, only the builds made while the turn is held (none: builds give it up).
    builds = BuildClock(turn.turns.holding if turn is not None else None)
    start = time.perf_counter()
    if turn is None:
        prof.enable()
    try:
        code = call(cmd_run, parser().parse_args(argv))
    except SystemExit as exc:
        code = exc.code
    finally:
        prof.disable()
        builds.close()
        held_s = turn.held_s() if turn is not None else None
        spans = sorted(turn.spans, reverse=True)[:5] if turn is not None else []
        if turn is not None:
            turn.close()
    wall = time.perf_counter() - start
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(top)
    lines = [l for l in buf.getvalue().splitlines() if l.strip()][-top - 1:]
    parts = split(stats)
    # A build is a core call too: moved from "core" to "build", where this thread made it.
    parts["build"] = builds.seconds
    parts["core"] = max(0.0, parts["core"] - builds.seconds)
    return {"experiment": name, "wall_s": round(wall, 2), "code": code, "builds": builds.count,
            "held_s": None if held_s is None else round(held_s, 2),
            "longest_spans": [f"{s:.3f} s from {a} to {b}" for s, a, b in spans],
            "builds_on_threads_s": round(builds.elsewhere, 2),
            "split_s": {k: round(v, 2) for k, v in parts.items()},
            "threads_profiled": THREADS_PROFILED, "top": lines}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--mode", choices=("default", "quick", "thorough"), default="default")
    p.add_argument("--only", default=None, help="comma-separated experiment ids (default: all)")
    p.add_argument("--out", default=None, help="folder for the results files (default: a temporary one)")
    p.add_argument("--top", type=int, default=12, help="functions listed per experiment")
    p.add_argument("--json", default=None, help="write the per-experiment records here")
    p.add_argument("--held", action="store_true",
                   help="profile only while the experiment holds the device's turn")
    args = p.parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="guide-profile-"))
    records = []
    for name in experiment_ids(args.only):
        rec = profile_one(name, out, args.device, args.mode, args.top, args.held)
        records.append(rec)
        held = "" if rec["held_s"] is None else f" (the turn held {rec['held_s']} s)"
        print(f"== {name}: {rec['wall_s']} s{held}, exit {rec['code']}, {rec['builds']} builds "
              f"({rec['builds_on_threads_s']} s of them side by side on threads), {rec['split_s']}",
              flush=True)
        for line in rec["top"]:
            print("   " + line)
        for line in rec["longest_spans"]:
            print("   held " + line)
    total = sum(r["wall_s"] for r in records)
    parts = {k: round(sum(r["split_s"][k] for r in records), 1) for k in records[0]["split_s"]} if records else {}
    print(f"total {total:.1f} s over {len(records)} experiments; own time by part: {parts}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
