"""``pyclperf guide``: every experiment of the catalogue on one device, one HTML page.

Experiments that could hang or crash the process (a kernel that spins on the device, another
runtime loaded beside OpenCL: their class says ``isolate = True``) run each in a process of its
own (a worker of guide/worker.py started ahead and closed after that one experiment); the rest
run in turn in one long-lived worker process, which spares a process start-up and an OpenCL
context per experiment. Either way a hang (stopped after a per-experiment timeout) or a crash (a
driver abort, a segfault) costs that experiment only (the worker is started again for the next);
the page says what happened to it and goes on. One progress bar covers the whole run. The page
itself is built by guide/report.py, the command line by guide/cli.py.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..measure.results import Results

# Seconds one experiment may take before it is stopped. The full run's default suits a GPU
# (the slowest experiments sweep GiB transfers); --quick runs on a CPU device with two timed
# launches per point.
TIMEOUT_S = 600.0
QUICK_TIMEOUT_S = 240.0
THOROUGH_TIMEOUT_S = 3600.0
# --quick: two timed launches per point, one warm-up, no interval goal (measure.timing_policy's
# "quick"), and each experiment's quick sizes (Sweep.quick_options: smaller sizes or fewer
# points on a GPU where its verdict does not need the defaults; a CPU device's are small already).
QUICK_ARGS = ("--quick",)
# --thorough: ten times the measurement of a default run (measure.timing_policy's "thorough"),
# for checking that the default run's verdicts are not artefacts of measuring too little.
THOROUGH_ARGS = ("--timing", "thorough")
# Every experiment's run: figures resting on cache-resident points measured again cold (their
# own, a few launches each: experiments/_warmcold.py), and no PNG of its own, since the page
# draws every figure itself (views.report.figure_png): a PNG per run as well drew each twice.
RUN_ARGS = ("--cold-check", "--no-plot")
# A comma-separated subset of experiment ids (the test suite's shortcut; empty or "all" = all).
ONLY_ENV = "PYCLPERF_GUIDE_ONLY"

# What happened to an experiment's process.
PASSED, FAILED, TIMED_OUT, CRASHED, REFUSED = "passed", "some points failed", "timed out", "crashed", "refused"
NOT_RUN = "not run (budget spent)"
INTERRUPTED = "not run (interrupted)"
# The experiment ran but could not measure anything here (every row skipped: p2p with one
# device, a feature the device lacks); the reason follows. Not a failure of the run.
CANNOT_RUN = "not run: "


@dataclass
class Outcome:
    """One experiment's process: how it ended, how long it took, what it said last."""

    experiment: str
    status: str
    seconds: float
    returncode: int | None
    stderr_tail: str = ""
    results: Results | None = field(default=None, repr=False)
    device_s: float | None = None  # how long it held the device's turn (a run in lanes)


def experiment_ids(only: str | None = None) -> list[str]:
    """The catalogue in its order, or the subset named in ``only`` (comma-separated)."""
    from ..experiments import catalogue, get

    if only and only.strip() != "all":
        wanted = [s.strip() for s in only.split(",") if s.strip()]
        for name in wanted:
            get(name)  # an unknown id is an error naming the catalogue, not a silent skip
        return wanted
    return [cls.id for cls in catalogue()]


def command(experiment: str, out_dir: Path, device: str | None, quick: bool,
            extra: Sequence[str] = ()) -> list[str]:
    cmd = [sys.executable, "-m", "pyclperf", "run", experiment, "--out", str(out_dir), *extra]
    if device is not None:
        cmd += ["--device", device]
    if quick:
        cmd += list(QUICK_ARGS)
    return cmd


def _status(returncode: int) -> str:
    if returncode == 0:
        return PASSED
    if returncode == 1:
        return FAILED
    if returncode == 2:
        return REFUSED
    return CRASHED  # a signal (negative) or an exit no pyclperf code path takes


def run_one(experiment: str, out_dir: Path, device: str | None, quick: bool,
            timeout_s: float, extra: Sequence[str] = ()) -> Outcome:
    """Run one experiment in a process of its own and collect what it left."""
    start = time.monotonic()
    # Its own session: on a timeout the whole process group (any helper it started) is stopped.
    proc = subprocess.Popen(command(experiment, out_dir, device, quick, extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "MPLBACKEND": "Agg"})
    try:
        _, err = proc.communicate(timeout=timeout_s)
        status = _status(proc.returncode)
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: Ctrl-C did not reach it
        proc.wait()
        raise
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        status = TIMED_OUT
        err = (err or "") + f"\nstopped after {timeout_s:.0f} s"
    return _collect(experiment, out_dir, status, time.monotonic() - start, proc.returncode, err or "")


def _collect(experiment: str, out_dir: Path, status: str, seconds: float, returncode: int | None,
             err: str) -> Outcome:
    """The outcome of a finished (or stopped) experiment, with the rows its results file holds."""
    path = out_dir / f"{experiment}.jsonl"
    results = None
    if path.is_file():
        try:  # a killed run leaves its finished points: they are still worth drawing
            results = Results.load(path)
        except ValueError as exc:
            err = (err or "") + f"\n{exc}"
    tail = "\n".join((err or "").strip().splitlines()[-6:])
    return Outcome(experiment, outcome_status(status, results), seconds, returncode, tail, results)


def outcome_status(status: str, results: Results | None) -> str:
    """``status``, or "not run: why" where a run that passed skipped every point."""
    from .figures import cannot_run

    reason = cannot_run(results) if status == PASSED else None
    return CANNOT_RUN + reason if reason else status


def failed(outcome: Outcome) -> bool:
    """Whether the outcome counts against the run (a skip for a missing feature does not)."""
    return outcome.status != PASSED and not outcome.status.startswith(CANNOT_RUN)


class Runner:
    """The guide's default way to run an experiment: in a shared worker process, or in a
    process of its own where the experiment's class says ``isolate``. Call ``close`` when done.

    ``lanes`` shared workers run experiments side by side (guide/lanes.py), taking turns at the
    device (device/turns.py). The process of its own is a worker too, used for one experiment
    and closed: one is started ahead (the spare), its imports (a second or two) done while the
    experiments before it run, the next started as it is taken. Calls may come from threads."""

    def __init__(self, lanes: int = 1) -> None:
        from ..device.turns import TURNS_ENV
        from .worker import SharedWorker

        self.logs = tempfile.TemporaryDirectory(prefix="pyclperf-guide-")
        # One lane needs no turns; several share the folder of the turns' locks.
        self.env = {TURNS_ENV: self.logs.name} if lanes > 1 else {}
        self.workers = [SharedWorker(self.env) for _ in range(max(1, lanes))]
        self.idle: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self.spare = SharedWorker(self.env)
        self.taking = threading.Lock()
        self.closing: list[threading.Thread] = []
        # The isolated experiments' workers while they run: a stop kills them too.
        self.taken: set[Any] = set()
        try:
            for worker in [*self.workers, self.spare]:
                worker.start()
        except BaseException:  # Ctrl-C while they start: none is left behind
            self.stop()
            self.close()
            raise
        for worker in self.workers:
            self.idle.put(worker)

    def __call__(self, experiment: str, out_dir: Path, device: str | None, quick: bool,
                 timeout_s: float, extra: Sequence[str] = ()) -> Outcome:
        from ..experiments import get
        from .worker import SharedWorker

        if not getattr(get(experiment), "isolate", False):
            worker = self.idle.get()
            try:
                return run_shared(experiment, out_dir, device, quick, timeout_s, extra, worker,
                                  Path(self.logs.name))
            finally:
                self.idle.put(worker)
        with self.taking:
            own, self.spare = self.spare, SharedWorker(self.env)
            self.taken.add(own)
            self.spare.start()
        try:
            return run_shared(experiment, out_dir, device, quick, timeout_s, extra, own,
                              Path(self.logs.name))
        finally:
            with self.taking:
                self.taken.discard(own)
            # Its results are written: it ends (interpreter and driver teardown) while the next
            # experiment runs.
            closing = threading.Thread(target=own.close, name="pyclperf-worker-close", daemon=True)
            closing.start()
            self.closing.append(closing)

    def keep(self, lanes: int) -> None:
        """Keep ``lanes`` workers, before any experiment has run; the others stop at once (still
        importing: on a CPU device, their imports would take the first experiment's cores)."""
        if lanes >= len(self.workers):
            return
        kept, extra = self.workers[:lanes], self.workers[lanes:]
        self.workers = kept
        self.idle = queue.SimpleQueue()
        for worker in kept:
            self.idle.put(worker)
        for worker in extra:
            worker.stop()

    def stop(self) -> None:
        """Stop every worker now, for good (Ctrl-C while lanes run: each lane's call then
        returns, and a lane that was about to start an experiment starts none)."""
        with self.taking:
            for worker in [*self.workers, self.spare, *self.taken]:
                worker.stop(for_good=True)

    def close(self) -> None:
        """End every worker, side by side: each one's interpreter and driver teardown takes
        about a second on a GPU host, and one after another they added up."""
        workers = [*self.workers, self.spare]
        for worker in workers:
            worker.end_input()
        for worker in workers:
            worker.close()
        for closing in self.closing:
            closing.join()
        self.logs.cleanup()


def _run_all(ids: Sequence[str], run: Any, lanes: int, lanes_why: str, outcomes: list[Outcome],
             figures: Any, progress: bool, results_dir: Path, device: str | None, quick: bool,
             timeout: float, extra: Sequence[str], budget_s: float | None, start: float) -> None:
    """Run ``ids`` through ``run`` in ``lanes`` lanes under one progress bar; ``outcomes`` gets
    each in ``ids``' order (INTERRUPTED: one that Ctrl-C stopped, and those after it)."""
    from tqdm import tqdm

    from ..device.turns import TURNS_ENV, held
    from .lanes import run_in_lanes, turns_summary

    with tqdm(total=len(ids), unit="experiment", disable=not progress, file=sys.stderr) as bar:
        if lanes > 1:
            bar.write(f"running {lanes_why}")

        def finished(outcome: Outcome) -> None:
            figures.submit(outcome)
            if outcome.status != PASSED:
                bar.write(f"{outcome.experiment}: {outcome.status}"
                          + (f" ({outcome.stderr_tail.splitlines()[-1]})" if outcome.stderr_tail else ""))
            bar.set_postfix_str(outcome.experiment)
            bar.update(1)

        def left() -> float:
            return budget_s - (time.monotonic() - start) if budget_s is not None else timeout

        if lanes > 1:
            done, _ = run_in_lanes(
                ids, lanes, lambda name, allowed: run(name, results_dir, device, quick,
                                                      min(timeout, allowed), extra),
                left, finished, lambda name: Outcome(name, NOT_RUN, 0.0, None),
                getattr(run, "stop", lambda: None))
            outcomes += [o if o is not None else Outcome(n, INTERRUPTED, 0.0, None)
                         for n, o in zip(ids, done)]
            turns = getattr(run, "env", {}).get(TURNS_ENV)
            if turns:
                taken = held(turns)
                bar.write(turns_summary(taken, time.monotonic() - start))
                by_name = {t["label"]: t["held_s"] for t in taken}
                for o in outcomes:  # in place: the figures drawn ahead are keyed by the object
                    o.device_s = by_name.get(o.experiment)
            return
        for name in ids:
            bar.set_postfix_str(name)
            allowed = left()
            if allowed < 1:
                outcome = Outcome(name, NOT_RUN, 0.0, None)
            else:
                try:
                    outcome = run(name, results_dir, device, quick, min(timeout, allowed), extra)
                except KeyboardInterrupt:
                    outcomes += [Outcome(n, INTERRUPTED, 0.0, None) for n in ids[len(outcomes):]]
                    return
            outcomes.append(outcome)
            finished(outcome)


def run_shared(experiment: str, out_dir: Path, device: str | None, quick: bool, timeout_s: float,
               extra: Sequence[str], worker: Any, log_dir: Path) -> Outcome:
    """Run one experiment in ``worker`` (guide/worker.py's SharedWorker) and collect what it left."""
    start = time.monotonic()
    log = log_dir / f"{experiment}.log"
    argv = command(experiment, out_dir, device, quick, extra)[4:]  # after "python -m pyclperf run"
    returncode, timed_out = worker.run(argv, log, timeout_s)
    seconds = time.monotonic() - start
    err = log.read_text(errors="replace") if log.is_file() else ""
    if timed_out:
        status = TIMED_OUT
        err += f"\nstopped after {timeout_s:.0f} s"
    else:
        status = _status(returncode if returncode is not None else -1)
    return _collect(experiment, out_dir, status, seconds, returncode, err)


def run_guide(out: str | os.PathLike[str], device: str | None = None, quick: bool = False,
              timeout_s: float | None = None, only: str | None = None,
              progress: bool = True, runner: Callable[..., Outcome] | None = None,
              peak_gbps: float | None = None, budget_s: float | None = None,
              method: str = "auto", thorough: bool = False,
              lanes: int | None = None) -> tuple[Path, list[Outcome]]:
    """Run the catalogue (or ``only``) and write ``out/guide.html``; returns its path and the
    outcome of every experiment. ``peak_gbps`` is the theoretical DRAM bandwidth where NVML
    cannot tell (the roofline needs it). ``method`` is every experiment's clock ("auto",
    "events" or "host", as ``pyclperf run --method``). ``thorough`` measures ten times as much per point
    (measure.timing_policy) for a reference run. ``runner`` runs one experiment (default: a
    Runner: the shared worker, or a process of its own). ``budget_s`` bounds the whole run: each experiment's
    timeout shrinks to what is left, and those that find nothing left are listed as not run.
    ``lanes``: experiments run side by side, taking turns at the device (guide/lanes.py;
    default: as many as suit the device and the host, one on a CPU device).
    Ctrl-C (or SIGTERM) stops the run; the page is still written with what finished."""
    from ..device.clocks import check_method
    from ..measure.writer import check_out_dir
    from .lanes import lanes_for, most_lanes
    from .report import FiguresAhead, write_guide

    out_dir = check_out_dir(os.fspath(out))
    out_dir.mkdir(parents=True, exist_ok=True)
    results_dir = out_dir / "results"
    ids = experiment_ids(only if only is not None else os.environ.get(ONLY_ENV))
    if quick and thorough:
        raise ValueError("--quick and --thorough contradict each other: give one")
    timeout = timeout_s if timeout_s is not None else (
        QUICK_TIMEOUT_S if quick else THOROUGH_TIMEOUT_S if thorough else TIMEOUT_S)
    start = time.monotonic()
    extra = list(RUN_ARGS) + (["--peak-gbps", str(peak_gbps)] if peak_gbps else [])
    if check_method(method) != "auto":
        extra += ["--method", method]
    if thorough:
        extra += list(THOROUGH_ARGS)
    if lanes is not None and int(lanes) < 1:
        raise ValueError(f"--lanes must be at least 1, got {lanes}")
    own = runner is None
    run: Any = runner
    figures = FiguresAhead()  # each experiment's figures drawn while the next one runs
    closing: threading.Thread | None = None
    outcomes: list[Outcome] = []
    try:
        try:
            # From here on a stop is on the page (the results folder: the sign the run began).
            results_dir.mkdir(exist_ok=True)
            if lanes is not None:
                lanes, lanes_why = int(lanes), f"{int(lanes)} lanes, as asked, taking turns at the device"
            elif own:
                # The workers start (their imports take a second or two) while the device is
                # looked up (a second on a GPU host); those the device does not want then end.
                run = Runner(most_lanes(method))
                lanes, lanes_why = lanes_for(device, method)
                run.keep(lanes)
            else:
                lanes, lanes_why = 1, "one lane: the caller's runner"
            if own and run is None:
                run = Runner(lanes)
            _run_all(ids, run, lanes, lanes_why, outcomes, figures, progress, results_dir, device,
                     quick, timeout, extra, budget_s, start)
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM outside an experiment's run (as the workers or lanes start,
            # between two experiments): every worker stops; the page says what finished.
            if own and run is not None:
                run.stop()
            outcomes += [Outcome(n, INTERRUPTED, 0.0, None) for n in ids[len(outcomes):]]
        if own and run is not None:  # the workers end while the page is written
            closing = threading.Thread(target=run.close, name="pyclperf-guide-close", daemon=True)
            closing.start()
        page = write_guide(outcomes, out_dir / "guide.html", quick=quick, figures=figures)
    finally:
        figures.close()
        if closing is not None:
            closing.join()
        elif own and run is not None:
            run.close()
    return page, outcomes


__all__: Sequence[str] = ["Outcome", "Runner", "experiment_ids", "failed", "outcome_status",
                          "run_guide", "run_one", "run_shared"]
