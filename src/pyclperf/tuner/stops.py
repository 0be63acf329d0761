"""Why a sweep stopped before its space was done, said wherever its results go.

A sweep stops early when its time limit runs out, when Ctrl-C arrives, or when SIGTERM does (what
`timeout`, batch schedulers and `kill` send). Each stop is recorded the same way:

* the configuration in flight, if any, gets a row with status ``stopped``, the cause and how long
  it ran (``ran_s``); it is no result, so a resumed run runs it again;
* ``Results.meta["stop"]`` says why, and the results file ends with it (its "end" record):
  ``stopped`` (the cause), ``in_flight`` (that configuration), ``finished`` and ``total``
  (configurations), ``reason`` (the sentence below);
* the command line prints the ``reason``: "stopped by the 5 s time limit while configuration
  block_size_x=64 ran; 0 of 12 configurations finished".

During a sweep in the main thread, SIGTERM stops it as Ctrl-C does (where no handler of the
program's own is installed; a Flight takes it and gives it back), so the file records it and tune() returns
what finished.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from ..measure.results import STOPPED
from .space import Config, config_key

TIME_LIMIT = "time limit"
CTRL_C = "Ctrl-C"
SIGTERM = "SIGTERM"


class Terminated(KeyboardInterrupt):
    """SIGTERM during a sweep: it stops the sweep as Ctrl-C does, and the record says which."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


def cause_of(exc: BaseException) -> str:
    """The stop a KeyboardInterrupt stands for."""
    return SIGTERM if isinstance(exc, Terminated) else CTRL_C


def finished(results: Any) -> Any:
    """``results`` (a file a run resumes) without its ``stopped`` rows: those configurations
    did not finish, so the resumed run runs them again."""
    results.rows = [r for r in results.rows if r.get("status") != STOPPED]
    return results


def _by(cause: str, time_limit: float | None) -> str:
    return f"the {time_limit:g} s time limit" if cause == TIME_LIMIT and time_limit else cause


def sentence(stop: dict[str, Any], time_limit: float | None = None) -> str:
    """The one sentence that says why a sweep stopped and where it was."""
    during = f" while configuration {stop['in_flight']} ran" if stop.get("in_flight") else ""
    return (f"stopped by {_by(stop['stopped'], time_limit)}{during}; {stop['finished']} of "
            f"{stop['total']} configurations finished")


class Flight:
    """The configuration a sweep is running, so that a stop can give it its row. ``stream`` is
    the sweep's RowStream; ``todo`` the configurations this run set out to run, ``total`` those
    with the ones a resumed file holds already."""

    def __init__(self, stream: Any, todo: int, total: int, time_limit: float | None) -> None:
        self.stream = stream
        self.todo, self.total = todo, total
        self.time_limit = time_limit
        self.started = time.monotonic()
        self.config: Config | None = None
        self.since = 0.0
        self.ran = 0  # configurations this run finished
        # From now on SIGTERM raises Terminated, in the main thread where SIGTERM still has its
        # default action (a program that handles it keeps its own handler); nothing elsewhere.
        self._sigterm_taken = (threading.current_thread() is threading.main_thread()
                               and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
        if self._sigterm_taken:
            signal.signal(signal.SIGTERM, _terminate)

    def give_back_sigterm(self) -> None:
        """SIGTERM's default action again, where take_sigterm changed it."""
        if self._sigterm_taken:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self._sigterm_taken = False

    def begin(self, config: Config) -> None:
        self.config, self.since = config, time.monotonic()

    def land(self) -> None:
        """The configuration in flight finished."""
        self.ran += 1
        self.config = None

    def time_limit_passed(self) -> None:
        """At the sweep's end: record a stop by the time limit where it ended the sweep (it
        stopped a configuration, or ran out with configurations left to run)."""
        over = self.time_limit is not None and time.monotonic() - self.started >= self.time_limit
        if self.config is not None or (over and self.ran < self.todo):
            self.stop(TIME_LIMIT)

    def interrupted(self, exc: BaseException) -> None:
        """Record a stop by Ctrl-C or SIGTERM (``exc``): the results say they were interrupted."""
        self.stream.results.meta["interrupted"] = True
        self.stop(cause_of(exc))

    def stop(self, cause: str) -> None:
        """Record a stop by ``cause``: the row of the configuration in flight, and the stop in
        the results' metadata (the file's end record). Recorded once."""
        results = self.stream.results
        if "stop" in results.meta:
            return
        key = None
        if self.config is not None:
            config, self.config = self.config, None
            key = config_key(config)
            ran = time.monotonic() - self.since
            # Into the results file, not into a Kernel Tuner cache: it holds finished entries.
            self.stream.add({**config, "config": key, "status": STOPPED, "verified": False,
                             "error": f"stopped by {_by(cause, self.time_limit)} after it ran "
                                      f"{ran:.2f} s, before it finished (a resumed run runs it "
                                      "again)",
                             "ran_s": ran, "timestamp": time.time()}, sinks=False)
        finished = sum(1 for r in results.rows if r.get("status") != STOPPED)
        stop: dict[str, Any] = {"stopped": cause, "in_flight": key, "finished": finished,
                                "total": max(self.total, finished)}
        stop["reason"] = sentence(stop, self.time_limit)
        results.meta["stop"] = stop
