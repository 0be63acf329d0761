"""timers: one copy kernel timed by OpenCL events and by a host clock, side by side (Guide 2.1).

Events time the kernel on the device; the host clock around enqueue + finish adds the launch
and synchronisation cost, which dominates small kernels. The ratio per size shows where.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import _core
from ..measure.checks import compare, poison_device, random_bytes
from ..measure.results import OK, Results
from ..measure.sweep import host_clock_columns, timed_row, timing_label, verdict
from ._kit import DEFAULT_LOCAL_SIZE, FLOAT, positive, whole_groups
from .base import Sweep
from .claims import Claim, Figure, meta_number


GUIDE_RESOLUTION_NS = 500.0  # Guide 2.1.2: the GPU timer resolves about half a microsecond


def timer_resolution(results: Results) -> Figure:
    """The device's profiling timer resolution over the Guide's."""
    return Figure.of(meta_number(results, "device", "profiling_timer_resolution_ns")
                     / GUIDE_RESOLUTION_NS)


class Timers(Sweep):
    id = "timers"
    quiet = True  # the host's clocks: other host work shifts them
    description = ("one copy kernel timed by the host clock and by events, sizes up to 512 Mi items on"
                   " a GPU (1 Mi on a CPU), with the device's timer resolution (Guide 2.1; `--size`"
                   " is the largest work-item count)")
    order = 10
    title = "Event timing vs host clock (copy kernel)"
    x = "items"
    x_label = "work-items (floats copied)"
    guide = "Guide 2.1.1, 2.1.2"
    claim = Claim(
        "event timestamps resolve about half a microsecond", "Guide 2.1.2 (G80/GT200 GPUs)",
        "profiling timer resolution / 0.5 us", timer_resolution, direction=-1, kind="property")
    plot = {"kind": "columns", "columns": {"median_ns": timing_label("events"),
                                           "host_median_ns": timing_label("host")},
            "ylabel": "median time (ns)", "logx": True, "logy": True}
    size_arg, values_arg = "max_items", "sizes"
    # The figure is the timer's resolution (a property, no verdict); the host clock's gap
    # shows from the smallest sizes. A quick run stops at 64 Mi items (2 x 256 MiB).
    quick_gpu = {"max_items": 1 << 26}

    def __init__(self, ctx: Any, sizes: Sequence[int] | None = None, local_size: int = DEFAULT_LOCAL_SIZE,
                 max_items: int | None = None) -> None:
        """``sizes``: work-items per point; by default those of 1 Ki, 16 Ki, 256 Ki, 4 Mi, 64 Mi
        and 256 Mi below ``max_items``, and ``max_items`` itself (default 512 Mi on a GPU, 1 Mi on
        a CPU), each within the device's memory."""
        super().__init__(ctx)
        self.local_size = positive(self.id, "work-group size", local_size)
        if sizes is None:
            # On a GPU the top size runs for milliseconds (2 x 2 GiB at a few TB/s), where host
            # and event timing should agree; below that the launch overhead shows.
            top = max_items if max_items is not None else (1 << 29 if ctx.info.is_gpu else 1 << 20)
            fits = min(ctx.info.global_mem_bytes // 4, ctx.info.max_alloc_bytes) // FLOAT
            sizes = sorted({s for s in (1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26, 1 << 28) if s < top} | {top})
            sizes = [s for s in sizes if s <= fits]
        self.sizes = [whole_groups(self.id, s, self.local_size) for s in sizes]
        self.kernel = ctx.program(file="copy.cl").kernel("offset_copy")
        self.rng = np.random.default_rng()
        self._words: np.ndarray | None = None

    def meta(self) -> dict[str, Any]:
        return {**super().meta(), "local_size": self.local_size,
                "profiling_timer_resolution_ns": self.ctx.info.profiling_timer_resolution_ns,
                "note": "rows are event-timed; host_* columns time the same launches by a host "
                        "steady clock around enqueue + finish"}

    def points(self) -> list[dict[str, Any]]:
        return [{"items": s} for s in self.sizes]

    def measure(self, point: dict[str, Any], *, warmup: int, repeats: int, method: str,
                verify: bool) -> dict[str, Any]:
        items = point["items"]
        src, dst = self.ctx.buffer(items * FLOAT), self.ctx.buffer(items * FLOAT)
        try:
            self.kernel.set_args(dst, src, np.int32(0))
            passed, detail = self._verify(src, dst, items) if verify else (True, "not verified")
            stamps = _core.time_events(self.kernel, [items], [self.local_size], warmup, repeats)
            host = self.kernel.time(items, self.local_size, warmup=warmup, repeats=repeats,
                                    method="host")
        finally:
            src.release()
            dst.release()
        nbytes = 2 * items * FLOAT
        row = timed_row((stamps[:, 3] - stamps[:, 2]).astype(np.float64), nbytes, "events")
        row.update(host_clock_columns(host, nbytes, row["median_ns"]))
        # How long each launch waited between being queued and starting on the device.
        row["queued_to_start_ns"] = float(np.median(stamps[:, 2] - stamps[:, 0]))
        row["local_size"] = self.local_size
        row.update(verdict(verify, passed, detail))
        return row

    def _verify(self, src: Any, dst: Any, items: int) -> tuple[bool, str]:
        # The run's random words, drawn once at the largest size (every copy reads its source
        # unchanged; its destination is poisoned first): GiBs drawn per point cost seconds.
        if self._words is None or self._words.size < items:
            self._words = random_bytes(self.rng, FLOAT * max(max(self.sizes), items)).view(np.uint32)
        data = self._words[:items]
        src.write(data)
        poison_device(dst)
        self.kernel.run(items, self.local_size)
        out = np.empty(items, np.uint32)
        dst.read(out)
        return compare(out, data, "copied floats")

    def finish(self, results: Any) -> None:
        """Whether events can be believed here (the device's clock check, pyclperf.device.clocks, and
        these rows), and what the host clock adds to a launch."""
        clock = results.meta.get("event_clock") or {}
        if clock and not clock.get("usable", True):
            ratios = [r["host_over_events"] for r in results.rows
                      if math.isfinite(r.get("host_over_events", math.nan))]
            seen = (f" Here the host clock saw each launch take {min(ratios):,.0f} to "
                    f"{max(ratios):,.0f} times its event time." if ratios else "")
            results.meta["event_clock_usable"] = False
            results.meta["conclusion"] = (
                f"The event clock is unusable on this device: {'; '.join(clock['problems'])}."
                f"{seen} Every event-timed figure here is fiction: these rows are suspect, and "
                "the other experiments time by the host clock on this device (--method auto).")
            return
        results.meta["event_clock_usable"] = bool(clock.get("usable", True))
        rows = sorted((r for r in results.rows if r.get("status") == OK), key=lambda r: r["items"])
        if not rows:
            results.meta["conclusion"] = "No verified point: nothing to compare."
            return
        small, large = rows[0], rows[-1]
        gap_us = (small["host_median_ns"] - small["median_ns"]) / 1e3
        results.meta["conclusion"] = (
            f"The event clock passed its check against the host clock. The host clock adds "
            f"{gap_us:.1f} us to a launch of {small['items']} items ({small['host_over_events']:.1f}x "
            f"its event time) and {large['host_over_events']:.2f}x at {large['items']} items: "
            "events leave out the launch gap, which dominates small kernels (Guide 2.1).")

    @classmethod
    def summary(cls, results: Any) -> Any:
        df = results.df
        cols = ["items", "status", "median_ns", "host_median_ns", "host_over_events",
                "queued_to_start_ns", "gbps", "host_gbps"]
        return df[[c for c in cols if c in df]]
