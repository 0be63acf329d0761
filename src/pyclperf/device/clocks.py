"""Whether a device's event clock measures time: checked against the host clock on first use of
a device, before any figure rests on it.

Some conformant OpenCL drivers report profiling timestamps that are not times (queued 0, submit
1, start 2, end 3 for every command, a timer resolution of 0). Every event-timed figure on such a
device is fiction, so pyclperf checks the clock first, with a copy kernel over a ladder of sizes
(1 Ki floats, 4 Ki, ... until one launch takes half a millisecond on the host clock and 4x what
the first rung took there, within a sixteenth of the device's memory; the second condition keeps
a slow or busy host, whose first rung may already take half a millisecond, climbing until the
work outweighs the launch, so that the growth of event durations can be judged): each rung's
launches are timed by events, back to back with one wait (their wall time on the host's steady
clock beside them), and again one at a time by the host clock. The clock is unusable when

* the device reports a timer resolution of 0 ns;
* the largest rung's launches have event durations of 0;
* event durations do not grow with the work (the host clock saw the largest rung take 4x the
  smallest, the events not even 2x);
* events add up to more than 1.5x the wall time the host waited for the same launches, or, at a
  rung long enough to tell (50 us a launch), to less than a tenth of it.

The verdict is cached per device and driver: in this process, and in
``$XDG_CACHE_HOME/pyclperf/event-clocks.json`` (``~/.cache`` without XDG_CACHE_HOME).

``timing_for(ctx, method)`` turns the ``method`` a user gives into the clock a run times by:
"auto" (the default) is events where the clock passed, else the host clock; "events" and "host"
are obeyed, and event times on a clock that failed make every such row ``suspect``
(pyclperf.measure.plausible).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _core
from .turns import quiet_now

METHODS = ("auto", "events", "host")
# Bumped whenever the criteria change, so a cached verdict by older criteria is measured again.
CRITERIA = 2
LADDER = tuple(1 << k for k in range(10, 29, 2))  # 1 Ki, 4 Ki .. 256 Mi floats copied
LAUNCHES = 5              # timed launches per rung and per clock
ENOUGH_HOST_NS = 0.5e6    # a rung whose launches take this long on the host clock ends the climb,
                          # where they also take GROWTH_HOST x the first rung's
LONG_LAUNCH_NS = 50e3     # a launch this long is mostly work: events must account for its time
MAX_WALL_OVER_EVENTS = 10.0
MAX_EVENTS_OVER_WALL = 1.5
EVENTS_OVER_WALL_SLACK_NS = 20e3  # the host clock's own start and stop
GROWTH_HOST, GROWTH_EVENTS = 4.0, 2.0
FILE_NAME = "event-clocks.json"

_checked: dict[str, "EventClock"] = {}


@dataclass(frozen=True)
class EventClock:
    """The verdict on one device's event clock, and what it rests on."""

    usable: bool
    problems: tuple[str, ...]
    resolution_ns: int
    rungs: tuple[dict[str, Any], ...]
    device: str
    driver: str
    checked: str  # when (UTC, ISO 8601)
    cached: bool = False  # read from the cache file rather than measured by this process

    @property
    def reason(self) -> str:
        """Why the clock is unusable, every problem ("" when usable)."""
        return "; ".join(self.problems)

    @property
    def summary(self) -> str:
        """Why the clock is unusable in one problem, and how many more there are (for rows)."""
        if not self.problems:
            return ""
        more = len(self.problems) - 1
        return self.problems[0] + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")

    def as_meta(self) -> dict[str, Any]:
        return {"usable": self.usable, "problems": list(self.problems),
                "resolution_ns": self.resolution_ns, "rungs": [dict(r) for r in self.rungs],
                "device": self.device, "driver": self.driver, "checked": self.checked,
                "cached": self.cached}


@dataclass(frozen=True)
class Timing:
    """The clock a run times by: ``method`` ("events" or "host"), what was ``asked``, and why
    the two differ (``reason``, "" where they do not)."""

    asked: str
    method: str
    reason: str = ""
    clock: EventClock | None = field(default=None, repr=False)

    @property
    def distrusted(self) -> bool:
        """Event times on a clock that failed its check (asked for explicitly)."""
        return self.method == "events" and self.clock is not None and not self.clock.usable


def check_method(method: str) -> str:
    if method not in METHODS:
        raise _core.InvalidArgumentError(f"timing method must be one of {METHODS}, got {method!r}")
    return method


def timing_for(ctx: Any, method: str = "auto") -> Timing:
    """The clock to time by on ``ctx``'s device for the ``method`` asked (see the module)."""
    check_method(method)
    if method == "host":
        return Timing("host", "host")
    clock = event_clock(ctx)
    if clock.usable:
        return Timing(method, "events", "", clock)
    if method == "events":
        return Timing(method, "events", f"events asked for, though the event clock failed its "
                                        f"check: {clock.summary}", clock)
    return Timing(method, "host", f"host clock: the device's event clock failed its check "
                                  f"({clock.summary})", clock)


def cache_path(env: Any = None) -> str:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pyclperf", FILE_NAME)


def _key(info: Any) -> str:
    from .fake_clock import ENV

    parts = [CRITERIA, str(info.platform_name), str(info.vendor), str(info.name),
             str(info.driver_version), os.environ.get(ENV, "")]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def event_clock(ctx: Any, *, refresh: bool = False) -> EventClock:
    """The verdict on ``ctx``'s event clock: from this process's memory, else the cache file,
    else measured now (``refresh``: measured now whatever is remembered) and remembered."""
    key = _key(ctx.info)
    if not refresh:
        clock = remembered(ctx.info)
        if clock is not None:
            _checked[key] = clock
            return clock
    try:
        with quiet_now():  # the host clock's side of the check, with no other lane's work beside it
            clock = measure_event_clock(ctx)
    except _core.PyclperfError as exc:
        # A device that cannot run a copy kernel cannot be trusted to time one; not cached.
        info = ctx.info
        return EventClock(False, (f"the check could not run: {type(exc).__name__}: {exc}",),
                          int(info.profiling_timer_resolution_ns), (), str(info.name),
                          str(info.driver_version), _now())
    _checked[key] = clock
    _write_cache(key, clock)
    return clock


def remembered(info: Any) -> EventClock | None:
    """The verdict this process or the cache file holds for the device ``info`` describes,
    without measuring (None where there is none): for choices made before a context exists,
    such as the guide's lanes."""
    key = _key(info)
    if key in _checked:
        return _checked[key]
    stored = _read_cache().get(key)
    if stored is None:
        return None
    try:
        return EventClock(stored["usable"], tuple(stored["problems"]), int(stored["resolution_ns"]),
                          tuple(stored["rungs"]), stored["device"], stored["driver"],
                          stored["checked"], True)
    except (KeyError, TypeError, ValueError):
        return None  # an entry of another shape: measured again when a run needs it


def forget() -> None:
    """Drop the verdicts this process remembers (the cache file stays)."""
    _checked.clear()


def measure_event_clock(ctx: Any) -> EventClock:
    """Climb the ladder of copies on ``ctx`` and judge the event clock (uncached)."""
    info = ctx.info
    resolution = int(info.profiling_timer_resolution_ns)
    kernel = ctx.program(file="copy.cl").kernel("offset_copy")
    # Both buffers within a sixteenth of the device's memory, each within one allocation.
    top = max(LADDER[0], min(info.global_mem_bytes // 32, info.max_alloc_bytes) // 4)
    rungs: list[dict[str, Any]] = []
    for items in LADDER:
        if items > top:
            break
        src, dst = ctx.buffer(items * 4), ctx.buffer(items * 4)
        try:
            kernel.set_args(dst, src, np.int32(0))
            kernel.run(items)  # first use: the driver's own setup stays out of the figures
            t0 = time.perf_counter()
            events = np.asarray(kernel.time(items, None, warmup=0, repeats=LAUNCHES, method="events"))
            wall_ns = (time.perf_counter() - t0) * 1e9
            host = np.asarray(kernel.time(items, None, warmup=0, repeats=LAUNCHES, method="host"))
        finally:
            kernel.forget_args()
            src.release()
            dst.release()
        rungs.append({"items": items, "event_median_ns": float(np.median(events)),
                      "event_min_ns": float(events.min()), "event_sum_ns": float(events.sum()),
                      "wall_ns": wall_ns, "host_median_ns": float(np.median(host))})
        if rungs[-1]["host_median_ns"] >= max(ENOUGH_HOST_NS, GROWTH_HOST * rungs[0]["host_median_ns"]):
            break
    problems = judge(resolution, rungs)
    return EventClock(not problems, tuple(problems), resolution, tuple(rungs), str(info.name),
                      str(info.driver_version), _now())


def judge(resolution_ns: int, rungs: list[dict[str, Any]]) -> list[str]:
    """What is wrong with an event clock, in words; empty when nothing is (the criteria are in
    the module docstring)."""
    problems = []
    if resolution_ns <= 0:
        problems.append(f"the device reports a profiling timer resolution of {resolution_ns} ns, "
                        "which no clock has")
    if not rungs:
        return problems
    low, top = rungs[0], rungs[-1]
    if top["event_min_ns"] <= 0:
        problems.append(f"a copy of {top['items']} floats that the host clock saw take "
                        f"{top['host_median_ns'] / 1e3:.1f} us has an event duration of 0 ns")
    if (len(rungs) > 1 and top["host_median_ns"] >= GROWTH_HOST * low["host_median_ns"]
            and top["event_median_ns"] < GROWTH_EVENTS * low["event_median_ns"]):
        problems.append(
            f"event durations do not grow with the work: {low['event_median_ns']:.0f} ns for "
            f"{low['items']} floats, {top['event_median_ns']:.0f} ns for {top['items']}, where "
            f"the host clock saw {low['host_median_ns'] / 1e3:.1f} us and "
            f"{top['host_median_ns'] / 1e3:.1f} us")
    for r in rungs:
        if r["event_sum_ns"] > MAX_EVENTS_OVER_WALL * r["wall_ns"] + EVENTS_OVER_WALL_SLACK_NS:
            problems.append(f"{LAUNCHES} copies of {r['items']} floats add up to "
                            f"{r['event_sum_ns'] / 1e3:.1f} us by their events but took "
                            f"{r['wall_ns'] / 1e3:.1f} us on the host clock")
            break
    if top["wall_ns"] >= LAUNCHES * LONG_LAUNCH_NS and \
            top["event_sum_ns"] * MAX_WALL_OVER_EVENTS < top["wall_ns"]:
        ratio = top["wall_ns"] / top["event_sum_ns"] if top["event_sum_ns"] > 0 else float("inf")
        problems.append(f"{LAUNCHES} copies of {top['items']} floats took "
                        f"{top['wall_ns'] / 1e3:.1f} us on the host clock but add up to "
                        f"{top['event_sum_ns']:.0f} ns by their events ({ratio:,.0f}x less)")
    return problems


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _read_cache() -> dict[str, Any]:
    try:
        with open(cache_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(key: str, clock: EventClock) -> None:
    """Add one verdict to the cache file (a new file put in place whole, so a reader never sees
    half of one); a cache that cannot be written is only a check more next time."""
    path = cache_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = _read_cache()
        entry = clock.as_meta()
        entry.pop("cached")
        data[key] = entry
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".event-clocks-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
