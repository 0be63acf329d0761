"""Sweeps of points: a parameter grid -> verified, timed, tidy rows, written as they finish.

Each point is verified (fresh random input, poisoned output, NumPy reference) and then timed;
it ends with a status, and one failing point never stops the sweep. Rows are appended to the
results file as they finish, so Ctrl-C (or a crash) keeps every finished point.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import os
import platform
import sys
from typing import Any, Callable, Iterable

import numpy as np

from .. import _core
from ..device.busy import do_waiting_work, when_device_busy
from ..device.icd import NOTE as ICD_NOTE
from .results import (BUILD_FAILED, INVALID, LAUNCH_FAILED, OK, SKIPPED, TIMED, WRONG, Results,
                      ResultsWriteError, ResultsWriter)
from .stats import bandwidth_gbps, summarize

TIMING_METHODS = ("events", "host")

# How tables and plots name each method. The host clock brackets enqueue + finish, so it holds
# the launch gap (issue, driver, wait for completion) on purpose, which event times and the CUDA
# reference (pyclperf.reference.cuda) leave out: its label must say so wherever it is shown.
TIMING_LABELS = {"events": "OpenCL events (device time)", "host": "host clock (includes launch gap)"}


def timing_label(method: str) -> str:
    """The name of a timing method as tables and plots show it."""
    return TIMING_LABELS.get(method, method)


def package_versions() -> dict[str, str]:
    return dict(_package_versions())


# importlib.metadata parses each package's METADATA file: about 45 ms per results file on a
# slow host, every run, for figures that cannot change while the process lives.
@functools.lru_cache(maxsize=1)
def _package_versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("pyclperf", "pandas", "matplotlib"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "unknown"
    return out


def base_meta(ctx: Any, **extra: Any) -> dict[str, Any]:
    """Metadata every results file carries: device, driver, versions, host, time."""
    info = ctx.info
    from ..device.devices import device_summary

    # A pyclperf.Context adds what needs a context (preferred work-group multiple).
    summary = ctx.summary() if hasattr(ctx, "summary") else device_summary(info)
    return {
        "device": summary,
        "driver": info.driver_version,
        "platform": info.platform_name,
        "versions": package_versions(),
        "host": platform.node(),
        "icd": ICD_NOTE,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


def _progress(total: int, enabled: bool | None, desc: str) -> Any:
    if enabled is None:
        # A terminal or a notebook: a bar helps on anything longer than a few points.
        enabled = total > 3 and (sys.stderr.isatty() or "ipykernel" in sys.modules)
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="pt", leave=False)


def classify(exc: BaseException) -> str:
    """The status a point ends with when it raised ``exc``: the one map from exception to
    status that experiments and tune() share. A device limit (the core's DeviceLimitError) is
    the device declining the point, not a mistake: ``skipped``, with the limit in the row."""
    if isinstance(exc, _core.BuildError):
        return BUILD_FAILED
    if isinstance(exc, _core.DeviceLimitError):
        return SKIPPED
    if isinstance(exc, (_core.InvalidArgumentError, ValueError, TypeError)):
        return INVALID
    if isinstance(exc, _core.ClError):
        return LAUNCH_FAILED
    if isinstance(exc, _core.PyclperfError):
        return INVALID
    return LAUNCH_FAILED


def run_points(
    points: Iterable[dict[str, Any]],
    measure: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    meta: dict[str, Any],
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    append: bool = False,
    finish_row: Callable[[dict[str, Any]], None] | None = None,
) -> Results:
    """Call ``measure(point)`` for each point; collect rows; keep them if interrupted.

    ``measure`` returns the row's measured fields (it may raise: the exception becomes the
    row's status and error). With ``out`` a JSON-lines file, rows are written as they finish;
    Ctrl-C returns the finished rows with ``meta["interrupted"]`` (the file says so too), and a
    write that fails (a full disk) stops the sweep with ResultsWriteError, whose ``results``
    holds the rows the file holds.

    ``finish_row(row)`` completes a measured row (the point's fields and measure's) where the
    rest of it needs no device; a row whose measure raised is not finished. Without ``out`` it
    runs, and the row is added, while the next point's timed launches run (device/busy.py), so
    the device does not idle for it; rows still arrive in order, each before the next point's
    is handed over (after Ctrl-C, one whose finishing it cut short is left out). With ``out`` every row is finished and written as soon as it is measured:
    a process killed outright (a budget's SIGKILL) loses no row it had measured.
    """
    points = list(points)
    stream = RowStream(Results(meta), out, total=len(points), progress=progress, append=append)
    last: _RowLater | None = None
    try:
        for point in points:
            row: dict[str, Any] = dict(point)
            measured = True
            try:
                row.update(measure(point))
            except (_core.PyclperfError, ValueError) as exc:
                row.update(status=classify(exc), error=str(exc))
                measured = False
            if finish_row is None or out is not None:
                if finish_row is not None and measured:
                    _finish(row, finish_row)
                stream.add(row)
                continue
            if last is not None:
                last.done()  # where no timed launch came to do it
            last = _RowLater(stream, row, finish_row if measured else None)
            when_device_busy(last)
        if last is not None:
            last.done()
    except KeyboardInterrupt:
        if last is not None:
            last.done(interrupted=True)
        stream.results.meta["interrupted"] = True
    finally:
        stream.close()
    return stream.results


def _finish(row: dict[str, Any], finish_row: Callable[[dict[str, Any]], None]) -> None:
    """finish_row(row); what it raises as a point's failure is the row's status, as measure's."""
    try:
        finish_row(row)
    except (_core.PyclperfError, ValueError) as exc:
        row.update(status=classify(exc), error=str(exc))


class _RowLater:
    """A measured row's finishing and adding, done while the next point's launches run
    (run_points). Any exception but an interrupt is kept for done() to raise in the sweep's own
    frame, not inside the next point's timing, where it would become that point's error."""

    def __init__(self, stream: "RowStream", row: dict[str, Any],
                 finish: Callable[[dict[str, Any]], None] | None) -> None:
        self.stream, self.row, self.finish = stream, row, finish
        self.ran = False
        self.error: BaseException | None = None

    def __call__(self) -> None:
        if self.ran:
            return
        self.ran = True
        try:
            if self.finish is not None:
                _finish(self.row, self.finish)
            self.stream.add(self.row)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - raised again by done()
            self.error = exc

    def done(self, interrupted: bool = False) -> None:
        """Make sure the row is finished and added; raise what doing so raised. A row whose
        finishing an interrupt cut short is left out: its checks against the device's ceilings
        and clock were not all made, so it could read better than it is."""
        do_waiting_work()  # this row's turn comes after any work handed over before it
        self()
        if self.error is not None and not interrupted:
            error, self.error = self.error, None
            raise error


class RowStream:
    """Where finished rows go, each as soon as it finishes: the JSON-lines file (written, and
    fsynced on the writer's own thread), the Results, any other sinks (objects with add(row) and close(), such as a Kernel
    Tuner cache), and the progress bar. close() keeps everything that finished.

    The file goes first: a row it could not take (ResultsWriteError, a full disk) is in none of
    them, so the Results and the file hold the same rows; the error carries those Results and
    says how many there are. A Results whose ``meta["interrupted"]`` or ``meta["stop"]`` (why
    a sweep stopped early, tuner/stops.py) is set when it closes ends the file with a record
    saying so."""

    def __init__(self, results: Results, out: str | os.PathLike[str] | None, *, total: int,
                 progress: bool | None, append: bool = False, sinks: Iterable[Any] = ()) -> None:
        self.results = results
        try:
            self.writer = ResultsWriter(out, results.meta, append=append) if out is not None else None
        except ResultsWriteError as exc:
            raise self._stopped(exc, "nothing ran (the file was left as it was)") from exc.__cause__
        self.sinks = [s for s in sinks if s is not None]
        self.bar = _progress(total, progress, str(results.meta.get("experiment", "sweep")))

    def _stopped(self, exc: ResultsWriteError, detail: str) -> ResultsWriteError:
        """``exc`` carrying these Results, which say why writing stopped."""
        self.results.meta["write_error"] = exc.problem
        exc.results = self.results
        exc.detail = exc.detail or detail
        exc.api_note = "this error's .results holds the same rows"
        return exc

    def add(self, row: dict[str, Any], sinks: bool = True) -> None:
        """One finished row (``sinks``: to the other sinks too; a row that records a stop is
        for the results file alone)."""
        if self.writer is not None:
            try:
                self.writer.add(row)
            except ResultsWriteError as exc:
                raise self._stopped(exc, f"the sweep stopped: its {len(self.results.rows)} "
                                    "finished rows are in the file") from exc.__cause__
        self.results.rows.append(row)
        for sink in self.sinks if sinks else ():
            sink.add(row)
        if self.bar is not None:
            self.bar.update(1)

    def batch(self) -> Any:
        """A context for rows that arrive together: the results file is fsynced once for them
        all (see ResultsWriter.synced_once)."""
        return self.writer.synced_once() if self.writer is not None else contextlib.nullcontext()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.writer is not None:
            self.writer.close(interrupted=bool(self.results.meta.get("interrupted")),
                              stop=self.results.meta.get("stop"))
        for sink in self.sinks:
            sink.close()


def timed_row(times_ns: np.ndarray, nbytes: int | None, method: str) -> dict[str, Any]:
    """The timing part of every row, an experiment's point or a tune() configuration:
    statistics of the per-launch times, the clock, and where the bytes moved are known (an
    experiment's table of bytes; tune() counts its own), bandwidth at the median and best time."""
    s = summarize(times_ns)
    row: dict[str, Any] = {**s, "method": method}
    if nbytes is not None:
        row.update(bytes=int(nbytes), gbps=bandwidth_gbps(nbytes, s["median_ns"]),
                   gbps_best=bandwidth_gbps(nbytes, s["min_ns"]))
    return row


def host_clock_columns(host_ns: np.ndarray, nbytes: int, events_median_ns: float) -> dict[str, Any]:
    """The same operation timed by the host clock, beside an event-timed row: its median, the
    bandwidth that implies, and how much longer the host saw it take."""
    median = float(np.median(host_ns))
    return {
        "host_median_ns": median,
        "host_gbps": bandwidth_gbps(nbytes, median),
        "host_over_events": median / events_median_ns if events_median_ns > 0 else float("nan"),
    }


def verdict(verify: bool, passed: bool, detail: str) -> dict[str, Any]:
    """The verification part of a row: whether it was verified, its status (OK only when
    verified; TIMED when verification was not asked for) and what differed."""
    if not verify:
        return {"verified": False, "status": TIMED, "error": ""}
    return {
        "verified": bool(passed),
        "status": OK if passed else WRONG,
        "error": "" if passed else detail,
    }
